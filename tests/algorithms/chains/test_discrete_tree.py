"""``scan_tree.scaled_log_chain``: the eager log-space chain with its boundary vectors, in
linear space, against a numpy log-space fold, and its fallbacks (None) where digits could be
lost."""

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_tree import scaled_log_chain

torch = pytest.importorskip("torch")


def _fold(mats, left, right):
    # The log-space product of (T, *batch, K, K) step by step, boundaries summed out.
    lse = np.logaddexp.reduce
    total = mats[0]
    for m in mats[1:]:
        total = lse(total[..., :, :, None] + m[..., None, :, :], axis=-2)
    if left is not None:
        total = lse(left[..., :, None] + total, axis=-2)
        return total if right is None else lse(total + right, axis=-1)
    return lse(total + right[..., None, :], axis=-1)


def _to(backend, x):
    return None if x is None else (x if backend == "numpy" else torch.tensor(x))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("sides", ["left", "right", "both"])
@pytest.mark.parametrize("layout", ["flat", "batched", "broadcast"])
def test_chain_matches_the_log_space_fold(backend, sides, layout):
    # Every T from 1 to 40 (odd rounds, rounds that set a matrix aside, no round at all),
    # with steps scaled so that a log-space peak of hundreds separates states and steps.
    rng = np.random.default_rng(len(sides) + 3 * len(layout))
    k, b = 3, 4
    mat_batch, side_batch = {"flat": ((), (1,)), "batched": ((b,), (b,)),
                             "broadcast": ((1,), (b,))}[layout]
    for duration in range(1, 41):
        mats = rng.normal(scale=4.0, size=(duration,) + mat_batch + (k, k))
        mats += rng.normal(scale=300.0, size=(duration,) + mat_batch + (1, 1))
        left = rng.normal(scale=5.0, size=side_batch + (k,)) + 200.0
        right = rng.normal(scale=5.0, size=side_batch + (k,)) - 400.0
        left = left if sides != "right" else None
        right = right if sides != "left" else None
        actual = scaled_log_chain(_to(backend, mats), _to(backend, left), _to(backend, right))
        expected = _fold(mats, left, right)
        assert actual is not None, duration
        assert tuple(actual.shape) == expected.shape, duration
        np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_chain_declines_where_digits_could_be_lost(backend):
    rng = np.random.default_rng(0)
    mats = rng.normal(size=(30, 1, 3, 3))
    left, right = np.zeros((1, 3)), np.zeros((1, 3))
    assert scaled_log_chain(_to(backend, mats), _to(backend, left), _to(backend, right)) \
        is not None
    zeros = np.where(np.triu(np.ones((3, 3))) > 0, mats, -np.inf)  # no way back: products
    lost = mats.copy()
    lost[::2, :, 0, :] -= 1000.0  # exp(-1000) underflows: the shifted products lose digits
    lost[1::2, :, :, 0] -= 1000.0
    nan = mats.copy()
    nan[17, 0, 2, 1] = np.nan
    for bad in (zeros, lost, nan):
        assert scaled_log_chain(_to(backend, bad), _to(backend, left), _to(backend, right)) \
            is None
    sparse = mats.copy()
    sparse[::3, :, 0, 2] = -np.inf  # zeros whose products have none: exact, kept
    actual = scaled_log_chain(_to(backend, sparse), _to(backend, left), _to(backend, right))
    np.testing.assert_allclose(np.asarray(actual), _fold(sparse, left, right), rtol=1e-12)
    # Boundaries: -inf entries are exact zeros (a start state ruled out), not a lost digit;
    # an all -inf boundary, +inf or NaN go to the exact computation.
    start = np.array([[0.0, -np.inf, -np.inf]])
    actual = scaled_log_chain(_to(backend, mats), _to(backend, start), _to(backend, right))
    np.testing.assert_allclose(np.asarray(actual), _fold(mats, start, right), rtol=1e-12)
    for bad in ([[-np.inf] * 3], [[0.0, np.inf, 0.0]], [[0.0, np.nan, 0.0]]):
        bad = np.array(bad)
        assert scaled_log_chain(_to(backend, mats), _to(backend, bad), None) is None
        assert scaled_log_chain(_to(backend, mats), _to(backend, left), _to(backend, bad)) \
            is None


def test_chain_gradients_match_the_log_space_fold():
    rng = np.random.default_rng(1)
    mats, left, right = (torch.tensor(x, requires_grad=True) for x in (
        rng.normal(scale=3.0, size=(37, 2, 4, 4)), rng.normal(size=(2, 4)),
        rng.normal(size=(2, 4))))
    expected = mats[0]
    for m in mats[1:]:
        expected = torch.logsumexp(expected[..., :, :, None] + m[..., None, :, :], dim=-2)
    expected = torch.logsumexp(left[..., :, None] + expected + right[..., None, :], (-2, -1))
    weights = torch.tensor([0.3, -1.7], dtype=torch.float64)
    grads = torch.autograd.grad((expected * weights).sum(), (mats, left, right))
    actual = scaled_log_chain(mats, left, right)
    assert torch.allclose(actual, expected.detach(), rtol=1e-12)
    for g, e in zip(torch.autograd.grad((actual * weights).sum(), (mats, left, right)), grads):
        assert torch.allclose(g, e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_chain_in_single_precision(backend):
    rng = np.random.default_rng(2)
    mats = rng.normal(scale=2.0, size=(100, 1, 4, 4)) + rng.normal(scale=30.0,
                                                                   size=(100, 1, 1, 1))
    left = rng.normal(size=(1, 4))
    expected = _fold(mats, left, None)
    actual = scaled_log_chain(_to(backend, mats.astype(np.float32)),
                              _to(backend, left.astype(np.float32)), None)
    assert actual is not None and actual.dtype == _to(backend, np.float32(0)).dtype
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-5)
    assert ops.is_concrete(actual)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["flat", "batched"])
