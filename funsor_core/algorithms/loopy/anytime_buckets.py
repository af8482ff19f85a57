"""Compact tables in buckets: each factor's table sized by its own variables' sparse domains.

One compact capacity for all variables (``anytime_compact``) pads every factor to the largest
sparse domain: when one variable holds 78 states and the others 5, every pairwise table is
``78 x 78``. Here factors are grouped, largest tables first, so that a group padded to the
largest sparse domain of each of its positions (``c_j >= |S_j|``) holds at most ``waste``
(2) times the entries of its factors' true tables: a bucket is one dense block
``(F_b, c_0, .., c_{k-1})`` gathered from the full tables, and a step costs ``O(#buckets)``
array calls (few: a new bucket opens only where the table sizes jump). The messages stay one
``(E, C)`` array (cheap: ``C`` per edge); a bucket reads the first ``c_j`` positions of its
incoming messages and pads its outgoing ones to ``C`` with ``NEG``.

``bucket_bp`` runs flooding BP on the buckets (the schedule whose sweep is a function of all
messages at once); ``bucket_priorities`` computes eqs. 7.3-7.4 (every full state of the
receiving variable, the others on their sparse domains) from the same buckets.

Example:
    >>> f = fc.Tensor(np.zeros((3, 3)), {"a": fc.Bint[3], "b": fc.Bint[3]})
    >>> g = FactorGraph.build([f, fc.Tensor(np.zeros(3), {"a": fc.Bint[3]})])
    >>> lay = CompactLayout.build(g, np.array([[1, 1, 1], [0, 1, 0]], bool))
    >>> [b.caps for b in make_buckets(g, lay)]  # unary (a), pairwise (a, b)
    [(3,), (3, 1)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.anytime_compact import CompactLayout, gather_table
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph
from funsor_core.algorithms.loopy.messages import (
    Semiring,
    normalize,
    var_to_factor,
    variable_sums,
)

__all__ = ["Bucket", "make_buckets", "bucket_bp", "bucket_priorities"]


@dataclass(frozen=True)
class Bucket:
    """Factors of one arity whose variables have capacities ``caps``: their variables
    ``var_index`` ``(F_b, k)``, edges ``edges`` ``(F_b, k)``, full ``source`` group table
    and ``rows`` in it, and the compact ``table`` ``(F_b, *caps, *B)`` (NEG off the domains).

    Example:
        ``b`` (3 states) keeps only state 1: the bucket's table is column ``b = 1`` of ``p``.

        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> (bucket,) = make_buckets(g, lay)
        >>> bucket.caps, bucket.edges.tolist(), np.exp(bucket.table).tolist()
        ((2, 1), [[0, 1]], [[[2.0], [4.0]]])
    """

    caps: tuple
    var_index: np.ndarray
    edges: np.ndarray
    source: object
    rows: np.ndarray
    index: tuple  # per position (F_b, caps[p]): the full states at the compact positions
    table: object


def _partition(sizes: np.ndarray, waste: float) -> list:
    """Factors (rows of ``sizes`` ``(F, k)``, their variables' sparse domain sizes) in
    groups, largest tables first: a factor joins the open group while the group's padded
    volume ``n * prod(max sizes)`` stays within ``waste`` times its true volume."""
    rows = sizes.tolist()  # host ints: a Python loop over F factors, no array call per factor
    volume = [math.prod(r) for r in rows]
    groups, members, caps, true = [], [], None, 0
    for f in sorted(range(len(rows)), key=lambda f: -volume[f]):
        new_caps = rows[f] if caps is None else [max(a, b) for a, b in zip(caps, rows[f])]
        if members and (len(members) + 1) * math.prod(new_caps) > waste * (true + volume[f]):
            groups.append((np.array(members), caps))
            members, new_caps, true = [], rows[f], 0
        members.append(f)
        caps, true = new_caps, true + volume[f]
    if members:
        groups.append((np.array(members), caps))
    return groups


def make_buckets(graph: FactorGraph, layout: CompactLayout, waste: float = 2.0) -> list:
    """The factors of ``graph`` (arity >= 1) in buckets, each padded to at most ``waste``
    times the entries its factors' sparse domains hold (``_partition``).

    Example:
        One 3 x 3 factor on full domains (9 entries), two on domains of one state each (1
        entry): the second joins the first's bucket (padded 2 * 9 <= 2 * (9 + 1)), the third
        opens a new one (3 * 9 > 2 * (9 + 1 + 1)).

        >>> z, B = np.zeros((3, 3)), fc.Bint[3]
        >>> g = FactorGraph.build([fc.Tensor(z, {"a": B, "b": B}), fc.Tensor(z, {"c": B, "d": B}),
        ...                        fc.Tensor(z, {"e": B, "f": B})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 1]] * 2 + [[1, 0, 0]] * 4, bool))
        >>> [(b.caps, b.rows.tolist()) for b in make_buckets(g, lay)]
        [((3, 3), [0, 1]), ((1, 1), [2])]
    """
    counts = np.maximum(layout.valid.sum(1), 1)
    out = []
    for g in graph.groups:
        k, vi = g.arity, g.var_index
        if k == 0:
            continue
        for rows, key in _partition(counts[vi], waste):
            rows = np.sort(rows)
            sub = vi[rows]
            caps = tuple(int(c) for c in key)
            index = [layout.idx[sub[:, p], : caps[p]] for p in range(k)]
            ok = np.ones((len(rows),) + caps, dtype=bool)
            for p in range(k):
                shape = (len(rows),) + tuple(caps[p] if q == p else 1 for q in range(k))
                ok = ok & layout.valid[sub[:, p], : caps[p]].reshape(shape)
            t = gather_table(g.table, graph.D, index, rows)
            ok = ops.new_array(t, ok.reshape(ok.shape + (1,) * len(graph.bshape)))
            edges = g.edge_start + rows[:, None] * k + np.arange(k)[None, :]
            out.append(Bucket(caps, sub, edges, g.table, rows, tuple(index),
                              ops.where(ok, t, NEG)))
    return out


def _expand(m, pos: int, k: int, nb: int):
    index = ((slice(None),) + tuple(slice(None) if p == pos else None for p in range(k))
             + (slice(None),) * nb)
    return m[index]


def _messages(semiring, graph, buckets, v2f, width: int, full_receiver: bool):
    # Every bucket's messages to each position j, padded to ``width``, in edge order.
    nb, parts, order = len(graph.bshape), [], []
    for b in buckets:
        k = len(b.caps)
        incoming = [v2f[b.edges[:, p]][:, : b.caps[p]] for p in range(k)]
        for j in range(k):
            if full_receiver:  # the receiver's every state, the others at their sparse states
                index = [np.broadcast_to(np.arange(graph.D), (len(b.rows), graph.D)) if p == j
                         else b.index[p] for p in range(k)]
                t = gather_table(b.source, graph.D, index, b.rows)
            else:
                t = b.table
            for p in range(k):
                if p != j:
                    t = t + _expand(incoming[p], p, k, nb)
            axes = tuple(1 + p for p in range(k) if p != j)
            m = semiring.reduce(t, axes) if axes else t
            if m.shape[1] < width:
                pad = ops.new_zeros(m, (m.shape[0], width - m.shape[1]) + tuple(m.shape[2:]))
                m = ops.cat([m, pad + NEG], 1)
            parts.append(m)
            order.append(b.edges[:, j])
    out = parts[0] if len(parts) == 1 else ops.cat(parts, 0)
    return out[np.argsort(np.concatenate(order), kind="stable")]


def bucket_bp(graph: FactorGraph, layout: CompactLayout, semiring: Semiring, f2v, *,
              damping: float, tol: float, max_iters: int, buckets=None) -> tuple:
    """Flooding BP on the buckets from compact messages ``f2v`` ``(E, C, *B)``: returns
    ``(f2v, residuals)``, each iteration as ``run_bp``'s flooding sweep.

    Example:
        With ``b`` held at state 1, ``a``'s message is column ``b = 1`` of ``p``, normalized.

        >>> from funsor_core.algorithms.loopy.anytime_compact import initial_messages
        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> f2v, residuals = bucket_bp(g, lay, Semiring(), initial_messages(g, lay),
        ...                            damping=0.0, tol=1e-10, max_iters=10)
        >>> np.allclose(np.exp(f2v[0]), p[:, 1] / p[:, 1].sum()), len(residuals)
        (True, 2)
    """
    buckets = make_buckets(graph, layout) if buckets is None else buckets
    residuals = []
    for _ in range(max_iters):
        bsum = variable_sums(graph, f2v, graph.var_edges)
        v2f = var_to_factor(semiring, bsum, f2v, graph.edge_var)
        new = normalize(semiring, _messages(semiring, graph, buckets, v2f, layout.capacity,
                                            False))
        if damping:
            new = f2v * damping + new * (1.0 - damping)
        residuals.append(float(ops.detach(ops.amax(ops.abs(new - f2v)))))
        f2v = new
        if residuals[-1] < tol:
            break
    return f2v, residuals


def bucket_priorities(graph: FactorGraph, layout: CompactLayout, semiring: Semiring,
                      f2v, buckets=None) -> np.ndarray:
    """``(V, D)`` eqs. 7.3-7.4 from compact messages (``O(D prod_{j != i} c_j)`` entries a
    message, the thesis's cost up to the buckets' padding).

    Example:
        The same numbers as ``compact_dynamic_priorities``, from the buckets:

        >>> from funsor_core.algorithms.loopy.anytime_compact import (
        ...     compact_dynamic_priorities, initial_messages)
        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> m = initial_messages(g, lay)
        >>> pri = bucket_priorities(g, lay, Semiring(), m)
        >>> np.allclose(pri, compact_dynamic_priorities(g, lay, Semiring(), m))
        True
        >>> np.allclose(pri[1], np.log(p.sum(0) / p.sum()) + 1)  # b: message + degree
        True
    """
    buckets = make_buckets(graph, layout) if buckets is None else buckets
    bsum = variable_sums(graph, f2v, graph.var_edges)
    v2f = var_to_factor(semiring, bsum, f2v, graph.edge_var)
    ok = layout.valid[graph.edge_var]
    ok = ops.new_array(v2f, ok.reshape(ok.shape + (1,) * len(graph.bshape)))
    v2f = ops.where(ok, v2f, NEG)  # the other variables range over their sparse domains
    msgs = normalize(semiring, _messages(semiring, graph, buckets, v2f, graph.D, True))
    pri = np.asarray(ops.to_numpy(variable_sums(graph, msgs, graph.var_edges)), float)
    return pri + graph.degree[:, None]
