"""MCMCMC (Singh 2014 ch. 5.1): the one-round transition matrix, enumerated exactly over
proposals and factor subsamples (uniform, or every scoring order for confidence-based
sampling) from the model's tables, shows the documented violation of invariance, shrinking
to exactness at the full plate or as the confidence level goes to 1; the sampler draws from
that kernel."""

from __future__ import annotations

import functools
import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains
from funsor_core.loopy import Confidence, mh
from tests.algorithms.loopy.models import joint
from tests.backend_values import as_backend_array

SIZES = {"a": 2, "b": 2, "c": 2}


def _plated_chain(rng, plate=4):
    """A chain a - b - c of binary variables, each with a plate of ``plate`` unary factors
    (the thesis's star of mention factors around each variable)."""
    scopes = [(v,) for v in SIZES for _ in range(plate)] + [("a", "b"), ("b", "c")]
    tables = [(s, rng.normal(size=(2,) * len(s)) * (1.5 if len(s) == 1 else 0.5))
              for s in scopes]
    factors = [fc.Tensor(t, {v: fc.Bint[2] for v in s}) for s, t in tables]
    return factors, tables


def _acceptance(diffs, p):
    # E_S min(1, exp(|F| / |S| sum_S d)) over all |S|-subsets (uniform, no replacement).
    size = max(1, math.ceil(p * len(diffs) - 1e-9))
    subsets = list(itertools.combinations(diffs, size))
    return np.mean([min(1.0, np.exp(len(diffs) / size * sum(s))) for s in subsets])


def _stdev(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _confident_acceptance(diffs, width, level):
    # E over every scoring order of min(1, exp(|F| mean_k d)), k the first prefix of >= 2
    # whose interval 2 z s_k / sqrt(k) sqrt((|F| - k) / (|F| - 1)) is below width, else |F|.
    F, z = len(diffs), (math.inf if level == 1 else NormalDist().inv_cdf(0.5 + level / 2))
    accept = []
    for order in itertools.permutations(float(d) for d in diffs):
        k = next((k for k in range(2, F) if 2 * z * _stdev(order[:k]) / math.sqrt(k)
                  * math.sqrt((F - k) / (F - 1)) < width), F)
        accept.append(min(1.0, math.exp(F * sum(order[:k]) / k)))
    return sum(accept) / len(accept)


def _kernel(tables, colour_vars, p):
    """The exact one-round matrix: colours in order; in a colour each variable proposes the
    uniform state y (y = x half the time) and accepts by the subsampled test (eq. 5.2), of a
    uniform fraction ``p`` or a ``Confidence``."""
    acceptance = (functools.partial(_confident_acceptance, width=p.width, level=p.level)
                  if isinstance(p, Confidence) else functools.partial(_acceptance, p=p))
    names = list(SIZES)
    states = list(itertools.product(range(2), repeat=len(names)))
    K = np.eye(len(states))
    for vs in colour_vars:
        Kc = np.zeros_like(K)
        for k, x in enumerate(states):
            move = []
            for v in vs:
                own = [(s, t) for s, t in tables if names[v] in s]
                y = list(x)
                y[v] = 1 - x[v]
                d = [t[tuple(y[names.index(u)] for u in s)] - t[tuple(x[names.index(u)]
                                                                      for u in s)]
                     for s, t in own]
                a = 0.5 * acceptance(d)
                move.append({1 - x[v]: a, x[v]: 1.0 - a})
            for ys in itertools.product(range(2), repeat=len(vs)):
                y = list(x)
                for v, value in zip(vs, ys):
                    y[v] = value
                Kc[k, states.index(tuple(y))] = np.prod([m[value] for m, value in
                                                         zip(move, ys)])
        K = K @ Kc
    return K


def _stationary(K):
    w, vecs = np.linalg.eig(K.T)
    pi = np.real(vecs[:, np.argmin(np.abs(w - 1.0))])
    return pi / pi.sum()


def test_subsampled_acceptance_breaks_invariance_less_as_the_subsample_grows():
    factors, tables = _plated_chain(np.random.default_rng(0))
    plan = SamplerPlan(FactorGraph.build(factors))
    j = joint(tables, SIZES).reshape(-1)
    exact = np.exp(j - np.logaddexp.reduce(j))
    tv = []
    for p in (0.2, 0.5, 0.8, 1.0):
        K = _kernel(tables, plan.colour_vars, p)
        np.testing.assert_allclose(K.sum(1), 1.0, atol=1e-12)
        tv.append(0.5 * np.abs(_stationary(K) - exact).sum())
    assert tv[0] > 1e-3 and tv[0] > tv[1] > tv[2] > 1e-6  # measurable, shrinking
    assert tv[3] < 1e-12 and np.abs(exact @ K - exact).max() < 1e-12  # full plate: exact MH


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_sampler_draws_from_the_enumerated_kernel(backend):
    pytest.importorskip(backend)
    factors, tables = _plated_chain(np.random.default_rng(0))
    # p = 0.4: |S| = 2 of a's and c's 5 factors, 3 of b's 6 (scales 2.5 and 2)
    K = _kernel(tables, SamplerPlan(FactorGraph.build(factors)).colour_vars, 0.4)
    start, chains = 5, 20000
    fc.set_backend(backend)
    try:
        fs = [fc.Tensor(as_backend_array(t, backend), dict(f.inputs))
              for (_, t), f in zip(tables, factors)]
        plan = SamplerPlan(FactorGraph.build(fs))
        init = np.tile(np.array([1, 0, 1]), (chains, 1))  # state 5
        x = np.asarray(run_chains(plan, init, 1, "mh", rng_key=0, subsample=0.4)[0])
        a, b = (mh(fs, 20, num_chains=2, rng_key=3, subsample=0.5) for _ in range(2))
    finally:
        fc.set_backend("numpy")
    freq = np.bincount(x @ np.array([4, 2, 1]), minlength=8) / chains
    assert 0.5 * np.abs(freq - K[start]).sum() < 0.02
    exact_mh = _kernel(tables, plan.colour_vars, 1.0)[start]
    assert 0.5 * np.abs(K[start] - exact_mh).sum() > 0.1  # the test tells the kernels apart
    for v in SIZES:  # one seed, one run
        assert (np.asarray(a[v].data) == np.asarray(b[v].data)).all()
    with pytest.raises(ValueError, match="subsample= .* use kernel='mh'"):
        run_chains(plan, init[:2], 1, "gibbs", rng_key=0, subsample=0.5)


def test_under_jit_the_sampler_draws_from_the_enumerated_kernel():
    """Uniform (p = 0.2, from state 5) and confidence-based (width 0.25, level 0.5, from
    state 1, the small chain) subsampling, traced in one compile."""
    jax = pytest.importorskip("jax")
    factors, tables = _plated_chain(np.random.default_rng(0))
    K = _kernel(tables, SamplerPlan(FactorGraph.build(factors)).colour_vars, 0.2)
    small, small_tables, _ = _small_chain()
    inits = [np.tile(np.array(s), (20000, 1)) for s in ([1, 0, 1], [0, 0, 1])]
    fc.set_backend("jax")
    try:
        def draws(arrays, small_arrays):  # one round of 20000 chains each
            out = []
            for xs, fs, init, sub in ((arrays, factors, inits[0], 0.2),
                                      (small_arrays, small, inits[1], Confidence(0.25, 0.5))):
                fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(xs, fs)]
                s = mh(fs, 1, num_chains=20000, rng_key=2, init=init, subsample=sub)
                out.append([s[v].data for v in SIZES])
            return out
        xs = jax.jit(draws)(*[[as_backend_array(t, "jax") for _, t in tabs]
                              for tabs in (tables, small_tables)])
    finally:
        fc.set_backend("numpy")
    for x, row in zip(xs, (K[5], _confident_kernel(0.5)[1])):
        code = np.stack([np.asarray(v)[0] for v in x], -1) @ np.array([4, 2, 1])
        freq = np.bincount(code, minlength=8) / len(code)
        assert 0.5 * np.abs(freq - row).sum() < 0.02


