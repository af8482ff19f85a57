"""Bayesian allocation models (Cemgil et al.): the public face of
``funsor_core.algorithms.smc`` (``model``, the variational baseline ``vb`` and the KL-NTF
multiplicative updates ``ntf``; the SMC estimators are in ``funsor_core.smc``).

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
from funsor_core.algorithms.smc.ntf import kl_divergence, kl_ntf
from funsor_core.algorithms.smc.vb import VBResult, expected_statistics, vb, vb_elbo

__all__ = ["AllocationModel", "VBResult", "expected_statistics", "kl_divergence", "kl_ntf",
           "log_marginal_complete_graph", "predictive_factors", "vb", "vb_elbo"]
