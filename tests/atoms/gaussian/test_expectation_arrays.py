"""``E_q[f]`` on arrays (``expectation_arrays``): the Monte Carlo ELBO's ``Integrate(q, p - q)``
and signed sums of Gaussians under a Gaussian, against closed forms (the Normal KL) and dense
numpy algebra (inverses, log-determinants), on every backend and under ``jax.jit``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian.expectation_arrays import signed_gaussian_expectation
from funsor_core.distribution import Normal
from funsor_core.integrate import Integrate
from interpretations import MonteCarlo

LOG_2PI = math.log(2 * math.pi)
LOC, SCALE, LOC_P, SCALE_P = 0.5, 0.7, 0.3, 1.5


def neg_kl(loc, scale, loc_p, scale_p, log=math.log):
    """E_q[log p - log q] = -KL(q || p) for Normals, the textbook closed form."""
    return -(log(scale_p / scale) + (scale ** 2 + (loc - loc_p) ** 2) / (2 * scale_p ** 2)
             - 0.5)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_monte_carlo_elbo_of_normals_is_the_closed_form(backend):
    import jax
    import jax.numpy as jnp
    import torch

    to = {"numpy": np.asarray, "torch": torch.tensor, "jax": jnp.asarray}[backend]
    fc.set_backend(backend)
    try:
        def elbo(loc, scale):
            q = Normal(loc, scale, value="x")
            p = Normal(to(LOC_P), to(SCALE_P), value="x")
            with MonteCarlo(particle=fc.Bint[3]):
                value = Integrate(q, p - q, frozenset({"x"}))
            assert value.inputs == {"particle": fc.Bint[3]}  # the requested sample input
            return value.reduce(ops.mean, "particle").data

        if backend == "jax":
            actual = jax.jit(elbo)(jnp.asarray(LOC), jnp.asarray(SCALE))
        elif backend == "torch":
            loc = torch.tensor(LOC, dtype=torch.float64, requires_grad=True)
            scale = torch.tensor(SCALE, dtype=torch.float64, requires_grad=True)
            actual = elbo(loc, scale)
            grads = torch.autograd.grad(actual, (loc, scale))
            loc2, scale2 = (t.detach().clone().requires_grad_() for t in (loc, scale))
            expected = torch.autograd.grad(neg_kl(loc2, scale2, LOC_P, SCALE_P, torch.log),
                                           (loc2, scale2))
            for a, e in zip(grads, expected):
                assert float(a) == pytest.approx(float(e), rel=1e-10)
        else:
            actual = elbo(np.asarray(LOC), np.asarray(SCALE))
        assert float(np.asarray(ops.to_numpy(actual))) == pytest.approx(
            neg_kl(LOC, SCALE, LOC_P, SCALE_P), rel=1e-12)
    finally:
        fc.set_backend("numpy")


def _dense(w, s):
    """log ∫ exp(-0.5||x S - w||^2) dx, mean and covariance, in dense numpy algebra."""
    p = s @ s.T
    cov = np.linalg.inv(p)
    info = s @ w
    mean = cov @ info
    log_mass = (0.5 * len(p) * LOG_2PI - 0.5 * np.linalg.slogdet(p)[1] + 0.5 * info @ mean
                - 0.5 * w @ w)
    return log_mass, mean, cov


def _dense_expectation(w, s, mean, cov):
    """E[-0.5||x S - w||^2] = -0.5 (tr(A cov) + m'A m - 2 b'm + w'w), A = S S', b = S w."""
    a, b = s @ s.T, s @ w
    return -0.5 * (np.trace(a @ cov) + mean @ a @ mean - 2 * b @ mean + w @ w)


@pytest.mark.parametrize("measure", ["triangular", "qr"])
def test_signed_sum_of_gaussians_against_dense_algebra(measure):
    rng = np.random.default_rng(0)
    i, j = fc.Bint[3], fc.Bint[2]
    inputs = {"i": i, "x": fc.Reals[2]}
    if measure == "triangular":  # scale_tril: prec_sqrt = L^-T, known upper triangular
        tril = np.tril(rng.normal(size=(3, 2, 2))) + 2 * np.eye(2)
        q = fc.Gaussian(mean=rng.normal(size=(3, 2)), scale_tril=tril, inputs=inputs)
        assert q._triangular == "upper"
    else:  # rank 4 > dim 2: R from a QR
        q = fc.Gaussian(white_vec=rng.normal(size=(3, 4)),
                        prec_sqrt=rng.normal(size=(3, 2, 4)) + np.eye(2, 4), inputs=inputs)
    f1, f2 = (fc.Gaussian(white_vec=rng.normal(size=(3, r)), prec_sqrt=rng.normal(size=(3, 2, r)),
                          inputs=inputs) for r in (1, 3))
    t = fc.Tensor(rng.normal(size=3), {"i": i})
    u = fc.Tensor(rng.normal(size=2), {"j": j})  # an input q lacks: added by name
    log_t = fc.Tensor(rng.normal(size=3), {"i": i})
    integrand = f1 - f2 + t - 2.5 - u
    assert signed_gaussian_expectation(q, integrand) is not None  # the array path applies
    actual = Integrate(q + log_t, integrand, "x").align(("i", "j")).data
    for k in range(3):
        log_mass, mean, cov = _dense(q.white_vec[k], q.prec_sqrt[k])
        e = (_dense_expectation(f1.white_vec[k], f1.prec_sqrt[k], mean, cov)
             - _dense_expectation(f2.white_vec[k], f2.prec_sqrt[k], mean, cov)
             + t.data[k] - 2.5 - u.data)
        np.testing.assert_allclose(actual[k], np.exp(log_mass + log_t.data[k]) * e, rtol=1e-9)


def test_other_integrands_are_left_to_the_general_path():
    q = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    other = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
                        inputs={"x": fc.Real, "y": fc.Real})
    x = fc.Variable("x", fc.Real)
    assert signed_gaussian_expectation(q, q - other) is None  # other inputs
    assert signed_gaussian_expectation(q, q + x * x) is None  # a polynomial
    result = Integrate(q, q + x * x, "x")  # the general path: E[q] + E[x^2] = -0.5 + 1
    assert float(result.data) == pytest.approx(math.sqrt(2 * math.pi) * 0.5, rel=1e-12)


def test_a_normal_measure_integrates_to_one_by_construction():
    # A Normal's Gaussian knows its normalizer (one triangular block), so Integrate reads
    # E_q[f] without computing the mass, and E_q[g] of the measure's own square Gaussian is
    # -0.5 dim. Against the same arrays rebuilt without that knowledge (the mass and every
    # column computed), the textbook -KL and the entropy 0.5 log(2 pi e s^2), per batch entry.
    locs, scale = np.array([0.5, -1.0]), 0.7
    q = Normal(fc.Tensor(locs, {"i": fc.Bint[2]}), scale, value="x")
    g = next(t for t in q.terms if isinstance(t, fc.Gaussian))
    t = next(t for t in q.terms if isinstance(t, fc.Tensor))
    assert g._normalizer is t
    untagged = (fc.Gaussian(white_vec=g.white_vec.copy(), prec_sqrt=g.prec_sqrt.copy(),
                            inputs=g.inputs) + fc.Tensor(t.data.copy(), t.inputs))
    assert getattr(next(u for u in untagged.terms if isinstance(u, fc.Gaussian)),
                   "_normalizer", None) is None
    p = Normal(0.3, 1.5, value="x")
    expected = [neg_kl(m, scale, 0.3, 1.5) for m in locs]
    for measure in (q, untagged):
        actual = Integrate(measure, p - q, "x").align(("i",)).data
        np.testing.assert_allclose(actual, expected, rtol=1e-12)
    entropy = 0.5 * np.log(2 * np.pi * np.e * scale ** 2)
    np.testing.assert_allclose(Integrate(q, -q, "x").data, [entropy] * 2, rtol=1e-12)
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    two = Normal(x, scale, y)  # two blocks: not normalizable over (x, y), no such knowledge
    assert getattr(two.terms[0], "_normalizer", None) is None
