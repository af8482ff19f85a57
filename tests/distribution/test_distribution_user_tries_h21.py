"""Infinite parameters take their limits (torch.distributions gives NaN): ``StudentT(df=inf)``
is the Normal, a ``CategoricalLogits`` row with ``+inf`` logits splits its mass equally over
them. Oracles: scipy.stats.norm, scipy.stats.t at a finite df, scipy.special.log_softmax at
a large finite stand-in for ``+inf``; numpy, torch, eager jax and ``jax.jit``."""

import numpy as np
import pytest
from scipy import special, stats

import funsor_core as fc
from funsor_core import distribution as D
from tests.backend_values import values_on_every_backend

VALUES = np.array([-3.0, 0.5, 2.0])
INF = np.inf


def test_student_t_infinite_df_is_the_normal():
    def fn(df, x):
        return D.StudentT(fc.Tensor(df, {"k": fc.Bint[2]}), 1.0, 2.0,
                          value=fc.Tensor(x, {"i": fc.Bint[3]})).align(("k", "i")).data
    expected = np.stack([stats.norm(1.0, 2.0).logpdf(VALUES),
                         stats.t(4.0, 1.0, 2.0).logpdf(VALUES)])
    for actual in values_on_every_backend(fn, np.array([INF, 4.0]), VALUES):
        np.testing.assert_allclose(actual, expected, rtol=1e-10)


def test_student_t_gradient_at_infinite_df_is_finite():
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        x = torch.tensor(0.5, requires_grad=True)
        D.StudentT(torch.tensor(INF), 0.0, 1.0, value=fc.Tensor(x)).data.backward()
    finally:
        fc.set_backend("numpy")
    assert x.grad.item() == pytest.approx(-0.5)  # d/dx log N(x; 0, 1) = -x


LOGITS = np.array([[0.0, INF, 1.0, INF], [0.0, 1.0, 2.0, 3.0], [INF, -INF, 5.0, 0.0]])


def test_categorical_logits_with_plus_inf_split_the_mass_equally():
    def fn(logits):
        return D.CategoricalLogits(fc.Tensor(logits, {"b": fc.Bint[3]}),
                                   value=fc.Variable("v", fc.Bint[4])).align(("b", "v")).data
    expected = special.log_softmax(np.where(LOGITS == INF, 1e6, LOGITS), -1)
    for actual in values_on_every_backend(fn, LOGITS, eager_jax=False):  # eager: StudentT's
        finite = expected > -1e5  # the stand-in's -1e6 entries are -inf in the limit
        np.testing.assert_allclose(actual[finite], expected[finite], rtol=1e-12)
        assert (actual[~finite] == -INF).all()
    assert np.allclose(np.exp(expected).sum(-1), 1.0)


def test_categorical_logits_moments_and_samples_with_plus_inf():
    probs = np.exp(special.log_softmax(np.where(LOGITS == INF, 1e6, LOGITS), -1))
    mean, var = D.CategoricalLogits.moments(LOGITS)  # the family's math, on arrays
    np.testing.assert_allclose(mean, probs @ np.arange(4), rtol=1e-12)
    np.testing.assert_allclose(var, probs @ np.arange(4) ** 2 - (probs @ np.arange(4)) ** 2,
                               rtol=1e-12)
    d = D.CategoricalLogits(LOGITS[0], value="v")
    draws = d.sample(frozenset({"v"}), {"n": fc.Bint[400]}, rng_key=0)
    delta = next(t for t in draws.terms if isinstance(t, fc.Delta))
    values = np.asarray(delta.terms[0][1][0].data)
    assert set(np.unique(values)) == {1, 3}  # only the +inf entries, both of them
    assert 0.35 < (values == 1).mean() < 0.65  # equally often: 400 draws, 5 sd ~ 0.125


# -- a NaN value stays NaN (it was -inf: "outside the support") ----------------------------------
SUPPORTED = [
    (lambda v: D.LogNormal(0.0, 1.0, value=v), stats.lognorm(1.0).logpdf),
    (lambda v: D.Gamma(2.0, 3.0, value=v), stats.gamma(2.0, scale=1 / 3).logpdf),
    (lambda v: D.Beta(2.0, 3.0, value=v), stats.beta(2.0, 3.0).logpdf),
    (lambda v: D.Exponential(2.0, value=v), stats.expon(scale=0.5).logpdf),
    (lambda v: D.Uniform(0.0, 4.0, value=v), stats.uniform(0.0, 4.0).logpdf),
    (lambda v: D.Poisson(2.0, value=v), stats.poisson(2.0).logpmf),
    (lambda v: D.BernoulliProbs(0.3, value=v), stats.bernoulli(0.3).logpmf),
    (lambda v: D.Binomial(5.0, 0.3, value=v), stats.binom(5, 0.3).logpmf),
]


@pytest.mark.parametrize("family, oracle", SUPPORTED, ids=["LogNormal", "Gamma", "Beta",
                         "Exponential", "Uniform", "Poisson", "BernoulliProbs", "Binomial"])
def test_nan_value_stays_nan_and_outside_the_support_is_minus_inf(family, oracle):
    values = np.array([np.nan, -1.0, 1.0])  # NaN, outside every support, inside every one

    def fn(x):
        return family(fc.Tensor(x, {"i": fc.Bint[3]})).align(("i",)).data
    expected = oracle(values)  # scipy: NaN, -inf, the density
    for actual in values_on_every_backend(fn, values, eager_jax=False):
        np.testing.assert_allclose(actual, expected, rtol=1e-10)
