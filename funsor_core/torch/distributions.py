"""funsor's ``funsor.torch.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend), and ``dist``, the torch distributions
library (``torch.distributions`` here; pyro's in funsor), as funsor's tests use it, and its
``constraints`` (``pyroapi``'s ``dist.constraints`` under the ``"funsor"`` backend).
funsor also re-exports pyro's ``ExpandedDistribution`` and ``MaskedDistribution`` here; they
are looked up in pyro when first asked for (``funsor_core.compat.pyro_wrappers``).

Importing this module imports torch; nothing else in funsor-core does.

Example:
    >>> from funsor_core.torch.distributions import Normal, dist
    >>> Normal.__module__, dist.__name__
    ('funsor_core.distribution.continuous', 'torch.distributions')
"""

import torch.distributions as dist
from torch.distributions import constraints

# pyro's ExpandedDistribution and MaskedDistribution, served on first use by this __getattr__.
from funsor_core.compat.pyro_wrappers import __getattr__  # noqa: F401
from funsor_core.distribution import *  # noqa: F403
from funsor_core.distribution import __all__ as _families

__all__ = ["dist", "constraints"] + list(_families)
