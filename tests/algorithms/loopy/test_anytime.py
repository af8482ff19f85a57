"""Anytime BP on sparse domains (Singh 2014 ch. 7.2): every step is LoopyBP on the explicitly
truncated model (tables indexed at the sparse domains by numpy), the last is LoopyBP."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import anytime_bp, loopy_bp
from tests.algorithms.loopy.models import grid_model
from tests.backend_values import as_backend_array


def _truncated(tables, sizes, domains):
    """The model restricted to ``domains``: each table indexed at its variables' states."""
    out = []
    for scope, t in tables:
        index = np.ix_(*[np.asarray(domains[v]) for v in scope])
        out.append(fc.Tensor(t[index], {v: fc.Bint[len(domains[v])] for v in scope}))
    return out


def _assert_step_is_truncated_bp(step, tables, sizes, sum_op, atol):
    reference = loopy_bp(_truncated(tables, sizes, step.domains), sum_op, tol=1e-13)
    assert abs(float(step.result.log_z.data) - float(reference.log_z.data)) < atol
    for v, states in step.domains.items():
        got = np.exp(step.result.beliefs[v].data)
        np.testing.assert_allclose(got[list(states)], np.exp(reference.beliefs[v].data),
                                   atol=atol)
        outside = np.setdiff1d(np.arange(sizes[v]), states)
        assert (got[outside] < 1e-300).all()


@pytest.mark.parametrize("priority, sum_op", [("dynamic", ops.logaddexp),
                                              ("fixed", ops.logaddexp),
                                              ("dynamic", ops.max)])
def test_every_step_is_bp_on_the_truncated_model_and_the_last_is_loopy_bp(priority, sum_op):
    factors, tables, sizes = grid_model(np.random.default_rng(0), n=2, domain=3)
    steps = list(anytime_bp(factors, priority, sum_op, grow=2, tol=1e-13))
    assert [sum(map(len, s.domains.values())) for s in steps] == [4, 6, 8, 10, 12]
    entries = [s.num_message_entries for s in steps]
    assert entries == sorted(entries)
    for step in steps:
        _assert_step_is_truncated_bp(step, tables, sizes, sum_op, 1e-8)
    full = loopy_bp(factors, sum_op, tol=1e-13)
    for v in sizes:
        np.testing.assert_allclose(np.exp(steps[-1].result.beliefs[v].data),
                                   np.exp(full.beliefs[v].data), atol=1e-8)


def test_sparse_domains_on_torch_and_under_jit_equal_the_truncated_model():
    torch = pytest.importorskip("torch")
    factors, tables, sizes = grid_model(np.random.default_rng(1), n=2, domain=3)
    domains = {v: [0, 2] for v in sizes}
    domains["x00"] = [1]  # one state: observed
    fc.set_backend("torch")
    try:
        fs = [fc.Tensor(as_backend_array(t, "torch"), dict(f.inputs))
              for (_, t), f in zip(tables, factors)]
        r = loopy_bp(fs, domains=domains, tol=1e-13)
        assert isinstance(r.log_z.data, torch.Tensor)
    finally:
        fc.set_backend("numpy")
    reference = loopy_bp(_truncated(tables, sizes, domains), tol=1e-13)
    assert abs(float(r.log_z.data) - float(reference.log_z.data)) < 1e-8
    for v in sizes:
        got = np.exp(r.beliefs[v].data.numpy())[domains[v]]
        np.testing.assert_allclose(got, np.exp(reference.beliefs[v].data), atol=1e-8)
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:  # under jax.jit: the mask is structure (host), the tables are traced
        def log_z(*arrays):
            fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(arrays, factors)]
            return loopy_bp(fs, domains=domains, tol=1e-13, max_iters=100).log_z.data
        traced = jax.jit(log_z)(*[as_backend_array(t, "jax") for _, t in tables])
    finally:
        fc.set_backend("numpy")
    assert abs(float(traced) - float(reference.log_z.data)) < 1e-8
    with pytest.raises(ValueError, match="unknown priority"):
        next(anytime_bp(factors, "bogus"))


@pytest.mark.parametrize("schedule", ["flooding", "residual"])
def test_message_entries_count_the_sparse_domain_sizes_each_message_touches(schedule):
    # Independent count: each time a factor f is updated (every iteration for flooding; as
    # the priority queue picks it for residual BP) it sends |f| messages, each reading
    # prod_{v in f} |S_v| table entries at the step's sparse domains S.
    factors, tables, sizes = grid_model(np.random.default_rng(3), n=2, domain=3)
    total = 0
    for step in anytime_bp(factors, "fixed", grow=3, tol=1e-12, schedule=schedule):
        updates = step.result.factor_updates
        if schedule == "flooding":
            assert (updates == int(step.result.num_iters)).all()
        work = [len(scope) * int(np.prod([len(step.domains[v]) for v in scope]))
                for scope, _ in tables]
        per_iter = sum(work)
        total += sum(int(u) * w for u, w in zip(updates, work))
        assert step.num_message_entries == total
    full = sum(len(scope) * int(np.prod([sizes[v] for v in scope])) for scope, _ in tables)
    assert per_iter == full


def test_step_iters_interleaves_growth_and_still_ends_at_loopy_bp():
    factors, tables, sizes = grid_model(np.random.default_rng(4), n=2, domain=3)
    steps = list(anytime_bp(factors, "dynamic", grow=2, tol=1e-13, step_iters=1))
    assert all(int(s.result.num_iters) == 1 for s in steps[:-1])
    full = loopy_bp(factors, tol=1e-13)
    for v in sizes:
        np.testing.assert_allclose(np.exp(steps[-1].result.beliefs[v].data),
                                   np.exp(full.beliefs[v].data), atol=1e-8)
