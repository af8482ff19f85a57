"""The compiled log-space filter with K exps per step (``scan_log_filter``) against a numpy
forward recursion, and against the exact log-space scan where weights are infinite or NaN."""

import math

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.chains.discrete import chain_product

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m, axis)


def _numpy_filter(left, factors, right):
    # The forward recursion in float64, one step matrix at a time.
    duration = max(f.shape[0] for f in factors)
    alpha = left.astype(np.float64)
    for t in range(duration):
        mat = sum(f[t if f.shape[0] > 1 else 0].astype(np.float64) for f in factors)
        alpha = _logsumexp(alpha[..., :, None] + mat, -2)
    return alpha if right is None else _logsumexp(alpha + right, -1)


def _jax_log_scan(left, a, obs, right):
    # The exact log-space recursion by hand: what the filter must agree with, inf and NaN
    # included.
    def step(alpha, o):
        return jax.nn.logsumexp(alpha[..., :, None] + a[0], axis=-2) + o[..., 0, :], None

    alpha = jax.lax.scan(step, left, obs)[0]
    return alpha if right is None else jax.nn.logsumexp(alpha + right, axis=-1)


def _chain(factors, left, right):
    args = [jnp.asarray(x) for x in factors]
    lt = jnp.asarray(left)
    rt = None if right is None else jnp.asarray(right)
    return np.asarray(chain_product(ops.logaddexp, ops.add, tuple(args), "sequential", lt, rt))


@pytest.mark.parametrize("with_right", [True, False])
@pytest.mark.parametrize("extras", [False, True])
def test_matches_numpy_recursion(with_right, extras):
    rng = np.random.default_rng(0)
    k, b, duration = 3, 2, 9
    factors = [rng.normal(size=(1, 1, k, k)), rng.normal(size=(duration, b, 1, k))]
    if extras:  # a fixed vector over the curr states and a constant per step
        factors += [rng.normal(size=(1, 1, 1, k)), rng.normal(size=(duration, 1, 1, 1))]
    left = rng.normal(size=(b, k))
    right = rng.normal(size=(b, k)) if with_right else None
    np.testing.assert_allclose(_chain(factors, left, right),
                               _numpy_filter(left, factors, right), rtol=1e-12)


def test_adversarial_peaks_stay_exact():
    # Log weights spread over +-600: the shifted matrix's entries reach e^-600 (above the
    # 2 tiny / eps line, so the fast loop runs) and a state far below the carry's maximum
    # becomes the only possible one two steps later; log space keeps its digits.
    k, duration = 3, 40
    rng = np.random.default_rng(1)
    a = rng.uniform(-600.0, 0.0, size=(1, 1, k, k))
    obs = rng.uniform(-600.0, 600.0, size=(duration, 1, 1, k))
    obs[10, 0, 0, 1:] = -math.inf
    left = np.array([[0.0, -650.0, -1300.0]])
    for right in (None, np.array([[0.0, 300.0, -300.0]])):
        np.testing.assert_allclose(_chain([a, obs], left, right),
                                   _numpy_filter(left, [a, obs], right), rtol=1e-12)


def test_near_zero_transitions_go_exact():
    # e^-720 is below the 2 tiny / eps line: the whole chain runs in exact log space, where
    # the unlikely transition still carries the only path (the observation forbids state 0).
    a = np.array([[[[0.0, -720.0], [-720.0, 0.0]]]])
    obs = np.zeros((5, 1, 1, 2))
    obs[2, 0, 0, 0] = -math.inf
    left = np.array([[0.0, -math.inf]])
    expected = _numpy_filter(left, [a, obs], None)
    assert np.isfinite(expected[0, 1])
    np.testing.assert_allclose(_chain([a, obs], left, None), expected, rtol=1e-12)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("where", ["obs", "left", "trans"])
def test_infinite_and_nan_weights_agree_with_exact_scan(value, where):
    rng = np.random.default_rng(2)
    k, duration = 3, 6
    a = rng.normal(size=(1, 1, k, k))
    obs = rng.normal(size=(duration, 1, 1, k))
    left = rng.normal(size=(1, k))
    target = {"obs": obs[3, 0, 0], "left": left[0], "trans": a[0, 0, 1]}[where]
    target[1] = value
    if value == -math.inf and where != "trans":  # also every state of weight zero
        target[:] = value
    for right in (None, rng.normal(size=(1, k))):
        if value == -math.inf and where != "trans":
            assert (_chain([a, obs], left, right) == -math.inf).all()
        expected = np.asarray(_jax_log_scan(*(jnp.asarray(x) for x in (left, a, obs)),
                                            None if right is None else jnp.asarray(right)))
        np.testing.assert_allclose(_chain([a, obs], left, right), expected, rtol=1e-12)


def test_float32_against_float64_recursion():
    rng = np.random.default_rng(3)
    k, duration = 4, 200
    factors = [rng.normal(size=(1, 1, k, k)), 3 * rng.normal(size=(duration, 1, 1, k))]
    left = rng.normal(size=(1, k))
    actual = _chain([f.astype(np.float32) for f in factors], left.astype(np.float32),
                    np.zeros((1, k), np.float32))
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, _numpy_filter(left, factors, np.zeros((1, k))),
                               rtol=1e-5)
