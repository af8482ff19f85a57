"""funsor's ``funsor.torch.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend), and ``dist``, the torch distributions
library (``torch.distributions`` here; pyro's in funsor), as funsor's tests use it.
funsor also re-exports pyro's ``ExpandedDistribution`` and ``MaskedDistribution`` here; they
are looked up in pyro when first asked for (pyro is not a dependency; ``to_funsor`` converts
them, and any wrapper with their attributes, without it).

Importing this module imports torch; nothing else in funsor-core does.

Example:
    >>> from funsor_core.torch.distributions import Normal, dist
    >>> Normal.__module__, dist.__name__
    ('funsor_core.distribution.continuous', 'torch.distributions')
"""

import torch.distributions as dist

from funsor_core.distribution import *  # noqa: F403
from funsor_core.distribution import __all__ as _families

__all__ = ["dist"] + list(_families)

_FROM_PYRO = ("ExpandedDistribution", "MaskedDistribution")


def __getattr__(name: str):
    """pyro's wrapper classes, as funsor re-exports them (imported on first use).

    Example:
        >>> from funsor_core.torch import distributions
        >>> distributions.MaskedDistribution.__module__
        'pyro.distributions.torch_distribution'
    """
    if name not in _FROM_PYRO:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from pyro.distributions import torch_distribution
    except ImportError as error:
        raise ImportError(f"{name} is pyro's class (funsor re-exports it from "
                          "pyro.distributions); install pyro-ppl to use it. to_funsor of a "
                          "masked or expanded distribution works without pyro") from error
    return getattr(torch_distribution, name)
