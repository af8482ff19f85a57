"""The colour-block layout of blocked MCMC: each colour's variables stored contiguously, and
each colour's conditionals as one gather-free array expression of the current states.

The state of ``C`` chains is one integer array ``(C, V)`` with the variables in colour order
(colour 0's first, then colour 1's, ...), so a colour's new values are one slice of it. For a
variable ``i`` of colour ``c`` the log conditional is

    log p(x_i = s | x_-i) = u_i(s) + sum_{e ∋ i, arity >= 2} T_e[s, t_e] + const,

``u_i`` the sum of its unary tables (no state of another variable: one constant per run),
``T_e`` edge ``e``'s table as ``(D, K)`` (``K = D^M`` joint states of up to ``M`` other
variables, the most of any edge of the colour), ``t_e = sum_m x_{other_m} * D^(M-1-m)``
their joint state (an edge with fewer others ignores the last digits: its table repeats).
The edges are a padded neighbour table ``(n_c, deg_c)``: ``t_e`` needs only a read of the
neighbours' states (one gather of small integers per other position); ``T_e[s, t_e]`` is
a chain of ``K - 1`` ``where`` selects (no gather of table entries) when
``K <= SELECT_MAX``, else one row gather.
Padding edges have zero tables and read the state of variable 0 (their value is 0 for any
state). The tables are gathered from the factor tables once per run, outside the sweep.

Example:
    >>> f = fc.Tensor(np.log(np.array([[4.0, 1.0], [1.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
    >>> blocks = SamplerPlan(FactorGraph.build([f])).blocks
    >>> blocks.order.tolist(), blocks.starts, blocks.K
    ([0, 1], (0, 1, 2), (2, 2))
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.graph import FactorGraph

__all__ = ["ColourBlocks", "SELECT_MAX", "block_values", "block_logits"]

SELECT_MAX = 8  # K above this: one row gather beats K - 1 selects over (C, n_c, deg, D)


class ColourBlocks:
    """Host index arrays of the colour-block layout (structure only; see the module).

    Attributes:
        order: ``(V,)`` the variables in colour order; ``rank`` its inverse.
        starts: colour ``c`` holds slots ``starts[c]:starts[c + 1]`` of the state.
        nbr: per colour ``(M_c, n_c, deg_c)`` slots of each edge's other variables.
        digit: per colour the multipliers ``D^(M_c-1-m)`` of the other positions' states in
            the joint index ``t`` (``K_c = D^M_c`` joint states).
        tidx: per colour ``(n_c, deg_c, K_c, D)`` flat indices of the edge tables.
        uidx: per colour ``(n_c, U_c, D)`` flat indices of the unary tables.

    Example:
        ``a`` and ``b`` share a pairwise factor, so they take two colours; ``b`` also has a
        unary factor, ``a`` none.

        >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
        >>> u = fc.Tensor(np.zeros(2), {"b": fc.Bint[2]})
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> blocks = SamplerPlan(FactorGraph.build([f, u])).blocks
        >>> blocks.order, blocks.starts, [t.shape for t in blocks.uidx]
        (array([0, 1]), (0, 1, 2), [(1, 0, 2), (1, 1, 2)])
    """

    def __init__(self, graph: FactorGraph, colour_vars, off, stride, other_var, other_stride,
                 zero_offset: int) -> None:
        V, D = len(graph.names), graph.D
        self.order = np.concatenate(colour_vars) if colour_vars else np.zeros(0, np.int64)
        self.rank = np.empty(V, np.int64)
        self.rank[self.order] = np.arange(V)
        self.starts = tuple(int(s) for s in np.cumsum([0] + [len(v) for v in colour_vars]))
        others = (other_var < V).sum(1)  # (E + 1,) the other positions of each edge
        nbr, digit, tidx, uidx, K = [], [], [], [], []
        for vs in colour_vars:
            edges = graph.var_edges[vs]  # (n_c, max degree), padded with E
            real = edges < graph.num_edges
            multi = real & (others[edges] > 0)
            unary = real & (others[edges] == 0)
            m_edges = _packed(edges, multi, graph.num_edges)
            u_edges = _packed(edges, unary, graph.num_edges)
            M = max(int(others[m_edges].max()) if m_edges.size else 0, 1)
            nbr.append(_neighbours(m_edges, other_var, others, self.rank, V, M))
            digit.append(tuple(D ** (M - 1 - m) for m in range(M)))
            tidx.append(_edge_table_index(m_edges, off, stride, other_stride, others,
                                          zero_offset, D, M))
            is_pad = (u_edges == graph.num_edges)[..., None]
            uidx.append(np.where(is_pad, zero_offset, off[u_edges][..., None]) + np.arange(D))
            K.append(D ** M)
        self.nbr, self.digit, self.tidx, self.uidx = tuple(nbr), tuple(digit), tuple(tidx), \
            tuple(uidx)
        self.K = tuple(K)

    @property
    def num_colours(self) -> int:
        return len(self.starts) - 1


def _packed(edges, keep, pad: int) -> np.ndarray:
    """``(n, width)``: each row's kept edges first, padded with ``pad``; ``width`` the most
    kept in a row (0 when none is)."""
    width = int(keep.sum(1).max()) if keep.size else 0
    out = np.full((edges.shape[0], width), pad, np.int64)
    for r in range(edges.shape[0]):
        kept = edges[r][keep[r]]
        out[r, : kept.size] = kept
    return out


def _neighbours(m_edges, other_var, others, rank, V, M) -> np.ndarray:
    """``(M, n_c, deg_c)``: the slots of each edge's other variables; positions past an
    edge's own others (and padding edges) read slot 0, which its table ignores."""
    ov = other_var[m_edges][..., :M]  # (n_c, deg, M)
    pos = np.arange(M)
    slots = np.where(pos < others[m_edges][..., None], rank[np.minimum(ov, V - 1)], 0)
    return np.moveaxis(slots, -1, 0)


