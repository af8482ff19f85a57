"""A new user's tries of Gamma-Gamma conjugacy (#28): observations outside the support."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Gamma


@pytest.fixture(autouse=True)
def _numpy_backend():
    # Numbers become arrays of the active backend; a test before may leave another active.
    old = fc.get_backend()
    fc.set_backend("numpy")
    yield
    fc.set_backend(old)


def _compound_by_quadrature(a0, r0, a, x):
    # log int Gamma(l; a0, r0) Gamma(x; a, l) dl; 0 density outside x > 0.
    if x < 0:
        return -np.inf
    density = integrate.quad(lambda lam: stats.gamma.pdf(lam, a0, scale=1 / r0)
                             * stats.gamma.pdf(x, a, scale=1 / lam), 0, np.inf)[0]
    return np.log(density)


@pytest.mark.parametrize("a", [0.5, 1.0, 2.5])  # (a - 1) log x: +, 0 and - at x -> 0
def test_gamma_gamma_compound_is_minus_inf_outside_the_support(a):
    a0, r0, xs = 2.0, 3.0, np.array([-1.0, -4.0, 0.7])  # x + r0 < 0 too
    rate = fc.Variable("r", fc.Real)
    x = fc.Tensor(xs, {"n": fc.Bint[3]})
    m = (Gamma(a0, r0, value=rate) + Gamma(a, rate, value=x)).reduce(ops.logaddexp, "r")
    expected = [_compound_by_quadrature(a0, r0, a, v) for v in xs]
    np.testing.assert_allclose(m.data, expected, rtol=1e-7)


def test_gamma_gamma_compound_gradient_on_torch():
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    a0, r0, a = 2.0, 3.0, 1.5
    xs = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    rate = fc.Variable("r", fc.Real)
    m = (Gamma(a0, r0, value=rate) + Gamma(a, rate, value=fc.Tensor(xs, {"n": fc.Bint[2]})))
    m.reduce(ops.logaddexp, "r").data.sum().backward()
    x = xs.detach().numpy()  # d/dx [(a - 1) log x - (a + a0) log(x + r0)]
    np.testing.assert_allclose(xs.grad.numpy(), (a - 1) / x - (a + a0) / (x + r0))


def test_gamma_gamma_plate_collapses_to_posterior_plus_evidence():
    # A plate of Gamma(x_i; a_i, l) observations under a Gamma(a0, r0) prior on the rate l
    # collapses like the other conjugate pairs; oracle: the closed-form evidence
    # prod_i x_i^(a_i-1)/Gamma(a_i) * r0^a0 Gamma(a0 + A) / (Gamma(a0) (r0 + X)^(a0 + A)).
    from scipy.special import gammaln

    a0, r0 = 2.0, 3.0
    xs, a_s = np.array([0.5, 2.0, 7.0]), np.array([1.5, 0.7, 3.0])
    rate = fc.Variable("r", fc.Real)
    lik = Gamma(fc.Tensor(a_s, {"n": fc.Bint[3]}), rate, value=fc.Tensor(xs, {"n": fc.Bint[3]}))
    model = Gamma(a0, r0, value=rate) + lik.reduce(ops.add, "n")
    A, X = a_s.sum(), xs.sum()
    evidence = (((a_s - 1) * np.log(xs) - gammaln(a_s)).sum() + a0 * np.log(r0)
                + gammaln(a0 + A) - gammaln(a0) - (a0 + A) * np.log(r0 + X))
    np.testing.assert_allclose(model.reduce(ops.logaddexp, "r").data, evidence)
    post = model - evidence  # the posterior Gamma(a0 + A, r0 + X) at a few rates
    for lam in (0.3, 1.0):
        np.testing.assert_allclose(post(r=lam).data,
                                   stats.gamma.logpdf(lam, a0 + A, scale=1 / (r0 + X)))
    bad = Gamma(1.5, rate, value=fc.Tensor(np.array([1.0, -2.0]), {"n": fc.Bint[2]}))
    assert (Gamma(a0, r0, value=rate) + bad.reduce(ops.add, "n")).reduce(
        ops.logaddexp, "r").data == -np.inf
