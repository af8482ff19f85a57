"""Shared pytest set-up: float64 everywhere, and ``fc``, ``ops``, ``np`` in doctests."""

import os
import sys
import zlib

# The suite checks values, not the speed of XLA's code: its hundreds of small jax.jit programs
# compile a fifth faster without LLVM's expensive passes (the whole suite on 2 cores: 5 min
# 38 s -> 4 min 40 s, 2026-11-27), and each eager jax op (one program per op and shape)
# compiles in half the time with XLA:CPU's elemental emitters instead of its fusion emitters
# (390 eager ops: 14-15.5 s -> 7.3-7.5 s). Set before jax creates its CPU client, which
# reads the flags once; benchmarks and examples compile at the default level. A level given
# in XLA_FLAGS is kept. Ours go first: XLA stops reading at a token that is not a flag.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(("--xla_backend_optimization_level=0",
                                        "--xla_llvm_disable_expensive_passes=true",
                                        "--xla_cpu_use_fusion_emitters=false",
                                        os.environ.get("XLA_FLAGS", ""))).strip()

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _pytest.doctest import DoctestItem  # noqa: E402


def pytest_configure(config):
    """Configure jax, torch and hypothesis in each process that runs tests.

    Not in pytest-xdist's controller, which only hands tests to its workers: importing
    torch, jax, hypothesis and funsor_core there cost about 3 s of CPU (and as much wall
    time) before the workers could start.
    """
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    import funsor_core  # noqa: F401  (installs the defaults before any test module)

    try:  # the test extra installs both; the library itself needs neither
        import jax

        jax.config.update("jax_enable_x64", True)
    except ImportError:  # pragma: no cover
        pass
    try:  # one fixed sequence of examples per test, as tests/interpretations/ asks for: a
        # draw that fails once in CI must fail again on the next run (and on a laptop)
        from hypothesis import settings

        settings.register_profile("funsor_core", derandomize=True)
        settings.load_profile("funsor_core")
    except ImportError:  # pragma: no cover
        pass
    try:
        import torch

        torch.set_default_dtype(torch.float64)
        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass


@pytest.fixture(autouse=True)
def _doctest_namespace(request, doctest_namespace):
    import funsor_core as fc
    from funsor_core import ops

    doctest_namespace.update(fc=fc, ops=ops, np=np)
    # Docstring examples are written for the default backend; a test module that switched
    # backends at import (tests/compat/test_pyro_convert.py) must not change their output.
    if isinstance(request.node, DoctestItem):
        fc.set_backend("numpy")


@pytest.fixture(autouse=True)
def _seed_global_rngs(request):
    """Seed numpy's and torch's global generators from the test's id before each test.

    ``fc.testing``'s ``random_*`` draw from numpy's global generator, so without this a test's
    data depend on which tests ran before it (a failure seen in a long run would not reproduce
    alone, or under another selection or order). A test that seeds explicitly still wins.
    """
    seed = zlib.crc32(request.node.nodeid.encode())
    np.random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


@pytest.fixture(params=["numpy", "torch", "jax"])
def backend(request):
    """Run a test once per backend, with that backend active; numpy is restored after."""
    import funsor_core as fc

    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


@pytest.fixture
def torch_backend():
    """The torch backend active (the test skipped where torch is missing); numpy after."""
    pytest.importorskip("torch")
    import funsor_core as fc

    fc.set_backend("torch")
    yield
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
