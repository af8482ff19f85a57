"""Sampling distribution funsors: sample moments within 3 standard errors of scipy's, on every
backend; the same seed gives the same samples (jax keys traced under jit too); gradients of
reparameterized samples; the DiCE factor of the others; moments of ``mean()``/``variance()``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st
import torch

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.domains import Bint
from interpretations import lazy

jax.config.update("jax_enable_x64", True)
N = 4000  # draws per batch entry


def _simplex(*p):
    p = np.asarray(p, dtype=float)
    return p / p.sum(-1, keepdims=True)


# family, parameters (batched over i of size 2), scipy mean and variance of each entry.
MOMENTS = [
    (D.Normal, dict(loc=[0.5, -1.0], scale=[1.0, 2.0]),
     lambda loc, scale: st.norm(loc, scale).stats("mv")),
    (D.LogNormal, dict(loc=[0.0, 0.5], scale=[0.3, 0.6]),
     lambda loc, scale: st.lognorm(scale, scale=np.exp(loc)).stats("mv")),
    (D.Gamma, dict(concentration=[0.7, 3.0], rate=[1.0, 2.5]),
     lambda concentration, rate: st.gamma(concentration, scale=1 / rate).stats("mv")),
    (D.Beta, dict(concentration1=[0.6, 2.0], concentration0=[1.5, 3.0]),
     lambda concentration1, concentration0: st.beta(concentration1, concentration0).stats("mv")),
    (D.Exponential, dict(rate=[0.5, 2.0]), lambda rate: st.expon(scale=1 / rate).stats("mv")),
    (D.Laplace, dict(loc=[0.0, 1.0], scale=[1.0, 0.5]),
     lambda loc, scale: st.laplace(loc, scale).stats("mv")),
    (D.StudentT, dict(df=[5.0, 8.0], loc=[0.0, 1.0], scale=[1.0, 2.0]),
     lambda df, loc, scale: st.t(df, loc, scale).stats("mv")),
    (D.Uniform, dict(low=[-1.0, 0.0], high=[1.0, 3.0]),
     lambda low, high: st.uniform(low, high - low).stats("mv")),
    (D.Poisson, dict(rate=[0.5, 4.0]), lambda rate: st.poisson(rate).stats("mv")),
    (D.BernoulliProbs, dict(probs=[0.2, 0.7]), lambda probs: st.bernoulli(probs).stats("mv")),
    (D.BernoulliLogits, dict(logits=[-1.0, 2.0]),
     lambda logits: st.bernoulli(sp.expit(logits)).stats("mv")),
    (D.Binomial, dict(total_count=[5.0, 10.0], probs=[0.3, 0.6]),
     lambda total_count, probs: st.binom(total_count, probs).stats("mv")),
    (D.BetaBinomial, dict(concentration1=[1.0, 2.0], concentration0=[2.0, 0.5],
                          total_count=[6.0, 3.0]),
     lambda concentration1, concentration0, total_count: st.betabinom(
         total_count, concentration1, concentration0).stats("mv")),
    (D.GammaPoisson, dict(concentration=[1.5, 3.0], rate=[1.0, 0.5]),
     lambda concentration, rate: st.nbinom(concentration, rate / (1 + rate)).stats("mv")),
    (D.Categorical, dict(probs=_simplex([1, 2, 3], [4, 1, 1])),
     lambda probs: (probs @ np.arange(3.0), probs @ np.arange(3.0) ** 2 - (probs @ np.arange(
         3.0)) ** 2)),
    (D.Dirichlet, dict(concentration=[[0.5, 1.0, 2.0], [3.0, 1.0, 1.0]]),
     lambda concentration: (np.stack([st.dirichlet(c).mean() for c in concentration]),
                            np.stack([st.dirichlet(c).var() for c in concentration]))),
    (D.Multinomial, dict(total_count=[4.0, 7.0], probs=_simplex([1, 2, 3], [4, 1, 1])),
     lambda total_count, probs: (total_count[:, None] * probs,
                                 total_count[:, None] * probs * (1 - probs))),
    (D.DirichletMultinomial, dict(concentration=[[0.5, 1.0, 2.0], [3.0, 1.0, 1.0]],
                                  total_count=[4.0, 6.0]),
     lambda concentration, total_count: (
         np.stack([st.dirichlet_multinomial(c, int(n)).mean()
                   for c, n in zip(concentration, total_count)]),
         np.stack([st.dirichlet_multinomial(c, int(n)).var()
                   for c, n in zip(concentration, total_count)]))),
    (D.MultivariateNormal, dict(loc=[[0.0, 1.0], [2.0, -1.0]],
                                scale_tril=[[[1.0, 0.0], [0.5, 2.0]], [[0.5, 0.0], [-1.0, 1.0]]]),
     lambda loc, scale_tril: (loc, np.einsum("bij,bij->bi", scale_tril, scale_tril))),
]
IDS = [m[0].__name__ for m in MOMENTS]


def _array(backend, x, dtype=np.float64):
    x = np.asarray(x, dtype=dtype)
    return {"numpy": lambda a: a, "torch": torch.as_tensor, "jax": jnp.asarray}[backend](x)


def _lazy(family, params, backend):
    with lazy:
        return family(*[fc.Tensor(_array(backend, v), {"i": Bint[2]}) for v in params.values()])


def _points(sample):
    assert isinstance(sample, fc.Delta)
    (name, (point, _)), = sample.terms
    return np.asarray(ops.to_numpy(ops.detach(point.align(("n", "i")).data)), dtype=float)


# Every family on numpy and torch; on jax, whose gamma, Poisson and binomial samplers take
# seconds to compile, a few (the samplers are the same code on every backend, and the gamma
# route is also covered by the gradient test below).
_JAX = {"Normal", "Laplace", "Gamma", "Categorical", "BernoulliLogits", "MultivariateNormal"}
CASES = [pytest.param(*m, b, id=f"{IDS[k]}-{b}") for k, m in enumerate(MOMENTS)
         for b in ("numpy", "torch", "jax") if b != "jax" or IDS[k] in _JAX]


@pytest.mark.parametrize("family, params, oracle, backend", CASES)
def test_sample_moments_within_three_standard_errors(family, params, oracle, backend):
    d = _lazy(family, params, backend)
    x = _points(d.sample("value", {"n": Bint[N]}, rng_key=1))
    assert x.shape[:2] == (N, 2)
    mean, var = (np.asarray(v, dtype=float) for v in oracle(
        **{k: np.asarray(v, dtype=float) for k, v in params.items()}))
    standard_error = np.sqrt(var / N)
    assert np.all(np.abs(x.mean(0) - mean) <= 3 * standard_error + 1e-12), (x.mean(0), mean)


@pytest.mark.parametrize("family, params, oracle", MOMENTS, ids=IDS)
def test_mean_and_variance_methods(family, params, oracle):
    d = _lazy(family, params, "numpy")
    mean, var = oracle(**{k: np.asarray(v, dtype=float) for k, v in params.items()})
    np.testing.assert_allclose(d.mean().data, mean, rtol=1e-10)
    np.testing.assert_allclose(d.variance().data, var, rtol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_von_mises_circular_moments(backend):
    loc, kappa = np.array([0.5, -2.0]), np.array([0.5, 4.0])
    d = _lazy(D.VonMises, dict(loc=loc, concentration=kappa), backend)
    x = _points(d.sample("value", {"n": Bint[N]}, rng_key=2))
    assert np.all(np.abs(x) <= np.pi)
    c = np.cos(x - loc)
    expected = sp.i1e(kappa) / sp.i0e(kappa)  # E cos(x - loc) = I1(k) / I0(k)
    assert np.all(np.abs(c.mean(0) - expected) <= 3 * c.std(0) / math.sqrt(N))
    assert np.all(np.abs(np.sin(x - loc).mean(0)) <= 3 * np.sin(x - loc).std(0) / math.sqrt(N))


@pytest.mark.parametrize("family, params, oracle, backend", [
    pytest.param(*MOMENTS[k], b, id=f"{IDS[k]}-{b}") for k in (0, 2, 14)
    for b in ("numpy", "torch", "jax") if b != "jax" or IDS[k] != "Gamma"])
def test_same_seed_same_samples(family, params, oracle, backend):
    d = _lazy(family, params, backend)
    keys = {"numpy": lambda: np.random.default_rng(7), "torch": lambda: torch.Generator(
    ).manual_seed(7), "jax": lambda: jax.random.PRNGKey(7)}[backend]
    for key in (lambda: 7, keys):
        a = _points(d.sample("value", {"n": Bint[5]}, rng_key=key()))
        b = _points(d.sample("value", {"n": Bint[5]}, rng_key=key()))
        np.testing.assert_array_equal(a, b)
    c = _points(d.sample("value", {"n": Bint[5]}, rng_key=8))
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("family, params, oracle", [MOMENTS[i] for i in (0, 14)],
                         ids=[IDS[i] for i in (0, 14)])
def test_traced_jax_key_under_jit(family, params, oracle):
    arrays = {k: jnp.asarray(np.asarray(v, dtype=float)) for k, v in params.items()}

    def draw(key, *values):
        with lazy:
            d = family(*[fc.Tensor(v, {"i": Bint[2]}) for v in values])
        (_, (point, _)), = d.sample("value", {"n": Bint[3]}, rng_key=key).terms
        return point.data

    key = jax.random.PRNGKey(3)
    eager = draw(key, *arrays.values())
    jitted = jax.jit(draw)(key, *arrays.values())
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-12)


# -- gradients ---------------------------------------------------------------------------------
REPARAM = [  # d/d theta E[x] by the pathwise gradient of the sample mean, and exactly
    (D.Normal, dict(loc=0.3, scale=1.5), "scale", lambda loc, scale: (scale * scale + loc ** 2,
                                                                      2 * scale), 2),
    (D.Gamma, dict(concentration=1.7, rate=2.0), "concentration",
     lambda concentration, rate: (concentration / rate, 1 / rate), 1),
    (D.Beta, dict(concentration1=1.2, concentration0=2.0), "concentration1",
     lambda concentration1, concentration0: (None, concentration0 / (
         concentration1 + concentration0) ** 2), 1),
    (D.LogNormal, dict(loc=0.2, scale=0.4), "loc",
     lambda loc, scale: (None, math.exp(loc + scale ** 2 / 2)), 1),
    (D.StudentT, dict(df=6.0, loc=0.0, scale=1.3), "scale",
     lambda df, loc, scale: (None, 2 * scale * df / (df - 2)), 2),
]


@pytest.mark.parametrize("family, params, name, exact, power, backend", [
    pytest.param(*r, b, id=f"{r[0].__name__}-{b}") for r in REPARAM for b in ("torch", "jax")
    if b == "torch" or r[0] in (D.Normal, D.Gamma)])
def test_reparameterized_gradients(family, params, name, exact, power, backend):
    n = 40000

    def estimate(theta):
        values = {k: (theta if k == name else fc.Tensor(_array(backend, v)))
                  for k, v in params.items()}
        with lazy:
            d = family(**{k: v if isinstance(v, fc.Funsor) else fc.Tensor(v)
                          for k, v in values.items()})
        (_, (point, _)), = d.sample("value", {"n": Bint[n]}, rng_key=5).terms
        return ops.mean(point.data ** power)

    if backend == "torch":
        theta = torch.tensor(params[name], requires_grad=True)
        estimate(theta).backward()
        grad = theta.grad.item()
    else:
        grad = float(jax.jit(jax.grad(estimate))(jnp.asarray(params[name])))
    assert grad == pytest.approx(exact(**params)[1], rel=0.05)


@pytest.mark.parametrize("family, backend", [(D.Poisson, "torch"), (D.BernoulliProbs, "torch"),
                                             (D.BernoulliProbs, "jax")])
def test_nonreparameterized_samples_carry_a_dice_factor(family, backend):
    # E[x] = rate (Poisson) or probs (Bernoulli): the score-function gradient of
    # mean(x * exp(dice)), the DiCE estimator, is 1.
    n = 40000

    def estimate(rate):
        with lazy:
            d = family(fc.Tensor(rate))
        sample = d.sample("value", {"n": Bint[n]}, rng_key=3)
        (_, (point, dice)), = sample.terms
        return ops.mean(point.data * ops.exp(dice.data)), dice.data

    start = 2.0 if family is D.Poisson else 0.3
    if backend == "torch":
        rate = torch.tensor(start, requires_grad=True)
        value, dice = estimate(rate)
        value.backward()
        grad = rate.grad.item()
    else:
        grad, dice = jax.jit(jax.grad(estimate, has_aux=True))(jnp.asarray(start))
        grad = float(grad)
    assert float(ops.to_numpy(ops.detach(ops.amax(ops.abs(dice))))) == 0.0  # zero in value
    assert grad == pytest.approx(1.0, rel=0.05)


def test_sampling_errors_are_clear():
    p = fc.Variable("p", fc.Real)
    with lazy:
        d = D.BernoulliProbs(p)
    with pytest.raises(NotImplementedError, match="parameters are"):
        d.sample("value")
    with pytest.raises(NotImplementedError, match="parameters depend on them"):
        d.sample({"value", "p"})
    with lazy:
        e = D.Normal(0.0, 1.0, value=0.5)
    assert e.sample("value") is e  # nothing to sample
