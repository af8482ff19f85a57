"""Gaussians compute 16-bit data in float32: a float16 or bfloat16 parameter of a Gaussian,
or of a Normal or MultivariateNormal whose value is a real variable (which makes it a
Gaussian), is widened to float32 when the term is built, on every backend, eagerly and
under ``jax.jit`` alike (dtypes are static). Oracles: closed-form densities in float64 of
the 16-bit-rounded inputs, and a Kalman model's evidence as one multivariate normal."""
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import MultivariateNormal, Normal
from funsor_core.sum_product import MarkovProduct
from tests.backends.test_low_precision_linalg import CASES, _host
from tests.backends.test_low_precision_linalg import _array as _backend_array

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy


def _array(backend, dtype, x):
    return _backend_array(backend, dtype, np.asarray(x, dtype=np.float64))


def _wide(data):
    return "float32" in str(data.dtype) or "float64" in str(data.dtype)


@pytest.mark.parametrize("backend,dtype", CASES)
def test_sixteen_bit_gaussians_compute_in_float32(backend, dtype):
    fc.set_backend(backend)
    try:
        mean = _array(backend, dtype, [0.3, -1.1])
        cov = _array(backend, dtype, [[2.0, 0.3], [0.3, 0.7]])
        point = np.array([0.2, 0.4])
        m64, c64 = _host(mean), _host(cov)
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={"x": fc.Reals[2]})
        got = g(x=_array(backend, "float32", point)).data
        # A Gaussian(mean, covariance) is the unnormalized exp(-(x - m)' C^-1 (x - m) / 2).
        diff = point - m64
        expected = -0.5 * diff @ np.linalg.solve(c64, diff)
        assert _wide(got) and abs(float(got) - expected) < 1e-5
        total = g.reduce(ops.logaddexp).data  # its integral: (2 pi)^(k/2) |C|^(1/2)
        expected = np.log(2 * np.pi) + 0.5 * np.log(np.linalg.det(c64))
        assert _wide(total) and abs(float(total) - expected) < 1e-5
        y, x = fc.Variable("y", fc.Real), fc.Variable("x", fc.Reals[2])
        scale = _array(backend, dtype, 0.7)
        got = Normal(fc.Tensor(mean)[0], fc.Tensor(scale), y)(y=1.5).data
        s64 = float(_host(scale))
        expected = (-0.5 * ((1.5 - m64[0]) / s64) ** 2 - np.log(s64) - 0.5 * np.log(2 * np.pi))
        assert _wide(got) and abs(float(got) - expected) < 1e-5
        tril = _array(backend, dtype, [[1.2, 0.0], [0.4, 0.9]])
        got = MultivariateNormal(fc.Tensor(mean), fc.Tensor(tril), x)(
            x=_array(backend, "float32", point)).data
        t64 = _host(tril)
        expected = multivariate_normal(m64, t64 @ t64.T).logpdf(point)
        assert _wide(got) and abs(float(got) - expected) < 1e-5
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend,dtype", [("numpy", "float16"), ("torch", "float16"),
                                           ("torch", "bfloat16")])
def test_kalman_model_of_sixteen_bit_observations(backend, dtype):
    # The README's random walk with Python-number scales and 16-bit readings: log p(y)
    # against y ~ N(0, S) in float64 on the rounded readings, S_st = 2 + min(s, t) + 0.25 [s=t].
    fc.set_backend(backend)
    try:
        t = 12
        readings = _array(backend, dtype, np.random.default_rng(3).normal(size=t).cumsum())
        x_prev, x_curr = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
        y = fc.Tensor(readings, {"t": fc.Bint[t]})
        walk = Normal(x_prev, 1.0, x_curr) + Normal(x_curr, 0.5, y)
        chain = MarkovProduct(ops.logaddexp, ops.add, walk, "t", {"x_prev": "x_curr"})
        got = (Normal(0.0, 1.0, x_prev) + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
        steps = np.arange(t)
        cov = 2.0 + np.minimum.outer(steps, steps) + 0.25 * np.eye(t)
        expected = multivariate_normal(np.zeros(t), cov).logpdf(_host(readings))
        assert _wide(got.data) and abs(float(got.data) - expected) < 1e-4
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_widened_under_jit_as_eagerly(dtype):
    fc.set_backend("jax")
    try:
        y = fc.Variable("y", fc.Real)

        def density(s):
            return Normal(0.0, fc.Tensor(s), y)(y=1.0).data

        s = jnp.asarray(0.5, dtype)
        eager, jitted = density(s), jax.jit(density)(s)
        s64 = float(np.float32(s))
        expected = -0.5 / s64 ** 2 - np.log(s64) - 0.5 * np.log(2 * np.pi)
        assert jitted.dtype == eager.dtype and _wide(jitted)
        assert abs(float(jitted) - expected) < 1e-5 and abs(float(eager) - expected) < 1e-5
    finally:
        fc.set_backend("numpy")


def test_float32_parameters_keep_their_dtype(backend):
    mean = _array(backend, "float32", [0.5])
    y = fc.Variable("y", fc.Real)
    g = Normal(fc.Tensor(mean)[0], fc.Tensor(_array(backend, "float32", 2.0)), y)
    got = g(y=1.5).data
    assert "float32" in str(got.dtype)
    expected = -0.5 * 0.5 ** 2 - np.log(2.0) - 0.5 * np.log(2 * np.pi)
    assert abs(float(got) - expected) < 1e-6
