"""Synchronously partitioned MCMC (Singh 2014, ch. 4): the exact one-round transition
matrix (active variables found by brute force, conditionals from the enumerated joint)
leaves the exact distribution invariant; the sampler draws from that matrix; its marginals
match enumeration; seeds reproduce runs on numpy and torch. The multi-device runs (same
keys on 1, 2, 4, 8 devices) are in ``sharded_checks.py``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.mcmc import conditional_logits
from funsor_core.algorithms.sharding.partitioned_mcmc import (
    PartitionedSampler,
    partitioned_mcmc,
    run_partitioned,
)
from funsor_core.algorithms.sharding.partitions import make_partitions
from tests.algorithms.loopy.models import joint
from tests.backend_values import as_backend_array

N = 6
# Partitionings of a 6-cycle (with a ternary factor on v0, v1, v2) into two parts: three
# arcs of three, shifted (active: {v1, v4}, {v5}, {v3}), then {v0..v3} (active: {v1, v2})
# and {v5, v0, v1, v2} (active: {v0, v1}); together every variable is active once.
IDS = np.array([[(v - r) % N // 3 for v in range(N)] for r in range(3)]
               + [[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 0]])


def _cycle(rng, ternary=True, scale=1.0):
    # Unary and pairwise factors on a 6-cycle, and a ternary factor inside the first arc.
    scopes = [(f"v{i}",) for i in range(N)] + [(f"v{i}", f"v{(i + 1) % N}") for i in range(N)]
    if ternary:
        scopes.append(("v0", "v1", "v2"))
    tables = [(s, scale * rng.normal(size=(2,) * len(s))) for s in scopes]
    factors = [fc.Tensor(t, {v: fc.Bint[2] for v in s}) for s, t in tables]
    return factors, tables, {f"v{i}": 2 for i in range(N)}


def _exact_round(tables, sizes, ids, colors, kernel):
    """The one-round transition matrix: colour after colour, every variable whose blanket
    (found from the scopes) lies in its own partition updated from its conditional in the
    enumerated joint (Gibbs, or MH with a uniform proposal)."""
    names = list(sizes)
    near = [set() for _ in names]
    for scope, _ in tables:
        for a in scope:
            near[names.index(a)].update(names.index(b) for b in scope if b != a)
    active = [all(ids[u] == ids[v] for u in near[v]) for v in range(len(names))]
    j = joint(tables, sizes).reshape(-1)
    states = np.array(list(itertools.product(range(2), repeat=len(names))))
    code = {tuple(s): k for k, s in enumerate(states)}
    K = np.eye(len(states))
    for c in range(colors.max() + 1):
        vs = [v for v in range(len(names)) if active[v] and colors[v] == c]
        Kc = np.zeros_like(K)
        for k, x in enumerate(states):
            per_var = []
            for v in vs:
                lg = np.array([j[code[tuple(np.where(np.arange(len(names)) == v, s, x))]]
                               for s in range(2)])
                if kernel == "gibbs":
                    p = np.exp(lg - np.logaddexp.reduce(lg))
                else:
                    p = np.zeros(2)
                    p[1 - x[v]] = 0.5 * min(1.0, np.exp(lg[1 - x[v]] - lg[x[v]]))
                    p[x[v]] = 1.0 - p[1 - x[v]]
                per_var.append(p)
            for ys in itertools.product(range(2), repeat=len(vs)):
                y = x.copy()
                y[vs] = ys
                Kc[k, code[tuple(y)]] = np.prod([p[s] for p, s in zip(per_var, ys)])
        K = K @ Kc
    return K, j, states


@pytest.mark.parametrize("kernel", ["gibbs", "mh"])
def test_partitioned_round_leaves_the_exact_distribution_invariant(kernel):
    factors, tables, sizes = _cycle(np.random.default_rng(0))
    colors = FactorGraph.build(factors).colors
    rounds = [_exact_round(tables, sizes, ids, colors, kernel) for ids in IDS]
    j = rounds[0][1]
    pi = np.exp(j - np.logaddexp.reduce(j))
    total = np.eye(len(pi))
    for K, _, _ in rounds:
        assert np.abs(K.sum(1) - 1).max() < 1e-12
        assert np.abs(pi @ K - pi).max() < 1e-12
        assert np.abs(K - np.eye(len(pi))).max() > 0.1  # some variable moves
        total = total @ K
    assert (total > 0).all()  # the three rounds together reach every state


@pytest.mark.parametrize("kernel", ["gibbs", "mh"])
def test_partitioned_sampler_draws_from_the_exact_round(kernel):
    # 20,000 chains from one state, one round of partitioning 0: the empirical transition
    # row equals the exact one (total variation < 0.02)
    factors, tables, sizes = _cycle(np.random.default_rng(1))
    graph = FactorGraph.build(factors)
    K, _, states = _exact_round(tables, sizes, IDS[0], graph.colors, kernel)
    sampler = PartitionedSampler(graph, IDS, 2, kernel=kernel)  # round 0: IDS[0]
    start, chains = 37, 20000
    x = run_partitioned(sampler, np.tile(states[start], (chains, 1)), 1, rng_key=0)[0]
    freq = np.bincount(x @ (2 ** np.arange(N)[::-1]), minlength=2 ** N) / chains
    assert 0.5 * np.abs(freq - K[start]).sum() < 0.02


def test_partitioned_blanket_logits_equal_the_gibbs_samplers():
    # the partitions' gather (any list of variables, padded with V) reads the same Markov
    # blanket conditionals as loopy.mcmc's colour by colour
    factors, _, _ = _cycle(np.random.default_rng(5))
    sampler = PartitionedSampler(FactorGraph.build(factors), IDS, 2)
    flat = sampler.plan.flat_table()
    x = np.random.default_rng(6).integers(0, 2, size=(7, N))
    for c, vs in enumerate(sampler.plan.colour_vars):
        got = sampler.logits(flat, x, np.concatenate([vs, [N]]))
        np.testing.assert_allclose(got[:, :-1], conditional_logits(sampler.plan, flat, x, c),
                                   atol=1e-12)


def test_partitioned_marginals_match_enumeration():
    # (couplings halved: the chain mixes in tens of rounds, a 400-round run's error is noise)
    factors, tables, sizes = _cycle(np.random.default_rng(2), scale=0.5)
    s = partitioned_mcmc(factors, 400, num_partitions=2, partitions=IDS, warmup=40,
                         num_chains=100, rng_key=0)
    j = joint(tables, sizes)
    for i, name in enumerate(sizes):
        exact = np.exp(np.logaddexp.reduce(np.moveaxis(j, i, 0).reshape(2, -1), axis=1)
                       - np.logaddexp.reduce(j.reshape(-1)))
        assert abs(np.asarray(s[name].data).mean() - exact[1]) < 0.03


def test_partitioned_same_seed_same_run_on_numpy_and_torch():
    pytest.importorskip("torch")
    _, tables, _ = _cycle(np.random.default_rng(3), ternary=False)
    for name in ("numpy", "torch"):
        fc.set_backend(name)
        try:
            fs = [fc.Tensor(as_backend_array(t, name), {v: fc.Bint[2] for v in s})
                  for s, t in tables]
            a, b = (partitioned_mcmc(fs, 5, num_partitions=2, partitions=IDS, num_chains=3,
                                     rng_key=7, kernel="mh") for _ in range(2))
            assert a["v1"].inputs == {"particle": fc.Bint[5], "chain": fc.Bint[3]}
            assert all((np.asarray(a[v].data) == np.asarray(b[v].data)).all() for v in a)
        finally:
            fc.set_backend("numpy")


def test_partitions_strategies_and_errors():
    factors, _, _ = _cycle(np.random.default_rng(4))
    graph = FactorGraph.build(factors)
    for strategy in ("neighborhood", "random"):  # (whether every variable is ever active
        # is checked by the sampler, not here)
        ids = make_partitions(graph, 2, strategy, num_partitionings=3, seed=0)
        assert ids.shape == (3, N) and set(np.unique(ids)) <= {0, 1}
    hood = make_partitions(graph, 2, "neighborhood", num_partitionings=1, seed=0)[0]
    assert np.bincount(hood).tolist() == [3, 3]  # ceil(V / P) each, grown by BFS
    with pytest.raises(ValueError, match=r"variables \['v0', 'v2', 'v3', 'v5'\] never have"):
        partitioned_mcmc(factors, 1, num_partitions=2, partitions=IDS[0])
    with pytest.raises(ValueError, match="ints in \\[0, 2\\) of shape"):
        partitioned_mcmc(factors, 1, num_partitions=2, partitions=np.zeros(N - 1, int))
    with pytest.raises(TypeError, match="numpy backend cannot"):
        partitioned_mcmc(factors, 1, mesh="a mesh")
