"""funsor 0.4.8's Gaussian helper names and parametrizations, against numpy closed forms.

Covers ``funsor_core.compat.gaussian`` (``_compress_rank``, ``_inverse_cholesky``,
``_split_real_inputs``, ``_norm2``, ``_vm``, ``_mv``), the Gaussian's ``_mean`` /
``_precision`` / ``_info_vec`` / ``_covariance`` / ``_scale_tril``, any location with any
scale in the constructor, and Integrate over matrix-valued real inputs.

Oracles: numpy inverses and Choleskys of dense matrices, evaluation of the quadratic form at
random points, and the Gaussian conditional mean by Schur complement.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.engine.backend import backend_module
from funsor_core.gaussian import (
    _compress_rank,
    _inverse_cholesky,
    _mv,
    _norm2,
    _split_real_inputs,
    _vm,
)
from funsor_core.integrate import Integrate

BACKENDS = ["numpy", "torch"]


@pytest.fixture(params=BACKENDS)
def np_or_torch(request):
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


def arr(x):
    return backend_module().asarray(np.asarray(x, dtype=float), "real")


def to_np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)))


def spd(rng, dim, batch=()):
    a = rng.normal(size=batch + (dim, dim))
    return a @ np.swapaxes(a, -1, -2) + dim * np.eye(dim)


def quad(x, s, w):
    """-0.5 ||x @ s - w||^2 by hand, batched."""
    r = np.einsum("...i,...ij->...j", x, s) - w
    return -0.5 * (r ** 2).sum(-1)


# ---------------------------------------------------------------------------------------------
# Small products.
def test_norm2_vm_mv(np_or_torch):
    rng = np.random.default_rng(0)
    v, m = rng.normal(size=(3, 4)), rng.normal(size=(3, 4, 5))
    u = rng.normal(size=(3, 5))
    np.testing.assert_allclose(to_np(_norm2(arr(v))), (v * v).sum(-1))
    np.testing.assert_allclose(to_np(_vm(arr(v), arr(m))), np.einsum("bi,bij->bj", v, m))
    np.testing.assert_allclose(to_np(_mv(arr(m), arr(u))), np.einsum("bij,bj->bi", m, u))


# ---------------------------------------------------------------------------------------------
# _inverse_cholesky: the Cholesky factor of the covariance from the precision.
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
@pytest.mark.parametrize("dim", [1, 2, 4])
def test_inverse_cholesky(np_or_torch, batch, dim):
    p = spd(np.random.default_rng(dim), dim, batch)
    expected = np.linalg.cholesky(np.linalg.inv(p))
    np.testing.assert_allclose(to_np(_inverse_cholesky(arr(p))), expected, rtol=1e-8,
                               atol=1e-10)


# ---------------------------------------------------------------------------------------------
# _compress_rank: same precision, same quadratic form up to the returned shift.
@pytest.mark.parametrize("method", ["qr", "cholesky"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
@pytest.mark.parametrize("dim, rank", [(1, 1), (1, 4), (3, 3), (3, 5), (4, 9)])
def test_compress_rank(np_or_torch, method, batch, dim, rank):
    rng = np.random.default_rng(dim * 10 + rank)
    w, s = rng.normal(size=batch + (rank,)), rng.normal(size=batch + (dim, rank))
    w2, s2, shift = (to_np(a) for a in _compress_rank(arr(w), arr(s), method))
    assert s2.shape == batch + (dim, min(dim, rank)) and w2.shape == batch + s2.shape[-1:]
    assert shift.shape == batch
    np.testing.assert_allclose(s2 @ np.swapaxes(s2, -1, -2), s @ np.swapaxes(s, -1, -2),
                               atol=1e-9)
    for _ in range(3):
        x = rng.normal(size=batch + (dim,))
        np.testing.assert_allclose(quad(x, s2, w2) + shift, quad(x, s, w), atol=1e-8)


@pytest.mark.parametrize("batch", [(), (4,)])
@pytest.mark.parametrize("dim", [1, 3])
def test_compress_rank_singular(np_or_torch, batch, dim):
    # A zero factor has no information: QR gives zero rows, never a failed factorization.
    w, s = np.zeros(batch + (dim + 1,)), np.zeros(batch + (dim, dim + 1))
    w2, s2, shift = (to_np(a) for a in _compress_rank(arr(w), arr(s)))
    np.testing.assert_array_equal(w2, np.zeros(batch + (dim,)))
    np.testing.assert_array_equal(s2, np.zeros(batch + (dim, dim)))
    np.testing.assert_array_equal(shift, np.zeros(batch))
    # A rank-deficient one keeps its quadratic form too.
    rng = np.random.default_rng(7)
    s = np.broadcast_to(rng.normal(size=(dim, 1)), batch + (dim, 1)) * np.ones(dim + 2)
    w = rng.normal(size=batch + (dim + 2,))
    w2, s2, shift = (to_np(a) for a in _compress_rank(arr(w), arr(s)))
    x = rng.normal(size=batch + (dim,))
    np.testing.assert_allclose(quad(x, s2, w2) + shift, quad(x, s, w), atol=1e-9)


def test_compress_rank_bad_method():
    with pytest.raises(ValueError, match="method must be one of.*'svd'"):
        _compress_rank(np.zeros(3), np.zeros((2, 3)), "svd")


# ---------------------------------------------------------------------------------------------
# _split_real_inputs: row indices of the named real inputs and of the others.
@pytest.mark.parametrize("lhs_keys", ["a", "b", "c", "ab", "ac", "bc"])
def test_split_real_inputs(np_or_torch, lhs_keys):
    inputs = {"i": fc.Bint[2], "a": fc.Real, "b": fc.Reals[2, 2], "c": fc.Reals[3]}
    offsets = {"a": [0], "b": [1, 2, 3, 4], "c": [5, 6, 7]}
    rows = np.arange(8.0 * 3).reshape(8, 3)
    lhs, rhs = _split_real_inputs(inputs, lhs_keys, arr(0.0))
    want_l = [i for k in "abc" if k in lhs_keys for i in offsets[k]]
    want_r = [i for k in "abc" if k not in lhs_keys for i in offsets[k]]
    np.testing.assert_array_equal(to_np(arr(rows)[..., lhs, :]), rows[want_l])
    np.testing.assert_array_equal(to_np(arr(rows)[..., rhs, :]), rows[want_r])


def test_split_real_inputs_needs_both_sides():
    with pytest.raises(ValueError, match="cannot split the real inputs.*'x'"):
        _split_real_inputs({"x": fc.Real}, "x", np.zeros(()))


# ---------------------------------------------------------------------------------------------
# Moments under funsor's private names, and every location with every scale.
def _moments(rng, batch=(2,), dim=3):
    mean, cov = rng.normal(size=batch + (dim,)), spd(rng, dim, batch)
    prec = np.linalg.inv(cov)
    return mean, cov, prec, np.einsum("...ij,...j->...i", prec, mean)


def test_private_moment_names(np_or_torch):
    mean, cov, prec, info = _moments(np.random.default_rng(1))
    g = fc.Gaussian(mean=arr(mean), covariance=arr(cov),
                    inputs={"i": fc.Bint[2], "x": fc.Reals[3]})
    np.testing.assert_allclose(to_np(g._mean), mean, rtol=1e-8)
    np.testing.assert_allclose(to_np(g._precision), prec, rtol=1e-8)
    np.testing.assert_allclose(to_np(g._info_vec), info, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(to_np(g._covariance), cov, rtol=1e-8)
    np.testing.assert_allclose(to_np(g._scale_tril), np.linalg.cholesky(cov), rtol=1e-8)


def test_scale_tril_needs_full_rank():
    g = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.ones((2, 1)),
                    inputs={"x": fc.Reals[2]})
    with pytest.raises(ValueError, match="a scale_tril needs a full-rank precision"):
        _ = g._scale_tril


@pytest.mark.parametrize("loc", ["mean", "info_vec"])
@pytest.mark.parametrize("scale", ["prec_sqrt", "precision", "covariance", "scale_tril"])
def test_any_location_with_any_scale(np_or_torch, loc, scale):
    rng = np.random.default_rng(2)
    mean, cov, prec, info = _moments(rng)
    wide = np.concatenate([np.linalg.cholesky(prec), 0.0 * np.ones((2, 3, 1))], -1)
    scales = {"prec_sqrt": wide, "precision": prec, "covariance": cov,
              "scale_tril": np.linalg.cholesky(cov)}
    g = fc.Gaussian(**{loc: arr(mean if loc == "mean" else info), scale: arr(scales[scale])},
                    inputs={"i": fc.Bint[2], "x": fc.Reals[3]})
    np.testing.assert_allclose(to_np(g.precision), prec, rtol=1e-8)
    np.testing.assert_allclose(to_np(g.info_vec), info, rtol=1e-8, atol=1e-10)
    if scale == "prec_sqrt":  # the given factor is kept as it is
        np.testing.assert_array_equal(to_np(g.prec_sqrt), wide)
    # f(mean) is the maximum, 0 for a consistent density.
    np.testing.assert_allclose(to_np(g(x=fc.Tensor(arr(mean), {"i": fc.Bint[2]})).data),
                               np.zeros(2), atol=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    (dict(white_vec=np.zeros(2), covariance=np.eye(2)), "white_vec= goes with prec_sqrt="),
    (dict(mean=np.zeros(2), info_vec=np.zeros(2), precision=np.eye(2)), "one location"),
    (dict(mean=np.zeros(2), precision=np.eye(2), covariance=np.eye(2)), "one scale"),
    (dict(info_vec=np.zeros(2), prec_sqrt=np.ones((2, 1))),
     "info_vec= with prec_sqrt= needs a full-rank"),
])
def test_parameter_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fc.Gaussian(inputs={"x": fc.Reals[2]}, **kwargs)


# ---------------------------------------------------------------------------------------------
# Integrate over matrix-valued real inputs: E[x] reshaped, conditional on kept matrices.
def test_integrate_matrix_input_all(np_or_torch):
    mean, cov, _, _ = _moments(np.random.default_rng(3), batch=(), dim=6)
    g = fc.Gaussian(mean=arr(mean), covariance=arr(cov), inputs={"x": fc.Reals[2, 3]})
    x = fc.Variable("x", fc.Reals[2, 3])
    actual = Integrate(g, x, frozenset({"x"}))
    assert isinstance(actual, fc.Tensor)
    mass = np.sqrt(np.linalg.det(2 * np.pi * cov))  # ∫ exp f with f(mean) = 0
    np.testing.assert_allclose(to_np(actual.data), mass * mean.reshape(2, 3), rtol=1e-8)


def test_integrate_matrix_input_kept_matrix(np_or_torch):
    rng = np.random.default_rng(4)
    mean, cov, prec, _ = _moments(rng, batch=(), dim=10)
    inputs = {"x": fc.Reals[2, 3], "y": fc.Reals[2, 2]}
    g = fc.Gaussian(mean=arr(mean), covariance=arr(cov), inputs=inputs)
    x = fc.Variable("x", fc.Reals[2, 3])
    lazy_in_y = Integrate(g, x, frozenset({"x"}))
    y = rng.normal(size=(2, 2))
    actual = to_np(lazy_in_y(y=fc.Tensor(arr(y))).data)
    # Oracle: with P the joint precision, x | y has precision P_xx and mean
    # m_x - P_xx^{-1} P_xy (y - m_y); the mass is exp(f(mean_x|y, y)) sqrt(det(2 pi P_xx^-1)).
    pxx, pxy = prec[:6, :6], prec[:6, 6:]
    dy = y.reshape(4) - mean[6:]
    cond = mean[:6] - np.linalg.solve(pxx, pxy @ dy)
    point = np.concatenate([cond, y.reshape(4)]) - mean
    mass = np.exp(-0.5 * point @ prec @ point) * np.sqrt(np.linalg.det(2 * np.pi
                                                                       * np.linalg.inv(pxx)))
    np.testing.assert_allclose(actual, mass * cond.reshape(2, 3), rtol=1e-7)


def test_integrate_gaussian_integrand_matrix_input(np_or_torch):
    # E_q[h(x)] for a Gaussian h: h(mean) - 0.5 tr(Σ P_h), over a Reals[2, 2] input.
    rng = np.random.default_rng(5)
    mean, cov, _, _ = _moments(rng, batch=(), dim=4)
    m2, c2, p2, _ = _moments(rng, batch=(), dim=4)
    inputs = {"x": fc.Reals[2, 2]}
    g = fc.Gaussian(mean=arr(mean), covariance=arr(cov), inputs=inputs)
    h = fc.Gaussian(mean=arr(m2), covariance=arr(c2), inputs=inputs)
    actual = Integrate(g, h, frozenset({"x"}))
    assert isinstance(actual, fc.Tensor)
    d = mean - m2
    expected = (-0.5 * d @ p2 @ d - 0.5 * np.trace(cov @ p2)) * np.sqrt(
        np.linalg.det(2 * np.pi * cov))
    np.testing.assert_allclose(to_np(actual.data), expected, rtol=1e-8)
