"""Blocked Gibbs sampling and Metropolis-Hastings on a ``FactorGraph`` (Singh 2014, ch. 3).

A round updates the colours of the graph's colouring one after the other; the variables of a
colour share no factor, so given the rest they are independent and are updated together, as
one array program. A variable's conditional reads only its Markov blanket: the log tables of
its own factors, indexed at the current values of their other variables,

    log p(x_i = s | x_-i) = sum_{a ∋ i} log psi_a(x_a[i := s]) + const,

one gather from the concatenated flattened tables for every edge of the colour and state
``s``, then a sum over each variable's (padded) edge list. Gibbs draws from it by Gumbel-max;
MH proposes a uniform state and accepts with ``min(1, p(s') / p(s))`` (both at temperature
``T``: ``1 / T`` scales the log densities, annealing toward a MAP as ``T -> 0``).

Example:
    >>> f = fc.Tensor(np.log(np.array([[4.0, 1.0], [1.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> plan = SamplerPlan(FactorGraph.build([f]))
    >>> plan.colour_vars
    (array([0]), array([1]))
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.graph import FactorGraph, backend_of_graph
from funsor_core.sampling.keys import KeyStream

__all__ = ["SamplerPlan", "run_chains", "conditional_logits", "KERNELS"]

KERNELS = ("gibbs", "mh")


class SamplerPlan:
    """Host index arrays of the blocked updates of one graph (structure only).

    For every edge ``e = (a, i at position j)``: the flat offset of ``a``'s table, the stride
    of position ``j``, and the (variable, stride) pairs of the other positions; per colour,
    its variables and their padded edge lists (the padding edge reads a row of zeros)."""

    def __init__(self, graph: FactorGraph) -> None:
        if graph.bshape:
            raise NotImplementedError("MCMC over batch inputs: run one sampler per batch "
                                      "element, or use chains (num_chains) for independent runs")
        V, D, E = len(graph.names), graph.D, graph.num_edges
        self.graph = graph
        offsets, size = np.zeros(graph.num_factors, np.int64), 0
        for g in graph.groups:
            width = D ** g.arity
            offsets[g.factor_ids] = size + width * np.arange(len(g.factor_ids))
            size += width * len(g.factor_ids)
        self.zero_offset = size  # D zeros appended after all tables
        rmax = max([g.arity for g in graph.groups] + [1])
        off = np.full(E + 1, size, np.int64)
        stride = np.ones(E + 1, np.int64)
        other_var = np.full((E + 1, max(rmax - 1, 1)), V, np.int64)
        other_stride = np.zeros((E + 1, max(rmax - 1, 1)), np.int64)
        for g in graph.groups:
            k = g.arity
            for row, a in enumerate(g.factor_ids):
                for j in range(k):
                    e = g.edge_start + row * k + j
                    off[e], stride[e] = offsets[a], D ** (k - 1 - j)
                    others = [p for p in range(k) if p != j]
                    other_var[e, : len(others)] = g.var_index[row, others]
                    other_stride[e, : len(others)] = [D ** (k - 1 - p) for p in others]
        self.off, self.stride = off, stride
        self.other_var, self.other_stride = other_var, other_stride
        colors = graph.colors
        self.colour_vars = tuple(np.flatnonzero(colors == c) for c in range(int(colors.max()) + 1))
        self.colour_edges = tuple(graph.var_edges[vs] for vs in self.colour_vars)  # E = pad
        # pos[c][v]: v's slot among colour c's variables (any valid slot for the others).
        self.pos = []
        for vs in self.colour_vars:
            pos = np.zeros(V, np.int64)
            pos[vs] = np.arange(len(vs))
            self.pos.append(pos)

    def flat_table(self):
        """All tables flattened and concatenated, then ``D`` zeros (the padding edge's row)."""
        g = self.graph
        parts = [ops.reshape(t.table, (-1,)) for t in g.groups]
        parts.append(ops.new_zeros(g.prototype(), (g.D,)))
        return ops.cat(parts, 0)


def conditional_logits(plan: SamplerPlan, flat, x, c: int):
    """``(C, n_c, D)``: the unnormalized log conditionals of colour ``c``'s variables given
    states ``x`` ``(C, V)`` (integers), from their Markov blankets only."""
    D = plan.graph.D
    x_ext = ops.cat([x, ops.new_zeros(x, (x.shape[0], 1))], 1)  # index V reads state 0
    edges = plan.colour_edges[c].reshape(-1)  # (n_c * deg,)
    base = ops.new_array(x, plan.off[edges])
    for m in range(plan.other_var.shape[1]):
        base = base + x_ext[:, plan.other_var[edges, m]] * ops.new_array(
            x, plan.other_stride[edges, m])
    index = base[:, :, None] + ops.new_array(x, plan.stride[edges][:, None] * np.arange(D))
    values = flat[index]  # (C, n_c * deg, D)
    n_c, deg = plan.colour_edges[c].shape
    return ops.sum(ops.reshape(values, (x.shape[0], n_c, deg, D)), axis=2)


def _gumbel(module, shape, key):
    u = module.rand(shape, rng_key=key)
    return -ops.log(-ops.log(ops.clamp(u, min=1e-300)))


def _update(plan, flat, x, c, kernel, key, inv_t, module, sizes):
    logits = conditional_logits(plan, flat, x, c) * inv_t
    C, n_c, D = logits.shape
    if kernel == "gibbs" and D == 2:  # one uniform per variable: u < p(1) = sigmoid(l1 - l0)
        up = module.rand((C, n_c), rng_key=key) < ops.sigmoid(logits[..., 1] - logits[..., 0])
        new = ops.where(up, ops.new_full(x, (), 1), ops.new_zeros(x, ()))
    elif kernel == "gibbs":  # Gumbel-max
        new = ops.argmax(logits + _gumbel(module, (C, n_c, D), key), axis=-1)
    else:
        u = module.rand((C, n_c, 2), rng_key=key)
        d = ops.new_array(u, sizes[plan.colour_vars[c]].astype(float))
        proposal = ops.astype(u[..., 0] * d, "int")  # floor: uniform on the d_i states
        states = ops.new_array(x, np.arange(D))
        cur = x[:, plan.colour_vars[c]]
        gain = (ops.sum(ops.where(states == proposal[..., None], logits, 0.0), axis=-1)
                - ops.sum(ops.where(states == cur[..., None], logits, 0.0), axis=-1))
        new = ops.where(ops.log(u[..., 1]) < gain, proposal, cur)
    in_colour = ops.new_array(x, plan.graph.colors == c)
    return ops.where(in_colour[None, :], new[:, plan.pos[c]], x)


def run_chains(plan: SamplerPlan, init, num_rounds: int, kernel: str = "gibbs",
               temperatures=None, rng_key=None, keep_all: bool = True):
    """``(num_rounds, C, V)``: the states after each round of blocked updates of ``C`` chains
    started at ``init`` ``(C, V)``; ``temperatures`` one per round (None: all 1);
    ``keep_all=False``: only the last states ``(C, V)``.

    Example:
        >>> f = fc.Tensor(np.log(np.eye(2) + 1e-300), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f]))
        >>> xs = run_chains(plan, np.zeros((3, 2), np.int64), 5, rng_key=0)
        >>> bool((xs[..., 0] == xs[..., 1]).all())
        True
    """
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
    graph = plan.graph
    module = backend_of_graph(graph)
    flat = plan.flat_table()
    sizes = np.array(graph.sizes)
    ncol = len(plan.colour_vars)
    temps = np.ones(num_rounds) if temperatures is None else np.asarray(temperatures, float)
    if temps.shape != (num_rounds,):
        raise ValueError(f"temperatures: one per round ({num_rounds}), got shape {temps.shape}")
    inv_t = ops.new_array(flat, 1.0 / temps)
    key = KeyStream(rng_key).next(flat)
    splits = module.SPLITS_RNG_KEYS and key is not None
    keys = ops.stack(module.split_key(key, num_rounds), 0) if splits else None

    def body(x, xs):
        it, k = xs
        subkeys = module.split_key(k, ncol) if splits else [key] * ncol
        for c in range(ncol):
            x = _update(plan, flat, x, c, kernel, subkeys[c], inv_t[it], module, sizes)
        return x, (x if keep_all else None)

    rounds = ops.new_array(flat, np.arange(num_rounds))
    x0 = ops.new_array(flat, np.asarray(init, dtype=np.int64)) if not _is_backend_int(
        init, flat) else init
    last, states = module.scan(body, x0, (rounds, keys if splits else rounds))
    return states if keep_all else last


def _is_backend_int(x, proto) -> bool:
    return type(x) is type(proto) and not ops.is_floating(x)
