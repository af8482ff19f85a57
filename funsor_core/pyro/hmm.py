"""funsor's ``funsor.pyro.hmm`` module path: ``DiscreteHMM``, ``GaussianHMM``,
``GaussianMRF`` and ``SwitchingLinearHMM`` (importing this module imports pyro). A thin face;
the implementation lives in ``funsor_core.compat.pyro_hmm``.

Example:
    >>> from funsor_core.pyro.hmm import DiscreteHMM
    >>> DiscreteHMM.__module__
    'funsor_core.compat.pyro_hmm'
"""

from funsor_core.compat.pyro_hmm import (
    DiscreteHMM,
    GaussianHMM,
    GaussianMRF,
    SwitchingLinearHMM,
)

__all__ = ["DiscreteHMM", "GaussianHMM", "GaussianMRF", "SwitchingLinearHMM"]
