"""Shared pytest set-up: float64 everywhere, and ``fc``, ``ops``, ``np`` in doctests."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

try:  # the test extra installs both; the library itself needs neither
    import jax

    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover
    pass
try:
    import torch

    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace.update(fc=fc, ops=ops, np=np)


@pytest.fixture(params=["numpy", "torch", "jax"])
def backend(request):
    """Run a test once per backend, with that backend active; numpy is restored after."""
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")