def _edge_table_index(m_edges, off, stride, other_stride, others, zero_offset, D, M):
    """``(n_c, deg_c, D^M, D)`` flat indices of ``T_e[s, t]``: ``t``'s digit ``m`` (of
    ``D^(M-1-m)``) is the state of the edge's ``m``-th other variable; digits past its own
    others are ignored (the table repeats); padding edges read zeros."""
    K = D ** M
    t, s = np.arange(K), np.arange(D)
    idx = off[m_edges][..., None, None] + stride[m_edges][..., None, None] * s  # (n, deg, 1, D)
    idx = np.broadcast_to(idx, m_edges.shape + (K, D)).copy()
    own = others[m_edges]
    for m in range(M):
        digit = (t // D ** (M - 1 - m)) % D  # (K,)
        used = (m < own)[..., None] * digit  # (n, deg, K)
        idx += (used * other_stride[m_edges][..., m][..., None])[..., None]
    pad = m_edges == len(off) - 1
    return np.where(pad[..., None, None], zero_offset + s, idx)


def block_values(blocks: ColourBlocks, flat) -> tuple:
    """Per colour ``(tables (n_c, deg_c, K_c, D), unary (n_c, D), neighbour slots)``, the
    tables gathered from ``flat`` (the concatenated flat factor tables, ``D`` zeros last) and
    the slots as arrays of its backend: once per run, outside the sweep.

    Example:
        >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
        >>> f = fc.Tensor(np.arange(4.0).reshape(2, 2), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f]))
        >>> tables, unary, nbrs = block_values(plan.blocks, plan.flat_table())[0]
        >>> tables[0, 0].tolist()  # T[t, s]: rows t = b's state, columns s = a's
        [[0.0, 2.0], [1.0, 3.0]]
    """
    out = []
    for tidx, uidx, nbr in zip(blocks.tidx, blocks.uidx, blocks.nbr):
        tables = flat[ops.new_array(flat, tidx)] if tidx.size else None
        unary = (ops.sum(flat[ops.new_array(flat, uidx)], axis=1) if uidx.shape[1]
                 else ops.new_zeros(flat, (uidx.shape[0], uidx.shape[2])))
        out.append((tables, unary, tuple(ops.new_array(flat, n) for n in nbr)))
    return tuple(out)


def block_logits(blocks: ColourBlocks, values: tuple, xs, c: int):
    """``(C, n_c, *rest)``: colour ``c``'s log conditionals given the states ``xs`` ``(C, V)``
    in colour order; ``values[c]`` as ``block_values`` gives them (``rest = (D,)``), or any
    per-state function of them of the same leading shape (``rest = ()``: e.g. the log odds
    ``T[..., 1] - T[..., 0]`` of binary variables).

    Example:
        >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
        >>> f = fc.Tensor(np.arange(4.0).reshape(2, 2), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f]))
        >>> values = block_values(plan.blocks, plan.flat_table())
        >>> block_logits(plan.blocks, values, np.array([[0, 1]]), 0).tolist()  # psi(., b=1)
        [[[1.0, 3.0]]]
    """
    tables, unary, nbrs = values[c]
    if tables is None:
        return ops.expand(unary, (xs.shape[0],) + tuple(unary.shape))
    joint = None
    for nbr, mult in zip(nbrs, blocks.digit[c]):
        x_m = xs[:, nbr]  # (C, n_c, deg_c): the neighbours' states
        if mult != 1:
            x_m = x_m * mult
        joint = x_m if joint is None else joint + x_m
    K = blocks.K[c]
    if K <= SELECT_MAX:
        rest = (None,) * (len(tables.shape) - 3)
        picked = tables[:, :, 0]
        for t in range(1, K):  # T_e[., t_e] by selects: no gather of table entries
            picked = ops.where((joint == t)[(...,) + rest], tables[:, :, t], picked)
    else:
        n_c, deg = tables.shape[0], tables.shape[1]
        rows = ops.reshape(tables, (n_c * deg * K,) + tuple(tables.shape[3:]))
        base = ops.new_array(xs, (np.arange(n_c * deg) * K).reshape(n_c, deg))
        picked = rows[base + joint]
    return unary + ops.sum(picked, axis=2)
