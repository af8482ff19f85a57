"""Adversarial numerics of Normal -> Gaussian (h42): the dtype of a float32 scale is kept
eagerly as under jax.jit, and a float32 Kalman likelihood matches a float64 filter."""
import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from funsor_core.sum_product import MarkovProduct

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _kalman_log_likelihood(y, obs_sd):
    # float64 scalar Kalman filter of x_t = x_{t-1} + N(0, 1), y_t = x_t + N(0, obs_sd^2)
    m, p, ll = 0.0, 1.0, 0.0
    for yt in y:
        p += 1.0
        s = p + obs_sd ** 2
        ll += -0.5 * (np.log(2 * np.pi * s) + (yt - m) ** 2 / s)
        k = p / s
        m, p = m + k * (yt - m), (1 - k) * p
    return ll


def _log_z(y, obs_sd):
    f32 = lambda a: jnp.asarray(np.float32(a))  # noqa: E731
    x_prev, x_curr = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    obs = fc.Tensor(y, {"t": fc.Bint[y.shape[0]]})
    step = Normal(x_prev, f32(1.0), x_curr) + Normal(x_curr, f32(obs_sd), obs)
    chain = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr"})
    prior = Normal(f32(0.0), f32(1.0), x_prev)
    return (prior + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"}).data


def test_float32_scale_keeps_dtype_eager_and_jit():
    old = fc.get_backend()
    fc.set_backend("jax")
    try:
        rng = np.random.default_rng(7)
        T, obs_sd = 64, 1e-3  # nearly noiseless readings: precision 1e6 per step
        y = np.cumsum(rng.standard_normal(T)) + obs_sd * rng.standard_normal(T)
        x, z = fc.Variable("x", fc.Real), fc.Variable("z", fc.Real)
        d = Normal(x, jnp.asarray(np.float32(2.0)), z)
        assert all(getattr(t, "data", getattr(t, "prec_sqrt", None)).dtype == np.float32
                   for t in d.terms)
        yj = jnp.asarray(y.astype(np.float32))
        eager = _log_z(yj, obs_sd)
        jitted = jax.jit(lambda a: _log_z(a, obs_sd))(yj)
        assert eager.dtype == jitted.dtype == np.float32
        expected = _kalman_log_likelihood(y.astype(np.float32).astype(np.float64), obs_sd)
        # float32 with step precisions 1 and 1e6: each update is exact to about
        # cond * eps = 1e6 * 6e-8 of the unit-scale state; 1e-4 relative over 64 steps
        assert abs(float(eager) - expected) <= 1e-4 * abs(expected)
        assert abs(float(jitted) - float(eager)) <= 1e-4 * abs(expected)
    finally:
        fc.set_backend(old)
