"""Conjugate pairs: marginals and posteriors against closed forms and quadrature; plates of
observations; sequential updates; jax.jit (the update declines, the marginal stays exact)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.special as sp
import scipy.stats as st

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from interpretations import lazy

jax.config.update("jax_enable_x64", True)
P, Q = fc.Variable("p", Real), fc.Variable("q", Reals[3])
I3 = {"i": Bint[3]}


def _t(x, inputs=None, dtype="real"):
    return fc.Tensor(np.asarray(x), inputs or {}, dtype)


def _marginal(prior, lik, name):
    return (prior + lik).reduce(ops.logaddexp, name)


# -- marginals: the compound distribution, against closed forms ---------------------------------
def test_beta_bernoulli_marginal():
    a, b = np.array([0.5, 2.0, 3.0]), np.array([1.5, 1.0, 4.0])
    m = _marginal(D.Beta(_t(a, I3), _t(b, I3), P), D.BernoulliProbs(P), "p")
    assert isinstance(m, D.BernoulliProbs) and m.inputs == {"i": Bint[3], "value": Real}
    np.testing.assert_allclose(m(value=1.0).data, np.log(a / (a + b)), rtol=1e-12)
    np.testing.assert_allclose(m(value=0.0).data, np.log(b / (a + b)), rtol=1e-12)


def test_beta_binomial_marginal_against_quadrature():
    a, b, n = 2.5, 1.5, 7.0
    m = _marginal(D.Beta(a, b, P), D.Binomial(n, P), "p")
    assert isinstance(m, D.BetaBinomial)
    for k in range(8):
        integral, _ = scipy.integrate.quad(
            lambda p, k=k: st.beta(a, b).pdf(p) * st.binom(n, p).pmf(k), 0, 1)
        assert m(value=float(k)).item() == pytest.approx(math.log(integral), rel=1e-8)


def test_dirichlet_categorical_marginal():
    alpha = np.array([[0.5, 1.0, 2.5], [3.0, 1.0, 1.0]])
    prior = D.Dirichlet(_t(alpha, {"i": Bint[2]}), Q)
    m = _marginal(prior, D.Categorical(Q), "q")
    assert isinstance(m, fc.Tensor)  # Categorical(alpha / alpha0) of a Bint value: its table
    assert m.inputs == {"i": Bint[2], "value": Bint[3]}
    for v in range(3):
        np.testing.assert_allclose(m(value=v).data, np.log(alpha[:, v] / alpha.sum(1)))


def test_dirichlet_multinomial_marginal():
    alpha = np.array([0.5, 1.0, 2.5])
    m = _marginal(D.Dirichlet(alpha, Q), D.Multinomial(6.0, Q), "q")
    assert isinstance(m, D.DirichletMultinomial)
    x = np.array([1.0, 2.0, 3.0])
    assert m(value=x).item() == pytest.approx(st.dirichlet_multinomial(alpha, 6).logpmf(x))


def test_gamma_poisson_marginal_against_quadrature():
    a, r = 2.0, 0.5
    m = _marginal(D.Gamma(a, r, P), D.Poisson(P), "p")
    assert isinstance(m, D.GammaPoisson)
    for k in range(5):
        integral, _ = scipy.integrate.quad(
            lambda lam, k=k: st.gamma(a, scale=1 / r).pdf(lam) * st.poisson(lam).pmf(k), 0,
            np.inf)
        assert m(value=float(k)).item() == pytest.approx(math.log(integral), rel=1e-7)


def test_marginal_keeps_other_factors_and_reductions():
    # sum_{p, j} f(j) + Beta(p) + Bernoulli(p, x): the pair collapses, f stays.
    f = _t([0.1, 0.7], {"j": Bint[2]})
    joint = f + D.Beta(2.0, 3.0, P) + D.BernoulliProbs(P, value=1.0)
    total = joint.reduce(ops.logaddexp, {"p", "j"}).item()
    assert total == pytest.approx(sp.logsumexp([0.1, 0.7]) + math.log(2 / 5))


# -- conditioning: prior + likelihood = posterior + evidence ------------------------------------
CONDITIONING = [
    (lambda: D.Beta(2.0, 3.0, P), lambda x: D.BernoulliProbs(P, value=x), 1.0,
     lambda x: (2.0 + x, 3.0 + 1 - x)),
    (lambda: D.Beta(2.0, 3.0, P), lambda x: D.Binomial(5.0, P, value=x), 3.0,
     lambda x: (2.0 + x, 3.0 + 5 - x)),
    (lambda: D.Gamma(2.0, 1.5, P), lambda x: D.Poisson(P, value=x), 4.0,
     lambda x: (2.0 + x, 2.5)),
]


@pytest.mark.parametrize("prior, lik, x, closed", CONDITIONING)
def test_posterior_update_is_exact(prior, lik, x, closed):
    with lazy:
        joint_lazy = prior() + lik(_t(x))
    joint = prior() + lik(_t(x))
    posts = [t for t in joint.terms if isinstance(t, D.Distribution)]
    assert len(posts) == 1 and type(posts[0]) is type(prior())
    params = [a.item() for a in posts[0]._args[:-1]]
    assert params == pytest.approx(list(closed(x)))
    # the rewrite is an identity: both sides agree at every p
    for p in (0.2, 0.5, 0.9):
        assert joint(p=p).item() == pytest.approx(fc.reinterpret(joint_lazy(p=p)).item())


def test_dirichlet_posterior_and_sequential_updates():
    alpha = np.array([1.0, 2.0, 0.5])
    joint = (D.Dirichlet(alpha, Q) + D.Categorical(Q, value=_t(2, dtype=3))
             + D.Multinomial(4.0, Q, value=_t([1.0, 0.0, 3.0])))
    post = [t for t in joint.terms if isinstance(t, D.Dirichlet)]
    assert len(post) == 1
    np.testing.assert_allclose(post[0].concentration.data, alpha + [1.0, 0.0, 4.0])
    evidence = joint.reduce(ops.logaddexp, "q").item()
    expected = (math.log(alpha[2] / alpha.sum()) + st.dirichlet_multinomial(
        alpha + [0.0, 0.0, 1.0], 4).logpmf([1.0, 0.0, 3.0]))
    assert evidence == pytest.approx(expected, rel=1e-12)


def test_observation_outside_support_is_minus_inf_not_an_error():
    joint = D.Beta(2.0, 3.0, P) + D.Binomial(3.0, P, value=_t(5.0))  # 5 successes of 3
    assert sorted(type(t).__name__ for t in joint.terms) == ["Beta", "Binomial"]  # no update
    assert joint.reduce(ops.logaddexp, "p").item() == -math.inf


# -- plates of observations ----------------------------------------------------------------------
def _log_beta(a, b):
    return sp.gammaln(a) + sp.gammaln(b) - sp.gammaln(a + b)


def test_beta_bernoulli_plate():
    x = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    n = {"n": Bint[6]}
    a, b = 1.5, 2.0
    joint = D.Beta(a, b, P) + D.BernoulliProbs(P, value=_t(x, n)).reduce(ops.add, "n")
    post = [t for t in joint.terms if isinstance(t, D.Beta)][0]
    s = x.sum()
    assert (post.concentration1.item(), post.concentration0.item()) == (a + s, b + 6 - s)
    expected = _log_beta(a + s, b + 6 - s) - _log_beta(a, b)  # a sequence, not a count
    assert joint.reduce(ops.logaddexp, "p").item() == pytest.approx(expected, rel=1e-12)


def test_plates_of_other_families_stay_lazy():
    x = _t([0.5, 1.5], {"n": Bint[2]})
    lik = D.Normal(fc.Variable("m", Real).exp(), 1.0, value=x).reduce(ops.add, "n")
    assert isinstance(lik, (fc.Reduce, fc.Contraction)) and lik.inputs == {"m": Real}
    expected = st.norm(np.exp(0.3), 1.0).logpdf([0.5, 1.5]).sum()
    assert lik(m=0.3).item() == pytest.approx(expected)


def test_plate_with_observation_outside_support_is_minus_inf():
    x = _t([1.0, 2.0, 0.0], {"n": Bint[3]})
    lik = D.BernoulliProbs(P, value=x).reduce(ops.add, "n")
    assert lik(p=0.5).item() == -math.inf


@pytest.mark.parametrize("family, obs, count", [
    (D.Binomial, [2.0, 0.0, 4.0], [4.0, 3.0, 5.0]),
    (D.Multinomial, [[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]], [3.0, 4.0]),
    (D.Categorical, [0, 2, 2, 1], None),
])
def test_plates_collapse_exactly(family, obs, count):
    obs = np.asarray(obs)
    n = {"n": Bint[obs.shape[0]]}
    probs = Q if family is not D.Binomial else P
    if count is None:
        lik = family(probs, value=_t(obs, n, 3))
    else:
        lik = family(_t(count, n), probs, value=_t(obs, n))
    collapsed = lik.reduce(ops.add, "n")
    point = np.array([0.2, 0.5, 0.3]) if probs is Q else 0.35
    with lazy:
        direct = lik.reduce(ops.add, "n")
    expected = fc.reinterpret(direct(**{probs.name: point}))
    assert not isinstance(collapsed, fc.Reduce)
    assert collapsed(**{probs.name: point}).item() == pytest.approx(expected.item(), rel=1e-12)


def test_dirichlet_categorical_mixture():
    rng = np.random.default_rng(0)
    alpha, pi = rng.uniform(0.5, 2, (2, 3)), np.array([0.3, 0.7])
    x = rng.integers(0, 3, 10)
    z = {"z": Bint[2]}
    joint = (_t(np.log(pi), z) + D.Dirichlet(_t(alpha, z), Q)
             + D.Categorical(Q, value=_t(x, {"i": Bint[10]}, 3)).reduce(ops.add, "i"))
    c = np.bincount(x, minlength=3)

    def log_marginal(a):
        return (sp.gammaln(a.sum()) - sp.gammaln(a.sum() + 10)
                + (sp.gammaln(a + c) - sp.gammaln(a)).sum())

    expected = sp.logsumexp(np.log(pi) + [log_marginal(alpha[0]), log_marginal(alpha[1])])
    assert joint.reduce(ops.logaddexp, {"q", "z"}).item() == pytest.approx(expected, rel=1e-12)
    post = [t for t in joint.terms if isinstance(t, D.Dirichlet)][0]
    np.testing.assert_allclose(post.concentration.data, alpha + c)


# -- jax.jit ---------------------------------------------------------------------------------
def test_under_jit_the_update_declines_and_the_marginal_is_exact():
    fc.set_backend("jax")
    try:
        def run(a, b, x):
            joint = D.Beta(fc.Tensor(a), fc.Tensor(b), P) + D.Binomial(
                4.0, P, value=fc.Tensor(x))
            kinds = sorted(type(t).__name__ for t in joint.terms)
            return joint.reduce(ops.logaddexp, "p").data, kinds

        value, kinds = run(jnp.asarray(2.0), jnp.asarray(3.0), jnp.asarray(1.0))
        assert kinds == ["Beta", "Tensor"]  # eager: the posterior and the evidence
        traced = {}

        def jitted(a, b, x):
            out, traced["kinds"] = run(a, b, x)
            return out

        result = jax.jit(jitted)(jnp.asarray(2.0), jnp.asarray(3.0), jnp.asarray(1.0))
        assert traced["kinds"] == ["Beta", "Binomial"]  # traced: left as it is
    finally:
        fc.set_backend("numpy")
    expected = st.betabinom(4, 2.0, 3.0).logpmf(1.0)
    assert float(value) == pytest.approx(expected) and float(result) == pytest.approx(expected)
