"""Known defects of Gaussian integration with non-finite values substituted (#28/#29, h29).

Oracles: the closed-form marginal in moment form (numpy), and the limits of the density: an
infinite value along an informative direction makes the density 0 for every x (log ∫ 0 = -inf),
a NaN value makes the answer NaN.
"""

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

RNG = np.random.default_rng(29)
S = RNG.normal(size=(3, 3)) + 2 * np.eye(3)
W = RNG.normal(size=3)


def closed_form_log_integral(y):
    """log ∫ exp(-0.5 ||[x, y] S - w||^2) dx, from the moment form of the joint."""
    precision = S @ S.T
    info = S @ W
    p_xx, p_xy = precision[:1, :1], precision[:1, 1:]
    # exp(-0.5 v'Pv + info'v - 0.5 w'w) with v = [x, y]; integrate x (a 1-d Gaussian).
    info_x = info[:1] - p_xy @ y
    quad_y = -0.5 * y @ precision[1:, 1:] @ y + info[1:] @ y - 0.5 * W @ W
    return float(quad_y + 0.5 * info_x @ np.linalg.solve(p_xx, info_x)
                 + 0.5 * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(p_xx)[1])


VALUES = [np.array([np.inf, 0.0]), np.array([-np.inf, 1.0]), np.array([0.5, -np.inf]),
          np.array([0.5, 1.0])]


def expected(y):
    return -math.inf if np.isinf(y).any() else closed_form_log_integral(y)


def test_infinite_value_then_integrate_is_minus_inf_eagerly():
    g = fc.Gaussian(white_vec=W, prec_sqrt=S, inputs={"x": fc.Real, "y": fc.Reals[2]})
    for y in VALUES:
        with np.errstate(invalid="ignore"):  # numpy's own inf * 0 in the first product
            actual = float(g(y=y).reduce(ops.logaddexp, "x").data)
        assert actual == pytest.approx(expected(y), rel=1e-9)


def test_infinite_value_then_integrate_is_minus_inf_under_jit():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    g = fc.Gaussian(white_vec=jnp.asarray(W), prec_sqrt=jnp.asarray(S),
                    inputs={"x": fc.Real, "y": fc.Reals[2]})
    fn = jax.jit(lambda y: g(y=fc.Tensor(y, {"i": fc.Bint[len(VALUES)]}))
                 .reduce(ops.logaddexp, "x").data)
    actual = np.asarray(fn(jnp.asarray(np.stack(VALUES))))
    np.testing.assert_allclose(actual, [expected(y) for y in VALUES], rtol=1e-9)


def test_nan_value_then_integrate_is_nan_with_a_triangular_factor():
    # f(x, y) = -0.5 (x - 1)^2: y carries no information, but y = NaN must not give a number.
    g = fc.Gaussian(white_vec=np.array([1.0]), prec_sqrt=np.array([[1.0], [0.0]]),
                    inputs={"x": fc.Real, "y": fc.Real})
    assert float(g(y=0.3).reduce(ops.logaddexp, "x").data) == pytest.approx(
        0.5 * math.log(2 * math.pi))
    with np.errstate(invalid="ignore"):
        assert math.isnan(float(g(y=math.nan).reduce(ops.logaddexp, "x").data))
    y = np.array([0.3, math.nan])
    with np.errstate(invalid="ignore"):
        out = g(y=fc.Tensor(y, {"i": fc.Bint[2]})).reduce(ops.logaddexp, "x").data
    assert out[0] == pytest.approx(0.5 * math.log(2 * math.pi)) and math.isnan(out[1])


@pytest.mark.parametrize("backend_name", ["numpy", "torch"])  # (jax promoted already)
def test_integer_covariance_is_promoted_on_every_backend(backend_name):
    # torch's cholesky refused a Long tensor deep inside; numpy and jax promoted. Oracle: the
    # log normalizer of a Gaussian with that covariance, 0.5 log det(2 pi C), in numpy.
    pytest.importorskip(backend_name)
    cov = [[2, 1], [1, 3]]
    expected = 0.5 * np.linalg.slogdet(2 * math.pi * np.array(cov, dtype=float))[1]
    fc.set_backend(backend_name)
    try:
        arr = fc.numeric_array
        g = fc.Gaussian(mean=arr([0.5, -1.0]), covariance=arr(cov), inputs={"x": fc.Reals[2]})
        assert ops.is_floating(g.prec_sqrt)
        assert float(g.reduce(ops.logaddexp).data) == pytest.approx(expected, rel=1e-6)
        h = fc.Gaussian(white_vec=arr([0, 0]), prec_sqrt=arr([[2, 0], [1, 1]]),
                        inputs={"x": fc.Reals[2]})  # |det| = 2
        assert float(h.reduce(ops.logaddexp).data) == pytest.approx(
            math.log(2 * math.pi) - math.log(2.0), rel=1e-6)
        if backend_name == "torch":  # the integer array takes the float mean's dtype
            import torch

            mean = torch.tensor([0.5, -1.0], dtype=torch.float32)
            k = fc.Gaussian(mean=mean, covariance=arr(cov), inputs={"x": fc.Reals[2]})
            assert k.prec_sqrt.dtype == torch.float32
            assert float(k.reduce(ops.logaddexp).data) == pytest.approx(expected, rel=1e-5)
    finally:
        fc.set_backend("numpy")
