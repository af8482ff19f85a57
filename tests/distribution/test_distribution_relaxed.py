"""ContinuousBernoulli, RelaxedBernoulli and LowRankMultivariateNormal: log densities against
torch.distributions and closed forms (float32 near probs = 1/2 against float64 atanh), moments
against torch's and the closed-form covariance, samples against the CDF and the moments within
a few standard errors, the low-rank Gaussian against scipy, and conversion to and from torch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import (
    ContinuousBernoulli,
    LowRankMultivariateNormal,
    RelaxedBernoulli,
)
from funsor_core.domains import Bint
from interpretations import lazy

BACKENDS = {"numpy": np.asarray, "torch": torch.as_tensor, "jax": jnp.asarray}
LOGITS = np.array([-4.0, -0.3, -2e-3, 0.0, 4e-4, 0.05, 0.2, 3.0])
VALUES = np.array([0.0, 0.2, 0.7, 1.0])
RNG = np.random.RandomState(0)
W = RNG.randn(3, 2)
DIAG = np.array([1.0, 0.5, 2.0])
LOC = np.array([0.1, -0.2, 0.3])


def _np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)), dtype=float)


def _cb_oracle(logits, x):
    # Closed form in float64: log C(p) = log(2 atanh(t) / t), t = 1 - 2p (C = 2 at t = 0).
    p = 1 / (1 + np.exp(-logits))
    t = 1 - 2 * p
    safe = np.where(t == 0, 0.5, t)
    log_c = np.where(t == 0, np.log(2.0), np.log(2 * np.arctanh(safe) / safe))
    return x * np.log(p) + (1 - x) * np.log1p(-p) + log_c


# jax runs the same ops code; it is checked once, in float32 near 1/2 (a compile costs ~1 s).
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_continuous_bernoulli_log_prob(backend):
    b = BACKENDS[backend]
    logits = fc.Tensor(b(LOGITS), {"i": Bint[8]})
    x = fc.Tensor(b(VALUES), {"j": Bint[4]})
    actual = _np(ContinuousBernoulli(logits, value=x).align(("i", "j")).data)
    np.testing.assert_allclose(actual, _cb_oracle(LOGITS[:, None], VALUES), rtol=1e-10)
    peer = torch.distributions.ContinuousBernoulli(logits=torch.tensor(LOGITS)[:, None])
    np.testing.assert_allclose(actual, peer.log_prob(torch.tensor(VALUES)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_continuous_bernoulli_float32_near_one_half(backend):
    # probs = 0.5 +- 1e-4 in float32: the closed form divides two rounded small numbers there.
    probs = np.array([0.5 - 1e-4, 0.5, 0.5 + 1e-4, 0.49, 0.2], dtype=np.float32)
    logits = np.log(probs) - np.log1p(-probs)
    x = np.float32(0.3)

    def log_prob(logits):
        return ContinuousBernoulli(fc.Tensor(logits, {"i": Bint[5]}),
                                   value=fc.Tensor(BACKENDS[backend](np.array(x)))).data

    # On jax under jit: the branch is chosen per entry from traced logits (ops.where).
    actual = (jax.jit(log_prob) if backend == "jax" else log_prob)(BACKENDS[backend](logits))
    assert str(_dtype(actual)).endswith("float32")
    expected = _cb_oracle(logits.astype(np.float64), np.float64(x))
    np.testing.assert_allclose(_np(actual), expected, rtol=2e-6, atol=2e-7)


def _dtype(x):
    return getattr(x, "dtype", None)


def test_continuous_bernoulli_moments_and_support():
    d = ContinuousBernoulli(fc.Tensor(LOGITS, {"i": Bint[8]}))
    peer = torch.distributions.ContinuousBernoulli(logits=torch.tensor(LOGITS))
    # torch's own Taylor branch (|p - 1/2| < 1e-3) is exact to ~1e-12: relative 1e-9 here.
    np.testing.assert_allclose(d.mean().data, peer.mean.numpy(), rtol=1e-9)
    np.testing.assert_allclose(d.variance().data, peer.variance.numpy(), rtol=1e-9)
    assert ContinuousBernoulli(0.3, value=1.5).item() == -np.inf
    assert np.isfinite(ContinuousBernoulli(0.3, value=1.0).item())


def test_relaxed_bernoulli_log_prob():
    temp, logits, x = np.array([0.3, 1.0, 2.5]), np.array([-2.0, 0.0, 1.5]), np.array([0.01, 0.4])
    d = RelaxedBernoulli(fc.Tensor(temp, {"t": Bint[3]}), fc.Tensor(logits, {"l": Bint[3]}),
                         value=fc.Tensor(x, {"x": Bint[2]}))
    peer = torch.distributions.RelaxedBernoulli(torch.tensor(temp)[:, None, None],
                                                logits=torch.tensor(logits)[:, None])
    expected = peer.log_prob(torch.tensor(x)).numpy()
    np.testing.assert_allclose(d.align(("t", "l", "x")).data, expected, rtol=1e-10, atol=1e-12)
    assert RelaxedBernoulli(0.5, 0.0, value=1.0).item() == -np.inf


def test_low_rank_mvn_log_prob_moments_and_gaussian():
    cov = W @ W.T + np.diag(DIAG)
    v = np.array([[0.5, 0.5, -1.0], [0.0, 1.0, 2.0]])
    d = LowRankMultivariateNormal(LOC, W, DIAG, value=fc.Tensor(v, {"n": Bint[2]}))
    np.testing.assert_allclose(d.data, st.multivariate_normal(LOC, cov).logpdf(v), rtol=1e-10)
    with lazy:  # (under exact, with a Variable value, it is a Gaussian)
        m = LowRankMultivariateNormal(LOC, W, DIAG)
    np.testing.assert_allclose(m.variance().data, np.diag(cov), rtol=1e-12)
    np.testing.assert_allclose(m.mean().data, LOC)
    # With a Variable value (and a batched factor) it is a Gaussian: condition, marginalize.
    x = fc.Variable("x", fc.Reals[3])
    wb = fc.Tensor(np.stack([W, 2 * W]), {"i": Bint[2]})
    g = LowRankMultivariateNormal(LOC, wb, DIAG, value=x)
    assert not isinstance(g, LowRankMultivariateNormal)
    covs = [W @ W.T * s + np.diag(DIAG) for s in (1, 4)]
    np.testing.assert_allclose(g(x=v[0]).data, [st.multivariate_normal(LOC, c).logpdf(v[0])
                                                for c in covs], rtol=1e-10)
    np.testing.assert_allclose(g.reduce(ops.logaddexp, "x").data, [0.0, 0.0], atol=1e-10)


def test_low_rank_mvn_likelihood_is_conjugate_to_a_gaussian_prior():
    # x ~ MVN(0, I), y | x ~ LowRankMVN(x, W, D): marginally y ~ N(0, I + W W^T + diag D).
    from funsor_core.distribution import MultivariateNormal
    x, y = fc.Variable("x", fc.Reals[3]), np.array([0.5, -1.0, 2.0])
    model = (MultivariateNormal(np.zeros(3), np.eye(3), value=x)
             + LowRankMultivariateNormal(x, W, DIAG, value=y))
    evidence = model.reduce(ops.logaddexp, "x")
    cov = np.eye(3) + W @ W.T + np.diag(DIAG)
    np.testing.assert_allclose(evidence.data, st.multivariate_normal(np.zeros(3), cov).logpdf(y),
                               rtol=1e-10)


def test_low_rank_mvn_shape_error_names_the_parameters():
    with pytest.raises(ValueError, match="cov_factor must be Reals"):
        LowRankMultivariateNormal(LOC, W[:2], DIAG)


def _points(d, n):
    sample = d.sample("value", {"n": Bint[n]}, rng_key=3)
    if not isinstance(sample, fc.Delta):  # a Delta plus a log weight
        sample, = [t for t in sample.terms if isinstance(t, fc.Delta)]
    (_, (point, _)), = sample.terms
    return point.align(("n",) + tuple(k for k in point.inputs if k != "n")).data


def _draws(d, n):
    return _np(_points(d, n))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_samples_against_moments_and_cdf(backend):
    b, n = BACKENDS[backend], 4000
    logits = np.array([-1.5, 0.0, 2e-4, 1.0])
    with lazy:
        cb = ContinuousBernoulli(fc.Tensor(b(logits), {"i": Bint[4]}))
        rb = RelaxedBernoulli(fc.Tensor(b(np.array([0.5, 2.0])), {"i": Bint[2]}), 0.7)
    x = _draws(cb, n)
    mean, var = _np(cb.mean().data), _np(cb.variance().data)
    assert np.all((x >= 0) & (x <= 1))
    assert np.all(np.abs(x.mean(0) - mean) <= 4 * np.sqrt(var / n)), (x.mean(0), mean)
    # RelaxedBernoulli: P(X <= q) = sigmoid(T logit(q) - logits), a binomial proportion.
    y = _draws(rb, n)
    assert np.all((y > 0) & (y < 1))
    for q in (0.2, 0.5, 0.9):
        cdf = 1 / (1 + np.exp(-(np.array([0.5, 2.0]) * np.log(q / (1 - q)) - 0.7)))
        se = np.sqrt(cdf * (1 - cdf) / n)
        assert np.all(np.abs((y <= q).mean(0) - cdf) <= 4 * se), (q, (y <= q).mean(0), cdf)


def test_low_rank_mvn_sample_covariance():
    n = 4000
    with lazy:
        d = LowRankMultivariateNormal(torch.tensor(LOC), torch.tensor(W), torch.tensor(DIAG))
    x = _draws(d, n)
    cov = W @ W.T + np.diag(DIAG)
    # Each entry of the sample covariance has standard error sqrt((S_ii S_jj + S_ij^2) / n).
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(x.T) - cov) <= 4 * se)
    assert np.all(np.abs(x.mean(0) - LOC) <= 4 * np.sqrt(np.diag(cov) / n))


def test_reparameterized_gradients_flow_to_parameters():
    logits = torch.tensor([0.3, 1e-5], requires_grad=True)
    factor = torch.tensor(W, requires_grad=True)
    for d, param in [(ContinuousBernoulli(fc.Tensor(logits, {"i": Bint[2]})), logits),
                     (RelaxedBernoulli(0.5, fc.Tensor(logits, {"i": Bint[2]})), logits),
                     (LowRankMultivariateNormal(torch.tensor(LOC), factor,
                                                torch.tensor(DIAG)), factor)]:
        (grad,) = torch.autograd.grad(_points(d, 5).sum(), [param])
        assert torch.isfinite(grad).all() and grad.abs().sum() > 0


@pytest.mark.parametrize("make", [
    lambda: torch.distributions.ContinuousBernoulli(logits=torch.tensor([0.3, -1.0])),
    lambda: torch.distributions.ContinuousBernoulli(probs=torch.tensor([0.3, 0.5])),
    lambda: torch.distributions.RelaxedBernoulli(torch.tensor(0.7), probs=torch.tensor([0.3, 0.6])),
    lambda: torch.distributions.LowRankMultivariateNormal(
        torch.zeros(2, 3, dtype=torch.float64), torch.tensor(np.stack([W, -W])),
        torch.ones(2, 3, dtype=torch.float64)),
], ids=["cb-logits", "cb-probs", "relaxed", "lowrank"])
def test_convert_to_and_from_torch(make):
    raw = make()
    torch.manual_seed(0)
    x = raw.sample()
    with lazy:
        f = fc.to_funsor(raw, fc.Real, {-1: "i"})
    back = fc.to_data(f, {"i": -1})
    assert type(back) is type(raw)
    np.testing.assert_allclose(back.log_prob(x).numpy(), raw.log_prob(x).numpy(), rtol=1e-12)
    value = fc.Tensor(x, {"i": Bint[2]}) if not raw.event_shape else fc.Tensor(x)["i"]
    np.testing.assert_allclose(_np(f(value=value).align(("i",)).data),
                               raw.log_prob(x).double().numpy(), rtol=1e-5)


def test_pyro_wrappers_at_funsors_module_path_convert():
    pytest.importorskip("pyro")
    from funsor_core.torch import distributions as face

    base = torch.distributions.Normal(torch.zeros(2, dtype=torch.float64), 1.0)
    mask = torch.tensor([True, False])
    for raw in [face.MaskedDistribution(base, mask), face.ExpandedDistribution(base, (3, 2))]:
        x = torch.full(tuple(raw.batch_shape), 0.5, dtype=torch.float64)
        f = fc.to_funsor(raw, fc.Real, {-1: "i", -2: "j"})
        names = tuple(k for k in ("j", "i") if k in f.inputs)
        value = fc.Tensor(x, {"j": Bint[3], "i": Bint[2]} if len(names) == 2 else {"i": Bint[2]})
        actual = f(value=value).align(names).data
        np.testing.assert_allclose(_np(actual), raw.log_prob(x).numpy(), rtol=1e-12)
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = face.Nope


def test_log_prob_gradients_match_torch_at_and_near_one_half():
    # At logits = 0 exactly both the Taylor branch and softplus's kink are hit.
    logits = np.array([0.0, 1e-5, 0.3, -2.0])
    for family, peer, args in [
        (ContinuousBernoulli, lambda z: torch.distributions.ContinuousBernoulli(logits=z), ()),
        (RelaxedBernoulli, lambda z: torch.distributions.RelaxedBernoulli(
            torch.tensor(0.7, dtype=torch.float64), logits=z), (0.7,))]:
        ours, theirs = (torch.tensor(logits, requires_grad=True) for _ in range(2))
        value = torch.tensor(0.5, dtype=torch.float64)
        lp = family(*args, fc.Tensor(ours, {"i": Bint[4]}), value=fc.Tensor(value)).data
        (grad,) = torch.autograd.grad(lp.sum(), [ours])
        (expected,) = torch.autograd.grad(peer(theirs).log_prob(value).sum(), [theirs])
        np.testing.assert_allclose(grad.numpy(), expected.numpy(), rtol=1e-6, atol=1e-12)
