"""Infinite values substituted into Gaussians: the limit, not IEEE's ``inf * 0 = NaN``.

A flat direction (a zero entry of ``prec_sqrt``) adds nothing for an infinite value, an
informative one makes the density ``-inf``; NaN values stay NaN. Oracle: scipy.stats and
closed-form Gaussian algebra, on every backend and under ``jax.jit``.
"""

import math

import numpy as np
import pytest
from scipy import stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from tests.backend_values import values_on_every_backend

MEAN = np.array([0.0, 1.0])
COV = np.array([[1.0, 0.5], [0.5, 2.0]])
VALUES = np.array([np.inf, -np.inf, 3.0, np.nan])


def _each(fn, eager_jax=False):  # eager jax (compiling op by op) in one test only
    with np.errstate(invalid="ignore"):  # numpy's own inf * 0 in the first product
        return values_on_every_backend(fn, VALUES, eager_jax=eager_jax)


def _gaussian():
    a = fc.numeric_array
    return fc.Gaussian(mean=a(MEAN), covariance=a(COV), inputs={"x": fc.Real, "y": fc.Real})


def _expected(logpdf):
    out = np.array([logpdf(v) for v in VALUES])
    out[:2] = -np.inf  # the limit (scipy agrees where it is defined)
    return out


def _check(actual_per_backend, expected):
    for actual in actual_per_backend:
        np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_full_substitution_is_the_density_or_minus_inf():
    def fn(v):
        t = fc.Tensor(v, {"i": fc.Bint[4]})
        return _gaussian()(x=t, y=0.0).data
    expected = _expected(lambda v: stats.multivariate_normal(MEAN, COV).logpdf([v, 0.0]))
    expected += 0.5 * math.log(np.linalg.det(2 * math.pi * COV))  # Gaussian: unnormalized
    _check(_each(fn), expected)


def test_partial_substitution_then_integrate_is_the_marginal_density():
    def fn(v):
        return _gaussian()(x=fc.Tensor(v, {"i": fc.Bint[4]})).reduce(ops.logaddexp, "y").data
    expected = _expected(lambda v: stats.norm(MEAN[0], math.sqrt(COV[0, 0])).logpdf(v))
    expected += 0.5 * math.log(np.linalg.det(2 * math.pi * COV))
    # under jax.jit too: an infinite value voids the density, whatever the rank test says
    _check(_each(fn), expected)


def test_normal_value_substituted_with_its_mean_integrated_out():
    # ∫ N(m; 0, 1) N(x; m, 1) dm = N(x; 0, sqrt 2): -inf at x = ±inf, not NaN or 0.
    x, m = fc.Variable("x", fc.Real), fc.Variable("m", fc.Real)

    def fn(v):
        joint = Normal(m, 1.0, value=x) + Normal(0.0, 1.0, value=m)
        return joint(x=fc.Tensor(v, {"i": fc.Bint[4]})).reduce(ops.logaddexp, "m").data
    _check(_each(fn, eager_jax=True), _expected(stats.norm(0.0, math.sqrt(2.0)).logpdf))

    def direct(v):
        return Normal(0.0, 1.0, value=x)(x=fc.Tensor(v, {"i": fc.Bint[4]})).data
    _check(_each(direct), _expected(stats.norm(0.0, 1.0).logpdf))


def test_flat_direction_stays_finite():
    # f(x, y) = -0.5 (x - 1)^2: y has no information, so y = ±inf changes nothing.
    def fn(v):
        a = fc.numeric_array
        g = fc.Gaussian(white_vec=a(np.array([1.0])), prec_sqrt=a(np.array([[1.0], [0.0]])),
                        inputs={"x": fc.Real, "y": fc.Real})
        t = fc.Tensor(v, {"i": fc.Bint[4]})
        return ops.stack([g(x=3.0, y=t).data, g(y=t)(x=3.0).data])
    expected = np.full(4, -2.0)
    expected[3] = np.nan
    _check(_each(fn), np.stack([expected, expected]))


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_unbatched_fast_path(value):
    # One real input and no batch: the Monte Carlo guide's path (evaluate_unbatched).
    g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    assert g(x=fc.Tensor(np.array([value, 1.0]), {"n": fc.Bint[2]})).data.tolist() == [
        -np.inf, -0.5]


# -- bool (and other non-real) parameters: a TypeError naming the parameter --------------------
TRUE = np.eye(2, dtype=bool)
PARAMETERS = [
    dict(white_vec=np.ones(2, dtype=bool), prec_sqrt=np.eye(2)),
    dict(white_vec=np.ones(2), prec_sqrt=TRUE),
    dict(mean=np.ones(2, dtype=bool), covariance=np.eye(2)),
    dict(mean=np.zeros(2), covariance=TRUE),
    dict(info_vec=np.zeros(2), precision=TRUE),
    dict(mean=np.zeros(2), scale_tril=TRUE),
    dict(mean=np.zeros(2, dtype=complex), covariance=np.eye(2)),
]


def _bad_name(kw):
    return next(n for n, x in kw.items() if x.dtype.kind in "bc")


@pytest.mark.parametrize("kw", PARAMETERS, ids=lambda kw: "-".join(kw))
def test_non_real_parameter_raises_naming_it(backend, kw):
    arrays = {n: fc.numeric_array(x) for n, x in kw.items()}
    with pytest.raises(TypeError, match=rf"Gaussian {_bad_name(kw)}= must hold real numbers"):
        fc.Gaussian(inputs={"x": fc.Reals[2]}, **arrays)


def test_non_real_parameter_raises_under_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        for kw in PARAMETERS[:2]:
            with pytest.raises(TypeError, match=rf"{_bad_name(kw)}= must hold real numbers"):
                jax.jit(lambda a: fc.Gaussian(inputs={"x": fc.Reals[2]}, **a))(kw)
    finally:
        fc.set_backend("numpy")


def test_real_parameters_of_any_float_or_int_dtype_still_work():
    # Integer arrays were accepted before (numpy casts in the factorization): still are.
    g = fc.Gaussian(mean=np.zeros(2, dtype=int), covariance=2 * np.eye(2, dtype=int),
                    inputs={"x": fc.Reals[2]})
    np.testing.assert_allclose(g.precision, np.linalg.inv(2 * np.eye(2)))


def test_values_with_gradients_substitute_without_a_torch_warning():
    # The NaN probe reads a detached sum: pyro runs with warnings as errors, and reading a
    # tensor that requires grad as a Python number warns. Oracle: scipy's density and the
    # closed-form gradient -(x - mean) / var.
    import torch

    x = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    g = fc.Gaussian(mean=torch.tensor([0.5], dtype=torch.float64),
                    covariance=torch.tensor([[2.0]], dtype=torch.float64),
                    inputs={"x": fc.Real})
    out = g(x=fc.Tensor(x)).data
    out.backward()
    normal = stats.norm(0.5, math.sqrt(2.0))  # a Gaussian is unnormalized: 0 at its mean
    assert math.isclose(float(out.detach()), normal.logpdf(1.5) - normal.logpdf(0.5),
                        rel_tol=1e-12)
    assert math.isclose(float(x.grad), -(1.5 - 0.5) / 2.0, rel_tol=1e-12)
