"""``CoerceDistributionToFunsor``: a backend distribution class called with funsors or names
builds the funsor family, whose log density matches the backend's own (torch.distributions
and scipy as oracles); arrays alone leave the class to build itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats

import funsor_core as fc
from funsor_core.distribution import CoerceDistributionToFunsor


class backend:  # noqa: N801  (a stand-in for a backend's distributions module)
    class Normal:  # arg_constraints and an __init__ signature, nothing else
        arg_constraints = {"loc": None, "scale": None}

        def __init__(self, loc, scale, validate_args=None):
            self.loc, self.scale = loc, scale


FakeNormal = backend.Normal


def test_arrays_alone_are_left_to_the_class():
    coerce = CoerceDistributionToFunsor("numpy")
    assert coerce(FakeNormal, (np.zeros(2), 1.0), {}) is None

    class NoParams:
        arg_constraints = {}

    assert coerce(NoParams, ("x",), {}) is None


def test_a_name_and_numbers_build_the_family_with_the_backends_density():
    coerce = CoerceDistributionToFunsor("numpy")
    d = coerce(FakeNormal, ("x",), {"scale": 2.0, "validate_args": True})
    assert set(d.inputs) == {"x", "value"}
    expected = scipy.stats.norm(0.3, 2.0).logpdf(1.1)
    assert np.allclose(d(x=0.3, value=1.1).data, expected)


def test_a_funsor_parameter_keeps_its_inputs():
    loc = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    d = CoerceDistributionToFunsor("numpy")(FakeNormal, (loc, 1.0), {})
    assert set(d.inputs) == {"i", "value"}
    actual = d(value=0.5).align(("i",)).data
    assert np.allclose(actual, scipy.stats.norm([0.0, 1.0], 1.0).logpdf(0.5))


def test_probs_suffix_falls_back_and_a_missing_family_warns():
    class BernoulliProbs:  # numpyro's name for Bernoulli(probs=...)
        arg_constraints = {"probs": None}

        def __init__(self, probs, validate_args=None):
            pass

    class BinomialProbs:
        arg_constraints = {"probs": None, "total_count": None}

        def __init__(self, probs, total_count=1, validate_args=None):
            pass

    class Unheard:
        arg_constraints = {"a": None}

        def __init__(self, a):
            pass

    coerce = CoerceDistributionToFunsor("numpy")
    d = coerce(BernoulliProbs, ("p",), {})
    assert np.allclose(d(p=0.25, value=1.0).data, np.log(0.25))
    b = coerce(BinomialProbs, ("p",), {"total_count": 4.0})
    assert np.allclose(b(p=0.25, value=3.0).data, scipy.stats.binom(4, 0.25).logpmf(3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert coerce(Unheard, ("a",), {}) is None
    assert [str(w.message) for w in seen] == ["missing funsor for Unheard"]


def test_torch_distribution_classes():
    torch = pytest.importorskip("torch")
    coerce = CoerceDistributionToFunsor("torch")
    try:
        d = coerce(torch.distributions.Normal, (fc.Variable("x", fc.Real), 1.5), {})
        assert coerce(torch.distributions.Normal, (torch.zeros(()), 1.0), {}) is None
        value = torch.tensor(0.7, dtype=torch.float64)
        expected = torch.distributions.Normal(torch.tensor(0.2, dtype=torch.float64),
                                              1.5).log_prob(value)
        actual = d(x=fc.Tensor(torch.tensor(0.2, dtype=torch.float64)), value=fc.Tensor(value))
        assert np.allclose(float(actual.data), float(expected))
    finally:
        fc.set_backend("numpy")  # the coercion sets its backend on first use, as in funsor


def test_jax_arrays_under_jit():
    # numpyro's collapse coerces inside jitted SVI steps: traced scales build the family too.
    jax = pytest.importorskip("jax")
    coerce = CoerceDistributionToFunsor("jax")

    def log_density(scale, value):
        d = coerce(FakeNormal, ("x",), {"scale": scale})
        return d(x=fc.Tensor(jax.numpy.asarray(0.3)), value=fc.Tensor(value)).data

    try:
        actual = jax.jit(log_density)(jax.numpy.asarray(2.0), jax.numpy.asarray(1.1))
    finally:
        fc.set_backend("numpy")
    assert np.allclose(np.asarray(actual), scipy.stats.norm(0.3, 2.0).logpdf(1.1))
