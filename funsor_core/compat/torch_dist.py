"""``dist`` of funsor's ``funsor.torch.distributions``: the torch backend's library of
distribution objects, ``torch.distributions`` plus ``DirichletMultinomial`` (which funsor
takes from pyro). Importing this module loads the torch backend, as funsor's module imports
torch.

Example:
    >>> import torch
    >>> dist.Normal is torch.distributions.Normal
    True
    >>> d = dist.DirichletMultinomial(torch.ones(3), 2.0)
    >>> d.batch_shape, d.event_shape
    (torch.Size([]), torch.Size([3]))
"""

from __future__ import annotations

from funsor_core.engine.backend import backend_module

__all__ = ["dist"]

# funsor's module of this name is torch's alone, so this one names its backend.
dist = backend_module("torch").funsor_dist_library()
