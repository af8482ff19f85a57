"""Ragged chains kept lazily (``MaskedSteps``): the chain kernels select the carried state past
each sequence's length, with the step's factors apart (a shared matrix stays one matrix).
Checked against numpy recursions run one sequence at a time on its unpadded steps, in the
sum and max semirings: filters (first states summed), backward messages (last states
summed), whole products (both strategies), a gradient, and ``jax.jit`` with traced lengths.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import recorded_choices
from funsor_core.algorithms.chains.discrete_masked import MaskedSteps
from funsor_core.sum_product import markov_product
from interpretations import lazy

K = 3
LENGTHS = np.array([1, 6, 3, 0])  # a length-1, a full-length and an empty sequence


def _data(T, B, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=K), rng.normal(size=(K, K)), rng.normal(size=(T, B, K))


def _red(sum_op):
    return np.logaddexp.reduce if sum_op is ops.logaddexp else np.max


def _numpy_product(sum_op, a, o, n):
    # The semiring product of the steps a + o[t] for t < n, (K, K); the identity for n = 0.
    out = np.where(np.eye(K) > 0, 0.0, -np.inf)
    for t in range(n):
        out = _red(sum_op)(out[:, :, None] + (a + o[t][None, :])[None], axis=1)
    return out


def _ragged_chain(sum_op, a, o, lengths, strategy=None):
    T, B = o.shape[:2]
    at = fc.Tensor(a, {"x": fc.Bint[K], "y": fc.Bint[K]})
    ot = fc.Tensor(o, {"t": fc.Bint[T], "b": fc.Bint[B], "y": fc.Bint[K]})
    n = fc.Tensor(lengths, {"b": fc.Bint[B]}, dtype=T + 1)
    with lazy:
        return markov_product(sum_op, ops.add, at + ot, "t", {"x": "y"}, strategy=strategy,
                              lengths=n)


def _as(backend, x):
    if backend == "torch":
        import torch
        return torch.tensor(x)
    return x


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
@pytest.mark.parametrize("backend", ["numpy", "torch"], indirect=True)
def test_ragged_filter_eager(backend, sum_op):
    # init + chain, all states summed: in log space (sequential) the forward filter with its
    # carry kept past each length; in the max semiring ("auto": parallel at this size) the
    # tree over the steps with identities where masked.
    init, a, o = _data(6, len(LENGTHS))
    strategy = "sequential" if sum_op is ops.logaddexp else None
    chain = _ragged_chain(sum_op, *(_as(backend, x) for x in (a, o, LENGTHS)), strategy)
    assert type(chain.trans) is MaskedSteps  # the mask apart from the shared matrix
    i = fc.Tensor(_as(backend, init), {"x": fc.Bint[K]})
    with recorded_choices() as log:
        total = (i + chain).reduce(sum_op, {"x", "y"})
    expected_kernel = "eager_log_filter" if sum_op is ops.logaddexp else "tree"
    assert [c.kernel for c in log if c.kernel] == [expected_kernel]
    actual = ops.to_numpy(total.align(("b",)).data)
    for b, n in enumerate(LENGTHS):
        expected = _red(sum_op)(init[:, None] + _numpy_product(sum_op, a, o[:, b], n), axis=None)
        np.testing.assert_allclose(actual[b], expected, rtol=1e-10)


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_ragged_backward_message(sum_op):
    # chain + final, the last states summed: the backward message over the first states.
    _, a, o = _data(6, len(LENGTHS), seed=1)
    final = np.random.default_rng(2).normal(size=K)
    chain = _ragged_chain(sum_op, a, o, LENGTHS, "sequential")
    msg = (chain + fc.Tensor(final, {"y": fc.Bint[K]})).reduce(sum_op, "y")
    actual = msg.align(("b", "x")).data
    for b, n in enumerate(LENGTHS):
        expected = _red(sum_op)(_numpy_product(sum_op, a, o[:, b], n) + final[None], axis=1)
        np.testing.assert_allclose(actual[b], expected, rtol=1e-10)


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_ragged_product_of_kept_steps(sum_op, strategy):
    # The lazily kept steps evaluated as a whole product: a matrix carry (sequential) or the
    # log-depth tree with identity matrices where masked (parallel).
    _, a, o = _data(6, len(LENGTHS), seed=3)
    steps = _ragged_chain(sum_op, a, o, LENGTHS).trans
    mp = fc.MarkovProduct(sum_op, ops.add, steps, "t", {"x": "y"}, strategy=strategy)
    actual = mp.align(("b", "x", "y")).data
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(actual[b], _numpy_product(sum_op, a, o[:, b], n),
                                   rtol=1e-10)


def test_ragged_filter_gradient_torch():
    # d log Z_b / d o[t, b] is the smoothed marginal of the state after step t for t < n_b,
    # and zero past the length (those observations do not count).
    torch = pytest.importorskip("torch")
    init, a, o = _data(6, len(LENGTHS), seed=4)
    ot = torch.tensor(o, requires_grad=True)
    fc.set_backend("torch")
    try:
        chain = _ragged_chain(ops.logaddexp, torch.tensor(a), ot, torch.tensor(LENGTHS),
                              "sequential")
        total = (fc.Tensor(torch.tensor(init), {"x": fc.Bint[K]}) + chain).reduce(
            ops.logaddexp, {"x", "y"})
        total.data.sum().backward()
    finally:
        fc.set_backend("numpy")
    grad = ot.grad.numpy()
    for b, n in enumerate(LENGTHS):
        alpha, betas = [init], [np.zeros(K)]
        for t in range(n):
            alpha.append(np.logaddexp.reduce(alpha[-1][:, None] + a, axis=0) + o[t, b])
        for t in range(n - 1, -1, -1):
            betas.insert(0, np.logaddexp.reduce(a + (o[t, b] + betas[0])[None], axis=1))
        log_z = np.logaddexp.reduce(alpha[-1])
        for t in range(n):
            np.testing.assert_allclose(grad[t, b], np.exp(alpha[t + 1] + betas[t + 1] - log_z),
                                       rtol=1e-9)
        np.testing.assert_array_equal(grad[n:, b], 0.0)


def test_ragged_filters_under_jit_traced_lengths():
    # The compiled probability-space filter (a carry above INLOOP_CARRY numbers) with traced
    # lengths. (Its in-loop form runs the same masked body: one compile is kept here.)
    jax = pytest.importorskip("jax")
    T = 40
    lengths = (np.array([1, T, 17, 0, 29, 8]),)
    data = [_data(T, len(n), seed=5 + i) for i, n in enumerate(lengths)]

    def totals(*args):
        out = []
        for (init, a, o), n in zip(args[0::2], args[1::2]):
            chain = _ragged_chain(ops.logaddexp, a, o, n, "sequential")
            i = fc.Tensor(init, {"x": fc.Bint[K]})
            out.append((i + chain).reduce(ops.logaddexp, {"x", "y"}).align(("b",)).data)
        return out

    args = []
    for d, n in zip(data, lengths):
        args += [tuple(jax.numpy.asarray(x) for x in d), jax.numpy.asarray(n)]
    fc.set_backend("jax")
    try:
        with recorded_choices() as log:
            out = jax.jit(totals)(*args)
    finally:
        fc.set_backend("numpy")
    assert [c.kernel for c in log if c.kernel] == ["fast_log_filter"]
    for (init, a, o), n, actual in zip(data, lengths, out):
        for b, nb in enumerate(n):
            expected = np.logaddexp.reduce(init[:, None] + _numpy_product(ops.logaddexp, a,
                                                                           o[:, b], nb),
                                           axis=None)
            np.testing.assert_allclose(np.asarray(actual)[b], expected, rtol=1e-10)


def test_renamed_ragged_chain():
    # A lazily kept ragged chain renamed under lazy (its free prev name and its batch name)
    # still evaluates: the renamed pieces are rebuilt into the dense masked steps.
    init, a, o = _data(6, len(LENGTHS), seed=6)
    chain = _ragged_chain(ops.logaddexp, a, o, LENGTHS)
    with lazy:
        renamed = chain(x="u", b="c")
    i = fc.Tensor(init, {"u": fc.Bint[K]})
    actual = (i + renamed).reduce(ops.logaddexp, {"u", "y"}).align(("c",)).data
    for b, n in enumerate(LENGTHS):
        expected = np.logaddexp.reduce(init[:, None] + _numpy_product(ops.logaddexp, a, o[:, b],
                                                                       n), axis=None)
        np.testing.assert_allclose(actual[b], expected, rtol=1e-10)
