"""A power of a Gaussian mixture, integrated: funsor 0.4.8 returns c * log of the mixture's
integral; the right number is the log of the integral of p**c (numerical quadrature), which has
no closed form, so funsor-core keeps the term lazy rather than give a wrong number."""

from __future__ import annotations

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.gaussian import Gaussian
from funsor_core.terms import Funsor

XS = np.linspace(-40.0, 40.0, 400001)


def _mixture():
    means, precs = np.array([[-1.0], [2.0]]), np.array([[[0.8]], [[3.0]]])
    g = Gaussian(mean=means, precision=precs, inputs={"i": fc.Bint[2], "x": fc.Real})
    # funsor's convention: log density -0.5 (x - m) P (x - m), no normalizer
    comps = [-0.5 * precs[k, 0, 0] * (XS - means[k, 0]) ** 2 for k in range(2)]
    return g, comps


def test_power_of_mixture_integral_stays_lazy_and_its_integrand_is_right():
    g, comps = _mixture()
    mix = g.reduce(ops.logaddexp, "i")
    powered = mix * 0.5
    integral = powered.reduce(ops.logaddexp)
    truth = np.log(np.trapezoid(np.exp(0.5 * np.logaddexp(*comps)), XS))
    funsors_number = 0.5 * np.log(np.trapezoid(np.exp(np.logaddexp(*comps)), XS))
    assert abs(truth - funsors_number) > 0.1  # the two numbers are far apart
    assert isinstance(integral, Funsor) and not isinstance(integral, fc.Tensor)
    assert "x" not in integral.inputs
    for x in (-1.3, 0.0, 2.7):
        ref = 0.5 * np.logaddexp(*(-0.5 * p * (x - m) ** 2 for m, p in ((-1.0, 0.8), (2.0, 3.0))))
        np.testing.assert_allclose(float(powered(x=x).data), ref, rtol=1e-10)


def test_power_of_one_component_integrates_in_closed_form():
    g, comps = _mixture()
    got = (g * 0.5).reduce(ops.logaddexp, "x")
    for k in range(2):
        truth = np.log(np.trapezoid(np.exp(0.5 * comps[k]), XS))
        np.testing.assert_allclose(float(got(i=k).data), truth, rtol=1e-8)
