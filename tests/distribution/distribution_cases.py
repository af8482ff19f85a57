"""Test cases of the distribution families: random parameters and values, and independent
oracles of their log densities (scipy.stats, torch.distributions, jax.scipy.stats).

Each case draws parameters batched over the input ``i`` (size 3) and values batched over
``j`` (size 2), so the log density is a Tensor over both; the oracles see the same arrays
broadcast as ``params[:, None]`` and ``value[None, :]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.special
import scipy.stats as st

from funsor_core import distribution as D

NI, NJ = 3, 2  # sizes of the parameters' input i and the value's input j


def _pos(rng, *shape):
    return rng.uniform(0.5, 3.0, shape)


def _simplex(rng, *shape):
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _tril(rng, n):
    a = 0.3 * np.tril(rng.standard_normal((NI, n, n)), -1)
    return a + np.eye(n) * rng.uniform(0.5, 1.5, (NI, n))[..., None]


def _grid(fn, *arrays, event_ndims):
    """``fn`` applied to every (i, j) entry of arrays broadcast to (NI, NJ) + their event
    shape (scipy's multivariate distributions do not broadcast over parameters)."""
    out = np.empty((NI, NJ))
    for i in range(NI):
        for j in range(NJ):
            args = []
            for a, k in zip(arrays, event_ndims):
                b = np.broadcast_to(a, (NI, NJ) + a.shape[a.ndim - k:] if k else (NI, NJ))
                args.append(b[i, j])
            out[i, j] = fn(*args)
    return out


@dataclass
class Case:
    family: type
    params: Callable  # rng -> dict of arrays with the leading batch dim NI
    value: Callable  # rng, params -> array with leading batch dim NJ
    scipy: Callable  # (**params, value) broadcast numpy arrays -> log densities (NI, NJ)
    torch: Callable | None = None  # (torch.distributions, **params) -> distribution object
    jax: Callable | None = None  # (jax.scipy.stats, **params, value) -> log densities
    event: dict = field(default_factory=dict)  # event ndim of params and "value"
    # Directions along which the parameters may move and stay valid (for finite differences).
    tangent: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.family.__name__


def _cases():
    k = 3
    normal = Case(
        D.Normal, lambda r: dict(loc=r.standard_normal(NI), scale=_pos(r, NI)),
        lambda r, p: r.standard_normal(NJ),
        lambda loc, scale, value: st.norm(loc, scale).logpdf(value),
        lambda td, **p: td.Normal(**p),
        lambda js, loc, scale, value: js.norm.logpdf(value, loc, scale))
    return [
        normal,
        Case(D.LogNormal, lambda r: dict(loc=r.standard_normal(NI), scale=_pos(r, NI)),
             lambda r, p: _pos(r, NJ),
             lambda loc, scale, value: st.lognorm(scale, scale=np.exp(loc)).logpdf(value),
             lambda td, **p: td.LogNormal(**p)),
        Case(D.MultivariateNormal,
             lambda r: dict(loc=r.standard_normal((NI, k)), scale_tril=_tril(r, k)),
             lambda r, p: r.standard_normal((NJ, k)),
             lambda loc, scale_tril, value: _grid(
                 lambda m, s, x: st.multivariate_normal(m, s @ s.T).logpdf(x),
                 loc, scale_tril, value, event_ndims=(1, 2, 1)),
             lambda td, **p: td.MultivariateNormal(**p),
             lambda js, loc, scale_tril, value: js.multivariate_normal.logpdf(
                 value, loc, scale_tril @ np.swapaxes(scale_tril, -1, -2)),
             event=dict(loc=1, scale_tril=2, value=1),
             tangent=dict(scale_tril=lambda r, x: np.tril(r.standard_normal(x.shape)))),
        Case(D.Gamma, lambda r: dict(concentration=_pos(r, NI), rate=_pos(r, NI)),
             lambda r, p: _pos(r, NJ),
             lambda concentration, rate, value: st.gamma(concentration, scale=1 / rate).logpdf(
                 value),
             lambda td, **p: td.Gamma(**p),
             lambda js, concentration, rate, value: js.gamma.logpdf(
                 value, concentration, scale=1 / rate)),
        Case(D.Beta, lambda r: dict(concentration1=_pos(r, NI), concentration0=_pos(r, NI)),
             lambda r, p: r.uniform(0.05, 0.95, NJ),
             lambda concentration1, concentration0, value: st.beta(
                 concentration1, concentration0).logpdf(value),
             lambda td, **p: td.Beta(**p),
             lambda js, concentration1, concentration0, value: js.beta.logpdf(
                 value, concentration1, concentration0)),
        Case(D.Dirichlet, lambda r: dict(concentration=_pos(r, NI, k)),
             lambda r, p: _simplex(r, NJ, k),
             lambda concentration, value: _grid(
                 lambda a, x: st.dirichlet(a).logpdf(x), concentration, value, event_ndims=(1, 1)),
             lambda td, **p: td.Dirichlet(**p),
             lambda js, concentration, value: _grid(
                 lambda a, x: float(js.dirichlet.logpdf(x, a)), concentration, value,
                 event_ndims=(1, 1)),
             event=dict(concentration=1, value=1)),
        Case(D.Exponential, lambda r: dict(rate=_pos(r, NI)), lambda r, p: _pos(r, NJ),
             lambda rate, value: st.expon(scale=1 / rate).logpdf(value),
             lambda td, **p: td.Exponential(**p),
             lambda js, rate, value: js.expon.logpdf(value, scale=1 / rate)),
        Case(D.Laplace, lambda r: dict(loc=r.standard_normal(NI), scale=_pos(r, NI)),
             lambda r, p: r.standard_normal(NJ),
             lambda loc, scale, value: st.laplace(loc, scale).logpdf(value),
             lambda td, **p: td.Laplace(**p),
             lambda js, loc, scale, value: js.laplace.logpdf(value, loc, scale)),
        Case(D.StudentT,
             lambda r: dict(df=_pos(r, NI), loc=r.standard_normal(NI), scale=_pos(r, NI)),
             lambda r, p: r.standard_normal(NJ),
             lambda df, loc, scale, value: st.t(df, loc, scale).logpdf(value),
             lambda td, **p: td.StudentT(**p),
             lambda js, df, loc, scale, value: js.t.logpdf(value, df, loc, scale)),
        Case(D.Uniform, lambda r: dict(low=-_pos(r, NI), high=_pos(r, NI)),
             lambda r, p: r.uniform(-0.4, 0.4, NJ),
             lambda low, high, value: st.uniform(low, high - low).logpdf(value),
             lambda td, **p: td.Uniform(**p),
             lambda js, low, high, value: js.uniform.logpdf(value, low, high - low)),
        Case(D.VonMises, lambda r: dict(loc=r.uniform(-3, 3, NI), concentration=_pos(r, NI)),
             lambda r, p: r.uniform(-3, 3, NJ),
             lambda loc, concentration, value: st.vonmises(concentration, loc).logpdf(value),
             lambda td, **p: td.VonMises(**p),
             lambda js, loc, concentration, value: js.vonmises.logpdf(value - loc,
                                                                      concentration)),
        Case(D.Categorical, lambda r: dict(probs=_simplex(r, NI, 4)),
             lambda r, p: r.integers(0, 4, NJ),
             lambda probs, value: np.log(np.take_along_axis(
                 np.broadcast_to(probs, (NI, NJ, 4)), np.broadcast_to(value, (NI, NJ))[..., None],
                 -1)[..., 0]),
             lambda td, **p: td.Categorical(**p),
             event=dict(probs=1), tangent=dict(probs=lambda r, x: _zero_sum(r, x))),
        Case(D.CategoricalLogits, lambda r: dict(logits=r.standard_normal((NI, 4))),
             lambda r, p: r.integers(0, 4, NJ),
             lambda logits, value: np.take_along_axis(
                 np.broadcast_to(logits - scipy.special.logsumexp(logits, -1, keepdims=True),
                                 (NI, NJ, 4)), np.broadcast_to(value, (NI, NJ))[..., None],
                 -1)[..., 0],
             lambda td, **p: td.Categorical(**p), event=dict(logits=1)),
        Case(D.BernoulliProbs, lambda r: dict(probs=r.uniform(0.05, 0.95, NI)),
             lambda r, p: r.integers(0, 2, NJ).astype(float),
             lambda probs, value: st.bernoulli(probs).logpmf(value),
             lambda td, **p: td.Bernoulli(**p),
             lambda js, probs, value: js.bernoulli.logpmf(value, probs)),
        Case(D.BernoulliLogits, lambda r: dict(logits=r.standard_normal(NI)),
             lambda r, p: r.integers(0, 2, NJ).astype(float),
             lambda logits, value: st.bernoulli(scipy.special.expit(logits)).logpmf(value),
             lambda td, **p: td.Bernoulli(**p)),
        Case(D.Binomial, lambda r: dict(total_count=np.full(NI, 6.0),
                                        probs=r.uniform(0.05, 0.95, NI)),
             lambda r, p: r.integers(0, 7, NJ).astype(float),
             lambda total_count, probs, value: st.binom(total_count, probs).logpmf(value),
             lambda td, **p: td.Binomial(**p),
             lambda js, total_count, probs, value: js.binom.logpmf(value, total_count, probs)),
        Case(D.Multinomial, lambda r: dict(total_count=np.full(NI, 5.0),
                                           probs=_simplex(r, NI, 3)),
             lambda r, p: np.array([[1.0, 3.0, 1.0], [0.0, 0.0, 5.0]]),
             lambda total_count, probs, value: _grid(
                 lambda n, p, x: st.multinomial(int(n), p).logpmf(x), total_count, probs,
                 value, event_ndims=(0, 1, 1)),
             lambda td, total_count, probs: td.Multinomial(5, probs),
             lambda js, total_count, probs, value: _grid(
                 lambda n, p, x: float(js.multinomial.logpmf(x.astype(int), int(n), p)),
                 total_count, probs,
                 value, event_ndims=(0, 1, 1)),
             event=dict(probs=1, value=1), tangent=dict(probs=lambda r, x: _zero_sum(r, x))),
        Case(D.Poisson, lambda r: dict(rate=_pos(r, NI)),
             lambda r, p: r.integers(0, 6, NJ).astype(float),
             lambda rate, value: st.poisson(rate).logpmf(value), lambda td, **p: td.Poisson(**p),
             lambda js, rate, value: js.poisson.logpmf(value, rate)),
        Case(D.DirichletMultinomial,
             lambda r: dict(concentration=_pos(r, NI, 3), total_count=np.full(NI, 5.0)),
             lambda r, p: np.array([[1.0, 3.0, 1.0], [0.0, 0.0, 5.0]]),
             lambda concentration, total_count, value: _grid(
                 lambda a, n, x: st.dirichlet_multinomial(a, int(n)).logpmf(x),
                 concentration, total_count, value, event_ndims=(1, 0, 1)),
             event=dict(concentration=1, value=1)),
        Case(D.BetaBinomial,
             lambda r: dict(concentration1=_pos(r, NI), concentration0=_pos(r, NI),
                            total_count=np.full(NI, 6.0)),
             lambda r, p: r.integers(0, 7, NJ).astype(float),
             lambda concentration1, concentration0, total_count, value: st.betabinom(
                 total_count, concentration1, concentration0).logpmf(value),
             jax=lambda js, concentration1, concentration0, total_count, value:
                 js.betabinom.logpmf(value, total_count, concentration1, concentration0)),
        Case(D.GammaPoisson, lambda r: dict(concentration=_pos(r, NI), rate=_pos(r, NI)),
             lambda r, p: r.integers(0, 6, NJ).astype(float),
             lambda concentration, rate, value: st.nbinom(
                 concentration, rate / (1 + rate)).logpmf(value),
             jax=lambda js, concentration, rate, value: js.nbinom.logpmf(
                 value, concentration, rate / (1 + rate))),
    ]


def _zero_sum(rng, x):
    d = rng.standard_normal(x.shape)
    return d - d.mean(-1, keepdims=True)


CASES = _cases()


def log_normalized_brute(probs) -> np.ndarray:
    """``log(p_k / sum_j p_j)`` along the last axis of ``probs``, entry by entry in Python
    loops; ``-inf`` where ``p_k == 0``: the oracle of a Categorical's log-probability table."""
    out = np.empty(probs.shape)
    for idx in np.ndindex(probs.shape):
        p = float(probs[idx])
        out[idx] = np.log(p / float(probs[idx[:-1]].sum())) if p > 0 else -np.inf
    return out
