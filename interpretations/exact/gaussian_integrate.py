"""Exact rules for ``Integrate`` against a Gaussian measure (optionally plus a Tensor).

The closed forms (affine, products of two affine, Gaussian integrands) are
``funsor_core.atoms.gaussian.expectation``; the rules here only match the measure.
"""

from __future__ import annotations

from funsor_core.atoms.gaussian.algebra import dense_sum, is_gaussian_sum, split_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.expectation import integrate_gaussian
from funsor_core.terms.base import Funsor
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate
from interpretations.exact import exact


# Integrate(g, f, x) = exp(g_y) * E_q[f] (see funsor_core.atoms.gaussian.expectation).
@exact.register(Integrate, Gaussian, Funsor, frozenset)
def exact_integrate_gaussian(log_measure, integrand, reduced_vars):
    return integrate_gaussian(log_measure, None, integrand, reduced_vars)


# The same for a measure g + t: the Tensor part multiplies the result by exp(t).
@exact.register(Integrate, Contraction, Funsor, frozenset)
def exact_integrate_gaussian_sum(log_measure, integrand, reduced_vars):
    if not is_gaussian_sum(log_measure):
        return None
    gaussians, dense = split_gaussian_sum(log_measure)
    if len(gaussians) != 1:
        return None
    return integrate_gaussian(gaussians[0], dense_sum(dense), integrand, reduced_vars)
