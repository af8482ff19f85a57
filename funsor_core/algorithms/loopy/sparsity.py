"""Belief propagation with single-value sparsity (Singh 2014, chapter 7.1, Algorithm 7.1).

After every BP sweep each variable's *actual* marginal ``m'_i`` is computed over its full
domain: the factor-to-variable messages of one update in which the other variables range
over their current (sparse) domains, summed,

    log m'_i(y) = sum_{f ∋ i} R_{x_f \\ x_i} (log psi_f(x_f[i := y]) + sum_{j ∈ f, j != i} v2f_j),

normalized. A variable whose mode reaches probability ``>= threshold`` (the thesis's ``ζ``) is
*fixed* to it: its domain becomes that single value, so its belief is a point mass (a Delta)
and it blocks the messages across it (a chain splits into independent pieces). The decision
is revocable (7.1.2): a fixed variable whose ``m'_i`` has no value ``>= threshold`` is freed,
and one whose mode moved is re-fixed. Fixing is a mask on the tables (``anytime``'s
truncation), so every sweep reuses one compiled program. The loop ends when a sweep changes
no message by more than ``tol`` and no domain, or after ``max_iters`` sweeps.

With ``threshold > 1`` nothing can be fixed (probabilities are at most 1): that is decided
from the threshold alone, and the result is exactly ``loopy_bp``'s (also under ``jax.jit``).
Any other threshold needs concrete marginals to decide, so traced arrays raise.

Example:
    >>> f = fc.Tensor(np.log(np.array([[9.0, 1.0], [1.0, 1.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> u = fc.Tensor(np.log(np.array([99.0, 1.0])), {"a": fc.Bint[2]})
    >>> r = sparse_value_bp(FactorGraph.build([f, u]), 0.95)
    >>> r.fixed, np.exp(r.beliefs["b"].data).round(2).tolist()
    ({'a': 0}, [0.9, 0.1])
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.anytime import _masked
from funsor_core.algorithms.loopy.bp import BPResult, run_bp
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph
from funsor_core.algorithms.loopy.messages import (
    Semiring,
    factor_to_var,
    normalize,
    roundoff_tol,
    var_to_factor,
    variable_sums,
)

__all__ = ["sparse_value_bp"]

_TRACED = ("sparsity_threshold={threshold}: fixing a variable needs its marginal as a number, "
           "but the factors are traced (jax.jit); run it eagerly, or pass a threshold above 1 "
           "(plain loopy BP)")


def _refixed(graph: FactorGraph, marg: np.ndarray, threshold: float) -> np.ndarray:
    # Fix (or move) each variable whose mode has probability >= threshold; free the others.
    valid = np.arange(graph.D)[None, :] < np.array(graph.sizes)[:, None]
    probs = np.where(valid, np.exp(marg), 0.0)
    mask = valid.copy()
    sure = probs.max(1) >= threshold
    mask[sure] = False
    mask[np.flatnonzero(sure), probs[sure].argmax(1)] = True
    return mask


def _sparse_sweep(graph: FactorGraph, semiring: Semiring, damping: float, f2v, mask):
    # One flooding update in which the fixed variables send point masses (their v2f is log 0
    # off the fixed value) but receive full-domain messages: bsum is then log m'_i.
    bsum = variable_sums(graph, f2v, graph.var_edges)
    v2f = var_to_factor(semiring, bsum, f2v, graph.edge_var)
    v2f = ops.where(ops.new_array(v2f, mask[graph.edge_var]), v2f, NEG)
    new = factor_to_var(semiring, graph, v2f)
    return new if not damping else f2v * damping + new * (1.0 - damping)


def sparse_value_bp(graph: FactorGraph, threshold: float, sum_op=ops.logaddexp, *,
                    schedule: str = "flooding", damping: float = 0.0, tol: float = 1e-8,
                    max_iters: int = 1000, temperature: float = 1.0, rng_key=0) -> BPResult:
    """BP with single-value sparsity at ``threshold`` (see the module docstring): flooding
    sweeps, the fixed set revised after each; then ``schedule`` polishes BP on the model
    with the fixed variables clamped (from those messages: a sweep or two).

    Returns:
        The ``BPResult`` of BP on the clamped model (fixed variables' beliefs are point
        masses), with ``.fixed`` (name -> value), ``.actual_marginals`` (name -> log ``m'_i``
        Tensor over the full domain) and ``.num_iters``/``.residuals`` over all sweeps.

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> sparse_value_bp(FactorGraph.build([f]), 0.9).fixed
        {}
    """
    if not threshold > 0:
        raise ValueError(f"sparsity_threshold must be a probability in (0, 1] (above 1: "
                         f"plain BP), got {threshold}")
    options = dict(schedule=schedule, damping=damping, temperature=temperature,
                   rng_key=rng_key)
    if threshold > 1:  # decided structurally: nothing reaches it
        result = run_bp(graph, sum_op, tol=tol, max_iters=max_iters, **options)
        result.fixed, result.actual_marginals = {}, result.beliefs
        return result
    if not ops.is_concrete(graph.prototype()):
        raise NotImplementedError(_TRACED.format(threshold=threshold))
    semiring = Semiring(sum_op, temperature)
    tol = roundoff_tol([g.table for g in graph.groups], np.log(graph.D), tol)
    full = np.arange(graph.D)[None, :] < np.array(graph.sizes)[:, None]
    mask, residuals = full, []
    f2v = ops.new_zeros(graph.prototype(), (graph.num_edges, graph.D) + graph.bshape)
    for _ in range(max_iters):
        new = _sparse_sweep(graph, semiring, damping, f2v, mask)
        residuals.append(float(ops.detach(ops.amax(ops.abs(new - f2v)))))
        f2v = new
        marg = normalize(semiring, variable_sums(graph, f2v, graph.var_edges))
        marg = np.asarray(ops.to_numpy(ops.detach(marg)), dtype=float)
        new_mask = _refixed(graph, marg, threshold)
        if residuals[-1] < tol and (new_mask == mask).all():
            break
        mask = new_mask
    clamped = ops.where(ops.new_array(f2v, mask[graph.edge_var]), f2v, NEG)
    result = run_bp(_masked(graph, mask), sum_op, tol=tol, max_iters=max_iters, init=clamped,
                    **options)
    result.residuals = residuals + result.residuals
    result.num_iters = len(result.residuals)
    result.num_messages = result.num_iters * graph.num_edges
    single = (mask.sum(1) == 1) & (full.sum(1) > 1)
    result.fixed = {graph.names[i]: int(mask[i].argmax()) for i in np.flatnonzero(single)}
    result.actual_marginals = {k: graph.variable_tensor(i, marg[i])
                               for i, k in enumerate(graph.names)}
    return result
