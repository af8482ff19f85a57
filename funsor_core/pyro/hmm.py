"""funsor's ``funsor.pyro.hmm`` module path: ``DiscreteHMM`` (importing this module imports
pyro); ``GaussianHMM``, ``GaussianMRF`` and ``SwitchingLinearHMM`` raise
``NotImplementedError`` when made. A thin face; the implementation lives in
``funsor_core.compat.pyro_hmm``.

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
