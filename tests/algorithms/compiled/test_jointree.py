"""The jointree planner: random networks with functional CPTs against brute-force
enumeration (linear and log space, shuffled factor orders), the shrunk rank never above the
unshrunk one on the same tree, and the rectangle model's structural columns of Darwiche
(2020) Table 1, computed here from the model's definition."""

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled.jointree import build_jointree, separators
from funsor_core.algorithms.compiled.minfill import min_fill_order
from funsor_core.algorithms.compiled.program import plan_structure

from .networks import (
    brute_force,
    brute_force_einsum,
    random_network,
    random_network_arrays,
    rectangle_structure,
    to_log,
)


def _rel_err(actual, expected):
    return float(np.max(np.abs(actual - expected) / np.maximum(np.abs(expected), 1e-300)))


@pytest.mark.parametrize("seed", range(4))
def test_random_networks_match_brute_force(seed):
    # Through the public faces (Tensors, functional(), fc.plan, log space): 4 x 8 networks of
    # 5-12 nodes, up to 3 parents, 2-3 values, 25-80% functional, soft evidence; half keep one
    # name (a marginal), half sum everything (the evidence's weight). The 600-network check
    # below runs the same planner on arrays.
    rng = np.random.default_rng(seed)
    for trial in range(8):
        n = int(rng.integers(5, 13))
        factors, cards = random_network(rng, n, rng.uniform(0.25, 0.8))
        keep = (f"v{int(rng.integers(n))}",) if trial % 2 else ()
        plan = fc.plan(factors, frozenset(cards) - set(keep), method="jointree")
        stats = plan.stats()
        assert stats["max_binary_rank"] <= stats["unshrunk_max_binary_rank"] + 1e-9
        expected = brute_force(factors, cards, keep)
        assert _rel_err(plan(factors).data, expected) < 1e-12
        log_z = plan(to_log(factors), ops.logaddexp, ops.add).data
        assert _rel_err(np.exp(log_z), expected) < 1e-12
        # Another order of the same factors (where evidence sits, how ties break): a
        # different tree, the same numbers.
        order = rng.permutation(len(factors))
        shuffled = [factors[k] for k in order]
        other = fc.plan(shuffled, frozenset(cards) - set(keep), method="jointree")
        assert _rel_err(other(shuffled).data, expected) < 1e-12


def _plan_arrays(scopes, outs, cards, keep):
    return plan_structure(tuple(scopes), tuple(cards.items()), tuple(outs), keep, "jointree")


@pytest.mark.parametrize("seed", range(4))
def test_600_random_networks_match_brute_force(seed):
    # The acceptance, 4 x 150 networks (distributed as random_network's) on numpy
    # arrays, the plan taken from its cache-backed structural core (no terms: ~3 ms each).
    # Each: exact to 1e-12 against enumeration (one np.einsum over the joint), the shrunk
    # binary rank never above the unshrunk one on the same tree, and the same numbers from
    # the factors in another order (another tree: tie-breaks and where evidence sits);
    # every fourth also in log space.
    rng = np.random.default_rng(100 + seed)
    for trial in range(150):
        n = int(rng.integers(5, 13))
        scopes, outs, arrays, cards = random_network_arrays(rng, n, rng.uniform(0.25, 0.8))
        keep = (f"v{int(rng.integers(n))}",) if trial % 2 else ()
        plan = _plan_arrays(scopes, outs, cards, keep)
        stats = plan.tree.stats()
        assert stats["max_binary_rank"] <= stats["unshrunk_max_binary_rank"] + 1e-9
        expected = brute_force_einsum(scopes, arrays, cards, keep)
        assert _rel_err(plan.run_arrays(arrays, False), expected) < 1e-12, (seed, trial)
        order = rng.permutation(len(scopes))
        other = _plan_arrays([scopes[k] for k in order], [outs[k] for k in order], cards, keep)
        actual = other.run_arrays([arrays[k] for k in order], False)
        assert _rel_err(actual, expected) < 1e-12, (seed, trial)
        if trial % 4 == 0:
            with np.errstate(divide="ignore"):
                log_z = plan.run_arrays([np.log(a) for a in arrays], True)
            assert _rel_err(np.exp(log_z), expected) < 1e-12, (seed, trial)


def test_planners_agree():
    rng = np.random.default_rng(7)
    factors, cards = random_network(rng, 9, 0.5)
    expected = brute_force(factors, cards)
    for method in ("auto", "jointree", "opt_einsum"):
        plan = fc.plan(factors, frozenset(cards), method=method)
        assert _rel_err(plan(factors).data, expected) < 1e-12, method


