"""The special functions behind the distributions' densities: the numpy-only kernels (used
where scipy is not installed) against scipy, and the ops on Python numbers."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.special as sp

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


def test_special_ops_on_python_numbers():
    assert ops.lgamma(5) == pytest.approx(np.log(24.0))
    assert ops.digamma(1.0) == pytest.approx(-np.euler_gamma)
    assert ops.xlogy(0, 0.0) == 0.0 and ops.xlog1py(0.0, -1.0) == 0.0
    assert ops.i0e(0.0) == 1.0 and ops.acos(1.0) == 0.0 and ops.cos(0.0) == 1.0
    assert ops.lgamma(0.0) == np.inf
