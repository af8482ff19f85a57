"""Anytime BP on compact tables (anytime_compact, anytime_buckets): every step equals the masked
run (full tables, log 0 outside the sparse domains), and the compact tables are the factors
substituted at index Tensors."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.anytime_compact import CompactLayout, compact_graph
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph
from funsor_core.loopy import anytime_bp
from tests.algorithms.loopy.models import grid_model
from tests.backend_values import as_backend_array


def _assert_same_steps(compact, masked, names, to_numpy=np.asarray, atol=1e-10):
    assert len(compact) == len(masked)
    for c, m in zip(compact, masked):
        assert c.domains == m.domains
        assert c.num_message_entries == m.num_message_entries
        assert int(c.result.num_iters) == int(m.result.num_iters)
        for v in names:
            np.testing.assert_allclose(np.exp(to_numpy(c.result.beliefs[v].data)),
                                       np.exp(to_numpy(m.result.beliefs[v].data)), atol=atol)
        assert abs(float(c.result.log_z.data) - float(m.result.log_z.data)) < atol


@pytest.mark.parametrize("priority, schedule, step_iters, sum_op", [
    ("dynamic", "flooding", 1, ops.logaddexp),  # buckets, dynamic priorities from buckets
    ("dynamic", "flooding", 1, ops.max),  # the same in max-product
    ("fixed", "residual", None, ops.logaddexp),  # one capacity (compact_graph), converged
])
def test_compact_steps_equal_masked_steps(priority, schedule, step_iters, sum_op):
    factors, _, sizes = grid_model(np.random.default_rng(5), n=2, domain=5)
    kw = dict(priority=priority, sum_op=sum_op, grow=3, tol=1e-12, schedule=schedule,
              step_iters=step_iters)
    compact = list(anytime_bp(factors, layout="compact", **kw))
    masked = list(anytime_bp(factors, layout="masked", **kw))
    assert len(compact) > 3
    _assert_same_steps(compact, masked, sizes)
    step = compact[2]  # factor beliefs gathered back: NEG outside, the masked run's inside
    for c, m in zip(step.result.factor_beliefs, masked[2].result.factor_beliefs):
        assert c.inputs == m.inputs
        np.testing.assert_allclose(np.exp(c.data), np.exp(m.data), atol=1e-10)


def test_compact_tables_are_the_factors_substituted_at_index_tensors():
    factors, _, sizes = grid_model(np.random.default_rng(6), n=2, domain=4)
    graph = FactorGraph.build(factors)
    mask = np.zeros((len(graph.names), graph.D), bool)
    mask[:, 1] = True
    mask[0, [0, 3]] = True  # x00: 3 states, the others 1: capacity 3, padded with NEG
    layout = CompactLayout.build(graph, mask)
    small = compact_graph(graph, layout)
    states = {v: np.flatnonzero(mask[i]) for i, v in enumerate(graph.names)}
    index = {v: fc.Tensor(s, {v + "_": fc.Bint[len(s)]}, dtype=graph.sizes[0])
             for v, s in states.items()}
    for group in small.groups:
        for row, a in enumerate(group.factor_ids):
            vs = graph.factor_vars[a]
            oracle = factors[a](**{v: index[v] for v in vs}).align(tuple(v + "_" for v in vs))
            got = np.asarray(group.table[row])
            inside = tuple(slice(0, len(states[v])) for v in vs)
            np.testing.assert_allclose(got[inside], oracle.data, atol=0)
            padded = np.ones(got.shape, bool)
            padded[inside] = False
            assert (got[padded] == NEG).all()


def test_compact_steps_equal_masked_steps_on_torch():
    # jax eagerly compiles each compact shape (~3 s cold here: over this file's budget), and
    # "auto" picks the masked layout there; the kernels are the same backend-generic gathers.
    backend = "torch"
    pytest.importorskip(backend)
    factors, tables, sizes = grid_model(np.random.default_rng(7), n=2, domain=3)
    fc.set_backend(backend)
    try:
        fs = [fc.Tensor(as_backend_array(t, backend), dict(f.inputs))
              for (_, t), f in zip(tables, factors)]
        kw = dict(priority="dynamic", grow=4, tol=1e-12, schedule="flooding", step_iters=2)
        compact = list(anytime_bp(fs, layout="compact", **kw))
        masked = list(anytime_bp(fs, layout="masked", **kw))
        _assert_same_steps(compact, masked, sizes, lambda x: np.asarray(fc.ops.to_numpy(x)))
    finally:
        fc.set_backend("numpy")
