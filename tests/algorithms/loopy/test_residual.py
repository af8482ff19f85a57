"""The eager asynchronous schedules (asynchronous.py): residual BP with a priority queue and
sequential / random BP one factor at a time, against brute force, flooding's fixed point,
the vectorized sweeps they replace eagerly, and eq. 7.6's priority by hand."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy import bp
from funsor_core.algorithms.loopy.asynchronous import _dynamic_range
from funsor_core.algorithms.loopy.graph import NEG
from funsor_core.algorithms.loopy.messages import Semiring
from funsor_core.loopy import FactorGraph, loopy_bp
from tests.algorithms.loopy.models import brute_force, grid_model, tree_model


def _batched_tree(rng, batch: int):
    # Two independent tree models stacked along a batch input "n".
    models = [tree_model(rng) for _ in range(batch)]
    factors = []
    for a, f in enumerate(models[0][0]):
        data = np.stack([m[1][a][1] for m in models], -1)
        factors.append(fc.Tensor(data, {**f.inputs, "n": fc.Bint[batch]}))
    return factors, models


@pytest.mark.parametrize("schedule, damping, sum_op, backend", [
    ("residual", 0.01, ops.logaddexp, "numpy"),
    ("residual", 0.0, ops.max, "torch"),
    ("random", 0.0, ops.logaddexp, "torch"),
])
def test_fast_schedules_are_exact_on_a_batched_ragged_tree(schedule, damping, sum_op, backend):
    factors, models = _batched_tree(np.random.default_rng(7), 2)
    if backend == "torch":
        torch = pytest.importorskip("torch")
        factors = [fc.Tensor(torch.as_tensor(f.data), dict(f.inputs)) for f in factors]
    t = 0.0 if sum_op is ops.max else 1.0
    r = loopy_bp(factors, sum_op, schedule, damping=damping, tol=1e-13, batch=("n",))
    assert r.converged
    for n, (_, tables, sizes) in enumerate(models):
        log_z, marg = brute_force(tables, sizes, t)
        assert abs(float(r.log_z.data[n]) - log_z) < 1e-10
        for v, m in marg.items():
            np.testing.assert_allclose(np.asarray(r.beliefs[v].data)[:, n], m, atol=1e-10)


def test_residual_bp_sends_fewer_messages_to_floodings_fixed_point():
    # (test_bp.py's test_loopy_fixed_point checks every schedule's fixed point and message
    # equations.) Residual BP counts the messages its picked factors send: the sum of their
    # arities over their updates, fewer than flooding's sweeps on this grid.
    factors, _, sizes = grid_model(np.random.default_rng(3), n=2, coupling=0.8, domain=3)
    flood = loopy_bp(factors, tol=1e-12)
    r = loopy_bp(factors, schedule="residual", tol=1e-12)
    arity = np.array([len(f.inputs) for f in factors])
    assert r.converged and r.num_messages == int(r.factor_updates @ arity)
    assert r.num_messages < flood.num_messages
    for v in sizes:
        np.testing.assert_allclose(r.beliefs[v].data, flood.beliefs[v].data, atol=1e-8)


def test_fast_random_equals_the_vectorized_sweep():
    # Same seed, same orders, same equations: the one-factor path and the masked sweep that
    # computes every candidate per update (kept for jax.jit) agree update by update.
    factors, _, _ = grid_model(np.random.default_rng(5), n=2, coupling=0.8, domain=3)
    g, s = FactorGraph.build(factors), Semiring()
    fast = bp.run_bp(g, schedule="random", damping=0.2, tol=0.0, max_iters=3, rng_key=4)
    sweep = bp._SWEEPS["random"](g, s, 0.2, g.prototype(), 4, 3)
    slow = bp._eager_loop(g, s, sweep, bp._initial_messages(g, s, g.prototype(), None), 0.0, 3)
    np.testing.assert_allclose(fast.f2v, slow.f2v, atol=1e-12)
    np.testing.assert_allclose(fast.residuals, slow.residuals, atol=1e-12)


def test_a_constant_model_sends_nothing_under_residual_bp():
    # All messages are uniform: the initial ones are already a fixed point up to scale,
    # so every eq. 7.6 priority is 0 (flooding still sweeps once to see it).
    f = fc.Tensor(np.zeros((3, 4)), {"a": fc.Bint[3], "b": fc.Bint[4]})
    r = loopy_bp([f, fc.Tensor(np.zeros(4), {"b": fc.Bint[4]})], schedule="residual")
    assert r.converged and r.num_messages == 0 and r.factor_updates.tolist() == [0, 0]
    np.testing.assert_allclose(np.exp(r.beliefs["a"].data), np.full(3, 1 / 3))


def test_dynamic_range_priority_by_hand():
    # eq. 7.6: max_y d(y) - min_y d(y), d = new - old, over states not log 0 in both,
    # the largest over the batch.
    new = np.array([[[0.0, 1.0], [2.0, 0.5], [NEG, NEG]],
                    [[1.0, 0.0], [1.0, 0.0], [NEG, 3.0]]])  # (E=2, D=3, B=2)
    old = np.array([[[0.5, 0.0], [0.0, 0.0], [NEG, NEG]],
                    [[0.0, 0.0], [0.0, 0.0], [NEG, 0.0]]])
    d = new - old
    expected = []
    for e in range(2):
        live = (new[e] > NEG / 2) | (old[e] > NEG / 2)
        expected.append(max(d[e][live[:, b], b].max() - d[e][live[:, b], b].min()
                            for b in range(2)))
    np.testing.assert_allclose(_dynamic_range(new, old, 1), expected)
    assert expected == [2.5, 3.0]


def test_torch_gradients_through_residual_bp_equal_floodings():
    # The messages are updated out of place (scatter_set), so autograd follows every update:
    # at the common fixed point a belief's gradient is the same whatever the schedule.
    torch = pytest.importorskip("torch")
    factors, tables, _ = grid_model(np.random.default_rng(4), n=2, coupling=0.4)
    leaves = [torch.tensor(t, requires_grad=True) for _, t in tables]
    fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(leaves, factors)]
    grads = []
    for schedule in ("flooding", "residual"):
        b = loopy_bp(fs, schedule=schedule, tol=1e-12).beliefs["x00"].data
        grads.append(torch.autograd.grad(b[0], leaves[:5])[4].numpy())
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-9)
    assert np.abs(grads[0]).max() > 1e-3  # the pairwise factor moves the belief
