"""``normalized_log_tree`` (the log-space tree of a float32 chain) shifts its steps and then
its products only every ``SHIFT_ROUNDS`` rounds: the relative entries of the product stay as
precise as float32 allows on long chains with a large common offset, against a float64 tree
of the same float32 inputs (a plain float32 tree loses them)."""
import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.chains import discrete_tree as dt


def _tree64(mats, semiring):
    m = mats.astype(np.float64)
    while m.shape[0] > 1:
        n = m.shape[0]
        end = n - 1 if n % 2 else n
        x = m[0:end:2, :, :, None] + m[1:end:2, None, :, :]
        q = x.max(2) if semiring == "max" else np.logaddexp.reduce(x, 2)
        m = np.concatenate([q, m[n - 1:]]) if n % 2 else q
    return m[0]


@pytest.mark.parametrize("semiring", ["max", "logaddexp"])
@pytest.mark.parametrize("T", [7, 1000])
def test_normalized_log_tree_float32_long_chain(semiring, T):
    rng = np.random.default_rng(T)
    mats = (-1e4 + 3 * rng.normal(size=(T, 4, 4))).astype(np.float32)
    sum_op = ops.max if semiring == "max" else ops.logaddexp
    expected = _tree64(mats, semiring)
    rest, shift = dt.normalized_log_tree(sum_op, mats)
    assert rest.shape == (1, 4, 4) and shift.shape == (1, 1, 1) and rest.dtype == np.float32
    got = rest[0].astype(np.float64)
    # what Viterbi and marginals read: the entries relative to each other
    assert np.abs((got - got.max()) - (expected - expected.max())).max() < 1e-4
    # the total, to float32's rounding of its magnitude
    np.testing.assert_allclose(got + float(shift[0, 0, 0]), expected, rtol=1e-6)
    if T == 1000:  # the plain float32 tree, whose entries reach -1e7, has lost those digits
        plain = dt.log_tree(sum_op, ops.add, mats)[0][0].astype(np.float64)
        assert np.abs((plain - plain.max()) - (expected - expected.max())).max() > 0.1


def test_normalized_log_tree_keeps_all_minus_inf_steps_and_stops_at_two():
    rng = np.random.default_rng(0)
    mats = rng.normal(size=(9, 3, 3)) - 50.0
    mats[4] = -np.inf
    mats[6, 1] = -np.inf
    rest, shift = dt.normalized_log_tree(ops.logaddexp, mats, stop=2)
    assert rest.shape == (2, 3, 3)
    got = np.logaddexp.reduce(rest[0][:, :, None] + rest[1][None, :, :], 1) + shift[0]
    assert np.isneginf(got).all() and np.isneginf(_tree64(mats, "logaddexp")).all()
    mats[4] = rng.normal(size=(3, 3))
    rest, shift = dt.normalized_log_tree(ops.logaddexp, mats, stop=2)
    got = np.logaddexp.reduce(rest[0][:, :, None] + rest[1][None, :, :], 1) + shift[0]
    np.testing.assert_allclose(got, _tree64(mats, "logaddexp"), rtol=1e-12)
