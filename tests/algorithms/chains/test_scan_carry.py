"""A Gaussian + Tensor Kalman step keeps one pytree structure, so ``jax.lax.scan`` runs a
filter whose carry is a funsor; the log likelihood equals a hand-written Kalman filter."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _model(rng, dim=2, steps=6):
    a = rng.normal(size=(dim, dim)) * 0.5
    c = rng.normal(size=(dim, dim))
    q = np.eye(dim) * 0.3
    r = np.eye(dim) * 0.5
    m0, p0 = rng.normal(size=dim), np.eye(dim)
    ys = rng.normal(size=(steps, dim))
    return a, c, q, r, m0, p0, ys


def _numpy_kalman_loglik(a, c, q, r, m0, p0, ys):
    m, p, total = m0, p0, 0.0
    for y in ys:
        m, p = a @ m, a @ p @ a.T + q  # predict
        s = c @ p @ c.T + r
        e = y - c @ m
        total += -0.5 * (e @ np.linalg.solve(s, e) + np.linalg.slogdet(2 * np.pi * s)[1])
        k = p @ c.T @ np.linalg.inv(s)
        m, p = m + k @ e, p - k @ c @ p
    return total


def _normal_const(cov):
    return -0.5 * np.linalg.slogdet(2 * np.pi * cov)[1]


@pytest.fixture
def jax_backend():
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


def test_kalman_carry_scans(jax_backend):
    rng = np.random.default_rng(0)
    a, c, q, r, m0, p0, ys = _model(rng)
    dim = a.shape[0]
    lq = np.linalg.cholesky(np.linalg.inv(q))
    lr = np.linalg.cholesky(np.linalg.inv(r))
    # log N(x; A x_prev, Q): || [x_prev, x] @ [[-A' L], [L]] ||^2 with Q^-1 = L L'.
    trans = fc.Gaussian(white_vec=jnp.zeros(dim), prec_sqrt=jnp.array(np.vstack([-a.T @ lq, lq])),
                        inputs={"x_prev": fc.Reals[dim], "x": fc.Reals[dim]})
    trans_const = _normal_const(q)
    init = (fc.Gaussian(mean=jnp.array(m0), covariance=jnp.array(p0),
                        inputs={"x_prev": fc.Reals[dim]})
            + fc.Tensor(jnp.array(_normal_const(p0))))

    def step(carry, y):
        # log N(y; C x, R) as a function of x: || x @ C' M - y @ M ||^2 with R^-1 = M M'.
        obs = fc.Gaussian(white_vec=y @ jnp.array(lr), prec_sqrt=jnp.array(c.T @ lr),
                          inputs={"x": fc.Reals[dim]})
        new = (carry + trans + obs).reduce(ops.logaddexp, "x_prev")
        return new(x="x_prev") + (trans_const + _normal_const(r)), None

    first, _ = step(init, jnp.array(ys[0]))
    assert jax.tree_util.tree_structure(first) == jax.tree_util.tree_structure(init)
    final, _ = jax.jit(lambda init, ys: jax.lax.scan(step, init, ys))(init, jnp.array(ys))
    loglik = final.reduce(ops.logaddexp, "x_prev")
    expected = _numpy_kalman_loglik(a, c, q, r, m0, p0, ys)
    np.testing.assert_allclose(float(loglik.data), expected, rtol=1e-8)
    # The same steps eagerly, in a Python loop, agree.
    carry = init
    for y in ys:
        carry, _ = step(carry, jnp.array(y))
    np.testing.assert_allclose(float(carry.reduce(ops.logaddexp, "x_prev").data), expected,
                               rtol=1e-8)
