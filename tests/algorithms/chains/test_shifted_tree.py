"""The eager log-space chain tree where one shift per step matrix underflows: HMM steps whose
emissions span more than the dtype's range (Pyro's enumerated HMMs). ``checked_shifted_tree``
and the tree of ``parallel_chain`` against a numpy log-space fold, values and gradients, and
``linear_exp``'s dropped terms against the check that guards them."""

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.chains import discrete_scaled as dt
from funsor_core.algorithms.chains.discrete_tree import (
    checked_shifted_tree,
    linear_exp,
    parallel_chain,
    scaled_log_tree,
)

torch = pytest.importorskip("torch")


def _fold(mats):
    # (T, *batch, K, K) multiplied step by step in log space.
    total = mats[0]
    for m in mats[1:]:
        total = np.logaddexp.reduce(total[..., :, :, None] + m[..., None, :, :], axis=-2)
    return total


def _hmm_steps(rng, duration, k, spread, batch=()):
    # log trans[i, j] + emission_t[j]: columns apart by up to ``spread`` nats, so that
    # exp(step - max(step)) underflows whole columns.
    trans = np.log(0.8 * np.eye(k) + 0.2 / k)
    emit = -spread * rng.uniform(size=(duration, *batch, 1, k))
    return trans + emit


def _to(backend, x):
    return x if backend == "numpy" else torch.tensor(x)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("stop", [1, 2])
