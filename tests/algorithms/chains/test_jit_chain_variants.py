"""funsor's chain variants under ``jax.jit(jax.value_and_grad(...))`` (NumPyro's calls):
``mixed_sequential_sum_product``'s serial segments run as one loop on arrays, not as a term per
step (each step's slice had a derivative of its own, a pad to the whole chain, and XLA summed
them in one fused loop evaluating every pad at every entry: 8 of 8.5 ms at K = 8, T = 1000,
10 segments).

Oracles: a float64 forward-backward pass in numpy per batch member (log Z summed over the
first and last states, and its derivative, the pairwise marginals); structurally, the jaxpr of
the value and gradient does not grow with the length of a segment or the steps left over.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from funsor_core.sum_product import mixed_sequential_sum_product
from tests.algorithms.chains.test_jit_chain_grad import _forward_backward

jax = pytest.importorskip("jax")
jnp = jax.numpy

K, B = 3, 2


def _primitives(jaxpr, found=None) -> collections.Counter:
    from jax.extend import core

    found = collections.Counter() if found is None else found
    for eqn in jaxpr.eqns:
        found[eqn.primitive.name] += 1
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, core.ClosedJaxpr):
                    _primitives(sub.jaxpr, found)
                elif isinstance(sub, core.Jaxpr):
                    _primitives(sub, found)
    return found


def _mixed_total(duration: int, segments: int):
    def total(d):
        f = fc.Tensor(d, {"time": Bint[duration], "prev": Bint[K], "curr": Bint[K],
                          "b": Bint[B]})
        r = mixed_sequential_sum_product(ops.logaddexp, ops.add, f, "time", {"prev": "curr"},
                                         segments)
        return r.reduce(ops.logaddexp, frozenset({"prev", "curr"})).data.sum()
    return total


def test_jitted_mixed_chain_value_and_gradient():
    duration, segments = 23, 4  # 4 segments of 5 steps, 3 steps left over
    rng = np.random.default_rng(duration)
    logf = rng.normal(size=(duration, K, K, B)).astype(np.float32)
    fc.set_backend("jax")
    try:
        value, grad = jax.jit(jax.value_and_grad(_mixed_total(duration, segments)))(
            jnp.asarray(logf))
    finally:
        fc.set_backend("numpy")
    want = [_forward_backward(logf[..., i].astype(np.float64)) for i in range(B)]
    np.testing.assert_allclose(float(value), sum(z for z, _ in want), rtol=2e-5)
    np.testing.assert_allclose(np.asarray(grad), np.stack([g for _, g in want], -1),
                               rtol=2e-4, atol=2e-5)


# 4 segments of 5 and of 10 steps; 5 segments of 5 steps, with 3 and 4 steps left over
@pytest.mark.parametrize("durations,segments", [((20, 40), 4), ((28, 29), 5)])
def test_jitted_mixed_chain_program_does_not_grow_with_segment_length(durations, segments):
    fc.set_backend("jax")
    try:
        counts = []
        for duration in durations:
            d = jnp.zeros((duration, K, K, B), dtype=jnp.float32)
            jaxpr = jax.make_jaxpr(jax.value_and_grad(_mixed_total(duration, segments)))(d).jaxpr
            counts.append(_primitives(jaxpr))
    finally:
        fc.set_backend("numpy")
    assert counts[0] == counts[1], counts
