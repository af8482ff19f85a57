"""Max-product decoding and ``init="unary"`` (evidence messages at their final value) against
brute-force enumeration (numpy oracles)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import loopy_bp
from tests.algorithms.loopy.models import brute_force, joint, tree_model
from tests.backend_values import values_on_every_backend


@pytest.mark.parametrize("sum_op, temperature", [(ops.logaddexp, 1.0), (ops.max, 0.0)])
def test_unary_init_on_a_tree_is_exact(sum_op, temperature):
    factors, tables, sizes = tree_model(np.random.default_rng(4))
    log_z, marg = brute_force(tables, sizes, temperature)
    r = loopy_bp(factors, sum_op, damping=0.5, tol=1e-14, init="unary")
    assert r.converged and abs(float(r.log_z.data) - log_z) < 1e-10
    for v, m in marg.items():
        np.testing.assert_allclose(r.beliefs[v].data, m, atol=1e-10)


def test_unary_init_max_product_on_every_backend_and_jit():
    factors, tables, sizes = tree_model(np.random.default_rng(5))
    domains = [dict(f.inputs) for f in factors]
    log_max, mmarg = brute_force(tables, sizes, 0.0)

    def fn(*arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        m = loopy_bp(fs, ops.max, damping=0.5, max_iters=40, init="unary")
        return ops.cat([m.log_z.data[None]] + [m.beliefs[v].data for v in sizes], 0)

    expected = np.concatenate([[log_max]] + [mmarg[v] for v in sizes])
    for got in values_on_every_backend(fn, *[t for _, t in tables], eager_jax=False):
        np.testing.assert_allclose(got, expected, atol=1e-10)


def test_unary_messages_start_and_stay_at_their_tables():
    factors, tables, sizes = tree_model(np.random.default_rng(6))
    start = loopy_bp(factors, max_iters=0, init="unary")
    after = loopy_bp(factors, damping=0.5, max_iters=1, init="unary")
    g = start.graph
    for e, a in enumerate(g.edge_factor):
        scope, t = tables[a]
        d = sizes[g.names[g.edge_var[e]]]
        if len(scope) == 1:  # its normalized table, by hand
            expected = t - np.log(np.exp(t).sum())
            np.testing.assert_allclose(start.f2v[e, :d], expected, atol=1e-12)
            np.testing.assert_allclose(after.f2v[e, :d], expected, atol=1e-12)
        else:
            assert np.all(start.f2v[e] == 0.0)


def _rbm(rng, nh, nv):
    w, bh, bv = rng.normal(size=(nh, nv)), rng.logistic(size=nh), rng.logistic(size=nv)
    fs = [fc.Tensor(np.array([0.0, bh[i]]), {f"h{i}": fc.Bint[2]}) for i in range(nh)]
    fs += [fc.Tensor(np.array([0.0, bv[j]]), {f"v{j}": fc.Bint[2]}) for j in range(nv)]
    fs += [fc.Tensor(np.array([[0.0, 0.0], [0.0, w[i, j]]]),
                     {f"h{i}": fc.Bint[2], f"v{j}": fc.Bint[2]})
           for i in range(nh) for j in range(nv)]
    names = [f"h{i}" for i in range(nh)] + [f"v{j}" for j in range(nv)]
    return fs, [(tuple(f.inputs), np.asarray(f.data)) for f in fs], {k: 2 for k in names}


def test_rbm_maps_against_brute_force():
    # PGMax's model family (weights N(0, 1), biases Logistic(0, 1)) at 3 + 3 units: where
    # damped max-product converges, both starts reach one fixed point (same max-marginals)
    # and the decoded state is a maximizer of the enumerated joint.
    hits = {None: 0, "unary": 0}
    for seed in range(4):
        fs, tables, sizes = _rbm(np.random.default_rng(seed), 3, 3)
        j = joint(tables, sizes)
        runs = {init: loopy_bp(fs, ops.max, damping=0.5, tol=1e-12, max_iters=200, init=init)
                for init in hits}
        for init, r in runs.items():
            x = r.map_assignment()
            hits[init] += bool(np.isclose(j[tuple(x[v] for v in sizes)], j.max()))
        if runs[None].converged and runs["unary"].converged:
            for v in sizes:
                np.testing.assert_allclose(runs["unary"].beliefs[v].data,
                                           runs[None].beliefs[v].data, atol=1e-9)
    assert hits["unary"] == hits[None] == 4


def test_init_errors_name_the_options():
    factors, _, _ = tree_model(np.random.default_rng(7))
    with pytest.raises(ValueError, match="init must be None, 'unary'"):
        loopy_bp(factors, init="evidence")
    with pytest.raises(ValueError, match="init= applies to plain loopy BP"):
        loopy_bp(factors, init="unary", clusters=[("a", "b"), ("c", "d", "e")])
