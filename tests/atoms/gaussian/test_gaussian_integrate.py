"""Integrate against Gaussian measures, including partial integration (some reals kept),
against closed forms computed with dense numpy algebra (inverses, log-determinants).
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.testing import assert_close

LOG_2PI = np.log(2 * np.pi)


def dense_conditional(w, s, dx, v):
    """Mass (log), mean and covariance over x of exp(-0.5||[x, v] S - w||^2), x the first dx
    coordinates, in dense numpy algebra."""
    s_x, s_y = s[:dx], s[dx:]
    r = w - v @ s_y
    p = s_x @ s_x.T
    info = s_x @ r
    cov = np.linalg.inv(p)
    mean = cov @ info
    log_mass = (0.5 * dx * LOG_2PI - 0.5 * np.linalg.slogdet(p)[1] + 0.5 * info @ mean
                - 0.5 * r @ r)
    return log_mass, mean, cov


def make_measure(rng, batch=3):
    # x: Reals[2], y: Real; rank 4 >= dim 3, batched over i.
    w = rng.normal(size=(batch, 4))
    s = rng.normal(size=(batch, 3, 4)) + 2.0 * np.eye(3, 4)
    g = fc.Gaussian(white_vec=w, prec_sqrt=s,
                    inputs={"i": fc.Bint[batch], "x": fc.Reals[2], "y": fc.Real})
    return g, w, s


def evaluate(term, **values):
    """The numbers of ``term`` at ``values``: a Tensor over ``i`` (if any), as an array."""
    result = term(**values)
    assert isinstance(result, fc.Tensor), type(result)
    return result.align(tuple(k for k in ("i", "j") if k in result.inputs)).data


def test_partial_integrate_affine_and_second_moments():
    rng = np.random.default_rng(0)
    g, w, s = make_measure(rng)
    x, y = fc.Variable("x", fc.Reals[2]), fc.Variable("y", fc.Real)
    integrands = {
        "x": (x, lambda m, c, v: m),
        "x0*x1": (x[0] * x[1], lambda m, c, v: m[0] * m[1] + c[0, 1]),
        "x1*x1 + y": (x[1] * x[1] + y, lambda m, c, v: m[1] ** 2 + c[1, 1] + v),
        "3*x0*y - 1": (3.0 * x[0] * y - 1.0, lambda m, c, v: 3 * m[0] * v - 1),
    }
    for v in (-0.7, 1.3):
        for name, (f, oracle) in integrands.items():
            result = fc.Integrate(g, f, "x")
            assert set(result.inputs) == {"i", "y"}, name
            actual = np.asarray(evaluate(result, y=v))
            for i in range(3):
                log_mass, m, c = dense_conditional(w[i], s[i], 2, np.array([v]))
                np.testing.assert_allclose(actual[i], np.exp(log_mass) * oracle(m, c, v),
                                           rtol=1e-9, err_msg=name)


def test_partial_integrate_gaussian_integrand():
    rng = np.random.default_rng(1)
    g, w, s = make_measure(rng)
    # h over (j, y, x) in another order and with its own batch input.
    wh = rng.normal(size=(2, 3))
    sh = rng.normal(size=(2, 3, 3))
    h = fc.Gaussian(white_vec=wh, prec_sqrt=sh,
                    inputs={"j": fc.Bint[2], "y": fc.Real, "x": fc.Reals[2]})
    result = fc.Integrate(g, h, "x")
    assert set(result.inputs) == {"i", "j", "y"}
    v = 0.4
    actual = np.asarray(evaluate(result, y=v))
    for i in range(3):
        log_mass, m, c = dense_conditional(w[i], s[i], 2, np.array([v]))
        for j in range(2):
            point = np.concatenate([[v], m])  # h's coordinates: y, then x
            resid = point @ sh[j] - wh[j]
            s_hx = sh[j][1:]
            expected = -0.5 * (resid @ resid + np.trace(s_hx.T @ c @ s_hx))
            np.testing.assert_allclose(actual[i, j], np.exp(log_mass) * expected, rtol=1e-9)


def test_full_integrate_unchanged_by_kept_variable_free_integrand():
    rng = np.random.default_rng(2)
    g, w, s = make_measure(rng)
    x = fc.Variable("x", fc.Reals[2])
    z = fc.Variable("z", fc.Real)  # a free variable outside the measure
    result = fc.Integrate(g, x[0] * z, frozenset({"x", "y"}))
    assert set(result.inputs) == {"i", "z"}
    actual = np.asarray(evaluate(result, z=2.0))
    for i in range(3):
        log_mass, m, _ = dense_conditional(w[i], s[i], 3, np.zeros(0))
        np.testing.assert_allclose(actual[i], np.exp(log_mass) * m[0] * 2.0, rtol=1e-9)


def test_partial_integrate_sums_batch_inputs(backend):
    rng = np.random.default_rng(3)
    g, w, s = make_measure(rng)
    x = fc.Variable("x", fc.Reals[2])
    result = fc.Integrate(g, x[0], frozenset({"x", "i"}))
    assert set(result.inputs) == {"y"}
    v = -0.2
    expected = 0.0
    for i in range(3):
        log_mass, m, _ = dense_conditional(w[i], s[i], 2, np.array([v]))
        expected += np.exp(log_mass) * m[0]
    assert_close(result(y=v), fc.Tensor(np.array(expected)), atol=1e-10, rtol=1e-9)


def test_partial_integrate_needs_information_on_x():
    g = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.array([[0.0], [1.0]]),
                    inputs={"x": fc.Real, "y": fc.Real})
    with pytest.raises(ValueError, match="cannot marginalize x"):
        fc.Integrate(g, fc.Variable("x", fc.Real), "x")


def test_partial_integrate_then_reduce_matches_full():
    rng = np.random.default_rng(4)
    g, _, _ = make_measure(rng)
    x = fc.Variable("x", fc.Reals[2])
    full = fc.Integrate(g, x[1], frozenset({"x", "y"}))
    partial = fc.Integrate(g, x[1], "x")
    # integrate the kept y numerically on a fine grid: the oracle is quadrature.
    # All grid points substituted at once (a Tensor over "g"); a few of them one by one,
    # as numbers, give the same rows.
    grid = np.linspace(-12, 12, 4001)
    values = np.asarray(partial(y=fc.Tensor(grid, {"g": fc.Bint[len(grid)]}))
                        .align(("g", "i")).data)
    for k in (0, 1333, 2000, 2400, 4000):
        np.testing.assert_allclose(np.asarray(evaluate(partial, y=grid[k])), values[k],
                                   rtol=1e-12, atol=1e-300)
    quad = np.trapezoid(values, grid, axis=0)
    np.testing.assert_allclose(quad, np.asarray(evaluate(full)), rtol=1e-6)



def _log_normal(at, mean, cov):
    dev = at - mean
    return (-0.5 * dev @ np.linalg.solve(cov, dev) - 0.5 * len(at) * LOG_2PI
            - 0.5 * np.linalg.slogdet(cov)[1])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_triangular_measure_integrates_as_dense_algebra(backend):
    # A Gaussian from scale_tril keeps its triangular factor (no QR for its moments or its
    # normalizer): its integrals against a Gaussian, itself and a quadratic, and its
    # marginals over leading and trailing coordinates, equal dense algebra with L L'.
    conv = (lambda x: x) if backend == "numpy" else pytest.importorskip("torch").as_tensor
    rng = np.random.default_rng(5)
    n = 4
    scale = np.tril(rng.normal(size=(n, n)), -1) + np.diag(rng.uniform(0.5, 2.0, size=n))
    mean, cov = rng.normal(size=n), scale @ scale.T
    f_mean, f_cov = rng.normal(size=n), np.eye(n) + 0.3 * np.ones((n, n))
    fc.set_backend(backend)
    try:
        q = fc.Gaussian(mean=conv(mean), scale_tril=conv(scale), inputs={"x": fc.Reals[n]})
        assert q._triangular == "upper"
        q = q - q.log_normalizer
        f = fc.Gaussian(mean=conv(f_mean), covariance=conv(f_cov), inputs={"x": fc.Reals[n]})
        f = f - f.log_normalizer
        expected = (-0.5 * np.trace(np.linalg.solve(f_cov, cov))  # E_q log f + entropy
                    - 0.5 * (mean - f_mean) @ np.linalg.solve(f_cov, mean - f_mean)
                    - 0.5 * n * LOG_2PI - 0.5 * np.linalg.slogdet(f_cov)[1]
                    + 0.5 * n * (1 + LOG_2PI) + 0.5 * np.linalg.slogdet(cov)[1])
        assert_close(float(fc.Integrate(q, f - q, "x").data), expected, rtol=1e-10)
        x = fc.Variable("x", fc.Reals[n])
        assert_close(float(fc.Integrate(q, (x * x).sum(), "x").data),
                     np.trace(cov) + mean @ mean, rtol=1e-10)
        joint = fc.Gaussian(mean=conv(mean), scale_tril=conv(scale),
                            inputs={"u": fc.Reals[2], "v": fc.Reals[2]})
        assert_close(float(joint.log_normalizer.data),
                     0.5 * n * LOG_2PI + 0.5 * np.linalg.slogdet(cov)[1], rtol=1e-10)
        joint = joint - joint.log_normalizer
        at = rng.normal(size=2)
        for keep, kept in (("u", slice(0, 2)), ("v", slice(2, 4))):
            other = "v" if keep == "u" else "u"
            marginal = joint.reduce(fc.ops.logaddexp, other)(**{keep: conv(at)})
            assert_close(float(marginal.data), _log_normal(at, mean[kept], cov[kept, kept]),
                         rtol=1e-10)
        assert_close(float(joint.reduce(fc.ops.logaddexp).data), 0.0, atol=1e-12)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("rank", [3, 5])
def test_full_integrate_from_one_factor_equals_dense_algebra(backend, rank):
    # Every real integrated (x: Reals[2], y: Real, batched over i): the mass, mean and
    # covariance come from one QR; mass times E[f] for affine, quadratic and Gaussian f
    # equals dense algebra on the precision S S' (square and taller S).
    conv = (lambda a: a) if backend == "numpy" else pytest.importorskip("torch").as_tensor
    rng = np.random.default_rng(6 + rank)
    w = rng.normal(size=(2, rank))
    s = rng.normal(size=(2, 3, rank)) + 2.0 * np.eye(3, rank)
    fw, fs = rng.normal(size=3), rng.normal(size=(3, 3)) + np.eye(3)
    fc.set_backend(backend)
    try:
        g = fc.Gaussian(white_vec=conv(w), prec_sqrt=conv(s),
                        inputs={"i": fc.Bint[2], "x": fc.Reals[2], "y": fc.Real})
        h = fc.Gaussian(white_vec=conv(fw), prec_sqrt=conv(fs),
                        inputs={"x": fc.Reals[2], "y": fc.Real})
        x, y = fc.Variable("x", fc.Reals[2]), fc.Variable("y", fc.Real)
        cases = [
            (x, lambda m, c: m[:2]),
            (x[0] * y + 2.0 * y, lambda m, c: m[0] * m[2] + c[0, 2] + 2.0 * m[2]),
            ((x * x).sum() + y * y, lambda m, c: m @ m + np.trace(c)),
            (h, lambda m, c: -0.5 * (np.sum((m @ fs - fw) ** 2) + np.trace(fs.T @ c @ fs))),
        ]
        for f, oracle in cases:
            result = fc.Integrate(g, f, frozenset({"x", "y"}))
            got = np.asarray(evaluate(result), dtype=float)
            for i in range(2):
                log_mass, m, c = dense_conditional(w[i], s[i], 3, np.zeros(0))
                assert_close(got[i], np.exp(log_mass) * np.asarray(oracle(m, c)),
                             atol=1e-10, rtol=1e-9)
    finally:
        fc.set_backend("numpy")


def test_full_integrate_from_one_factor_names_a_flat_direction():
    # Two coordinates, one direction of information: integrating both diverges, and the
    # error is the one reducing x gives (the marginalization's rank test).
    g = fc.Gaussian(white_vec=np.zeros(2), prec_sqrt=np.array([[1.0, 2.0], [2.0, 4.0]]),
                    inputs={"x": fc.Reals[2]})
    with pytest.raises(ValueError) as reduced:
        g.reduce(fc.ops.logaddexp, "x")
    assert "flat along a direction of x" in str(reduced.value)
    with pytest.raises(ValueError) as integrated:
        fc.Integrate(g, fc.Variable("x", fc.Reals[2]), "x")
    assert str(integrated.value) == str(reduced.value)
