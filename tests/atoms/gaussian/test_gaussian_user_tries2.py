"""A new user's tries on Gaussians (second round): defects found and their oracles."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import funsor_core as fc
from funsor_core import ops

jax = pytest.importorskip("jax")
jnp = jax.numpy

MEAN = np.array([[1.0, 2.0], [0.0, -1.0]])
COV = np.array([[2.0, 0.5], [0.5, 1.0]])


@pytest.fixture
def jax_backend():
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


def _gaussian(dtype):
    return fc.Gaussian(mean=jnp.asarray(MEAN.astype(dtype)),
                       covariance=jnp.asarray(COV.astype(dtype)),
                       inputs={"i": fc.Bint[2], "x": fc.Reals[2]})


@pytest.mark.parametrize("first", [np.float32, np.float64])
def test_mixed_float_sum_promotes_as_backend(jax_backend, first):
    # float32 + float64 is float64 whichever comes first (jax's own promotion, as on the traced
    # path), not the first operand's dtype (the small eager host path used to cast back).
    second = np.float64 if first is np.float32 else np.float32
    g = _gaussian(first) + _gaussian(second)
    assert g.white_vec.dtype == jnp.result_type(first, second) == np.float64
    total = g.reduce(ops.logaddexp, "x")
    # log of the integral of exp(-(x-m)' P (x-m)) (two copies of precision P = COV^-1)
    expected = -multivariate_normal.logpdf(MEAN[0], MEAN[0], COV / 2)
    np.testing.assert_allclose(np.asarray(total.data), [expected, expected], rtol=1e-6)
