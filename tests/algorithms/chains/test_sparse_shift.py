"""Eager float32 sequential chains shift each step's factors once, before the loop, and
their carry only every few steps (h80; ``discrete_precision.preshifted``): values against a
float64 numpy forward recursion in all four boundary forms (ragged or not, T not a multiple
of the period), and the digits the derivative reads (Viterbi paths, pair marginals) of long
chains with steps near -1e4 against float64 numpy Viterbi and forward-backward. The values
also compiled (jax: the carry shifted every step, its shift a column of a vector carry)."""

import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import recorded_choices
from funsor_core.algorithms.chains.discrete import chain_product
from funsor_core.algorithms.chains.discrete_precision import MAX_PERIOD
from funsor_core.sum_product import markov_map, markov_marginals

K = 3
with np.errstate(divide="ignore"):  # left-to-right-and-wrap: true zeros, rows that die
    TRANS = np.log(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))


def _reduce(sum_op, x, axis):
    m = x.max(axis, keepdims=True)
    if sum_op is ops.max:
        return np.squeeze(m, axis)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(np.log(np.exp(x - m).sum(axis, keepdims=True)) + m, axis)


def _forward64(sum_op, steps, mask, left, right):
    # float64 oracle: the semiring product of steps (T, B, K, K), masked steps the identity.
    eye = np.where(np.eye(K) > 0, 0.0, -np.inf)
    acc = np.broadcast_to(eye, steps.shape[1:]).copy()
    for t, m in enumerate(steps):
        new = _reduce(sum_op, acc[..., :, :, None] + m[..., None, :, :], -2)
        acc = np.where(mask[t][:, None, None], new, acc)
    if left is not None:
        acc = _reduce(sum_op, left[..., :, None] + acc, -2)
    if right is not None:
        acc = _reduce(sum_op, acc + right[..., None, :] if left is None else acc + right, -1)
    return acc


def _inputs(t_len, rng):
    obs = (rng.normal(size=(t_len, 2, 1, K)) - 1e4).astype(np.float32)  # over curr states
    prev = (rng.normal(size=(t_len, 2, K, 1)) - 1e4).astype(np.float32)  # over prev states
    trans = TRANS[None, None].astype(np.float32)
    lengths = np.array([t_len, t_len - 9])
    mask = np.arange(t_len)[:, None] < lengths
    ends = rng.normal(size=(2, 2, K)).astype(np.float32)
    return (trans, obs, prev), mask, ends


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("sum_op", [ops.max, ops.logaddexp], ids=["max", "logaddexp"])
@pytest.mark.parametrize("ragged", [False, True])
def test_float32_sequential_values_in_every_boundary_form(backend, sum_op, ragged):
    t_len = 3 * MAX_PERIOD + 5  # shifts, and a remainder after
    factors, mask, (left, right) = _inputs(t_len, np.random.default_rng(1))
    if not ragged:
        mask = np.ones_like(mask)
    steps = sum(f.astype(np.float64) for f in factors)
    conv = {"numpy": np.asarray, "torch": torch.tensor, "jax": _jax_array}[backend]
    for lt, rt in ((left, right), (left, None), (None, right), (None, None)):
        expected = _forward64(sum_op, steps, mask, lt, rt)
        with recorded_choices() as log:
            actual = chain_product(sum_op, ops.add, tuple(conv(f) for f in factors),
                                   "sequential", None if lt is None else conv(lt),
                                   None if rt is None else conv(rt),
                                   mask=conv(mask) if ragged else None)
        assert log[-1].kernel == "sequential"
        actual = np.asarray(actual, dtype=np.float64)
        assert actual.shape == expected.shape
        # the value's own float32 rounding (near -2e4 T): a few ulps of its magnitude; a
        # masked step's shift counted (or a step's lost) would be off by 1e4
        scale = np.abs(expected[np.isfinite(expected)]).max()
        np.testing.assert_allclose(actual, expected, rtol=0, atol=4e-6 * scale)
        assert (np.isneginf(actual) == np.isneginf(expected)).all()


def _jax_array(x):
    return pytest.importorskip("jax").numpy.asarray(x)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_float32_sequential_empty_batch(backend):
    # an empty batch has no range to read: the value is the oracle's, empty
    factors, mask, (left, right) = _inputs(5, np.random.default_rng(2))
    factors = tuple(f[:, :0] if f.shape[1] > 1 else f for f in factors)
    expected = _forward64(ops.max, sum(f.astype(np.float64) for f in factors), mask[:, :0],
                          left[:0], right[:0])
    conv = np.asarray if backend == "numpy" else torch.tensor
    actual = chain_product(ops.max, ops.add, tuple(conv(f) for f in factors), "sequential",
                           conv(left[:0]), conv(right[:0]))
    assert np.asarray(actual).shape == expected.shape == (0,)


