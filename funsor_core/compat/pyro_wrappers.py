"""pyro's ``ExpandedDistribution`` and ``MaskedDistribution`` at funsor's path
``funsor.torch.distributions`` (funsor re-exports them from pyro). pyro is imported when one
is first asked for: it is not a dependency, and ``to_funsor`` converts masked and expanded
distributions (any wrapper with their attributes) without it.

Example:
    >>> from funsor_core.torch import distributions
    >>> distributions.MaskedDistribution.__module__
    'pyro.distributions.torch_distribution'
"""

from __future__ import annotations

import importlib

__all__ = ["PYRO_WRAPPERS", "pyro_wrapper"]

PYRO_WRAPPERS = ("ExpandedDistribution", "MaskedDistribution")


def pyro_wrapper(name: str, module: str = __name__) -> type:
    """pyro's wrapper class ``name`` (one of ``PYRO_WRAPPERS``), as a module ``__getattr__``
    of ``module`` serves it.

    Example:
        >>> pyro_wrapper("ExpandedDistribution").__name__
        'ExpandedDistribution'

    Raises:
        AttributeError: ``name`` is not one of them.
        ImportError: pyro is not installed, naming the class.
    """
    if name not in PYRO_WRAPPERS:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    try:
        torch_distribution = importlib.import_module("pyro.distributions.torch_distribution")
    except ImportError as error:
        raise ImportError(f"{name} is pyro's class (funsor re-exports it from "
                          "pyro.distributions); install pyro-ppl to use it. to_funsor of a "
                          "masked or expanded distribution works without pyro") from error
    return getattr(torch_distribution, name)


def __getattr__(name: str) -> type:  # funsor_core.torch.distributions imports this
    return pyro_wrapper(name, "funsor_core.torch.distributions")
