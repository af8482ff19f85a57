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
    for k in range(8):  # scipy's functions, not frozen distributions built per evaluation
        integral, _ = scipy.integrate.quad(
            lambda p, k=k: st.beta.pdf(p, a, b) * st.binom.pmf(k, n, p), 0, 1)
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
            lambda lam, k=k: st.gamma.pdf(lam, a, scale=1 / r) * st.poisson.pmf(k, lam), 0,
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
    (D.Poisson, [3.0, 0.0, 2.0, 7.0], None),
])
def test_plates_collapse_exactly(family, obs, count):
    obs = np.asarray(obs)
    n = {"n": Bint[obs.shape[0]]}
    probs = Q if family not in (D.Binomial, D.Poisson) else P
    if count is None:
        lik = family(probs, value=_t(obs, n, 3 if family is D.Categorical else "real"))
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


# -- every conjugate pair with a plate of observations, on every backend and under jit ---------
def _quad_log(f, lo, hi):
    integral, _ = scipy.integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-11, limit=200)
    return math.log(integral)


def _log_multinomial_coef(n, x):
    return sp.gammaln(n + 1) - sp.gammaln(x + 1).sum(-1)


def _dirichlet_plate_oracle(alpha, counts, n):
    # int Dir(q; alpha) prod_i Mult(x_i; n_i, q) dq, by the Dirichlet normalizer.
    total = counts.sum(0)
    return (_log_multinomial_coef(n, counts).sum() + sp.gammaln(alpha.sum())
            - sp.gammaln(alpha.sum() + n.sum()) + (sp.gammaln(alpha + total)
                                                   - sp.gammaln(alpha)).sum())


PLATE_PAIRS = {
    "beta-bernoulli": (
        dict(a=1.5, b=2.0), dict(x=[1.0, 0.0, 1.0, 1.0, 0.0, 1.0]),
        lambda t, obs: (D.Beta(t["a"], t["b"], P), D.BernoulliProbs(P, value=obs["x"])),
        lambda a, b, x: _quad_log(lambda p: st.beta(a, b).pdf(p) * np.prod(
            st.bernoulli(p).pmf(x)), 0, 1)),
    "beta-binomial": (
        dict(a=2.5, b=1.5), dict(n=[4.0, 3.0, 5.0], x=[2.0, 0.0, 4.0]),
        lambda t, obs: (D.Beta(t["a"], t["b"], P), D.Binomial(obs["n"], P, value=obs["x"])),
        lambda a, b, n, x: _quad_log(lambda p: st.beta(a, b).pdf(p) * np.prod(
            st.binom(n, p).pmf(x)), 0, 1)),
    "dirichlet-categorical": (
        dict(alpha=[0.5, 1.0, 2.5]), dict(x=[0, 2, 2, 1, 0, 2]),
        lambda t, obs: (D.Dirichlet(t["alpha"], Q), D.Categorical(Q, value=obs["x"])),
        lambda alpha, x: _dirichlet_plate_oracle(np.asarray(alpha), np.eye(3)[x], np.ones(6))),
    "dirichlet-multinomial": (
        dict(alpha=[0.5, 1.0, 2.5]), dict(n=[3.0, 4.0], x=[[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]]),
        lambda t, obs: (D.Dirichlet(t["alpha"], Q),
                        D.Multinomial(obs["n"], Q, value=obs["x"])),
        lambda alpha, n, x: _dirichlet_plate_oracle(np.asarray(alpha), np.asarray(x),
                                                    np.asarray(n))),
    "gamma-poisson": (
        dict(a=2.0, r=1.5), dict(x=[3.0, 0.0, 2.0]),
        lambda t, obs: (D.Gamma(t["a"], t["r"], P), D.Poisson(P, value=obs["x"])),
        lambda a, r, x: _quad_log(lambda lam: st.gamma(a, scale=1 / r).pdf(lam) * np.prod(
            st.poisson(lam).pmf(x)), 0, np.inf)),
    "gamma-poisson-exposures": (  # Poisson(x_n; c_n l): an exposure per observation
        dict(a=2.0, r=1.5), dict(c=[0.5, 2.0, 1.0], x=[1.0, 4.0, 2.0]),
        lambda t, obs: (D.Gamma(t["a"], t["r"], P), D.Poisson(obs["c"] * P, value=obs["x"])),
        lambda a, r, c, x: _quad_log(lambda lam: st.gamma(a, scale=1 / r).pdf(lam) * np.prod(
            st.poisson(c * lam).pmf(x)), 0, np.inf)),
    # Pyro's poutine.collapse of a Normal mean over a plate of Normal observations: the
    # observations share the mean, so their marginal is one joint normal with covariance
    # s^2 11^T + I (funsor 0.4.8 returns -4.48 for the h98 program where this is -6.32).
    "normal-normal": (
        dict(m=0.3, s=2.0), dict(x=[0.5, -1.0, 2.0]),
        lambda t, obs: (D.Normal(t["m"], t["s"], P), D.Normal(P, 1.0, value=obs["x"])),
        lambda m, s, x: st.multivariate_normal(np.full(3, m), s ** 2 + np.eye(3)).logpdf(x)),
}


