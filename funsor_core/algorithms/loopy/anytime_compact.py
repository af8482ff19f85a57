"""Sparse domains as compact tables: BP on ``prod_j |S_j|`` entries per factor, not ``D^k``.

The truncated model of sparse domains ``S`` (Singh 2014 ch. 7.2.2) is the model substituted at
index Tensors: with ``idx_x`` a Tensor over a new compact input ``x'`` of domain
``Bint[|S_x|]`` holding ``S_x``'s states in order, the factor ``f(x=idx_x, y=idx_y)`` is
``f`` restricted to ``S_x x S_y``. ``compact_graph`` does that substitution for all factors of
an arity at once, as one gather of the stacked tables (``CompactLayout.idx`` are the index
Tensors' data, padded to a common ``capacity``: padded positions hold ``NEG``, a finite
``log 0``, like the padded states of any ragged factor graph). The dense BP kernels then run
on the compact graph unchanged, and the beliefs are gathered back to the full domains
(``NEG`` outside ``S``).

Messages carried across a growth step keep their entries at the old states; a new state
starts from the neutral message (``log 1 = 0``), a padded position from ``NEG``
(``remap_messages``). Everything is a gather with host (numpy) indices, the same program on
every backend; the shapes change when the capacity grows, so on a backend that compiles
(jax) the capacity is rounded up to a power of two: at most ``log2 D + 1`` compiled sweeps.

Example:
    >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> g = FactorGraph.build([f])
    >>> layout = CompactLayout.build(g, np.array([[True, True, False], [False, True, True]]))
    >>> compact_graph(g, layout).groups[0].table.tolist()  # f(b=[1, 2]): a x b' = 2 x 2
    [[[1.0, 2.0], [4.0, 5.0]]]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.bp import BPResult
from funsor_core.algorithms.loopy.graph import NEG, Beliefs, FactorGraph, FactorGroup
from funsor_core.algorithms.loopy.messages import (
    Semiring,
    normalize,
    var_to_factor,
    variable_sums,
)
from funsor_core.algorithms.loopy.runners import uses_compiled
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint

__all__ = ["CompactLayout", "compact_graph", "gather_table", "remap_messages", "initial_messages",
           "CompactResult", "compact_dynamic_priorities"]


@dataclass(frozen=True)
class CompactLayout:
    """Where each variable's sparse states sit in its compact domain: ``idx`` ``(V, C)`` the
    full state at each compact position (padding: 0), ``valid`` ``(V, C)`` which positions
    are states, ``pos`` ``(V, D)`` each full state's compact position (``C`` if outside), and
    ``mask`` ``(V, D)`` the sparse domains.

    Example:
        ``a`` keeps both its states, ``b`` (3 states) only state 1: capacity 2.

        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> lay.idx.tolist(), lay.valid.tolist(), lay.pos.tolist()
        ([[0, 1], [1, 0]], [[True, True], [True, False]], [[0, 1, 2], [2, 0, 2]])
    """

    mask: np.ndarray
    idx: np.ndarray
    valid: np.ndarray
    pos: np.ndarray

    @classmethod
    def build(cls, graph: FactorGraph, mask: np.ndarray, round_up: bool = False):
        """The layout of ``mask``; ``round_up``: capacity a power of two (fewer shapes).

        Example:
            >>> g = FactorGraph.build([fc.Tensor(np.zeros(5), {"a": fc.Bint[5]})])
            >>> CompactLayout.build(g, np.array([[0, 1, 0, 1, 1]], bool), True).idx.tolist()
            [[1, 3, 4, 0]]
        """
        counts = mask.sum(1)
        capacity = max(int(counts.max()), 1) if counts.size else 1
        if round_up:
            capacity = min(1 << (capacity - 1).bit_length(), graph.D)
        order = np.argsort(~mask, axis=1, kind="stable")[:, :capacity]  # states first, sorted
        valid = np.arange(capacity)[None, :] < counts[:, None]
        idx = np.where(valid, order, 0)
        pos = np.full(mask.shape, capacity, dtype=np.int64)
        rows, cols = np.nonzero(valid)
        pos[rows, idx[rows, cols]] = cols
        return cls(mask.copy(), idx, valid, pos)

    @property
    def capacity(self) -> int:
        return int(self.idx.shape[1])

    def is_identity(self, graph: FactorGraph) -> bool:
        """Whether the compact graph is ``graph`` itself (full domains, same padding)."""
        full = np.arange(graph.D)[None, :] < np.array(graph.sizes)[:, None]
        return self.capacity == graph.D and bool((self.mask == full).all())


def _flat_gather(x, lead: int, index: np.ndarray):
    # x[(i_0, .., i_{lead-1}), ...] with ``index`` flat positions into x's first ``lead`` axes.
    rest = tuple(x.shape[lead:])
    flat = ops.reshape(x, (int(np.prod(x.shape[:lead], dtype=np.int64)),) + rest)
    out = flat[index.reshape(-1)]
    return ops.reshape(out, tuple(index.shape) + rest)


def gather_table(table, D: int, axes_index: list, rows=None):
    """``table[rows]`` ``(F, D, .., D, *B)`` at per-factor states: axis ``p`` indexed by
    ``axes_index[p]`` ``(F, n_p)``; returns ``(F, n_0, .., n_{k-1}, *B)``: the substitution
    ``f(x_0=idx_0, .., x_{k-1}=idx_{k-1})`` of every factor at once, as one gather.

    Example:
        >>> t = np.arange(8.0).reshape(2, 2, 2)  # two factors over 2 x 2 states
        >>> gather_table(t, 2, [np.array([[1], [0]]), np.array([[0, 1], [1, 1]])]).tolist()
        [[[2.0, 3.0]], [[5.0, 5.0]]]
    """
    k = len(axes_index)
    rows = np.arange(table.shape[0]) if rows is None else np.asarray(rows)
    F = len(rows)
    flat = rows.reshape((F,) + (1,) * k) * D ** k
    for p, a in enumerate(axes_index):
        shape = (F,) + tuple(a.shape[1] if q == p else 1 for q in range(k))
        flat = flat + a.reshape(shape) * D ** (k - 1 - p)
    return _flat_gather(table, 1 + k, flat)


def _compact_group(graph: FactorGraph, group: FactorGroup, layout: CompactLayout):
    k = group.arity
    if k == 0:
        return group.table
    vi = group.var_index
    t = gather_table(group.table, graph.D, [layout.idx[vi[:, p]] for p in range(k)])
    ok = np.ones((len(vi),) + (layout.capacity,) * k, dtype=bool)
    for p in range(k):
        shape = (len(vi),) + tuple(layout.capacity if q == p else 1 for q in range(k))
        ok = ok & layout.valid[vi[:, p]].reshape(shape)
    ok = ok.reshape(ok.shape + (1,) * len(graph.bshape))
    return ops.where(ops.new_array(t, ok), t, NEG)


def compact_graph(graph: FactorGraph, layout: CompactLayout) -> FactorGraph:
    """The truncated model on compact domains (see the module docstring): every variable
    has ``layout.capacity`` states, its padded positions at ``NEG``.

    Example:
        The table keeps column ``b = 1`` of ``p``; ``b``'s second compact position is padding.

        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> small = compact_graph(g, lay)
        >>> small.sizes, np.exp(small.groups[0].table[0]).tolist()
        ((2, 2), [[2.0, 0.0], [4.0, 0.0]])
    """
    if layout.is_identity(graph):
        return graph
    groups = tuple(dataclasses.replace(g, table=_compact_group(graph, g, layout))
                   for g in graph.groups)
    return dataclasses.replace(graph, sizes=(layout.capacity,) * len(graph.names),
                               D=layout.capacity, groups=groups)


def initial_messages(graph: FactorGraph, layout: CompactLayout):
    """Uniform messages ``(E, C, *B)`` on the states, ``NEG`` at padded positions (a log 0
    that stays put, so padded positions never count as residuals).

    Example:
        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> initial_messages(g, lay).tolist()  # edges (f, a) and (f, b)
        [[0.0, 0.0], [0.0, -1e+30]]
    """
    proto = graph.prototype()
    ok = layout.valid[graph.edge_var].reshape((graph.num_edges, layout.capacity)
                                              + (1,) * len(graph.bshape))
    zeros = ops.new_zeros(proto, (graph.num_edges, layout.capacity) + graph.bshape)
    return ops.where(ops.new_array(proto, ok), zeros, NEG)


def remap_messages(graph: FactorGraph, f2v, old: CompactLayout, new: CompactLayout):
    """Messages ``(E, C_old, *B)`` in ``new``'s layout: an old state keeps its entry, a new
    state gets ``0`` (the neutral message), a padded position ``NEG``.

    Example:
        ``b``'s domain grows from ``{1}`` to ``{0, 1}``: its old entry moves to position 1.

        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))  # b in {1}
        >>> grown = CompactLayout.build(g, np.array([[1, 1, 0], [1, 1, 0]], bool))
        >>> f2v = np.array([[-1.0, -0.5], [-0.25, NEG]])
        >>> remap_messages(g, f2v, lay, grown).tolist()
        [[-1.0, -0.5], [0.0, -0.25]]
    """
    c_old = old.capacity
    where = old.pos[np.arange(len(old.pos))[:, None], new.idx]  # (V, C_new) old positions
    src = np.where(new.valid, np.where(where < c_old, where, c_old), c_old + 1)
    fill = ops.new_zeros(f2v, (graph.num_edges, 2) + tuple(f2v.shape[2:]))
    fill = ops.cat([fill[:, :1], fill[:, 1:] + NEG], 1)
    ext = ops.cat([f2v, fill], 1)  # (E, C_old + 2, *B): ..., 0, NEG
    flat = np.arange(graph.num_edges)[:, None] * (c_old + 2) + src[graph.edge_var]
    return _flat_gather(ext, 2, flat)


def _to_full(x, pos_rows: np.ndarray, capacity: int):
    # (R, C, *B) compact rows -> (R, D, *B): each full state's compact entry, NEG outside.
    pad = ops.new_zeros(x, (x.shape[0], 1) + tuple(x.shape[2:])) + NEG
    ext = ops.cat([x, pad], 1)
    flat = np.arange(x.shape[0])[:, None] * (capacity + 1) + pos_rows
    return _flat_gather(ext, 2, flat)


class CompactResult(BPResult):
    """A ``BPResult`` of BP on compact tables, read on the full domains: ``beliefs``, ``f2v``
    and ``factor_beliefs`` gathered back (``NEG`` outside the sparse domains); ``log_z``,
    residuals and counts are the compact run's (the truncated model's). ``inner``: the
    ``BPResult`` on ``compact_graph`` when the run had one (else it is built when ``log_z``
    or ``factor_beliefs`` is asked).

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> from funsor_core.algorithms.loopy.anytime import sparse_bp
        >>> r = sparse_bp(FactorGraph.build([f]), {"b": [1]}, layout="compact")
        >>> np.exp(r.beliefs["b"].data).tolist(), round(float(np.exp(r.log_z.data)), 6)
        ([0.0, 1.0], 6.0)
    """

    def __init__(self, graph: FactorGraph, layout: CompactLayout, semiring: Semiring,
                 compact_f2v, residuals, num_iters, num_messages, tol, inner=None,
                 buckets=None):
        # Not BPResult.__init__: ``f2v`` is gathered back only when asked. ``buckets``: the
        # run's factor buckets (anytime_buckets), reused by the step's dynamic priorities.
        self.graph, self.semiring, self.tol = graph, semiring, tol
        self.residuals, self.num_iters, self.num_messages = residuals, num_iters, num_messages
        self.layout, self.compact_f2v, self._inner = layout, compact_f2v, inner
        self.buckets = buckets

    @classmethod
    def of(cls, graph: FactorGraph, layout: CompactLayout, inner: BPResult) -> CompactResult:
        """``inner`` (a ``BPResult`` on ``compact_graph(graph, layout)``) on full domains."""
        out = cls(graph, layout, inner.semiring, inner.f2v, inner.residuals, inner.num_iters,
                  inner.num_messages, inner.tol, inner)
        # the residual schedule's own counts
        out._factor_updates, out._computed = inner._factor_updates, inner._computed
        return out

    @cached_property
    def tabled(self) -> BPResult:
        if self._inner is None:
            self._inner = BPResult(compact_graph(self.graph, self.layout), self.semiring,
                                   self.compact_f2v, self.residuals, self.num_iters,
                                   self.num_messages, self.tol)
        return self._inner

    @cached_property
    def f2v(self):
        return _to_full(self.compact_f2v, self.layout.pos[self.graph.edge_var],
                        self.layout.capacity)

    @cached_property
    def beliefs(self) -> dict:
        g, inner = self.graph, self._inner
        if inner is not None and inner._compiled is not None:  # one compiled summary (jax)
            b = inner._compiled[1]
        else:  # the edges are the full graph's: no compact tables needed
            b = normalize(self.semiring, variable_sums(g, self.compact_f2v, g.var_edges))
        full = _to_full(b, self.layout.pos, self.layout.capacity)
        return Beliefs((k, g.variable_tensor(i, full[i])) for i, k in enumerate(g.names))

    @cached_property
    def log_z(self):
        return self.tabled.log_z

    @cached_property
    def factor_beliefs(self) -> list:
        return _scattered_factor_beliefs(self.graph, self.layout, self.tabled)


def _scattered_factor_beliefs(graph, layout, compact) -> list:
    # Each compact factor belief read back axis by axis (a compact axis -> the full states).
    out = []
    for a, fb in enumerate(compact.factor_beliefs):
        vs, data = graph.factor_vars[a], fb.data
        for p, v in enumerate(vs):
            i = graph.names.index(v)
            data = _axis_to_full(data, p, layout.pos[i][: graph.sizes[i]])
        inputs = {v: Bint[graph.sizes[graph.names.index(v)]] for v in vs}
        out.append(Tensor(data, {**inputs, **graph.batch}))
    return out


def _axis_to_full(x, axis: int, pos: np.ndarray):
    # x's compact axis ``axis`` at the compact positions ``pos`` (one past the end: NEG).
    pad_shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis + 1:])
    ext = ops.cat([x, ops.new_zeros(x, pad_shape) + NEG], axis)
    return ext[(slice(None),) * axis + (pos,)]


def compact_dynamic_priorities(graph: FactorGraph, layout: CompactLayout, semiring: Semiring,
                               f2v) -> np.ndarray:
    """``(V, D)`` eqs. 7.3-7.4 from compact messages: the messages of one update to every
    full state of the receiving variable, its factor's other variables on their sparse
    domains (``O(D prod_{j != i} |S_j|)`` entries per message, the thesis's cost).

    Example:
        With neutral messages, ``b``'s priorities are its normalized message from ``f`` with
        ``a`` on its sparse domain (all of it), plus ``b``'s degree (1):

        >>> p = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> lay = CompactLayout.build(g, np.array([[1, 1, 0], [0, 1, 0]], bool))
        >>> pri = compact_dynamic_priorities(g, lay, Semiring(), initial_messages(g, lay))
        >>> np.allclose(pri[1], np.log(p.sum(0) / p.sum()) + 1)
        True
    """
    bsum = variable_sums(graph, f2v, graph.var_edges)  # the compact graph's edges are these
    v2f = var_to_factor(semiring, bsum, f2v, graph.edge_var)
    ok = layout.valid[graph.edge_var].reshape(layout.valid[graph.edge_var].shape
                                              + (1,) * len(graph.bshape))
    v2f = ops.where(ops.new_array(v2f, ok), v2f, NEG)
    full_states = np.arange(graph.D)
    out = []
    for group in graph.groups:
        k, vi = group.arity, group.var_index
        if k == 0:
            continue
        block = v2f[group.edge_start: group.edge_start + group.num_edges]
        block = ops.reshape(block, (len(vi), k) + tuple(block.shape[1:]))
        per_pos = []
        for j in range(k):
            index = [np.broadcast_to(full_states, (len(vi), graph.D)) if p == j
                     else layout.idx[vi[:, p]] for p in range(k)]
            t = gather_table(group.table, graph.D, index)
            for p in range(k):
                if p != j:
                    t = t + _expand(block[:, p], p, k, len(graph.bshape))
            axes = tuple(1 + p for p in range(k) if p != j)
            per_pos.append(semiring.reduce(t, axes) if axes else t)
        msgs = ops.stack(per_pos, 1)
        out.append(ops.reshape(msgs, (group.num_edges,) + tuple(msgs.shape[2:])))
    msgs = normalize(semiring, out[0] if len(out) == 1 else ops.cat(out, 0))
    pri = np.asarray(ops.to_numpy(variable_sums(graph, msgs, graph.var_edges)), float)
    return pri + graph.degree[:, None]


def _expand(m, pos: int, k: int, nb: int):
    index = ((slice(None),) + tuple(slice(None) if p == pos else None for p in range(k))
             + (slice(None),) * nb)
    return m[index]


def round_up_capacity(graph: FactorGraph) -> bool:
    """Whether to round capacities to powers of two: on a backend that compiles, each new
    shape is a new program (a compile costs far more than a few padded states)."""
    return uses_compiled(graph)
