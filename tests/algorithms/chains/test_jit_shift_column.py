"""The compiled exact fold of a float32 log-space chain keeps a vector carry's shift as one
more column of the carry (``discrete_precision.with_shift_column``), so its ``lax.scan``
carries a single array: XLA:CPU runs a loop body of at most 8 thunks in line, and a ``(values,
shift)`` pair took 9 (a backward chain under ``jax.jit(jax.value_and_grad)``: 67 -> 50 us).

Oracle: numpy float64 forward and backward recursions over steps near -1e4 (log Z and its
derivative, the pair marginals), a backward message and a matrix product as carries.
"""

from __future__ import annotations

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import recorded_choices
from funsor_core.algorithms.chains.discrete import chain_product

jax = pytest.importorskip("jax")
jnp = jax.numpy

K, B, T = 3, 4, 200  # long enough that a step-by-step rounding near 1e4 would show


def _lse(x, axis):
    m = x.max(axis, keepdims=True)
    return np.squeeze(np.log(np.exp(x - m).sum(axis, keepdims=True)) + m, axis)


def _chain64(steps, left, right):
    # float64: the forward messages from ``left`` (None: the product matrices from the
    # identity) and the backward ones from ``right`` (None: from zeros), step by step
    steps = steps.astype(np.float64)
    if left is None:
        eye = np.where(np.eye(K) > 0, 0.0, -np.inf)
        alpha = [np.broadcast_to(eye, (B, K, K))]
        for m in steps:
            alpha.append(_lse(alpha[-1][..., :, :, None] + m[..., None, :, :], -2))
    else:
        alpha = [left.astype(np.float64)]
        for m in steps:
            alpha.append(_lse(alpha[-1][:, :, None] + m, 1))
    beta = [np.zeros((B, K)) if right is None else right.astype(np.float64)]
    for m in steps[::-1]:
        beta.insert(0, _lse(m + beta[0][:, None, :], 2))
    return alpha, beta


def _scan_carries(jaxpr) -> list:
    from jax.extend import core

    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "scan":
            found.append([v.aval.shape for v in eqn.outvars[:eqn.params["num_carry"]]])
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, core.ClosedJaxpr):
                    found += _scan_carries(sub.jaxpr)
                elif isinstance(sub, core.Jaxpr):
                    found += _scan_carries(sub)
    return found


@pytest.mark.parametrize("form", ["both", "backward", "matrix"])
def test_jitted_exact_fold_carries_its_shift_as_a_column(form):
    # Steps near -1e4, each split into a matrix and a vector over the prev states (so that
    # the exact fold runs where a filter would: a log Z with both boundaries).
    rng = np.random.default_rng(len(form))
    trans = (rng.normal(size=(T, B, K, K)) - 1e4).astype(np.float32)
    prev = rng.normal(size=(T, B, K, 1)).astype(np.float32)
    left, right = rng.normal(size=(2, B, K)).astype(np.float32)
    left, right = (None if form != "both" else left), (None if form == "matrix" else right)
    ends = tuple(None if x is None else jnp.asarray(x) for x in (left, right))

    def chain(a, b):
        return chain_product(ops.logaddexp, ops.add, (a, b), "sequential", *ends)

    with recorded_choices() as log:
        value = jax.jit(chain)(jnp.asarray(trans), jnp.asarray(prev))
    assert {c.kernel for c in log if c.kernel is not None} == {"sequential"}
    steps = trans.astype(np.float64) + prev  # (in float32 the sum would round)
    alpha, beta = _chain64(steps, left, right)
    want = (_lse(alpha[-1] + beta[-1], 1) if form == "both"
            else beta[0] if form == "backward" else alpha[-1])
    # float32 rounds the value, near -1e4 T, to a few of its ulps
    np.testing.assert_allclose(np.asarray(value, np.float64), want, rtol=0,
                               atol=4 * 1e4 * T * np.finfo(np.float32).eps)
    if form == "both":  # d log Z / d trans: the pair marginals
        grad = jax.jit(jax.grad(lambda a, b: chain(a, b).sum()))(jnp.asarray(trans),
                                                                jnp.asarray(prev))
        a, b = np.stack(alpha[:-1]), np.stack(beta[1:])
        pairs = np.exp(a[..., :, None] + steps + b[..., None, :]
                       - want[:, None, None])
        # Compiled, the steps are not shifted (eagerly they are, test_sparse_shift.py): each
        # step's sums round at their magnitude near -1e4 (ulp 1e-3), 3e-3 here over T = 200;
        # a carry left unshifted (near -2e6, ulp 0.25) would be off by far more.
        np.testing.assert_allclose(np.asarray(grad, np.float64), pairs, rtol=0, atol=1e-2)

    # one array, the shift a column; a matrix carry keeps the pair (its loop body takes more
    # than 8 thunks either way)
    carry = [(B, K, K), (B, 1, 1)] if form == "matrix" else [(B, K + 1)]
    jaxpr = jax.make_jaxpr(chain)(jnp.asarray(trans), jnp.asarray(prev)).jaxpr
    assert _scan_carries(jaxpr) == [carry]