@functools.cache
def _small_chain():
    # A plate of 3: |F| = 4, 5, 4 factors, so every scoring order is enumerated cheaply.
    factors, tables = _plated_chain(np.random.default_rng(0), plate=3)
    return factors, tables, SamplerPlan(FactorGraph.build(factors)).colour_vars


@functools.cache
def _confident_kernel(level, width=0.25):
    _, tables, colour_vars = _small_chain()
    return _kernel(tables, colour_vars, Confidence(width, level))


def test_confidence_subsampling_approaches_exact_mh_as_the_level_goes_to_one():
    _, tables, _ = _small_chain()
    j = joint(tables, SIZES).reshape(-1)
    exact = np.exp(j - np.logaddexp.reduce(j))
    tv = [0.5 * np.abs(_stationary(_confident_kernel(level)) - exact).sum()
          for level in (0.5, 0.9, 0.9999, 1.0)]  # measured: 0.12, 0.025, 1e-4, 0
    assert tv[0] > 0.05 and tv[0] > tv[1] > tv[2] > 1e-6  # measurable, shrinking
    K = _confident_kernel(1.0)
    assert tv[3] < 1e-12 and np.abs(exact @ K - exact).max() < 1e-12  # level 1: exact MH
    assert Confidence(0.25).z == pytest.approx(1.959964, abs=1e-6)
    for bad in ({"width": 0.0}, {"width": 0.5, "level": 1.5}, {"width": True}):
        with pytest.raises(ValueError, match="Confidence: width must be"):
            Confidence(**bad)
    with pytest.raises(ValueError, match=r"or Confidence\(width, level\)"):
        mh(_small_chain()[0], 1, subsample="confidence")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_confidence_sampler_draws_from_the_enumerated_kernel(backend):
    pytest.importorskip(backend)
    factors, tables, _ = _small_chain()
    K, exact_mh = _confident_kernel(0.5), _confident_kernel(1.0)
    fc.set_backend(backend)
    try:
        fs = [fc.Tensor(as_backend_array(t, backend), dict(f.inputs))
              for (_, t), f in zip(tables, factors)]
        init = np.tile(np.array([0, 0, 1]), (20000, 1))  # state 1
        s = mh(fs, 1, num_chains=20000, rng_key=0, init=init,
               subsample=Confidence(0.25, 0.5))
    finally:
        fc.set_backend("numpy")
    code = np.stack([np.asarray(s[v].data)[0] for v in SIZES], -1) @ np.array([4, 2, 1])
    freq = np.bincount(code, minlength=8) / len(code)
    assert 0.5 * np.abs(freq - K[1]).sum() < 0.02
    assert 0.5 * np.abs(K[1] - exact_mh[1]).sum() > 0.1  # the test tells the kernels apart