def test_unit_boundary_sums_its_states(backend, layout):
    # UNIT: the states of a boundary summed with no factor, as a vector of zeros (log 1).
    from funsor_core.algorithms.chains.discrete_tree import UNIT

    rng = np.random.default_rng(7)
    batch = () if layout == "flat" else (3,)
    zeros = np.zeros(batch + (4,))
    for duration in (1, 2, 9, 23):
        mats = rng.normal(scale=3.0, size=(duration,) + batch + (4, 4))
        side = rng.normal(size=batch + (4,))
        for left, right, lt, rt in [(UNIT, None, zeros, None), (None, UNIT, None, zeros),
                                    (UNIT, UNIT, zeros, zeros), (side, UNIT, side, zeros),
                                    (UNIT, side, zeros, side)]:
            actual = scaled_log_chain(_to(backend, mats),
                                      left if left is UNIT else _to(backend, left),
                                      right if right is UNIT else _to(backend, right))
            expected = _fold(mats, lt, rt)
            assert tuple(actual.shape) == expected.shape
            np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_chain_product_with_unit_boundaries(backend, strategy):
    # Every strategy and backend takes UNIT; where the linear-space chain declines (true
    # zeros), the exact tree gets an array of units.
    from funsor_core.algorithms.chains.discrete import chain_product
    from funsor_core.algorithms.chains.discrete_tree import UNIT

    if backend == "jax":
        jnp = pytest.importorskip("jax.numpy")
        to = jnp.asarray
    else:
        to = (lambda x: x) if backend == "numpy" else torch.tensor
    rng = np.random.default_rng(8)
    trans = rng.normal(size=(3, 3))
    triangular = np.where(np.triu(np.ones((3, 3))) > 0, trans, -np.inf)
    for a in (trans, triangular):
        obs = rng.normal(size=(13, 2, 3))
        left = rng.normal(size=(2, 3))
        factors = (to(a[None, None]), to(obs[:, :, None, :]))
        mats = a + obs[:, :, None, :]
        with np.errstate(invalid="ignore"):
            for lt, rt, elt, ert in [(to(left), UNIT, left, np.zeros((2, 3))),
                                     (UNIT, None, np.zeros((2, 3)), None),
                                     (UNIT, UNIT, np.zeros((2, 3)), np.zeros((2, 3)))]:
                actual = np.asarray(chain_product(ops.logaddexp, ops.add, factors, strategy,
                                                  lt, rt))
                expected = _fold(mats, elt, ert)
                assert actual.shape == expected.shape
                np.testing.assert_allclose(actual, expected, rtol=1e-10)


def test_long_compiled_filter_differentiates_through_the_tree():
    # K = 3, one sequence, T = 4,096: the values come from the compiled filter, the
    # derivatives (reverse and forward mode) from the log-depth tree; both against a plain
    # log-space scan.
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from funsor_core.algorithms.chains.discrete import chain_product

    rng = np.random.default_rng(9)
    trans = jnp.asarray(rng.normal(size=(1, 1, 3, 3)))
    obs = jnp.asarray(rng.normal(scale=2.0, size=(4096, 1, 1, 3)))
    left, right = jnp.asarray(rng.normal(size=(1, 3))), jnp.asarray(rng.normal(size=(1, 3)))

    def library(a, o):
        return chain_product(ops.logaddexp, ops.add, (a, o), "sequential", left, right).sum()

    def oracle(a, o):
        def step(v, ot):
            return jax.nn.logsumexp(v[:, :, None] + a[0] + ot[0], axis=-2), None
        v, _ = jax.lax.scan(step, left, o)
        return jax.nn.logsumexp(v + right, axis=-1).sum()

    value, grads = jax.jit(jax.value_and_grad(library, (0, 1)))(trans, obs)
    value0, grads0 = jax.jit(jax.value_and_grad(oracle, (0, 1)))(trans, obs)
    np.testing.assert_allclose(value, value0, rtol=1e-11)
    for g, g0 in zip(grads, grads0):
        np.testing.assert_allclose(g, g0, rtol=1e-8, atol=1e-10)
    tangent = (jnp.ones_like(trans), jnp.asarray(rng.normal(size=obs.shape)))
    _, jvp = jax.jit(lambda a, o: jax.jvp(library, (a, o), tangent))(trans, obs)
    _, jvp0 = jax.jit(lambda a, o: jax.jvp(oracle, (a, o), tangent))(trans, obs)
    np.testing.assert_allclose(jvp, jvp0, rtol=1e-8)
