"""forward_filter_backward_rsample and forward_filter_backward_precondition on Gaussian
plated models, against the posterior of the flat joint Gaussian computed in numpy."""

import numpy as np
import pytest
from scipy import stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.recipes import (
    forward_filter_backward_precondition,
    forward_filter_backward_rsample,
)
from funsor_core.testing import random_gaussian


def _np(x):
    return np.asarray(ops.to_numpy(x.data))


def model():
    # a global; b in a plate i of size 2; a factor over (i, a, b).
    fc.set_backend("numpy")
    np.random.seed(0)
    return {
        "a": random_gaussian({"a": fc.Real}),
        "b": random_gaussian({"i": fc.Bint[2], "b": fc.Real}),
        "c": random_gaussian({"i": fc.Bint[2], "a": fc.Real, "b": fc.Real}),
    }


def flat_posterior(factors):
    """Mean and covariance of (a, b_0, b_1) from the factors' precisions and information
    vectors, assembled by hand."""
    coords = {("a", None): 0, ("b", 0): 1, ("b", 1): 2}
    P, h = np.zeros((3, 3)), np.zeros(3)
    for f in factors.values():
        prec, info = _np_field(f, "precision"), _np_field(f, "info_vec")
        reals = [k for k in f.inputs if f.inputs[k].dtype == "real"]
        for i in ([0, 1] if "i" in f.inputs else [None]):
            p = prec[i] if i is not None else prec
            v = info[i] if i is not None else info
            idx = [coords[(k, i if k == "b" else None)] for k in reals]
            P[np.ix_(idx, idx)] += p
            h[idx] += v
    cov = np.linalg.inv(P)
    return cov @ h, cov


def _np_field(g, name):
    return np.asarray(ops.to_numpy(getattr(g, name)))


def _flat_samples(samples):
    a = _np(samples["a"].align(("particle",)))
    b = _np(samples["b"].align(("particle", "i")))
    return np.concatenate([a[:, None], b], 1)


def test_rsample_moments_and_log_prob_match_the_flat_posterior():
    factors = model()
    mean, cov = flat_posterior(factors)
    n = 20000
    samples, log_prob = forward_filter_backward_rsample(
        factors, frozenset({"a", "b", "i"}), frozenset({"i"}), {"particle": fc.Bint[n]},
        rng_key=0)
    assert set(samples["b"].inputs) == {"particle", "i"}
    x = _flat_samples(samples)
    assert (np.abs(x.mean(0) - mean) < 5 * np.sqrt(np.diag(cov) / n)).all()
    assert np.allclose(np.cov(x.T), cov, atol=0.05 * np.abs(cov).max())
    expected = stats.multivariate_normal(mean, cov).logpdf(x)
    assert np.allclose(_np(log_prob.align(("particle",))), expected)


def test_precondition_samples_are_affine_in_white_noise():
    factors = model()
    mean, cov = flat_posterior(factors)
    samples, log_prob = forward_filter_backward_precondition(
        factors, frozenset({"a", "b", "i"}), frozenset({"i"}))
    assert set(log_prob.inputs) == {"aux"} and log_prob.inputs["aux"] == fc.Reals[3]
    # Standard normal noise gives posterior samples, and log_prob is their log density.
    n = 20000
    noise = fc.Tensor(np.random.default_rng(1).normal(size=(n, 3)), {"particle": fc.Bint[n]})
    drawn = {k: v(aux=noise) for k, v in samples.items()}
    x = _flat_samples(drawn)
    assert (np.abs(x.mean(0) - mean) < 5 * np.sqrt(np.diag(cov) / n)).all()
    assert np.allclose(np.cov(x.T), cov, atol=0.05 * np.abs(cov).max())
    lp = _np(log_prob(aux=noise).align(("particle",)))
    assert np.allclose(lp, stats.multivariate_normal(mean, cov).logpdf(x))
    # Zero noise gives the posterior mean.
    zero = {k: v(aux=np.zeros(3)) for k, v in samples.items()}
    assert np.allclose(_np(zero["a"]), mean[0])
    assert np.allclose(_np(zero["b"].align(("i",))), mean[1:])


def test_recipes_check_their_arguments():
    factors = model()
    with pytest.raises(TypeError, match="frozenset of names"):
        forward_filter_backward_rsample(factors, {"a", "b"}, frozenset())
    with pytest.raises(ValueError, match="aux_name 'a'"):
        forward_filter_backward_precondition(factors, frozenset({"a"}), frozenset(), "a")
