"""The special functions behind the distributions' densities: the numpy-only kernels (used
where scipy is not installed) against scipy, and the ops on Python numbers."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import backends.numpy as numpy_backend
from funsor_core import ops


def _points(rng):
    return np.concatenate([
        rng.uniform(-30, 30, 400), rng.uniform(0, 3, 400), np.exp(rng.uniform(-20, 40, 200)),
        [0.5, 1.0, 2.0, 3.0, -0.5, -2.5, 1e-8, 1e-300, 171.5, 1e300]])


@pytest.mark.parametrize("ours, oracle", [
    (numpy_backend.lgamma_numpy, sp.gammaln), (numpy_backend.digamma_numpy, sp.psi)])
def test_numpy_only_gamma_functions_match_scipy(ours, oracle):
    x = _points(np.random.default_rng(0))
    x = x[np.abs(x - np.round(x)) > 1e-3 * (x < 0)]  # away from the poles at -1, -2, ...
    expected = oracle(x)
    np.testing.assert_allclose(ours(x), expected, rtol=1e-12, atol=1e-11)
    poles = np.array([0.0, -1.0, -3.0, np.inf])
    np.testing.assert_array_equal(np.isposinf(numpy_backend.lgamma_numpy(poles)),
                                  np.isposinf(sp.gammaln(poles)))
    assert ours(np.float32(2.5)).dtype == np.float32


def test_numpy_only_i0e_matches_scipy():
    x = np.concatenate([np.random.default_rng(1).uniform(-900, 900, 500), [0.0, 699.9, 700.1]])
    np.testing.assert_allclose(numpy_backend.i0e_numpy(x), sp.i0e(x), rtol=1e-13)


def test_kernels_without_scipy_use_numpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # import scipy.special fails
    x = np.array([0.3, 2.0, 7.5])
    for op, oracle in [(ops.lgamma, sp.gammaln), (ops.digamma, sp.psi), (ops.i0e, sp.i0e)]:
        kernel = numpy_backend._special_kernel(op)
        np.testing.assert_allclose(kernel(x), oracle(x), rtol=1e-12)
    xlogy = numpy_backend._special_kernel(ops.xlogy)
    np.testing.assert_array_equal(xlogy(np.array([0.0, 2.0]), np.array([0.0, np.e])),
                                  [0.0, 2.0])
    betaln = numpy_backend._special_kernel(ops.betaln)
    np.testing.assert_allclose(betaln(x, x[::-1]), sp.betaln(x, x[::-1]), rtol=1e-12)


def _cancelling_betaln_cases():
    # B(1, y) = 1/y, B(2, y) = 1/(y (y + 1)), B(3, 9) = 2! 8! / 11!: lgamma(x) + lgamma(y)
    # - lgamma(x + y) loses |lgamma(y)| * eps (~3e-3 at y = 1e12) to cancellation.
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1e12, 1e9, 9.0])
    return x, y, [-np.log(1e12), -np.log(1e9) - np.log1p(1e9), -np.log(9 * 10 * 11 / 2)]


def test_betaln_where_the_lgammas_cancel():
    x, y, expected = _cancelling_betaln_cases()
    np.testing.assert_allclose(ops.betaln(x, y), expected, rtol=1e-13)


def test_jax_betaln_rounds_as_numpyro_in_float32_and_stays_exact_in_float64():
    # NumPyro's test_collapse_beta_binomial compares a collapsed Beta-Binomial with its
    # BetaBinomial after an Adam step (lr 1: the step is g / (|g| + 1e-8), whose float32
    # rounding turns on g's last bits), so our density's float32 gradient must be theirs bit
    # for bit; in float64 jax's own betaln is off by 1e-6 at y = 9, ours is not. One jit.
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import betaln, gammaln

    from funsor_core.distribution import BetaBinomial

    jax.config.update("jax_enable_x64", True)
    n, k = jnp.float32(10.0), jnp.float32(3.0)

    def numpyro_log_prob(c):  # numpyro.distributions.BetaBinomial.log_prob, by hand
        a, b = c[0], c[1]
        return (-(gammaln(1 + k) + gammaln(n - k + 1) - gammaln(n + 1))
                + betaln(k + a, n - k + b) - betaln(b, a))

    def run(c, x, y):
        ours = jax.value_and_grad(lambda c: BetaBinomial.log_prob(k, c[0], c[1], n))(c)
        return ours, jax.grad(numpyro_log_prob)(c), ops.betaln(x, y)

    x, y, expected = _cancelling_betaln_cases()
    (value, grad), expected_grad, lbeta = jax.jit(run)(jnp.array([0.5, 1.5], jnp.float32),
                                                       jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(expected_grad))
    assert value.dtype == jnp.float32 and lbeta.dtype == jnp.float64
    assert float(value) == pytest.approx(st.betabinom(10, 0.5, 1.5).logpmf(3), rel=1e-5)
    np.testing.assert_allclose(np.asarray(lbeta), expected, rtol=1e-13)


def test_special_ops_on_python_numbers():
    assert ops.lgamma(5) == pytest.approx(np.log(24.0))
    assert ops.digamma(1.0) == pytest.approx(-np.euler_gamma)
    assert ops.xlogy(0, 0.0) == 0.0 and ops.xlog1py(0.0, -1.0) == 0.0
    assert ops.i0e(0.0) == 1.0 and ops.acos(1.0) == 0.0 and ops.cos(0.0) == 1.0
    assert ops.lgamma(0.0) == np.inf
    assert ops.betaln(2, 3) == pytest.approx(-np.log(12.0))  # B(2, 3) = 1! 2! / 4!
