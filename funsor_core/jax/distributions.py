"""funsor's ``funsor.jax.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend). jax has no standard distribution objects,
so there is no ``dist`` here: build the families from jax arrays directly.

Example:
    >>> from funsor_core.jax.distributions import Normal
    >>> Normal.__module__
    'funsor_core.distribution.continuous'
"""

from funsor_core.distribution import *  # noqa: F403
from funsor_core.distribution import __all__ as _families

__all__ = list(_families)
