"""A new user's tries of ``MonteCarlo`` (h23): an integral over an empty discrete domain is
0 (the exact sum, the oracle) under Monte Carlo too; zero draws raise at construction."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint.kinds import PosteriorSample
from interpretations import MonteCarlo


def test_integral_over_an_empty_domain_is_the_exact_zero():
    measure = fc.Tensor(np.zeros(0), {"x": fc.Bint[0]})
    integrand = fc.Tensor(np.zeros(0), {"x": fc.Bint[0]})
    exact = fc.Integrate(measure, integrand, "x")
    with MonteCarlo(rng_key=0, particle=fc.Bint[3]):
        estimate = fc.Integrate(measure, integrand, "x")
    assert float(exact.data) == np.exp(np.zeros(0)).sum() == 0.0
    assert estimate.inputs == {"particle": fc.Bint[3]}
    np.testing.assert_array_equal(estimate.data, np.full(3, float(exact.data)))


def test_a_sample_input_of_no_draws_raises_naming_it():
    for kind in (MonteCarlo, PosteriorSample):
        with pytest.raises(ValueError, match="'particle' is Bint\\[0\\]; a sample input needs"):
            kind(rng_key=0, particle=fc.Bint[0])
    first = fc.Tensor(np.log([0.3, 0.7]), {"x0": fc.Bint[2]})
    with pytest.raises(ValueError, match="num_samples must be a positive int, got 0"):
        fc.infer_discrete([first], query="sample", num_samples=0, rng_key=0)
    # the mean over particles of a real MC estimate stays finite with one draw
    w = fc.Variable("w", fc.Real)
    from funsor_core.distribution import Normal
    with MonteCarlo(rng_key=0, particle=fc.Bint[1]):
        est = fc.Integrate(Normal(0.5, 0.8, value=w), w * w, "w")
    assert abs(float(est.reduce(ops.mean, "particle").data) - (0.5 ** 2 + 0.8 ** 2)) < 1e-12
