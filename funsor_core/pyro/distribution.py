"""funsor's ``funsor.pyro.distribution`` module path: ``FunsorDistribution``, a pyro
distribution given by a funsor (importing this module imports pyro). A thin face; the
implementation lives in ``funsor_core.compat.pyro_distribution``.

Example:
    >>> from funsor_core.pyro.distribution import FunsorDistribution
    >>> FunsorDistribution.__module__
    'funsor_core.compat.pyro_distribution'
"""

from funsor_core.compat.pyro_distribution import FunsorDistribution

__all__ = ["FunsorDistribution"]
