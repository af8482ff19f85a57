"""MCMCMC: Metropolis-Hastings with the acceptance test on a subsample of the factors
(Singh 2014, chapter 5.1, Algorithm 5.1 with uniform sampling, 5.1.1.1).

A single-site proposal ``x_i -> y`` changes the factors ``F_i`` of ``i``'s Markov blanket.
Instead of their exact log ratio ``pi = sum_{f ∈ F_i} log psi_f(y) - log psi_f(x)``, MCMCMC
scores a uniform subsample ``S ⊆ F_i`` of ``|S| = max(1, ceil(p |F_i|))`` factors (drawn
without replacement, afresh for every proposal) and accepts with

    min(1, q(x | y) / q(y | x) * exp(pi_S)),   pi_S = |F_i| / |S| * sum_{f ∈ S} (...)  (eq. 5.2)

``pi_S`` is unbiased for ``pi``, but ``E[min(1, e^pi_S)] != min(1, e^pi)``: the chain no longer
satisfies detailed balance (section 5.1.2), and its stationary distribution differs from the
model's by an amount that shrinks as ``p -> 1``; at ``p = 1`` it is exact MH.

The updates are blocked as ``mcmc``'s (a colour's variables share no factor); the state is
``(C, V)`` in the graph's order. A variable's edge ``e`` contributes
``T_e[s] = flat[off_e + stride_e s + sum_m other_stride_{e,m} x_{other_{e,m}}]`` (the
``SamplerPlan`` offsets; padding edges read zeros); the subsample is the ``|S|`` edges with
the smallest uniform keys (a rank by comparisons, no sort). Confidence-based sampling
(5.1.1.2) is not implemented.

Example:
    >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
    >>> fs = [fc.Tensor(np.log(np.array([1.0, 3.0])), {"a": fc.Bint[2]}) for _ in range(4)]
    >>> plan = SamplerPlan(FactorGraph.build(fs))
    >>> subsample_sizes(plan, 0, 0.5).tolist()
    [2]
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.graph import FactorGraph, backend_of_graph

__all__ = ["mcmcmc_rounds", "subsample_sizes"]

_BAD_FRACTION = ("subsample: the fraction of each variable's Markov-blanket factors scored "
                 "per proposal, a number in (0, 1]; got {p!r} (confidence-based sampling, "
                 "ch. 5.1.1.2, is not implemented)")


def subsample_sizes(plan, c: int, p: float) -> np.ndarray:
    """``(n_c,)`` ``|S_i| = max(1, ceil(p |F_i|))`` for colour ``c``'s variables (0 for one
    with no factors)."""
    deg = (plan.colour_edges[c] < plan.graph.num_edges).sum(1)
    return np.where(deg > 0, np.maximum(1, np.ceil(p * deg - 1e-9)), 0).astype(np.int64)


def checked_fraction(p) -> float:
    """``p`` as a float in ``(0, 1]``, else a ``ValueError``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 1.0:
        raise ValueError(_BAD_FRACTION.format(p=p))
    return float(p)


def _ix(ref, index: np.ndarray):
    # A host index array as an integer array of ref's backend (torch rejects numpy indices).
    return ops.new_array(ref, np.asarray(index, dtype=np.int64))


def _edge_values(plan, flat, xs_ext, c: int):
    # (C, n_c, deg, D): T_e[s] for colour c's edges given the others' states.
    edges = plan.colour_edges[c]
    D = plan.graph.D
    base = plan.off[edges][..., None] + plan.stride[edges][..., None] * np.arange(D)
    idx = ops.new_array(xs_ext, base)[None]
    for m in range(plan.other_var.shape[1]):
        mult = ops.new_array(xs_ext, plan.other_stride[edges, m])
        idx = idx + (xs_ext[:, _ix(xs_ext, plan.other_var[edges, m])] * mult)[..., None]
    return flat[idx]


def _selected(u, deg_real, size):
    # (C, n_c, deg) True at the `size` real edges of smallest key u: rank by comparisons.
    keys = ops.where(deg_real, u, 2.0)
    rank = ops.sum(ops.astype(keys[..., None, :] < keys[..., :, None], "real"), axis=-1)
    return rank < size[..., None]


