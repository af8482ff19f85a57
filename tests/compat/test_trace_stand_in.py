"""``trace_function`` of torch and jax arrays (funsor's test_tracer on jax): they are traced
through numpy copies of their values and the program replays on the backend's own arrays.

Oracles: the same math written in numpy on *new* arrays (so a replay of the traced run's
numbers fails), and the result's type (a backend array, not numpy)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.ops.tracer import trace_function
from tests.backend_values import as_backend_array, to_numpy

RNG = np.random.default_rng(106)


def _arrays(backend: str, *shapes) -> list:
    return [as_backend_array(RNG.normal(size=s).astype(np.float32), backend) for s in shapes]


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_funsor_program_traced_on_copies_replays_on_backend_arrays(backend):
    def fn(x, y, z):
        x, y, z = fc.to_funsor(x), fc.to_funsor(y), fc.to_funsor(z)
        return fc.to_data((x @ y + z + 1).exp())

    fc.set_backend(backend)
    try:
        prog = trace_function(fn, dict(zip("xyz", _arrays(backend, (2, 3), (3, 4), (2, 4)))))
        new = dict(zip("xyz", _arrays(backend, (2, 3), (3, 4), (2, 4))))
        out = prog(**new)
        x, y, z = (to_numpy(new[k]).astype(np.float64) for k in "xyz")
        assert type(out) is type(new["x"])
        np.testing.assert_allclose(to_numpy(out), np.exp(x @ y + z + 1), rtol=1e-5)
        traced, a = _arrays(backend, (3,), (3,))
        chain = trace_function(lambda a: ops.mul(ops.mul(a, a), a), {"a": traced})
        np.testing.assert_allclose(to_numpy(chain(a=a)), to_numpy(a) ** 3, rtol=1e-6)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_direct_backend_calls_are_refused_not_replayed_as_constants(backend):
    fc.set_backend(backend)
    try:
        if backend == "torch":
            import torch

            direct = torch.exp
        else:
            import jax.numpy as jnp

            direct = jnp.exp
        (x,) = _arrays(backend, (2,))
        with pytest.raises((TypeError, ValueError), match="numpy copies"):
            trace_function(lambda x: direct(x), {"x": x}, allow_constants=True)
    finally:
        fc.set_backend("numpy")


def test_traced_jax_inputs_are_refused_and_programs_run_under_jit():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    prog = trace_function(lambda x: ops.exp(x), {"x": jnp.ones(2)})
    out = jax.jit(lambda x: prog(x=x))(jnp.array([0.0, 1.0]))
    np.testing.assert_allclose(np.asarray(out), np.exp([0.0, 1.0]), rtol=1e-6)
    with pytest.raises(TypeError, match="inside jax.jit"):
        jax.jit(lambda x: trace_function(lambda y: ops.exp(y), {"y": x}))(jnp.ones(2))
