"""funsor's ``funsor.torch.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend), and ``dist``, the torch distributions
library (``torch.distributions`` plus ``DirichletMultinomial`` here; pyro's in funsor), as
funsor's tests use it.

Importing this module loads the torch backend, as funsor's imports torch.

Example:
    >>> import torch
    >>> from funsor_core.torch.distributions import Normal, dist
    >>> Normal.__module__, dist.Normal is torch.distributions.Normal
    ('funsor_core.distribution.continuous', True)
"""

from funsor_core.compat.torch_dist import dist
from funsor_core.distribution import *  # noqa: F403
from funsor_core.distribution import __all__ as _families

__all__ = ["dist"] + list(_families)
