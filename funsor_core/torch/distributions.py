"""funsor's ``funsor.torch.distributions``: the distribution families (the same classes as
``funsor_core.distribution``, on every backend), and ``dist``, the torch distributions
library (``torch.distributions`` here; pyro's in funsor), as funsor's tests use it.

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