def test_shifted_tree_matches_the_fold_where_one_shift_underflows(backend, stop):
    rng = np.random.default_rng(stop)
    for duration, batch in [(3, ()), (9, ()), (30, (2,))]:
        mats = _hmm_steps(rng, duration, 8, 1500.0, batch)
        assert scaled_log_tree(_to(backend, mats), stop) is None  # the case it is for
        left = checked_shifted_tree(_to(backend, mats), stop)
        assert left is not None and len(left) <= stop, duration
        total = left[0]
        for m in left[1:]:
            total = ops.logsumexp(total[..., :, :, None] + m[..., None, :, :], -2)
        np.testing.assert_allclose(np.asarray(total), _fold(mats), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_shifted_tree_declines_true_zeros_and_tiny_products(backend):
    # A left-to-right chain (true zeros) and steps whose products keep only 1e-200 of their
    # largest entry: neither passes the check (the exact tree computes them).
    zeros = np.where(np.triu(np.ones((4, 4))) > 0, 0.0, -np.inf) + np.zeros((6, 1, 1))
    assert checked_shifted_tree(_to(backend, zeros)) is None
    tiny = np.array([[0.0, -460.0], [-460.0, 0.0]]) + np.zeros((4, 1, 1))
    assert checked_shifted_tree(_to(backend, tiny)) is None


def test_dropped_terms_are_below_the_floor_they_guard():
    # Entries below sqrt(tiny) are zeros; a product entry of at least ``floor`` moves by
    # less than eps of itself (here: a kept term of exactly floor beside dropped ones).
    x = np.array([[-400.0, -400.0, 0.0], [-700.0, -1e4, -np.inf]])
    p, floor = linear_exp(x)
    np.testing.assert_array_equal(p, np.where(x >= np.log(np.finfo(float).tiny) / 2,
                                              np.exp(x), 0.0))
    dropped = np.exp(x)[p == 0].sum()
    assert dropped <= np.finfo(float).eps * floor
    p32, floor32 = linear_exp(x.astype(np.float32))  # single precision: the plain exp
    np.testing.assert_array_equal(p32, np.exp(x.astype(np.float32)))
    assert floor32 == np.finfo(np.float32).tiny / np.finfo(np.float32).eps


def test_eager_chain_and_gradient_where_one_shift_underflows():
    # parallel_chain (the eager log-space tree with both boundaries) against torch autograd
    # of the broadcast fold, on steps laid out as Pyro's (x_prev, time, x_curr) permuted.
    rng = np.random.default_rng(3)
    steps = _hmm_steps(rng, 37, 16, 2000.0)
    base = torch.tensor(np.moveaxis(steps, 0, 1), requires_grad=True)
    mats = base.permute(1, 0, 2)
    left = torch.tensor(rng.normal(size=16), requires_grad=True)
    weights = torch.tensor(0.7, dtype=torch.float64)
    expected = mats[0]
    for m in mats[1:]:
        expected = torch.logsumexp(expected[:, :, None] + m[None], dim=-2)
    expected = torch.logsumexp(left[:, None] + expected, (-2, -1))
    grads = torch.autograd.grad(expected * weights, (base, left))
    actual = ops.logsumexp(parallel_chain(ops.logaddexp, ops.add, mats, left, None, True), -1)
    assert torch.allclose(actual, expected.detach(), rtol=1e-12)
    for g, e in zip(torch.autograd.grad(actual * weights, (base, left)), grads):
        assert torch.allclose(g, e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_scaled_tree_skips_only_a_first_round_that_fails(backend, monkeypatch):
    # The bound read before the exps (a row of a left operand or a column of a right one
    # below floor / K) against the first round computed: a skip is a product entry below
    # the floor, and the tree's answer is the one without the bound (None, or the same
    # matrices), for spreads around the double range (log(tiny / eps) ~ -672 nats).
    rng = np.random.default_rng(5)
    skipped = 0
    for spread in [0.0, 10.0, 250.0, 320.0, 400.0, 700.0, 1500.0]:
        for duration, transpose in [(2, False), (5, True), (8, False)]:
            mats = _hmm_steps(rng, duration, 4, spread)
            if transpose:  # emissions over the previous state: the rows span the range
                mats = np.swapaxes(mats, -1, -2).copy()
            c = mats.max(axis=(-2, -1), keepdims=True)
            p, floor = linear_exp(mats - c)
            n = duration - duration % 2
            first = np.min(p[0:n:2] @ p[1:n:2])
            if dt._first_round_fails(_to(backend, mats), _to(backend, c), floor):
                skipped += 1
                assert first < floor, (spread, duration)
            got = scaled_log_tree(_to(backend, mats))
            with monkeypatch.context() as m:
                m.setattr(dt, "_first_round_fails", lambda *a: False)
                want = scaled_log_tree(_to(backend, mats))
            assert (got is None) == (want is None), (spread, duration)
            if got is not None:
                np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]),
                                           rtol=0, atol=0)
                np.testing.assert_allclose(np.asarray(got[0]), _fold(mats), rtol=1e-10)
    assert skipped >= 6  # the wide spreads are decided before the exps


@pytest.mark.parametrize("low", [-30.0, -700.0])
def test_linear_exp_value_and_gradient_with_and_without_a_cut(low):
    # Nothing below sqrt(tiny) (-30): the plain exp, read once; entries below it (-700): the
    # cut. Either way torch's value and derivative are exp's where kept, 0 where cut.
    x = torch.tensor(np.linspace(low, 0.0, 24).reshape(2, 3, 4), requires_grad=True)
    p, _ = linear_exp(x)
    (grad,) = torch.autograd.grad((p * torch.arange(24.0).reshape(2, 3, 4)).sum(), x)
    kept = x.detach().numpy() >= np.log(np.finfo(float).tiny) / 2
    assert kept.all() == (low > -100)
    expected = np.where(kept, np.exp(x.detach().numpy()), 0.0)
    # torch's vectorized exp and numpy's may differ in the last bit (a CPU's SIMD kernel);
    # the cut entries are exact zeros either way.
    np.testing.assert_array_max_ulp(p.detach().numpy(), expected, maxulp=1)
    assert (p.detach().numpy()[~kept] == 0).all()
    np.testing.assert_allclose(grad.numpy(), expected * np.arange(24.0).reshape(2, 3, 4),
                               rtol=1e-15)
