"""Cluster BP's LoopyBP options: temperature, the random and residual schedules, batched models
(numpy oracles: enumeration of the tempered joint, flooding's fixed point, a loop over the
batch)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_bp import (
    _tempered,
    cluster_bp,
    project_factorized,
    project_kbest,
)
from funsor_core.algorithms.loopy.cluster_compress import project_merged
from funsor_core.loopy import loopy_bp
from tests.algorithms.loopy.models import _model, brute_force, joint, tree_model
from tests.backend_values import as_backend_array, to_numpy

TREE_CLUSTERS = [("a",), ("b", "c"), ("d",), ("e",)]  # cluster factors (a,b) and (b,d,e)
# A 2x3 grid in three clusters joined in a cycle (cluster factors (0,1), (1,2), (0,2)).
RING = [("x00", "x01"), ("x02", "x12"), ("x11", "x10")]


def _grid(rng, scale=1.0, batch=None):
    rows, cols = 2, 3
    sizes = {f"x{i}{j}": 2 for i in range(rows) for j in range(cols)}
    scopes = [(v,) for v in sizes]
    scopes += [(f"x{i}{j}", f"x{i}{j + 1}") for i in range(rows) for j in range(cols - 1)]
    scopes += [(f"x{i}{j}", f"x{i + 1}{j}") for i in range(rows - 1) for j in range(cols)]
    factors, tables, _ = _model(rng, sizes, scopes, False, scale=scale)
    if batch:  # the unary factors get a batch input: B different models
        factors = [fc.Tensor(rng.normal(size=(batch, 2)), {"n": fc.Bint[batch], **f.inputs})
                   if len(f.inputs) == 1 else f for f in factors]
    return factors, tables, sizes


def _data(t) -> np.ndarray:
    return np.asarray(t.data)


@pytest.mark.parametrize("temperature", [0.5, 2.0, 0.0])
def test_tempered_full_on_a_tree_is_exact(temperature):
    factors, tables, sizes = tree_model(np.random.default_rng(0))
    log_z, marg = brute_force(tables, sizes, temperature)
    r = loopy_bp(factors, clusters=TREE_CLUSTERS, temperature=temperature, tol=1e-13)
    assert r.converged
    for v in sizes:
        np.testing.assert_allclose(_data(r.beliefs[v]), marg[v], atol=1e-10, err_msg=v)
    assert abs(float(r.log_z.data) - log_z) < 1e-10
    if temperature == 0.0:  # max-product: the max-marginals' argmaxes are the exact MAP
        j = joint(tables, sizes)
        best = np.unravel_index(np.argmax(j), j.shape)
        assert {v: int(np.argmax(_data(r.beliefs[v]))) for v in sizes} == dict(
            zip(sizes, map(int, best)))
        m = loopy_bp(factors, ops.max, clusters=TREE_CLUSTERS, tol=1e-13)
        for v in sizes:
            np.testing.assert_array_equal(_data(m.beliefs[v]), _data(r.beliefs[v]))


def test_tempered_projection_is_the_projection_of_m_over_t():
    t = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    got = _tempered(project_merged, 2.0)(t, k=1).log_table
    rest = 2.0 * np.log(np.exp(t[1:] / 2.0).sum() / 3)  # T log of the rest's mean mass
    np.testing.assert_allclose(got, [t[0], rest, rest, rest], atol=1e-12)


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_random_and_residual_schedules_are_exact_on_a_tree(sum_op):
    factors, tables, sizes = tree_model(np.random.default_rng(1))
    _, marg = brute_force(tables, sizes, 1.0 if sum_op is ops.logaddexp else 0.0)
    for schedule in ("random", "residual"):
        r = loopy_bp(factors, sum_op, schedule, clusters=TREE_CLUSTERS, tol=1e-13, rng_key=3)
        assert r.converged
        for v in sizes:
            np.testing.assert_allclose(_data(r.beliefs[v]), marg[v], atol=1e-10, err_msg=v)


def test_random_and_residual_schedules_reach_floodings_fixed_point():
    factors, _, _ = _grid(np.random.default_rng(2), scale=0.5)
    flood = loopy_bp(factors, clusters=RING, tol=1e-11)
    assert flood.converged
    for schedule in ("random", "residual"):
        r = cluster_bp(factors, RING, "full", schedule=schedule, tol=1e-11, rng_key=3)
        assert r.converged
        for v, b in flood.beliefs.items():
            np.testing.assert_allclose(_data(r.beliefs[v]), _data(b), atol=1e-9, err_msg=v)
    # Residual counts the candidates it computes: each of an iteration's F = 3 updates makes
    # the 3 cluster factors stale (they all share a cluster here), 2 messages each.
    assert r.counts.local_messages == 3 * 3 * 2 * r.num_iters


def test_random_orders_are_seeded():
    factors, _, _ = _grid(np.random.default_rng(4), scale=0.5)
    a, b, c = (cluster_bp(factors, RING, "full", schedule="random", max_iters=2, rng_key=k)
               for k in (5, 5, 6))
    for v in a.beliefs:
        np.testing.assert_array_equal(_data(a.beliefs[v]), _data(b.beliefs[v]))
    assert any(not np.array_equal(_data(a.beliefs[v]), _data(c.beliefs[v])) for v in a.beliefs)


def _per_element(factors, i):
    return [f(n=i) if "n" in f.inputs else f for f in factors]


@pytest.mark.parametrize("compression, schedule, temperature", [
    (("merged", 2), "flooding", 0.5), (("kbest", 3), "sequential", 1.0),
    ("factorized", "random", 0.0)])
def test_batched_equals_a_loop_over_the_batch(compression, schedule, temperature):
    # A fixed number of iterations, so each element runs the same updates as alone (the
    # residual schedule's order depends on the batch: tested on a tree, below).
    factors, _, _ = _grid(np.random.default_rng(7), scale=0.8, batch=2)
    kw = dict(compression=compression, schedule=schedule, temperature=temperature,
              tol=0.0, max_iters=3, rng_key=1)
    r = loopy_bp(factors, clusters=RING, batch=("n",), **kw)
    assert r.log_z.inputs == {"n": fc.Bint[2]}
    nbytes = 0
    for i in range(2):
        one = loopy_bp(_per_element(factors, i), clusters=RING, **kw)
        nbytes += one.counts.network_bytes
        for v, b in one.beliefs.items():
            np.testing.assert_allclose(_data(r.beliefs[v](n=i)), _data(b), atol=1e-12)
        np.testing.assert_allclose(_data(r.cluster_beliefs[0](n=i)),
                                   _data(one.cluster_beliefs[0]), atol=1e-12)
        assert abs(float(r.log_z.data[i]) - float(one.log_z.data)) < 1e-10
    assert r.counts.network_bytes == nbytes


def test_batched_projections_equal_a_loop_over_rows():
    t = np.random.default_rng(11).integers(0, 3, size=(2, 3, 2, 4)).astype(float)  # ties
    for project in (project_kbest, project_merged, project_factorized):
        p = project(t, k=3, batch_dims=2)
        rows = [[project(t[i, j], k=3) for j in range(3)] for i in range(2)]
        np.testing.assert_allclose(p.log_table, [[r.log_table for r in row] for row in rows],
                                   atol=1e-12)
        assert p.nbytes == sum(r.nbytes for row in rows for r in row)


def test_batched_tempered_residual_on_numpy_and_torch():
    # Exact per batch element on a tree-shaped cluster graph with two cluster factors (the
    # residual order matters), on numpy and torch (under jax.jit: test_cluster_bp.py).
    factors, tables, sizes = tree_model(np.random.default_rng(9))
    unary = np.random.default_rng(10).normal(size=(2, 2))  # a batched factor on 'a'
    domains = [dict(f.inputs) for f in factors]

    def fn(unary, *arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        fs.append(fc.Tensor(unary, {"n": fc.Bint[2], "a": fc.Bint[2]}))
        r = cluster_bp(fs, TREE_CLUSTERS, "full", schedule="residual", temperature=0.5,
                       batch=("n",), max_iters=3)
        return ops.cat([ops.reshape(r.beliefs[v].align(("n", v)).data, (-1,)) for v in sizes],
                       0)

    tempered = [brute_force(tables + [(("a",), u)], sizes, 0.5)[1] for u in unary]
    expected = np.concatenate([np.stack([m[v] for m in tempered]).reshape(-1) for v in sizes])
    arrays = [unary] + [t for _, t in tables]
    for backend in ("numpy", "torch"):
        fc.set_backend(backend)
        try:
            got = fn(*(as_backend_array(a, backend) for a in arrays))
        finally:
            fc.set_backend("numpy")
        np.testing.assert_allclose(to_numpy(got), expected, atol=1e-10)
