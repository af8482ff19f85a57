"""MCMCMC (Singh 2014 ch. 5.1): the one-round transition matrix, enumerated exactly over
proposals and factor subsamples from the model's tables, shows the documented violation of
invariance, shrinking to exactness at the full plate; the sampler draws from that kernel."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains
from funsor_core.loopy import mh
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


def _kernel(tables, colour_vars, p):
    """The exact one-round matrix: colours in order; in a colour each variable proposes the
    uniform state y (y = x half the time) and accepts by the subsampled test (eq. 5.2)."""
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
                a = 0.5 * _acceptance(d, p)
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
    jax = pytest.importorskip("jax")
    factors, tables = _plated_chain(np.random.default_rng(0))
    K = _kernel(tables, SamplerPlan(FactorGraph.build(factors)).colour_vars, 0.2)
    init = np.tile(np.array([1, 0, 1]), (20000, 1))  # state 5
    fc.set_backend("jax")
    try:
        def draws(*arrays):  # one round of 20000 chains
            fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(arrays, factors)]
            s = mh(fs, 1, num_chains=20000, rng_key=2, init=init, subsample=0.2)
            return [s[v].data for v in SIZES]
        x = jax.jit(draws)(*[as_backend_array(t, "jax") for _, t in tables])
    finally:
        fc.set_backend("numpy")
    code = np.stack([np.asarray(v)[0] for v in x], -1) @ np.array([4, 2, 1])
    freq = np.bincount(code, minlength=8) / len(code)
    assert 0.5 * np.abs(freq - K[5]).sum() < 0.02
