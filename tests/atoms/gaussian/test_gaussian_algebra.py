"""funsor_core.atoms.gaussian.algebra against closed-form Gaussian algebra in numpy (moments
form)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.atoms.gaussian import algebra as ga
from funsor_core.gaussian import Gaussian


def _spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _log_density(mean, prec, x):
    """funsor's convention: -0.5 (x - m)' P (x - m), no normalizer."""
    d = x - mean
    return -0.5 * d @ prec @ d


def test_add_gaussians_adds_precisions_and_information():
    rng = np.random.default_rng(0)
    m1, m2, p1, p2 = rng.normal(size=2), rng.normal(size=2), _spd(rng, 2), _spd(rng, 2)
    g1 = fc.Gaussian(mean=m1, precision=p1, inputs={"x": fc.Reals[2]})
    g2 = fc.Gaussian(mean=m2, precision=p2, inputs={"x": fc.Reals[2]})
    total = ga.add_gaussians([g1, g2])
    np.testing.assert_allclose(total.precision, p1 + p2)
    np.testing.assert_allclose(total.info_vec, p1 @ m1 + p2 @ m2)


def test_marginalize_matches_the_schur_complement():
    rng = np.random.default_rng(1)
    mean, cov = rng.normal(size=3), np.linalg.inv(_spd(rng, 3))
    g = fc.Gaussian(mean=mean, covariance=cov, inputs={"x": fc.Real, "y": fc.Reals[2]})
    sum_ = ga.marginalize_gaussian(g, {"x"})
    (rest,), (norm,) = ga.split_gaussian_sum(sum_)
    # The marginal of y is N(mean[1:], cov[1:, 1:]); the normalizer is that of x given y.
    np.testing.assert_allclose(rest.covariance, cov[1:, 1:], rtol=1e-10)
    np.testing.assert_allclose(rest.mean, mean[1:], atol=1e-10)
    cond_var = cov[0, 0] - cov[0, 1:] @ np.linalg.solve(cov[1:, 1:], cov[1:, 0])
    np.testing.assert_allclose(norm.data, 0.5 * np.log(2 * np.pi * cond_var), rtol=1e-10)


def test_marginalize_without_information_names_the_variable():
    g = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.array([[1.0], [0.0]]),
                    inputs={"x": fc.Real, "y": fc.Real})
    with pytest.raises(ValueError, match="y"):
        ga.marginalize_gaussian(g, {"y"})


def test_plate_multiplies_densities():
    rng = np.random.default_rng(2)
    means = rng.normal(size=(3, 1))
    g = fc.Gaussian(mean=means, covariance=np.ones((3, 1, 1)),
                    inputs={"i": fc.Bint[3], "x": fc.Real})
    plated = ga.plate_gaussian(g, {"i"}, {"i": 3})
    for x in (-1.0, 0.3):
        expected = sum(_log_density(m, np.eye(1), np.array([x])) for m in means)
        np.testing.assert_allclose(plated(x=x).data, expected, rtol=1e-10)


@pytest.mark.parametrize("scale", [0.0, 0.5, 3.0])
def test_scale_gaussian_sum(scale):
    rng = np.random.default_rng(3)
    mean, prec = rng.normal(size=2), _spd(rng, 2)
    g = fc.Gaussian(mean=mean, precision=prec, inputs={"x": fc.Reals[2]})
    scaled = ga.scale_gaussian_sum(g + fc.Tensor(np.array(1.5)), fc.Tensor(np.array(scale)))
    x = rng.normal(size=2)
    np.testing.assert_allclose(scaled(x=x).data, scale * (_log_density(mean, prec, x) + 1.5),
                               atol=1e-12)
    assert ga.scale_gaussian_sum(g, fc.Tensor(np.array(-scale - 1.0))) is None


def test_condition_and_affine_substitution_agree_with_numpy():
    rng = np.random.default_rng(4)
    mean, prec = rng.normal(size=3), _spd(rng, 3)
    g = fc.Gaussian(mean=mean, precision=prec, inputs={"x": fc.Real, "y": fc.Reals[2]})
    y0 = rng.normal(size=2)
    cond = ga.condition_gaussian(g, {"y": fc.Tensor(y0)})
    z = fc.Variable("z", fc.Real)
    moved = ga.affine_subs_gaussian(g, {"x": 2.0 * z - 1.0})
    assert isinstance(moved, Gaussian)  # cond is compressed: Gaussian + Tensor
    for x in (-0.5, 1.25):
        full = np.concatenate([[x], y0])
        np.testing.assert_allclose(cond(x=x).data, _log_density(mean, prec, full), rtol=1e-10)
        moved_full = np.concatenate([[2.0 * x - 1.0], y0])
        np.testing.assert_allclose(moved(z=x, y=y0).data, _log_density(mean, prec, moved_full),
                                   rtol=1e-10)


def test_rename_and_batch_substitution():
    means = np.array([[0.0], [2.0]])
    g = fc.Gaussian(mean=means, covariance=np.ones((2, 1, 1)),
                    inputs={"i": fc.Bint[2], "x": fc.Real})
    assert ga.rename_gaussian(g, {"x": "w"}).inputs == {"i": fc.Bint[2], "w": fc.Real}
    picked = ga.subs_gaussian_batch(g, (("i", fc.Number(1, 2)),))
    np.testing.assert_allclose(picked(x=0.5).data, -0.5 * (0.5 - 2.0) ** 2)



def test_renaming_a_sum_relabels_bint_and_real_inputs():
    # msg(s_curr="s_prev", x_curr="x_prev") on a Gaussian + Tensor message (the per-step
    # idiom of a filter): the arrays are kept, only the names change; values checked
    # pointwise against the original at the same (renamed) points.
    rng = np.random.default_rng(3)
    g = fc.Gaussian(mean=rng.normal(size=(3, 2)), covariance=np.eye(2) * 0.5,
                    inputs={"s": fc.Bint[3], "x": fc.Reals[2]})
    msg = g + fc.Tensor(rng.normal(size=3), {"s": fc.Bint[3]})
    renamed = msg(s="r", x="y")
    assert renamed.inputs == {"r": fc.Bint[3], "y": fc.Reals[2]}
    gaussians, _ = ga.split_gaussian_sum(renamed)
    assert gaussians[0].white_vec is g.white_vec  # relabelled, not copied
    point = rng.normal(size=2)
    for k in range(3):
        np.testing.assert_allclose(renamed(r=k, y=point).data, msg(s=k, x=point).data,
                                   rtol=1e-12)

def test_gaussian_sum_normal_form():
    g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    total = ga.gaussian_sum(g, fc.Number(1.0), fc.Tensor(np.array(2.0)), g)
    gaussians, dense = ga.split_gaussian_sum(total)
    assert len(gaussians) == 1 and len(dense) == 1
    np.testing.assert_allclose(total(x=1.0).data, 2 * -0.5 + 3.0)
