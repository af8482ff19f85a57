"""Bayesian allocation models (Cemgil et al.): the public face of
``funsor_core.algorithms.smc.model``.

Example:
    >>> from funsor_core.allocation import AllocationModel
    >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, ("i", "j"), a=1.0, b=1.0)
    >>> round(m.log_marginal_exact(np.array([[2, 1], [0, 1]])), 5)
    -7.97684
"""

from funsor_core.algorithms.smc.model import (
    AllocationModel,
    log_marginal_complete_graph,
    predictive_factors,
)

__all__ = ["AllocationModel", "log_marginal_complete_graph", "predictive_factors"]