def _viterbi64(steps, init):
    delta, ptrs = init.astype(np.float64), []
    for m in steps.astype(np.float64):
        d = delta[:, None] + m
        ptrs.append(d.argmax(0))
        delta = d.max(0)
    path = [int(delta.argmax())]
    for p in ptrs[::-1]:
        path.insert(0, int(p[path[0]]))
    return path


def _pairs64(steps, init):
    steps = steps.astype(np.float64)
    alpha, back = [init.astype(np.float64)], [np.zeros(K)]
    for m in steps:
        alpha.append(_reduce(ops.logaddexp, alpha[-1][:, None] + m, 0))
    for m in steps[::-1]:
        back.insert(0, _reduce(ops.logaddexp, m + back[0][None], 1))
    z = _reduce(ops.logaddexp, alpha[-1], 0)
    return np.exp(np.stack(alpha[:-1])[:, :, None] + steps + np.stack(back[1:])[:, None] - z)


def _marginals_and_path(init, trans, obs, prev):
    from interpretations import lazy

    t_len = obs.shape[0]
    fc.set_backend("torch")
    try:
        i = fc.Tensor(torch.tensor(init), {"x": fc.Bint[K]})
        with lazy:  # the factors stay apart
            step = (fc.Tensor(torch.tensor(trans), {"x": fc.Bint[K], "y": fc.Bint[K]})
                    + fc.Tensor(torch.tensor(obs), {"t": fc.Bint[t_len], "y": fc.Bint[K]})
                    + fc.Tensor(torch.tensor(prev), {"t": fc.Bint[t_len], "x": fc.Bint[K]}))
        with recorded_choices() as log:
            _, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                        strategy="sequential")
            _, path = markov_map(step, "t", {"x": "y"}, [i], strategy="sequential")
    finally:
        fc.set_backend("numpy")
    assert {c.kernel for c in log if c.kernel is not None} == {"sequential"}
    return pairs.align(("t", "x", "y")).data.double().numpy(), path["x"].data.tolist()


def test_float32_carry_falling_fast_is_shifted_every_step():
    # Shifted steps whose best continuation lies 1e3 below their maximum (the prev factor
    # peaks at state 2, the curr factor at states 0 and 1): the carry falls by 1e3 a step,
    # so the period follows the steps' range and is 1 here: pairs off by 6e-5 (shifted every
    # 16 steps, the carry near -1.6e4, they were off by 1.4e-3).
    t_len = 120
    rng = np.random.default_rng(3)
    obs = (np.array([0.0, 0.0, -1e3]) + rng.normal(size=(t_len, K))).astype(np.float32)
    prev = (np.array([-1e3, -1e3, 0.0]) + rng.normal(size=(t_len, K))).astype(np.float32)
    trans, init = np.zeros((K, K), np.float32), np.zeros(K, np.float32)
    steps = obs[:, None, :].astype(np.float64) + prev[:, :, None]
    pairs, path = _marginals_and_path(init, trans, obs, prev)
    assert path == _viterbi64(steps, init)
    # float32 sums near 1e3 (the unshifted steps' own magnitude), a few per step
    np.testing.assert_allclose(pairs, _pairs64(steps, init), atol=3e-4)


def test_float32_long_chain_with_prev_factor_keeps_its_digits():
    # T = 250 steps near -2e4 (a factor over the prev and one over the curr states, so the
    # sequential kernel runs, not a filter), built lazily so that the factors stay apart:
    # each is shifted exactly (its entries within a factor 2 of its maximum), and the carry,
    # shifted every few steps only, keeps the best path and the pair marginals to float32's
    # rounding of numbers near 1 (1.5e-6 measured; a carry shifted each step, the steps
    # unshifted, rounds sums near -2e4: 2e-3).
    t_len = 250
    rng = np.random.default_rng(7)
    obs = (rng.normal(size=(t_len, K)) - 1e4).astype(np.float32)
    prev = (rng.normal(size=(t_len, K)) - 1e4).astype(np.float32)
    init = np.log(np.full(K, 1.0 / K)).astype(np.float32)
    # the oracle's steps: float32 inputs, each step's common offset taken out in float64
    steps = (TRANS[None] + (obs - obs.max(1, keepdims=True))[:, None, :].astype(np.float64)
             + (prev - prev.max(1, keepdims=True))[:, :, None].astype(np.float64))
    pairs, path = _marginals_and_path(init, TRANS.astype(np.float32), obs, prev)
    assert path == _viterbi64(steps, init)
    np.testing.assert_allclose(pairs, _pairs64(steps, init), atol=1e-4)
