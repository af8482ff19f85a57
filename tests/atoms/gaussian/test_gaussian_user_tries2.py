"""A new user's tries on Gaussians (second round): defects found and their oracles."""

import numpy as np
import pytest

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
    # square-root form given directly (precision = R R', R = chol(COV^-1)): no factorization
    r = np.linalg.cholesky(np.linalg.inv(COV))
    white_vec = np.einsum("ij,bi->bj", r, MEAN)  # R' mean
    return fc.Gaussian(white_vec=jnp.asarray(white_vec.astype(dtype)),
                       prec_sqrt=jnp.asarray(np.broadcast_to(r, (2, 2, 2)).astype(dtype)),
                       inputs={"i": fc.Bint[2], "x": fc.Reals[2]})


@pytest.mark.parametrize("first", [np.float32, np.float64])
def test_mixed_float_sum_promotes_as_backend(jax_backend, first):
    # float32 + float64 is float64 whichever comes first (jax's own promotion, as on the traced
    # path), not the first operand's dtype (the small eager host path used to cast back).
    second = np.float64 if first is np.float32 else np.float32
    g = _gaussian(first) + _gaussian(second)
    assert g.white_vec.dtype == g.prec_sqrt.dtype == jnp.result_type(first, second)
    assert g.white_vec.dtype == np.float64
    expected = 2 * np.linalg.inv(COV)  # two copies of precision COV^-1
    np.testing.assert_allclose(np.asarray(g.precision), [expected, expected], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g.info_vec), 2 * MEAN @ np.linalg.inv(COV),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_scale_tril_above_diagonal_raises(backend):
    # An upper entry of scale_tril= was dropped silently (covariance tril(L) tril(L)', not
    # L L'); it is now a ValueError naming the entry.
    if backend == "torch":
        pytest.importorskip("torch")
    fc.set_backend(backend)
    try:
        with pytest.raises(ValueError, match=r"not lower triangular.*scale_tril\[0, 1\] = 3"):
            fc.Gaussian(mean=fc.numeric_array(np.zeros(2)),
                        scale_tril=fc.numeric_array(np.array([[1.0, 3.0], [0.0, 1.0]])),
                        inputs={"x": fc.Reals[2]})
        lower = np.array([[1.0, 0.0], [2.0, 1.0]])
        g = fc.Gaussian(mean=fc.numeric_array(np.zeros(2)), scale_tril=fc.numeric_array(lower),
                        inputs={"x": fc.Reals[2]})
        np.testing.assert_allclose(np.linalg.inv(ops.to_numpy(g.precision)), lower @ lower.T)
    finally:
        fc.set_backend("numpy")


def test_bint_domain_for_the_gaussian_variable_is_named():
    # Gaussian(..., inputs={"x": Bint[2]}) said only "real inputs {}"; it now names x's Bint
    # domain as a batch dim, the likely mistake.
    with pytest.raises(fc.DomainError,
                       match=r"Bint inputs \{'x': 'Bint\[2\]'\} are batch dims"):
        fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2), inputs={"x": fc.Bint[2]})
