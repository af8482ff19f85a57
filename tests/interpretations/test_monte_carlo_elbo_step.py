"""The Monte Carlo ELBO step (issue 28): ``Integrate(q, p - q)`` under ``MonteCarlo`` with a
``Normal`` guide, its mean over particles and its gradient, against the Normal closed forms
written out by hand (float64), and the backend check of ``Integrate`` through lazy integrands."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from funsor_core.integrate import Integrate
from interpretations import MonteCarlo

LOG_2PI = math.log(2 * math.pi)
LOC, SCALE = 0.5, 0.7
MODEL = ((0.3, 1.5), (-1.2, 0.4))  # two Normal factors of the model, (loc, scale) each


def expected_normal_log_density(loc, scale, loc_p, scale_p):
    """E_{N(loc, scale^2)}[log N(x; loc_p, scale_p^2)], by hand."""
    return (-math.log(scale_p) - 0.5 * LOG_2PI
            - ((loc - loc_p) ** 2 + scale ** 2) / (2 * scale_p ** 2))


def expected_elbo(loc, scale, log):
    """E_q[log p1 + log p2 - log q]: two expected log densities plus the entropy of q."""
    entropy = log(scale) + 0.5 * LOG_2PI + 0.5
    return sum(expected_normal_log_density(loc, scale, m, s) for m, s in MODEL) + entropy


def _elbo(loc, scale, to, particles=4):
    q = Normal(loc, scale, value="x")
    p1, p2 = (Normal(to(m), to(s), value="x") for m, s in MODEL)
    with MonteCarlo(particle=fc.Bint[particles]):
        per_particle = Integrate(q, p1 + p2 - q, frozenset({"x"}))
    assert per_particle.inputs == {"particle": fc.Bint[particles]}
    return per_particle.reduce(ops.mean, "particle").data


def test_elbo_step_value_and_gradient_torch():
    # The model's two factors make a two-column signed sum (the 1 x 1 guide's array path).
    import torch

    loc = torch.tensor(LOC, dtype=torch.float64, requires_grad=True)
    scale = torch.tensor(SCALE, dtype=torch.float64, requires_grad=True)
    fc.set_backend("torch")
    try:
        value = _elbo(loc, scale, lambda v: torch.tensor(v, dtype=torch.float64))
    finally:
        fc.set_backend("numpy")
    grads = torch.autograd.grad(value, (loc, scale))
    loc2, scale2 = (t.detach().clone().requires_grad_() for t in (loc, scale))
    oracle = expected_elbo(loc2, scale2, torch.log)
    for actual, expected in zip(grads, torch.autograd.grad(oracle, (loc2, scale2))):
        assert abs(float(actual) - float(expected)) < 1e-12
    assert abs(value.item() - expected_elbo(LOC, SCALE, math.log)) < 1e-12


def test_elbo_step_value_numpy():
    actual = _elbo(np.asarray(LOC), np.asarray(SCALE), np.asarray)
    assert abs(float(actual) - expected_elbo(LOC, SCALE, math.log)) < 1e-12


def test_integrate_names_mixed_backends_inside_a_lazy_integrand():
    # The deep check walks p - q (a lazy difference) down to the Gaussians' arrays.
    import torch

    q = Normal(np.asarray(LOC), np.asarray(SCALE), value="x")
    p = Normal(torch.tensor(0.3, dtype=torch.float64), torch.tensor(1.5, dtype=torch.float64),
               value="x")
    with pytest.raises(TypeError, match="holds (numpy|torch) arrays and .* holds (torch|numpy)"):
        Integrate(q, p - q, frozenset({"x"}))
