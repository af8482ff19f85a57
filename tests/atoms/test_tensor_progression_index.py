"""Substituting an index Tensor whose entries step evenly forward (Pyro's vectorized Markov
time shifts, ``time -> arange(0, T - 1)``) is a basic slice: values against numpy's
advanced indexing by loops, alone and with renames, for forward progressions, a single
entry, and the index lists that are not progressions (backwards, uneven, repeated: the
gather); torch gradients against torch's own advanced-index autograd; and a traced index
under ``jax.jit`` (no host read: the gather)."""

import jax
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core.domains import Bint

jax.config.update("jax_enable_x64", True)
T, K = 7, 3
INDICES = [np.arange(0, T - 1), np.arange(1, T), np.arange(1, T, 2), np.array([4]),
           np.array([3, 2, 1]), np.array([0, 1, 3]), np.array([2, 2, 2]), np.arange(T)]


def _data():
    return np.random.default_rng(0).normal(size=(K, T, K))


def _expected(data, idx):
    # out[x, k, y] = data[x, idx[k], y], by loops
    out = np.empty((K, len(idx), K))
    for x in range(K):
        for k, i in enumerate(idx):
            out[x, k] = data[x, i]
    return out


@pytest.mark.parametrize("idx", INDICES, ids=lambda a: ",".join(map(str, a)))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_time_index_matches_loops(backend, idx):
    wrap = torch.tensor if backend == "torch" else np.asarray
    data = _data()
    t = fc.Tensor(wrap(data), {"x": Bint[K], "time": Bint[T], "y": Bint[K]})
    index = fc.Tensor(wrap(idx), {"time": Bint[len(idx)]}, T)
    out = t(time=index)
    assert dict(out.inputs) == {"x": Bint[K], "time": Bint[len(idx)], "y": Bint[K]}
    np.testing.assert_array_equal(np.asarray(out.data), _expected(data, idx))
    # with a rename beside it (Pyro's x_prev -> _PREV_x), and into a new time name
    both = t(x="x_prev", time=fc.Tensor(wrap(idx), {"s": Bint[len(idx)]}, T))
    assert list(both.inputs) == ["x_prev", "s", "y"]
    np.testing.assert_array_equal(np.asarray(both.data), _expected(data, idx))


def test_time_index_into_an_input_already_there_is_a_diagonal():
    # time -> arange over "x", which t already has: the diagonal out[x, y] = data[x, x, y].
    data = np.random.default_rng(1).normal(size=(K, K, 2))
    t = fc.Tensor(data, {"x": Bint[K], "time": Bint[K], "y": Bint[2]})
    out = t(time=fc.Tensor(np.arange(K), {"x": Bint[K]}, K))
    np.testing.assert_array_equal(out.data, np.stack([data[x, x] for x in range(K)]))


@pytest.mark.parametrize("idx", [np.arange(1, T), np.arange(0, T, 3), np.array([5, 1, 3])])
def test_time_index_gradient(idx):
    data = torch.tensor(_data(), requires_grad=True)
    w = torch.tensor(np.random.default_rng(2).normal(size=(K, len(idx), K)))
    t = fc.Tensor(data, {"x": Bint[K], "time": Bint[T], "y": Bint[K]})
    (t(time=fc.Tensor(torch.tensor(idx), {"time": Bint[len(idx)]}, T)).data * w).sum().backward()
    oracle = torch.tensor(_data(), requires_grad=True)
    (oracle[:, torch.tensor(idx)] * w).sum().backward()
    np.testing.assert_array_equal(data.grad.numpy(), oracle.grad.numpy())


def test_time_index_out_of_range_still_raises():
    t = fc.Tensor(_data(), {"x": Bint[K], "time": Bint[T], "y": Bint[K]})
    with pytest.raises(fc.DomainError, match="time"):
        t(time=fc.Tensor(np.arange(2, T + 1), {"time": Bint[T - 1]}, T + 1))


def test_time_index_traced_under_jit():
    data, idx = _data(), np.arange(1, T)
    fc.set_backend("jax")
    try:
        f = jax.jit(lambda d, i: fc.Tensor(d, {"x": Bint[K], "time": Bint[T], "y": Bint[K]})(
            time=fc.Tensor(i, {"time": Bint[T - 1]}, T)).data)
        out = f(jax.numpy.asarray(data), jax.numpy.asarray(idx))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_array_equal(np.asarray(out), _expected(data, idx))