def _update(plan, flat, xs, c, inv_t, u, p, log_q):
    graph, D = plan.graph, plan.graph.D
    vs, edges = plan.colour_vars[c], plan.colour_edges[c]
    deg = edges.shape[1]
    xs_ext = ops.cat([xs, ops.new_zeros(xs, (xs.shape[0], 1))], 1)
    vals = _edge_values(plan, flat, xs_ext, c)  # (C, n_c, deg, D)
    cur = xs[:, _ix(xs, vs)]
    states = ops.new_array(u, np.arange(D))
    if log_q is None:
        d = ops.new_array(u, np.array(graph.sizes)[vs].astype(float))
        proposal = ops.astype(u[..., deg] * d, "int")
        correction = 0.0
    else:
        g = -ops.log(-ops.log(ops.clamp(u[..., deg: deg + D], min=1e-300)))
        proposal = ops.argmax(log_q[cur] + g, axis=-1)
        correction = log_q[proposal, cur] - log_q[cur, proposal]
    at = (lambda y: ops.sum(ops.where(states == y[..., None, None], vals, 0.0), axis=-1))
    diff = at(proposal) - at(cur)  # (C, n_c, deg): each factor's log ratio
    real = edges < graph.num_edges
    size = subsample_sizes(plan, c, p)
    scale = np.where(size > 0, real.sum(1) / np.maximum(size, 1), 0.0)
    is_real = ops.new_array(u, real.astype(float)) > 0.5
    chosen = _selected(u[..., :deg], is_real, ops.new_array(u, size.astype(float)))
    pi_s = ops.sum(ops.where(chosen, diff, 0.0), axis=-1) * ops.new_array(u, scale)
    accept = ops.log(u[..., -1]) < pi_s * inv_t + correction
    return ops.where(accept, proposal, cur)


def mcmcmc_rounds(plan, flat, x0, inv_t, key, p: float, log_q=None):
    """``(R, C, V)``: the states after each of ``R = len(inv_t)`` rounds of blocked MCMCMC
    updates of ``C`` chains from ``x0`` ``(C, V)`` (the graph's order), scoring a fraction
    ``p`` of each variable's factors per proposal; ``flat`` as ``SamplerPlan.flat_table()``.

    Example:
        >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains
        >>> fs = [fc.Tensor(np.log(np.array([1.0, 3.0])), {"a": fc.Bint[2]}) for _ in range(4)]
        >>> plan = SamplerPlan(FactorGraph.build(fs))
        >>> x = run_chains(plan, np.zeros((4000, 1), np.int64), 30, "mh", rng_key=0,
        ...                subsample=1.0)
        >>> bool(abs(x[-1].mean() - 81 / 82) < 0.02)
        True
    """
    graph: FactorGraph = plan.graph
    module = backend_of_graph(graph)
    C, V = x0.shape[0], len(graph.names)
    W = max(e.shape[1] for e in plan.colour_edges) + 1 + (graph.D if log_q is not None else 1)
    splits = module.SPLITS_RNG_KEYS and key is not None
    num_rounds = inv_t.shape[0]
    keys = ops.stack(module.split_key(key, num_rounds), 0) if splits else None
    # Per colour: where each variable's new value sits among the colour's (0 elsewhere).
    position = [np.zeros(V, np.int64) for _ in plan.colour_vars]
    for pos, vs in zip(position, plan.colour_vars):
        pos[vs] = np.arange(len(vs))

    def body(xs, step):
        it, k = step
        u = module.rand((C, V, W), rng_key=k if splits else key)
        for c, vs in enumerate(plan.colour_vars):
            deg = plan.colour_edges[c].shape[1]
            uv = u[:, _ix(u, vs)]
            uc = ops.cat([uv[..., :deg + 1 + (graph.D if log_q is not None else 0)],
                          uv[..., -1:]], -1)
            new = ops.astype(_update(plan, flat, xs, c, inv_t[it], uc, p, log_q), "int")
            in_c = ops.new_array(xs, np.isin(np.arange(V), vs))
            xs = ops.where(in_c, new[:, _ix(new, position[c])], xs)
        return xs, xs

    rounds = ops.new_array(flat, np.arange(num_rounds))
    _, states = module.scan(body, ops.astype(x0, "int"), (rounds, keys if splits else rounds))
    return states
