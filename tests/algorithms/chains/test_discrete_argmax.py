"""The MAP path of a max-plus chain between fixed ends (``chains.discrete_argmax``) against
enumeration of every path: it starts and stops where asked and scores the best total, with
many ties (small integer scores) and -inf steps, with a batch, on numpy and torch and under
``jax.jit``."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.discrete_argmax import max_path


def _case(T, B=2, K=3, seed=0):
    rng = np.random.default_rng(seed)
    mats = rng.integers(-2, 2, size=(T, B, K, K)).astype(float)  # ties everywhere
    mats[T // 2, :, 0, 1] = -np.inf
    return mats, rng.integers(0, K, size=B), rng.integers(0, K, size=B)


def _check(mats, start, stop, path):
    T, B, K = mats.shape[0], mats.shape[1], mats.shape[-1]
    assert path.shape == (T + 1, B)
    for b in range(B):
        best = max(sum(mats[t, b, p[t], p[t + 1]] for t in range(T))
                   for p in itertools.product(range(K), repeat=T + 1)
                   if p[0] == start[b] and p[-1] == stop[b])
        assert path[0, b] == start[b] and path[-1, b] == stop[b]
        assert sum(mats[t, b, path[t, b], path[t + 1, b]] for t in range(T)) == best


@pytest.mark.parametrize("T", [1, 2, 5])
@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_max_path_by_enumeration(name, T):
    fc.set_backend(name)
    try:
        mats, start, stop = _case(T, seed=T)
        path = max_path(*(fc.numeric_array(x, "real" if x is mats else "int")
                          for x in (mats, start, stop)))
        _check(mats, start, stop, np.asarray(ops.to_numpy(path)))
    finally:
        fc.set_backend("numpy")


def test_max_path_under_jit():
    jax = pytest.importorskip("jax")
    mats, start, stop = _case(6)
    path = jax.jit(max_path)(jax.numpy.asarray(mats), jax.numpy.asarray(start),
                             jax.numpy.asarray(stop))
    _check(mats, start, stop, np.asarray(path))