def _prior_name(pair):
    # a prior with constant parameters may be eager-rewritten to its Gaussian, with no .value
    return (Q if pair.startswith("dirichlet") else P).name


def _as_backend(backend, x):
    x = np.asarray(x)
    if backend == "torch":
        import torch

        return torch.as_tensor(x)
    return jnp.asarray(x) if backend in ("jax", "jit") else x


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "jit"])
@pytest.mark.parametrize("pair", list(PLATE_PAIRS))
def test_every_conjugate_pair_collapses_a_plate_of_observations(pair, backend):
    # prior(p) + sum_n lik(p, x_n), then p summed out: a number, the marginal likelihood of
    # the sequence of observations, against quadrature (Beta, Gamma) or the Dirichlet's
    # normalizer (scipy.special).
    params, observed, build, oracle = PLATE_PAIRS[pair]
    names = list(params) + list(observed)
    size = len(observed["x"])

    def run(*arrays):
        t = {k: fc.Tensor(a) for k, a in zip(params, arrays)}
        obs = {k: fc.Tensor(a, {"n": Bint[size]}, 3 if pair == "dirichlet-categorical"
                            else "real") for k, a in zip(observed, arrays[len(params):])}
        prior, lik = build(t, obs)
        result = (prior + lik.reduce(ops.add, "n")).reduce(ops.logaddexp, _prior_name(pair))
        assert isinstance(result, fc.Tensor), type(result)
        return result.data

    arrays = [_as_backend(backend, v) for v in (*params.values(), *observed.values())]
    fc.set_backend("jax" if backend == "jit" else backend)
    try:
        actual = (jax.jit(run) if backend == "jit" else run)(*arrays)
    finally:
        fc.set_backend("numpy")
    expected = oracle(**{k: np.asarray(v) for k, v in zip(names, (*params.values(),
                                                                    *observed.values()))})
    assert float(actual) == pytest.approx(expected, rel=1e-8)


def test_gamma_poisson_plate_posterior_and_outside_support():
    # Gamma(a, r) and N counts: the posterior is Gamma(a + sum x, r + N) (a closed form); an
    # observation that is not a count makes the whole plate's likelihood -inf.
    x = np.array([3.0, 0.0, 2.0, 5.0])
    joint = D.Gamma(2.0, 1.5, P) + D.Poisson(P, value=_t(x, {"n": Bint[4]})).reduce(ops.add, "n")
    post = [t for t in joint.terms if isinstance(t, D.Gamma)][0]
    assert (post.concentration.item(), post.rate.item()) == (2.0 + x.sum(), 1.5 + 4)
    bad = D.Poisson(P, value=_t([3.0, 0.5, 2.0], {"n": Bint[3]})).reduce(ops.add, "n")
    assert bad(p=1.3).item() == -math.inf
    with lazy:
        direct = D.Poisson(P, value=_t([3.0, 0.5, 2.0], {"n": Bint[3]})).reduce(ops.add, "n")
    assert fc.reinterpret(direct(p=1.3)).item() == -math.inf


