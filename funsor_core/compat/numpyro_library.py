"""NumPyro's distributions library at funsor's path ``funsor.jax.distributions.dist`` (funsor
imports it there; its tests call ``dist.dist.Normal(...).log_prob``). NumPyro is not a
dependency: it is imported when ``dist`` is first asked for.

Example:
    >>> __getattr__("dist").__name__
    'numpyro.distributions'
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["numpyro_distributions"]


def numpyro_distributions(module: str = "funsor_core.jax.distributions") -> ModuleType:
    """``numpyro.distributions``, imported now (an ImportError naming ``module``'s ``dist``
    when NumPyro is not installed).

    Example:
        >>> numpyro_distributions().Normal.__name__
        'Normal'
    """
    try:
        return importlib.import_module("numpyro.distributions")
    except ImportError as error:
        raise ImportError(f"{module}.dist is numpyro.distributions; install numpyro to use "
                          "it (the families there work without it)") from error


def __getattr__(name: str) -> ModuleType:  # funsor_core.jax.distributions imports this
    if name != "dist":
        raise AttributeError(f"module 'funsor_core.jax.distributions' has no attribute {name!r}")
    return numpyro_distributions()
