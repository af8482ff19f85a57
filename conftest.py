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


def _scratch_rules(interpretation):
    """Yield ``interpretation``; the rules a test registers on its kind are removed after."""
    from funsor_core.engine.interpreter import _clear_all_caches, _ignore_ambiguities

    kind = type(interpretation)
    saved = {cls: {sig: list(fns) for sig, fns in d.funcs.items()}
             for cls, d in kind._dispatchers.items()}
    yield interpretation
    for cls, d in list(kind._dispatchers.items()):
        if cls not in saved:
            del kind._dispatchers[cls]
            continue
        d.funcs.clear()
        d.funcs.update(saved[cls])
        d._cache.clear()
        d.reorder(on_ambiguity=_ignore_ambiguities)
    _clear_all_caches()


@pytest.fixture
def scratch_exact_rules():
    """``exact``, with the rules a test registers on it removed afterwards."""
    from interpretations import exact

    yield from _scratch_rules(exact)


@pytest.fixture
def scratch_moment_matching_rules():
    """``moment_matching``, with the rules a test registers on it removed afterwards."""
    from interpretations import moment_matching

    yield from _scratch_rules(moment_matching)
