"""funsor's ``funsor.jax.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend), and ``dist``, NumPyro's distributions library
(``numpyro.distributions``), as funsor's tests use it (``dist.dist.Normal(...).log_prob``).
NumPyro is not a dependency: ``dist`` imports it when first asked for
(``funsor_core.compat.numpyro_library``).

Example:
    >>> from funsor_core.jax.distributions import Normal
    >>> Normal.__module__
    'funsor_core.distribution.continuous'
"""

# numpyro.distributions as ``dist``, served on first use by this __getattr__.
from funsor_core.compat.numpyro_library import __getattr__  # noqa: F401
from funsor_core.distribution import *  # noqa: F403
from funsor_core.distribution import __all__ as _families

__all__ = list(_families)
