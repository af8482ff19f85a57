"""Approximate terms and the interpretations that approximate them, against numpy:
argmax (joint MAP of Tensors, Gaussians and their sums), mean, Laplace, posterior sampling
and Monte Carlo, and the backward pass under each."""

import numpy as np
import pytest
from scipy import stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import (
    PosteriorSample,
    argmax_approximate,
    compute_argmax,
    compute_mean,
    forward_backward,
    laplace_approximate,
    mean_approximate,
)
from funsor_core.engine.interpreter import reflect
from funsor_core.testing import assert_close, random_gaussian, random_tensor
from interpretations import lazy
from interpretations.monte_carlo import MonteCarlo


def _np(x):
    return np.asarray(ops.to_numpy(x.data))


def test_approximate_is_the_model_under_exact_and_checks_its_arguments():
    model = random_tensor({"i": fc.Bint[2], "j": fc.Bint[3]})
    guide = random_tensor({"j": fc.Bint[3]})
    assert fc.Approximate(ops.logaddexp, model, guide, "j") is model
    with lazy:
        a = model.approximate(ops.logaddexp, guide, "j")
    assert isinstance(a, fc.Approximate) and a.inputs == model.inputs
    assert a.approx_vars == frozenset({fc.Variable("j", fc.Bint[3])})
    with pytest.raises(ValueError, match="cannot approximate in 'k'"):
        fc.Approximate(ops.logaddexp, model, guide, "k")
    with pytest.raises(ValueError, match="the guide has output Reals\\[2\\]"):
        fc.Approximate(ops.logaddexp, model, random_tensor({}, fc.Reals[2]), "j")
    with pytest.raises(TypeError, match="associative op"):
        fc.Approximate(ops.sub, model, guide, "j")
    # A substitution drops the substituted names.
    with lazy:
        b = a(j=1)
    assert_close(fc.reinterpret(b), model(j=1))


def test_compute_argmax_tensor_is_the_joint_argmax(backend):
    t = random_tensor({"b": fc.Bint[2], "i": fc.Bint[3], "j": fc.Bint[4]})
    points = compute_argmax(t, {"i", "j"})
    data = _np(t.align(("b", "i", "j")))
    for b in range(2):
        i, j = np.unravel_index(np.argmax(data[b]), data[b].shape)
        assert _np(points["i"])[b] == i and _np(points["j"])[b] == j


def test_compute_argmax_gaussian_plus_tensor_is_the_joint_map():
    # max over (z, x) of t(z) + g(z, x): g is 0 at its mean, so the joint MAP is argmax t.
    t = fc.Tensor(np.array([0.5, 2.0, 1.0]), {"z": fc.Bint[3]})
    means = np.array([[-1.0], [4.0], [2.0]])
    g = fc.Gaussian(mean=means, covariance=np.ones((3, 1, 1)) * np.array([1.0, 9.0, 0.1])[
        :, None, None], inputs={"z": fc.Bint[3], "x": fc.Real})
    points = compute_argmax(t + g, {"z", "x"})
    assert int(_np(points["z"])) == 1 and np.allclose(_np(points["x"]), 4.0)
    with pytest.raises(NotImplementedError, match="not its other real inputs"):
        compute_argmax(random_gaussian({"x": fc.Real, "y": fc.Real}), {"x"})


def test_compute_mean_of_a_gaussian_marginal():
    mean = np.array([1.0, -2.0, 0.5])
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
    g = fc.Gaussian(mean=mean, covariance=cov, inputs={"x": fc.Real, "y": fc.Reals[2]})
    assert np.allclose(_np(compute_mean(g, {"y"})["y"]), mean[1:])
    with pytest.raises(NotImplementedError, match="discrete"):
        compute_mean(random_tensor({"i": fc.Bint[2]}), {"i"})


def test_argmax_approximate_places_point_masses():
    model = random_tensor({"i": fc.Bint[2]})
    guide = random_tensor({"i": fc.Bint[2], "j": fc.Bint[3]})
    with argmax_approximate:
        q = fc.Approximate(ops.max, model, guide, frozenset({"j"}))
    points = fc.extract_samples(q)
    assert np.array_equal(_np(points["j"]), _np(guide.align(("i", "j"))).argmax(-1))


def test_mean_approximate_places_the_mean():
    g = fc.Gaussian(mean=np.array([3.0]), covariance=np.array([[2.0]]), inputs={"x": fc.Real})
    with mean_approximate:
        q = fc.Approximate(ops.logaddexp, g, g, "x")
    assert np.allclose(_np(fc.extract_samples(q)["x"]), 3.0)


