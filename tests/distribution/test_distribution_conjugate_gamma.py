"""Gamma-Gamma conjugacy: a Gamma's rate with a Gamma prior, summed out in closed form (the
compound gamma) or conditioned on an observation (posterior + evidence).

Oracle: scipy's Gamma densities integrated over the rate by quadrature (float64).
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest
import scipy.integrate
import scipy.stats as st

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.domains import Bint, Real
from interpretations import lazy

P = fc.Variable("p", Real)
A0, R0, A = [0.7, 2.0], [1.5, 0.4], [1.3, 0.6]  # prior shape and rate, likelihood shape
X = [0.8, 2.5]


@functools.cache  # the same four integrals serve every backend
def _quad_log(a0, r0, a, x):
    f = lambda lam: st.gamma.pdf(lam, a0, scale=1 / r0) * st.gamma.pdf(x, a, scale=1 / lam)
    return math.log(scipy.integrate.quad(f, 0, np.inf, epsabs=0, epsrel=1e-11, limit=200)[0])


def _arrays(backend):
    out = [np.array(v) for v in (A0, R0, A, X)]
    if backend == "torch":
        import torch

        return [torch.as_tensor(v) for v in out]
    return [jax.numpy.asarray(v) for v in out] if backend in ("jax", "jit") else out


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "jit"])
def test_gamma_rate_with_gamma_prior_sums_out_in_closed_form(backend):
    def run(a0, r0, a, x):
        i = {"i": Bint[2]}
        joint = D.Gamma(fc.Tensor(a0, i), fc.Tensor(r0, i), P) + D.Gamma(fc.Tensor(a, i), P)
        marginal = joint.reduce(ops.logaddexp, "p")
        assert "p" not in marginal.inputs  # decided structurally: the same under jit
        return marginal(value=fc.Tensor(x, i)).align(("i",)).data

    fc.set_backend("jax" if backend == "jit" else backend)
    try:
        actual = (jax.jit(run) if backend == "jit" else run)(*_arrays(backend))
    finally:
        fc.set_backend("numpy")
    expected = [_quad_log(*args) for args in zip(A0, R0, A, X)]
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-9)


def test_gamma_gamma_observation_gives_posterior_plus_evidence():
    prior, lik = D.Gamma(2.0, 1.5, P), D.Gamma(0.8, P, value=fc.Tensor(np.array(1.7)))
    joint = prior + lik
    posts = [t for t in joint.terms if isinstance(t, D.Gamma)]
    assert len(posts) == 1 and posts[0].value is P
    assert [posts[0].concentration.item(), posts[0].rate.item()] == pytest.approx(
        [2.0 + 0.8, 1.5 + 1.7])
    evidence = [t for t in joint.terms if isinstance(t, fc.Tensor)][0]
    assert evidence.item() == pytest.approx(_quad_log(2.0, 1.5, 0.8, 1.7), rel=1e-9)
    with lazy:
        joint_lazy = prior + lik
    for p in (0.3, 1.0, 4.0):  # the rewrite is an identity in p
        assert joint(p=p).item() == pytest.approx(fc.reinterpret(joint_lazy(p=p)).item())


def test_gamma_with_a_rate_that_is_not_the_prior_value_is_not_conjugate():
    # Gamma(a, 2 p): a scaled rate is not in the table; the sum stays lazy in p.
    joint = D.Gamma(2.0, 1.5, P) + D.Gamma(0.8, 2.0 * P, value=1.7)
    assert "p" in joint.inputs and not any(type(t) is fc.Tensor for t in joint.terms)
