"""A Categorical table whose probs repeat along batch dims in memory (an ``expand``ed view, as
Pyro broadcasts each HMM site's K x K probs over its T steps) is computed once per distinct row
and broadcast back: checked against numpy brute force of the full array (zero entries,
float32), torch autograd of the explicit computation on a contiguous copy, and the backends'
``broadcast_axes`` and ``expand_dense`` facts against the strides and numbers they describe."""

import jax.numpy as jnp
import numpy as np
import pytest
import torch

import funsor_core as fc
from backends import jax_facts, numpy_facts, torch_facts
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.distribution.array_math import distinct_rows
from funsor_core.domains import Bint
from tests.distribution.distribution_cases import log_normalized_brute as _brute

K, T = 3, 5


def _rows(dtype=np.float64):
    rng = np.random.default_rng(1)
    rows = rng.dirichlet(np.ones(K), size=(2, 1)).astype(dtype)
    rows[1, 0, 2] = 0.0  # an impossible value: -inf, with a zero (not NaN) gradient
    rows[0, 0] *= 4.0  # unnormalized: normalized as torch's Categorical does
    return rows  # (x, 1, K): expanded to (x, time, K)


def _table(data):
    p = fc.Tensor(data, {"x": Bint[2], "time": Bint[T]})
    return D.Categorical(p, value=fc.Variable("v", Bint[K]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_broadcast_probs_table_matches_brute_force(backend, dtype, monkeypatch):
    seen = []
    log_table = D.Categorical.log_table
    monkeypatch.setattr(D.Categorical, "log_table",
                        staticmethod(lambda p: seen.append(tuple(p.shape)) or log_table(p)))
    rows = _rows(dtype)
    if backend == "torch":
        data = torch.tensor(rows).expand(2, T, K)
        assert data.stride()[1] == 0
    else:
        data = np.broadcast_to(rows, (2, T, K))
    t = _table(data)
    assert isinstance(t, fc.Tensor)
    assert dict(t.inputs) == {"x": Bint[2], "time": Bint[T], "v": Bint[K]}
    out = np.asarray(t.data)
    assert out.shape == (2, T, K) and out.dtype == dtype
    assert seen == [(2, 1, K)]  # one table per distinct row, then broadcast over time
    if backend == "torch":  # into memory of its own (torch's bmm copies stride-0 operands)
        assert t.data.is_contiguous()
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(out, _brute(np.broadcast_to(rows, (2, T, K)).astype(float)),
                               rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_broadcast_probs_table_gradient_matches_explicit(dtype):
    # d/d rows of sum(w * table) through the once-per-row table equals torch autograd of
    # the explicit log(p / sum p) on a contiguous copy (the expand's backward sums over time).
    rows = torch.tensor(_rows(), dtype=dtype)
    w = torch.tensor(np.random.default_rng(2).normal(size=(2, T, K)), dtype=dtype)
    mask = torch.isfinite(torch.tensor(_brute(np.broadcast_to(_rows(), (2, T, K)))))
    leaf = rows.clone().requires_grad_()
    t = _table(leaf.expand(2, T, K))
    (torch.where(mask, t.data, 0.0) * w).sum().backward()
    ref_leaf = rows.clone().requires_grad_()
    full = ref_leaf.expand(2, T, K).contiguous()
    safe = torch.where(full > 0, full, torch.ones_like(full))
    explicit = torch.log(safe) - torch.log(full.sum(-1, keepdim=True))
    (torch.where(mask, explicit, 0.0) * w).sum().backward()
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert torch.isfinite(leaf.grad).all()
    torch.testing.assert_close(leaf.grad, ref_leaf.grad, rtol=tol, atol=tol)


def test_distinct_rows_skips_event_and_unit_dims():
    # A row broadcast along its own last dim is not a batch of rows: it stays whole.
    x = np.broadcast_to(np.array([[2.0]]), (3, 4))  # strides (0, 0): every entry one number
    rows = distinct_rows(x)
    assert rows.shape == (1, 4)
    norm = ops.expand(rows / rows.sum(-1, keepdims=True), x.shape)
    np.testing.assert_allclose(norm, np.full((3, 4), 0.25))
    y = np.arange(6.0).reshape(2, 3)
    assert distinct_rows(y) is y
    z = np.broadcast_to(np.arange(3.0), (1, 3))  # a unit dim repeats nothing
    assert distinct_rows(z) is z


def test_broadcast_axes_facts_name_stride_zero_dims():
    base = np.arange(6.0).reshape(2, 1, 3)
    assert numpy_facts.broadcast_axes(np.broadcast_to(base, (2, 4, 3))) == (1,)
    assert numpy_facts.broadcast_axes(base) == ()
    assert torch_facts.broadcast_axes(torch.tensor(base).expand(2, 4, 3)) == (1,)
    assert torch_facts.broadcast_axes(torch.tensor(base).expand(2, 1, 3)) == ()
    assert jax_facts.broadcast_axes(jnp.broadcast_to(jnp.asarray(base), (2, 4, 3))) == ()
    for facts, wrap in ((numpy_facts, np.asarray), (torch_facts, torch.tensor)):
        dense = facts.expand_dense(wrap(base), (2, 4, 3))
        assert facts.broadcast_axes(dense) == ()
        np.testing.assert_array_equal(np.asarray(dense), np.broadcast_to(base, (2, 4, 3)))
