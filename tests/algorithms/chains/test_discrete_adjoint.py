"""The adjoint of a chain's log-space product on arrays (``chains.discrete_adjoint``) against
enumeration of every path: the linear-space tree (a general root, and a root that is a sum
of vectors over the first and last states), its exact log-space fallback (true zeros,
traced values under ``jax.jit``), on every backend; and the adjoint tape's messages through
it (``adjoint.chain_arrays``) for a chain of two step pairs with a batch input and factors on
both ends, against enumeration."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import AdjointTape
from funsor_core.algorithms.chains import discrete_adjoint
from funsor_core.algorithms.chains.discrete_adjoint import chain_messages, chain_vector_messages
from funsor_core.sum_product import MarkovProduct


def _np(x):
    return np.asarray(ops.to_numpy(x))


def _arr(x):
    return fc.numeric_array(np.array(x, dtype=float))


def _enumerated(mats, root):
    # msg_t(a, b) = log sum over paths through (a, b) at t of exp(root(x_0, x_T) + the other
    # steps), one batch entry at a time.
    T, B, K = mats.shape[0], mats.shape[1], mats.shape[-1]
    out = np.full(mats.shape, -np.inf)
    for b, path in itertools.product(range(B), itertools.product(range(K), repeat=T + 1)):
        steps = [mats[t, b, path[t], path[t + 1]] for t in range(T)]
        for t in range(T):
            at = (t, b, path[t], path[t + 1])
            rest = root[b, path[0], path[-1]] + sum(steps[:t] + steps[t + 1:])
            out[at] = np.logaddexp(out[at], rest)
    return out


def _chain(T=5, B=2, K=3, zeros=False):
    rng = np.random.default_rng(T + 10 * zeros)
    mats, root = rng.normal(size=(T, B, K, K)), rng.normal(size=(B, K, K))
    if zeros:  # a left-to-right chain: true zeros, which the linear-space tree cannot check
        mats[:, :, np.tril_indices(K, -1)[0], np.tril_indices(K, -1)[1]] = -np.inf
    return mats, root


# Eager jax compiles each op per new shape (seconds here): jax runs under jit, below.
@pytest.fixture(params=["numpy", "torch"])
def eager(request):
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


@pytest.mark.parametrize("T", [1, 5])
def test_chain_messages_by_enumeration(eager, T):
    mats, root = _chain(T)
    actual = _np(chain_messages(_arr(mats), _arr(root)))
    assert np.allclose(actual, _enumerated(mats, root))


def test_chain_messages_with_true_zeros_take_the_exact_tree(eager):
    mats, root = _chain(zeros=True)
    assert discrete_adjoint._scaled_messages(_arr(mats), _arr(root)) is None
    actual = _np(chain_messages(_arr(mats), _arr(root)))
    assert not np.isnan(actual).any()
    assert np.allclose(np.exp(actual), np.exp(_enumerated(mats, root)))


def test_chain_messages_under_jit():
    jax = pytest.importorskip("jax")
    mats, root = _chain(T=6)
    actual = jax.jit(chain_messages)(jax.numpy.asarray(mats), jax.numpy.asarray(root))
    assert np.allclose(np.asarray(actual), _enumerated(mats, root))


def test_tape_messages_of_a_chain_with_two_pairs_and_a_batch(eager):
    # Steps over (t, b, x, u -> y, v): states are (x, u) pairs; factors on both ends make
    # the chain's adjoint a Tensor over its first and last states.
    rng = np.random.default_rng(0)
    T, B = 3, 2
    tr, first, last = rng.normal(size=(T, B, 2, 2, 2, 2)), rng.normal(size=(B, 2, 2)), \
        rng.normal(size=(2, 2))
    trans = fc.Tensor(_arr(tr), {"t": fc.Bint[T], "b": fc.Bint[B], "x": fc.Bint[2],
                                 "u": fc.Bint[2], "y": fc.Bint[2], "v": fc.Bint[2]})
    head = fc.Tensor(_arr(first), {"b": fc.Bint[B], "x": fc.Bint[2], "u": fc.Bint[2]})
    tail = fc.Tensor(_arr(last), {"y": fc.Bint[2], "v": fc.Bint[2]})
    with AdjointTape() as tape:
        chain = MarkovProduct(ops.logaddexp, ops.add, trans, "t", {"x": "y", "u": "v"})
        z = (head + chain + tail).reduce(ops.logaddexp, frozenset("xuyv"))
    actual = _np(tape.adjoint(ops.logaddexp, ops.add, z, (trans,))[trans]
                 .align(("t", "b", "x", "u", "y", "v")).data)
    mats = tr.reshape(T, B, 4, 4)
    root = first.reshape(B, 4, 1) + last.reshape(1, 1, 4)
    assert np.allclose(actual.reshape(T, B, 4, 4), _enumerated(mats, root))


def test_chain_messages_of_an_adjoint_with_impossible_ends(eager):
    # A root of -inf over some end states (a boundary with zeros), all of them for one batch
    # entry: exact messages, -inf where no path is possible, and no NaN.
    for T in (1, 4):
        mats, root = _chain(T)
        root[0, 1:, :] = -np.inf
        root[1] = -np.inf
        actual = _np(chain_messages(_arr(mats), _arr(root)))
        assert not np.isnan(actual).any()
        assert np.allclose(np.exp(actual), np.exp(_enumerated(mats, root)))


def test_chain_vector_messages_by_enumeration(eager):
    # left(x_0) + right(x_T), with -inf in left for one batch entry (the exact fallback).
    for T, impossible in ((5, False), (4, True)):
        mats, _ = _chain(T)
        rng = np.random.default_rng(T)
        left, right = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
        if impossible:
            left[1, :2] = -np.inf
        actual = _np(chain_vector_messages(_arr(mats), _arr(left), _arr(right)))
        expected = _enumerated(mats, left[:, :, None] + right[:, None, :])
        assert not np.isnan(actual).any()
        assert np.allclose(np.exp(actual), np.exp(expected))