@pytest.mark.parametrize("exposure", [3.0, np.array([0.5, 2.0])])
def test_gamma_poisson_with_an_exposure_is_conjugate(exposure):
    # Poisson(x; c l) under Gamma(l; a, r): the marginal is GammaPoisson(a, r / c), the
    # posterior Gamma(a + x, r + c); against quadrature, per exposure c.
    a, r, x = 2.0, 1.5, 4.0
    c = _t(exposure, {"i": Bint[2]} if np.ndim(exposure) else None)
    joint = D.Gamma(a, r, P) + D.Poisson(c * P, value=x)
    post = [t for t in joint.terms if isinstance(t, D.Gamma)][0]
    np.testing.assert_allclose(post.rate.data, r + np.asarray(exposure))
    m = joint.reduce(ops.logaddexp, "p")
    for k, ck in enumerate(np.atleast_1d(exposure)):
        expected = _quad_log(lambda lam, ck=ck: st.gamma(a, scale=1 / r).pdf(lam)
                             * st.poisson(ck * lam).pmf(x), 0, np.inf)
        got = m.item() if np.ndim(exposure) == 0 else m(i=k).item()
        assert got == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("pair", list(PLATE_PAIRS))
def test_every_conjugate_pair_with_a_plate_through_sum_product(pair):
    # funsor's idiom for a plated model: sum_product eliminates the plate (by ops.add) and
    # the prior's value (by logaddexp) itself.
    from funsor_core.sum_product import sum_product

    params, observed, build, oracle = PLATE_PAIRS[pair]
    size = len(observed["x"])
    dtype = 3 if pair == "dirichlet-categorical" else "real"
    prior, lik = build({k: _t(v) for k, v in params.items()},
                       {k: _t(v, {"n": Bint[size]}, dtype) for k, v in observed.items()})
    result = sum_product(ops.logaddexp, ops.add, [prior, lik],
                         eliminate=frozenset({_prior_name(pair), "n"}), plates=frozenset({"n"}))
    assert isinstance(result, fc.Tensor)
    expected = oracle(**{k: np.asarray(v) for k, v in {**params, **observed}.items()})
    assert result.item() == pytest.approx(expected, rel=1e-8)


def test_gamma_poisson_batched_prior_and_two_plates():
    # Gamma(a_i, r) and counts x_{i,n,m} over two plates: per i, the closed form
    # lgamma(a + S) - lgamma(a) + a log r - (a + S) log(r + N) - sum lgamma(x + 1).
    a, r = np.array([2.0, 3.0]), 1.5
    x = np.array([[[3.0, 0.0], [2.0, 1.0]], [[1.0, 1.0], [0.0, 4.0]]])
    obs = _t(x, {"i": Bint[2], "n": Bint[2], "m": Bint[2]})
    joint = D.Gamma(_t(a, {"i": Bint[2]}), r, P) + D.Poisson(P, value=obs).reduce(
        ops.add, frozenset({"n", "m"}))
    actual = joint.reduce(ops.logaddexp, "p")
    s, n = x.reshape(2, -1).sum(1), 4
    expected = (sp.gammaln(a + s) - sp.gammaln(a) + a * np.log(r) - (a + s) * np.log(r + n)
                - sp.gammaln(x + 1).reshape(2, -1).sum(1))
    assert isinstance(actual, fc.Tensor) and actual.inputs == {"i": Bint[2]}
    np.testing.assert_allclose(actual.data, expected, rtol=1e-12)
