"""jax reductions over a run of adjacent axes add in the order of the flattened run, as numpy,
torch and funsor (a reshaped ``batch + (-1,)`` reduced over its last axis) do; XLA's reduction
over several axes adds in another order (last-bit differences that funsor's own tests, which
compare exactly, reject)."""

from collections import OrderedDict

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.mark.parametrize("op, flat", [(ops.add, jnp.sum), (ops.mul, jnp.prod)])
@pytest.mark.parametrize("batch", [(3,), (3, 4)])
def test_event_reduction_equals_flattened_run(op, flat, batch):
    rng = np.random.default_rng(0)
    data = jnp.asarray(rng.random(batch + (2, 3)) + 0.5)
    inputs = OrderedDict((n, fc.Bint[s]) for n, s in zip("ab", batch))
    x = fc.Tensor(data, inputs)
    got = x.sum() if op is ops.add else x.prod()  # funsor's event reductions
    expected = flat(data.reshape(batch + (-1,)), -1)  # the funsor oracle's own form
    assert np.array_equal(np.asarray(got.data), np.asarray(expected))
    # and the numbers are the numpy sums (independent oracle) to roundoff
    ref = getattr(np, flat.__name__)(np.asarray(data).reshape(batch + (-1,)), -1)
    np.testing.assert_allclose(np.asarray(got.data), ref, rtol=1e-14)


@pytest.mark.parametrize("keepdims", [False, True])
def test_kernel_keepdims_and_jit(keepdims):
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.random((2, 3, 4, 5)))
    run = jax.jit(lambda y: ops.sum(y, (1, 2), keepdims))
    got = np.asarray(run(x))
    expected = np.asarray(jnp.sum(x.reshape(2, 12, 5), 1))
    if keepdims:
        expected = expected.reshape(2, 1, 1, 5)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)
    # a non-adjacent pair and every axis are XLA's own reductions, unchanged
    assert np.array_equal(np.asarray(ops.sum(x, (0, 2))), np.asarray(jnp.sum(x, (0, 2))))
    assert np.array_equal(np.asarray(ops.sum(x, (0, 1, 2, 3))), np.asarray(jnp.sum(x)))
    np.testing.assert_allclose(np.asarray(ops.logsumexp(x, (1, 2))),
                               np.log(np.exp(np.asarray(x)).sum((1, 2))), rtol=1e-13)
