"""Programs under ``jax.jit`` (and ``jax.jit`` of ``jax.grad``) whose parameters are concrete
arrays closed over by the traced function, as users write them.

Inside a jax trace every operation, even on a concrete array, gives a tracer; a check that
reads values must read the concrete array itself, never an array derived from it. Oracles:
closed forms in numpy, the same function run eagerly, and central differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def jax_backend():
    jax.config.update("jax_enable_x64", True)
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


def _agree(f, x):
    """jax.jit(f) equals f run eagerly; jax.jit(jax.grad(f)) equals central differences of
    jax.jit(f) (eager jax.grad would compile op by op: slow, and traced the same way)."""
    compiled = jax.jit(f)
    np.testing.assert_allclose(compiled(x), f(x), rtol=1e-10)
    eps = 1e-5
    numeric = (compiled(x + eps) - compiled(x - eps)) / (2 * eps)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x), numeric, rtol=1e-6)


def test_gaussian_from_closed_over_mean_and_covariance():
    m0, p0 = jnp.array([0.5, -1.0]), jnp.array([[2.0, 0.3], [0.3, 1.0]])

    def f(shift):
        prior = fc.Gaussian(mean=m0, covariance=p0, inputs={"x": fc.Reals[2]})
        lik = fc.Gaussian(mean=jnp.ones(2) * shift, covariance=jnp.eye(2),
                          inputs={"x": fc.Reals[2]})
        return (prior + lik).reduce(ops.logaddexp).data

    _agree(f, 0.7)
    # The oracle: both densities are unnormalized, exp(-0.5 (x - m)' P^-1 (x - m)), so the
    # integral is N(shift * 1; m0, p0 + I) (2 pi)^d |p0|^(1/2).
    cov = np.asarray(p0) + np.eye(2)
    r = 0.7 * np.ones(2) - np.asarray(m0)
    expected = -0.5 * (r @ np.linalg.solve(cov, r) + np.linalg.slogdet(2 * np.pi * cov)[1])
    expected += 2 * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(np.asarray(p0))[1]
    np.testing.assert_allclose(float(jax.jit(f)(0.7)), expected, rtol=1e-10)


def test_kalman_chain_from_closed_over_prior():
    # A MarkovProduct of Gaussian steps contracted with a prior built from closed-over
    # arrays: what a user differentiates in the transition's scale.
    from interpretations import lazy

    rng = np.random.default_rng(0)
    ys = jnp.asarray(rng.normal(size=(6, 1)))
    m0, p0 = jnp.zeros(1), jnp.eye(1)

    def f(a):
        trans = fc.Gaussian(white_vec=jnp.zeros(1), prec_sqrt=jnp.stack([-a * jnp.ones(1),
                                                                        jnp.ones(1)]),
                            inputs={"x_prev": fc.Real, "x_curr": fc.Real})
        obs = fc.Gaussian(white_vec=ys, prec_sqrt=jnp.ones((6, 1, 1)),
                          inputs={"time": fc.Bint[6], "x_curr": fc.Real})
        prior = fc.Gaussian(mean=m0, covariance=p0, inputs={"x_prev": fc.Real})
        step = trans + obs
        with lazy:
            chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, "time", {"x_prev": "x_curr"})
        return (prior + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"}).data

    _agree(f, 0.8)
    # The oracle: a scalar Kalman filter in numpy. The factors are unnormalized (no
    # (2 pi)^(-1/2) each): the prior, six transitions and six observations add 13 halves of
    # log 2 pi (and p0 = 1).
    m, p, total = 0.0, 1.0, 0.0
    for y in np.asarray(ys)[:, 0]:
        m, p = 0.8 * m, 0.64 * p + 1.0
        s = p + 1.0
        total += -0.5 * ((y - m) ** 2 / s + np.log(2 * np.pi * s))
        k = p / s
        m, p = m + k * (y - m), (1 - k) * p
    total += 13 * 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(float(jax.jit(f)(0.8)), total, rtol=1e-10)


def test_distribution_and_delta_from_closed_over_arrays():
    from funsor_core.distribution import Normal

    loc, data = jnp.array([0.3, -0.2]), jnp.array([1.0, 2.0])

    def f(scale):
        d = Normal(fc.Tensor(loc), scale, value=fc.Tensor(data))
        point = fc.Delta("x", fc.Tensor(data)) + fc.Tensor(loc.sum())
        return d.reduce(ops.add).data + point.reduce(ops.logaddexp, "x").data * scale

    _agree(f, 1.3)
