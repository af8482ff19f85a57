"""funsor's ``funsor.jax.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend), and ``dist``, NumPyro's distributions library
(``numpyro.distributions``), as funsor's tests use it (``dist.dist.Normal(...).log_prob``).
NumPyro is not a dependency: ``dist`` imports it when first asked for.

Example:
    >>> from funsor_core.jax.distributions import Normal
    >>> Normal.__module__
    'funsor_core.distribution.continuous'
"""

from __future__ import annotations

import importlib
from types import ModuleType

from funsor_core.distribution import *  # noqa: F403
from funsor_core.distribution import __all__ as _families

__all__ = list(_families)


def __getattr__(name: str) -> ModuleType:
    if name != "dist":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return importlib.import_module("numpyro.distributions")
    except ImportError as error:
        raise ImportError("funsor_core.jax.distributions.dist is numpyro.distributions; "
                          "install numpyro to use it (the families here work without it)"
                          ) from error
