"""Cluster BP with compressed messages against enumeration of the joint (numpy oracles)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_bp import (
    INT_NBYTES,
    PROJECTIONS,
    Projection,
    cluster_bp,
    project_factorized,
    project_kbest,
)
from funsor_core.loopy import loopy_bp, marginal_errors
from tests.algorithms.loopy.models import _model, brute_force, grid_model, joint, tree_model
from tests.backend_values import values_on_every_backend

TREE_CLUSTERS = [("a",), ("b", "c"), ("d",), ("e",)]  # cluster factors (a,b) and (b,d,e)


def _grid(rng, rows, cols, coupling=1.0):
    sizes = {f"x{i}{j}": 2 for i in range(rows) for j in range(cols)}
    scopes = [(v,) for v in sizes]
    scopes += [(f"x{i}{j}", f"x{i}{j + 1}") for i in range(rows) for j in range(cols - 1)]
    scopes += [(f"x{i}{j}", f"x{i + 1}{j}") for i in range(rows - 1) for j in range(cols)]
    return _model(rng, sizes, scopes, False, scale=coupling)


def _close(beliefs, marg, atol):
    for v, m in marg.items():
        np.testing.assert_allclose(np.asarray(beliefs[v].data), m, atol=atol, err_msg=v)


@pytest.mark.parametrize("sum_op, temperature", [(ops.logaddexp, 1.0), (ops.max, 0.0)])
def test_full_on_a_tree_shaped_cluster_graph_is_exact(sum_op, temperature):
    factors, tables, sizes = tree_model(np.random.default_rng(0))
    _, marg = brute_force(tables, sizes, temperature)
    for schedule in ("flooding", "sequential"):
        r = loopy_bp(factors, sum_op, schedule, clusters=TREE_CLUSTERS, tol=1e-13)
        assert r.converged
        _close(r.beliefs, marg, 1e-10)
    # A loopy 2x4 grid whose column clusters form a chain; messages over whole clusters.
    factors, tables, sizes = _grid(np.random.default_rng(1), 2, 4)
    columns = [(f"x0{j}", f"x1{j}") for j in range(4)]
    r = loopy_bp(factors, sum_op, clusters=columns, compression="full", tol=1e-13)
    _, marg = brute_force(tables, sizes, temperature)
    _close(r.beliefs, marg, 1e-10)
    j = joint(tables, sizes)
    axes = tuple(range(2, 8))  # the first column (x00, x10) is axes 0 and 4 of `joint`
    j = np.moveaxis(j, 4, 1)
    b = np.max(j, axis=axes) if temperature == 0 else np.log(np.exp(j).sum(axis=axes))
    b -= np.max(b) if temperature == 0 else np.log(np.exp(b).sum())
    np.testing.assert_allclose(r.cluster_beliefs[0].align(columns[0]).data, b, atol=1e-10)


def test_factorized_equals_loopy_bp():
    # One variable per cluster: the cluster graph is the factor graph (a loopy 3x3 grid).
    factors, _, sizes = grid_model(np.random.default_rng(2), coupling=1.0)
    expected = loopy_bp(factors, tol=1e-12).beliefs
    r = loopy_bp(factors, clusters=[(v,) for v in sizes], compression="factorized", tol=1e-12)
    _close(r.beliefs, {v: np.asarray(expected[v].data) for v in sizes}, 1e-8)
    # A 6-cycle in three 2-variable clusters without inner factors, each variable with one
    # factor per cluster factor: the cavities factorize, so this is loopy BP too.
    sizes = {v: 2 for v in "abcdef"}
    scopes = [(v,) for v in sizes] + [tuple(p) for p in ("ab", "bc", "cd", "de", "ef", "fa")]
    factors, _, _ = _model(np.random.default_rng(3), sizes, scopes, False, scale=1.5)
    expected = loopy_bp(factors, ops.max, tol=1e-12).beliefs
    r = loopy_bp(factors, ops.max, clusters=[("a", "d"), ("b", "e"), ("c", "f")],
                 compression="factorized", tol=1e-12)
    _close(r.beliefs, {v: np.asarray(expected[v].data) for v in sizes}, 1e-8)


def _on(names, tables, sizes):
    # The sum of log tables (scope, array) broadcast onto the axes `names`.
    out = np.zeros([sizes[v] for v in names])
    for scope, t in tables:
        order = sorted(range(len(scope)), key=lambda i: names.index(scope[i]))
        shape = [sizes[v] if v in scope else 1 for v in names]
        out = out + np.transpose(t, order).reshape(shape)
    return out


def _marginal(names, table, keep):
    # Normalized log marginal over `keep` (in keep's order).
    axes = tuple(i for i, v in enumerate(names) if v not in keep)
    m = np.logaddexp.reduce(table, axis=axes) if axes else table
    m = np.transpose(m, [[v for v in names if v in keep].index(v) for v in keep])
    return m - np.logaddexp.reduce(m.reshape(-1))


def test_factorized_projects_the_exact_cavity_to_its_marginals():
    # The documented definition, by numpy from the input tables at the converged messages:
    # m_{C->Psi} = prod_i marginal_i of the exact cavity phi_C + sum_{Psi' != Psi} m_{Psi'->C}
    # over Psi's variables of C, and m_{Psi->C} = R (Psi + the other clusters' m_{C'->Psi}).
    # The clusters have inner factors, so this is not loopy BP (checked too).
    factors, tables, sizes = _grid(np.random.default_rng(12), 2, 3)
    clusters = [("x00", "x01"), ("x02", "x12"), ("x11", "x10")]
    r = cluster_bp(factors, clusters, "factorized", tol=1e-13, max_iters=300)
    assert r.converged
    owner = {v: c for c, vs in enumerate(clusters) for v in vs}
    local = {c: [t for t in tables if {owner[v] for v in t[0]} == {c}] for c in range(3)}
    groups: dict = {}
    for t in tables:
        cs = tuple(sorted({owner[v] for v in t[0]}))
        if len(cs) > 1:
            groups.setdefault(cs, []).append(t)
    f2c = {(cs, c): (r.graph.touched[j, c], np.asarray(r.f2c[j, c].data))
           for j, cs in enumerate(r.graph.factor_clusters) for c in cs}
    c2f = {}
    for cs in groups:
        for c in cs:
            cavity = local[c] + [f2c[e] for e in f2c if e[1] == c and e[0] != cs]
            keep = tuple(v for v in clusters[c] if any(v in sc for sc, _ in groups[cs]))
            m = _marginal(clusters[c], _on(clusters[c], cavity, sizes), keep)
            c2f[cs, c] = [((v,), _marginal(keep, m, (v,))) for v in keep]
    for cs, psi in groups.items():
        names = tuple(sorted({v for sc, _ in psi for v in sc}))
        for c in cs:
            incoming = [t for c2 in cs if c2 != c for t in c2f[cs, c2]]
            keep, got = f2c[cs, c]
            want = _marginal(names, _on(names, psi + incoming, sizes), keep)
            np.testing.assert_allclose(got, want, atol=1e-10)
    lbp = loopy_bp(factors, tol=1e-13).beliefs
    assert max(np.abs(np.asarray(r.beliefs[v].data) - np.asarray(lbp[v].data)).max()
               for v in sizes) > 1e-3


def test_kbest_with_the_full_domain_equals_full_and_counts_bytes():
    factors, _, _ = _grid(np.random.default_rng(4), 2, 4)
    columns = [(f"x0{j}", f"x1{j}") for j in range(4)]
    full = cluster_bp(factors, columns, "full", tol=1e-12)
    kbest = cluster_bp(factors, columns, ("kbest", 4), tol=1e-12)
    assert kbest.num_iters == full.num_iters
    # merged keeps the rest's mass: with k = the domain it is full too, as FRAK once its list
    # holds every configuration (k = 4 new ones per call).
    merged = cluster_bp(factors, columns, ("merged", 4), tol=1e-12)
    frak = cluster_bp(factors, columns, ("frak", 4), tol=1e-12)
    for v in full.beliefs:
        np.testing.assert_array_equal(kbest.beliefs[v].data, full.beliefs[v].data)
        np.testing.assert_allclose(merged.beliefs[v].data, full.beliefs[v].data, atol=1e-12)
        np.testing.assert_allclose(frak.beliefs[v].data, full.beliefs[v].data, atol=1e-12)
    # 3 cluster factors, 2 messages each way per iteration, 4 entries of float64 each.
    n = 6 * full.num_iters
    assert (full.counts.network_messages, full.counts.local_messages) == (n, n)
    assert (full.counts.network_bytes, full.counts.local_bytes) == (n * 32, n * 32)
    assert kbest.counts.network_bytes == n * 4 * (8 + 2 * INT_NBYTES)
    assert [h.messages for h in full.history] == [12 * (i + 1) for i in range(n // 6)]
    seen = []
    small = cluster_bp(factors, columns, ("kbest", 1), max_iters=3, callback=seen.append)
    assert small.counts.network_bytes == 18 * (8 + 2 * INT_NBYTES)
    assert [len(r.residuals) for r in seen] == [1, 2, 3]  # snapshots, one per iteration


def test_sampled_messages_converge_and_repeat_with_a_seed():
    # Each message keeps its own key (common random numbers): the run converges, and the same
    # seed gives the same beliefs, whose support comes from the kept configurations.
    factors, _, _ = _grid(np.random.default_rng(4), 2, 4)
    columns = [(f"x0{j}", f"x1{j}") for j in range(4)]
    a = cluster_bp(factors, columns, ("samples", 3), tol=1e-12, max_iters=60, rng_key=1)
    b = cluster_bp(factors, columns, ("samples", 3), tol=1e-12, max_iters=60, rng_key=1)
    assert a.num_iters < 60
    for v in a.beliefs:
        np.testing.assert_array_equal(a.beliefs[v].data, b.beliefs[v].data)
        np.testing.assert_allclose(np.exp(a.beliefs[v].data).sum(), 1.0, atol=1e-12)


def test_projections_against_numpy():
    rng = np.random.default_rng(5)
    t = rng.integers(0, 3, size=(3, 2, 4)).astype(float)  # ties
    for k in (1, 5, 24, 30):
        p = project_kbest(t, k=k)
        keep = np.zeros(t.size, bool)
        keep[np.argsort(-t.reshape(-1), kind="stable")[:k]] = True
        np.testing.assert_array_equal(p.log_table, np.where(keep.reshape(t.shape), t, -np.inf))
        assert p.nbytes == min(k, 24) * (8 + 3 * INT_NBYTES)
    p = project_factorized(t)
    z = np.logaddexp.reduce(t.reshape(-1))
    m = [np.log(np.exp(t - z).sum(axis=tuple(a for a in range(3) if a != i))) for i in range(3)]
    expected = z + m[0][:, None, None] + m[1][None, :, None] + m[2][None, None, :]
    np.testing.assert_allclose(p.log_table, expected, atol=1e-12)
    assert p.nbytes == 9 * 8 and isinstance(p, Projection) and set(PROJECTIONS) == {
        "full", "factorized", "kbest", "samples", "merged", "frak"}


def test_gbp_on_a_loopy_cluster_graph_beats_loopy_bp():
    # A 4x4 grid in four 2x2 clusters: the cluster graph is a 4-cycle.
    factors, tables, sizes = _grid(np.random.default_rng(6), 4, 4, coupling=1.0)
    _, marg = brute_force(tables, sizes)
    exact = {v: fc.Tensor(m, {v: fc.Bint[2]}) for v, m in marg.items()}
    blocks = [tuple(f"x{i + a}{j + b}" for a in (0, 1) for b in (0, 1))
              for i in (0, 2) for j in (0, 2)]
    bp = marginal_errors(loopy_bp(factors, tol=1e-10).beliefs, exact)
    gbp = cluster_bp(factors, blocks, "full", tol=1e-10)
    seq = cluster_bp(factors, blocks, "full", schedule="sequential", damping=0.3, tol=1e-10)
    assert gbp.converged and seq.converged
    err = marginal_errors(gbp.beliefs, exact)
    assert err["l2"] < 0.5 * bp["l2"] and err["kl"] < bp["kl"]
    _close(seq.beliefs, {v: np.asarray(b.data) for v, b in gbp.beliefs.items()}, 1e-8)


def test_on_torch_and_under_jit():
    factors, tables, sizes = tree_model(np.random.default_rng(7))
    domains = [dict(f.inputs) for f in factors]
    _, marg = brute_force(tables, sizes)
    ties = np.random.default_rng(8).integers(0, 3, size=(3, 4)).astype(float)
    keep = np.zeros(12, bool)
    keep[np.argsort(-ties.reshape(-1), kind="stable")[:5]] = True
    # In the same program (a compile costs ~0.3 s per 100 ops): a batched model, a unary over
    # n on 'a' and the (a, b) factor, at temperature 0.5 with the residual schedule (its
    # traced choice), exact after one iteration.
    unary = np.random.default_rng(12).normal(size=(2, 2))
    tempered = [brute_force([(("a",), u), tables[1]], {"a": 2, "b": 3}, 0.5)[1]
                for u in unary]
    plain = [brute_force([(("a",), u), tables[1]], {"a": 2, "b": 3})[1] for u in unary]

    def fn(ties, unary, *arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        r = cluster_bp(fs, [("a", "b", "c"), ("d", "e")], "full", max_iters=1)
        kb = ops.clamp(project_kbest(ties, k=5).log_table, min=-1.0)
        batched = [fc.Tensor(unary, {"n": fc.Bint[2], "a": fc.Bint[2]}), fs[1]]
        # Batched FRAK keeps its lists as masks (also traced): k = 3 keeps messages whole.
        rf = cluster_bp(batched, [("a",), ("b",)], ("frak", 3), batch=("n",), max_iters=1)
        rb = cluster_bp(batched, [("a",), ("b",)], "full", schedule="residual",
                        temperature=0.5, batch=("n",), max_iters=1)
        return ops.cat([r.beliefs[v].data for v in sizes] + [ops.reshape(kb, (12,))]
                       + [ops.reshape(rf.beliefs[v].align(("n", v)).data, (-1,))
                          for v in "ab"]
                       + [ops.reshape(rb.beliefs[v].align(("n", v)).data, (-1,))
                          for v in "ab"], 0)

    expected = np.concatenate([marg[v] for v in sizes] + [np.where(keep, ties.reshape(-1),
                                                                    -1.0)]
                              + [np.stack([m[v] for m in plain]).reshape(-1) for v in "ab"]
                              + [np.stack([m[v] for m in tempered]).reshape(-1)
                                 for v in "ab"])
    for got in values_on_every_backend(fn, ties, unary, *[t for _, t in tables],
                                       eager_jax=False):
        np.testing.assert_allclose(got, expected, atol=1e-10)


def test_errors_name_the_problem():
    factors, _, _ = tree_model(np.random.default_rng(9))
    with pytest.raises(ValueError, match="'b' is in cluster 1 and in cluster 2"):
        loopy_bp(factors, clusters=[("a",), ("b", "c"), ("b", "d", "e")])
    with pytest.raises(ValueError, match=r"\['e'\] are in no cluster"):
        loopy_bp(factors, clusters=[("a",), ("b", "c"), ("d",)])
    with pytest.raises(ValueError, match="cluster 3 names 'z', which no factor has"):
        loopy_bp(factors, clusters=TREE_CLUSTERS[:3] + [("e", "z")])
    with pytest.raises(ValueError, match="unknown compression 'frack'"):
        loopy_bp(factors, clusters=TREE_CLUSTERS, compression="frack")
    with pytest.raises(ValueError, match=r"needs k: pass compression=\('kbest', k\)"):
        loopy_bp(factors, clusters=TREE_CLUSTERS, compression="kbest")
    with pytest.raises(ValueError, match="pass clusters= too"):
        loopy_bp(factors, compression="full")
    with pytest.raises(ValueError, match="unknown schedule 'spiral' for cluster BP"):
        loopy_bp(factors, schedule="spiral", clusters=TREE_CLUSTERS)
    with pytest.raises(TypeError, match="cluster 0 must be a tuple of variable names"):
        loopy_bp(factors, clusters=["a", ("b", "c", "d", "e")])


def test_log_z_exact_on_a_tree_and_bethe_with_singletons():
    factors, tables, sizes = tree_model(np.random.default_rng(10))
    for sum_op, temperature in ((ops.logaddexp, 1.0), (ops.max, 0.0)):
        log_z, _ = brute_force(tables, sizes, temperature)
        constant = fc.Tensor(np.array(0.5))  # no variables: it scales Z only
        r = cluster_bp(factors + [constant], TREE_CLUSTERS, "full", sum_op, tol=1e-13)
        assert abs(float(r.log_z.data) - (log_z + 0.5)) < 1e-10
    factors, _, sizes = grid_model(np.random.default_rng(11), coupling=1.0)
    r = cluster_bp(factors, [(v,) for v in sizes], "factorized", tol=1e-12, max_iters=500)
    assert abs(float(r.log_z.data) - float(loopy_bp(factors, tol=1e-12).log_z.data)) < 1e-8