def test_laplace_approximate_of_a_quadratic_is_exact():
    m1 = random_gaussian({"i": fc.Bint[2], "x": fc.Real})
    s = fc.Tensor(np.array([0.5, -2.0]), {"i": fc.Bint[2]})
    model = m1 + s * random_gaussian({"x": fc.Real})
    with laplace_approximate:
        q = fc.Approximate(ops.logaddexp, model, m1, "x")
    assert q is model
    with laplace_approximate, pytest.raises(NotImplementedError, match="quadratic"):
        x = fc.Variable("x", fc.Real)
        fc.Approximate(ops.logaddexp, x.sigmoid(), m1, "x")


def test_posterior_sample_draws_the_guide_distribution():
    logits = np.log(np.array([0.1, 0.6, 0.3]))
    guide = fc.Tensor(logits, {"i": fc.Bint[3]})
    with PosteriorSample(rng_key=0, n=fc.Bint[6000]):
        q = fc.Approximate(ops.logaddexp, fc.Number(0.0), guide, "i")
    counts = np.bincount(_np(fc.extract_samples(q)["i"]), minlength=3)
    assert stats.chisquare(counts, np.exp(logits) * 6000).pvalue > 1e-4


def test_monte_carlo_approximate_is_unbiased():
    # E over x ~ g of exp(model + log Z - g(x)) summed over x equals sum_x exp(model(x)).
    model = fc.Tensor(np.array([0.3, -1.0, 2.0]), {"i": fc.Bint[3]})
    guide = fc.Tensor(np.array([0.0, 0.5, 1.0]), {"i": fc.Bint[3]})
    with MonteCarlo(rng_key=0, particle=fc.Bint[20000]):
        q = fc.Approximate(ops.logaddexp, model, guide, "i")
    estimate = q.reduce(ops.logaddexp, "i").exp().reduce(ops.mean, "particle")
    assert np.allclose(_np(estimate), np.exp(_np(model)).sum(), rtol=0.02)


def test_backward_argmax_of_a_reduction():
    x = random_tensor({"i": fc.Bint[2], "j": fc.Bint[3]})
    with reflect:
        y = x.reduce(ops.logaddexp, "i")
    with argmax_approximate:
        _, adj = forward_backward(ops.logaddexp, ops.add, y)
    points = fc.extract_samples(adj[x])
    assert np.array_equal(_np(points["i"]), _np(x.align(("i", "j"))).argmax(0))


def test_monte_carlo_backward_pass_samples_a_chain():
    # Under MonteCarlo, the backward pass of a chain draws from the exact posterior (the
    # guides are exact conditionals), with particle weights equal to log Z.
    rng = np.random.default_rng(0)
    a = fc.Tensor(rng.normal(size=2), {"a": fc.Bint[2]})
    ab = fc.Tensor(rng.normal(size=(2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    with reflect:
        z = fc.sum_product(ops.logaddexp, ops.add, [a, ab], frozenset("ab"))
    mc = MonteCarlo(rng_key=1, particle=fc.Bint[5000])
    with mc:
        log_z, adj = forward_backward(ops.logaddexp, ops.add, z, batch_vars=mc.sample_vars)
    points = fc.extract_samples(adj[ab])
    pairs = _np(points["a"]) * 3 + _np(points["b"])
    joint = _np(a)[:, None] + _np(ab)
    p = np.exp(joint - np.logaddexp.reduce(joint.reshape(-1))).reshape(-1)
    assert stats.chisquare(np.bincount(pairs, minlength=6), p * 5000).pvalue > 1e-4


def test_exact_marginals_are_unchanged_under_approximate_terms():
    # The backward pass builds Approximate terms; under exact they are the messages themselves.
    x1 = random_tensor({"i": fc.Bint[2], "j": fc.Bint[3]})
    x2 = random_tensor({"j": fc.Bint[3], "k": fc.Bint[4]})
    with reflect:
        y = fc.Contraction(ops.logaddexp, ops.add, frozenset("ijk"), (x1, x2))
    value, adj = forward_backward(ops.logaddexp, ops.add, y)
    expected = (x2.reduce(ops.logaddexp, "k"))
    assert_close(adj[x1], expected)
    assert np.allclose(_np(value), np.logaddexp.reduce(
        (_np(x1)[:, :, None] + _np(x2)[None]).reshape(-1)))
