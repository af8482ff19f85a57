"""A new user's tries of ragged Markov products (round 2): traced lengths out of range."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_product

jax = pytest.importorskip("jax")
jnp = jax.numpy


def test_traced_length_out_of_range_gives_nan_not_a_clamped_chain():
    # eagerly a ValueError; under jax.jit lengths [T + 1, -1] gave the chains of T and 0 steps
    T, K = 2, 2
    rng = np.random.default_rng(0)
    steps = np.log(rng.dirichlet(np.ones(K), size=(T, 3, K)))  # (t, b, prev, curr)

    def log_z(n):
        step = fc.Tensor(jnp.asarray(steps), {"t": fc.Bint[T], "b": fc.Bint[3],
                                              "x": fc.Bint[K], "y": fc.Bint[K]})
        chain = markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"},
                               lengths=fc.Tensor(n, {"b": fc.Bint[3]}))
        return chain.align(("b", "x", "y")).data

    out = np.asarray(jax.jit(log_z)(jnp.array([T + 1, -1, 1])))
    assert np.isnan(out[:2]).all()
    # entry 2: its one step, as given
    assert np.allclose(out[2], steps[0, 2], atol=1e-6)