@pytest.mark.parametrize("n, ranks, binary_ranks", [
    (8, (85, 11, 197, 5), (15.0, 13.0)),
    (10, (125, 13, 305, 5), (17.6, 14.3)),
])
def test_rectangle_model_table_1(n, ranks, binary_ranks):
    # Table 1: network nodes and the largest cluster, without functional CPTs (a classical
    # jointree) and with them (replicated and shrunk). Nodes: 5 + 2n + n^2 without,
    # 5 + 3n^2 with (r_i and c_j replicated once per pixel they feed).
    scopes, outs, sizes = rectangle_structure(n)
    plain = build_jointree(scopes, [None] * len(scopes), sizes, keep=("label",)).stats()
    shrunk = build_jointree(scopes, outs, sizes, keep=("label",)).stats()
    assert (plain["nodes"], plain["max_rank"], shrunk["nodes"], shrunk["max_rank"]) == ranks
    assert (round(plain["max_binary_rank"], 1), round(shrunk["max_binary_rank"], 1)) \
        == binary_ranks
    assert shrunk["unshrunk_max_binary_rank"] > shrunk["max_binary_rank"]
    # The largest shrunk cluster: the four n-valued names and one binary one.
    assert sorted(shrunk["largest_cluster"].values()) == [2, n, n, n, n]


def test_rectangle_model_runs_exactly_at_n_4():
    scopes, outs, sizes = rectangle_structure(4)
    rng = np.random.default_rng(0)
    factors = []
    for scope, out in zip(scopes, outs):
        shape = [sizes[k] for k in scope]
        inputs = {k: fc.Bint[sizes[k]] for k in scope}
        if out is None:
            factors.append(fc.Tensor(rng.random(shape), inputs))
        else:
            table = np.zeros(shape)
            np.put_along_axis(table, rng.integers(0, 2, size=shape[:-1])[..., None], 1.0, -1)
            factors.append(fc.functional(fc.Tensor(table, inputs), out))
    plan = fc.plan(factors, frozenset(sizes) - {"label"}, method="jointree")
    # 4^4 * 2^(8 + 16 + 1) assignments: enumerate the pixels out first, by hand.
    expected = _rectangle_brute(factors, sizes, 4)
    assert _rel_err(plan(factors).data, expected) < 1e-12


def _rectangle_brute(factors, sizes, n):
    # Sum each pixel p_i_j out of its own factor (it appears nowhere else), then enumerate.
    pix = {}
    rest = []
    for f in factors:
        t = f.term if hasattr(f, "term") else f
        names = tuple(t.inputs)
        if names[-1].startswith("p"):
            pix[names] = t.reduce(ops.add, names[-1])
        else:
            rest.append(t)
    cards = {k: v for k, v in sizes.items() if not k.startswith("p")}
    return brute_force(rest + list(pix.values()), cards, ("label",))


def test_separators_are_a_jointree():
    # Running intersection: the nodes whose cluster holds a name are connected.
    rng = np.random.default_rng(1)
    factors, cards = random_network(rng, 12, 0.0)
    tree = fc.plan(factors, frozenset(cards), method="jointree").tree
    clusters = tree.clusters()
    for name in cards:
        nodes = {i for i, cluster in enumerate(clusters) if name in cluster}
        parents = {c: i for i, kids in enumerate(tree.children) for c in kids}
        tops = [i for i in nodes if parents.get(i) not in nodes]
        assert len(tops) <= 1, name


def test_chain_and_tree_of_1000_factors_plan_with_rank_two():
    chain = [(f"x{i}", f"x{i + 1}") for i in range(1000)]
    sizes = {f"x{i}": 3 for i in range(1001)}
    assert min_fill_order(chain, sizes, set(sizes))[:2] == ["x0", "x1"]
    tree = build_jointree(chain, [None] * 1000, sizes)
    assert tree.stats()["max_rank"] == 2
    star = [(f"x{(i - 1) // 2}", f"x{i}") for i in range(1, 1001)]
    assert build_jointree(star, [None] * 1000, sizes).stats()["max_rank"] <= 3
    seps = separators(((), (), (0, 1)), (("a", "b"), ("b",)), frozenset({"a"}))
    assert seps == [frozenset({"a", "b"}), frozenset({"b"}), frozenset({"a"})]
    assert math.isclose(tree.stats()["max_binary_rank"], 2 * math.log2(3))
