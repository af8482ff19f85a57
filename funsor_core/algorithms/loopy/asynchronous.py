"""Eager asynchronous BP: one factor at a time, touching only that factor's messages.

The vectorized schedules of ``bp`` compute every candidate message per factor update (one
array program on every backend, also under ``jax.jit``): ``O(E)`` work per update. On concrete
arrays of a backend that does not compile (numpy, torch) this module runs the asynchronous
schedules the way the literature states them:

- ``"sequential"`` / ``"random"``: factor ``a`` recomputes its messages from the newest
  ones, ``f2v'[a -> i] = R_{x_a \\ x_i}(log psi_a + sum_{j != i} v2f[j -> a])``, and
  ``bsum`` is refreshed for ``a``'s variables only: ``O(prod_{j in a} |D_j|)`` per update;
- ``"residual"`` (residual BP, Elidan et al. 2006): a heap of factors keyed by the
  priority of Singh (2014) eq. 7.6, the largest dynamic range over the factor's messages
  ``max_i (max_y d_i(y) - min_y d_i(y))``, ``d_i = f2v'[a -> i] - f2v[a -> i]`` (states that
  are log 0 in both left out), scaled by ``1 - damping``. The top factor sends its messages;
  only the messages ``b -> j`` with ``b`` sharing a variable ``i`` with ``a`` and ``j != i``
  read a changed input, so only they are recomputed and only their factors' priorities
  change (lazy invalidation: a stale heap entry is skipped when popped).

A normalized message pair has ``max_y |d(y)| <= dynamic range``, so stopping once every
priority is below ``tol`` is at least as strict as the flooding test. An "iteration" of the
residual schedule is ``F`` updates (``F`` factors with messages), as in ``bp``.

Example:
    >>> from funsor_core.algorithms.loopy.graph import FactorGraph
    >>> from funsor_core.algorithms.loopy.messages import Semiring
    >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> g = FactorGraph.build([f])
    >>> f2v, residuals, num_iters, num_messages, sends, computed = residual_bp(
    ...     g, Semiring(), np.zeros((2, 2)), damping=0.0, tol=1e-10, max_iters=10)
    >>> np.round(np.exp(f2v[0]), 3), num_messages, sends
    (array([0.3, 0.7]), 2, array([1]))
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph
from funsor_core.algorithms.loopy.messages import (
    _expand,
    factor_to_var,
    normalize,
    var_to_factor,
    variable_sums,
)
from funsor_core.engine.cache import Cache

__all__ = ["residual_bp", "ordered_bp"]


class _State:
    """Messages ``f2v`` ``(E + 1, D, *B)`` (a zero slot at ``E`` that padded ``var_edges``
    gather) and ``bsum`` ``(V, D, *B)``, updated out of place (torch keeps its autograd)."""

    def __init__(self, graph: FactorGraph, semiring, f2v) -> None:
        self.graph, self.semiring = graph, semiring
        self.nb = len(graph.bshape)
        # (E, D, 1..): a variable's real states (padding never counts as a residual)
        self.states = graph.state_mask().reshape(
            (graph.num_edges, graph.D) + (1,) * self.nb) if graph.ragged else None
        if self.states is not None:
            # Padded states are log 0 in every message a factor sends (its table is NEG
            # there); set them now, as a factor that is never picked never sends.
            f2v = ops.where(ops.new_array(f2v, self.states), f2v, NEG)
        self.f2v = ops.cat([f2v, ops.new_zeros(f2v, (1,) + tuple(f2v.shape[1:]))], 0)
        self.bsum = variable_sums(graph, f2v, graph.var_edges)
        # factor -> (group, row); an edge's factor row within its group
        self.where = {}
        for gi, group in enumerate(graph.groups):
            for row, a in enumerate(group.factor_ids):
                self.where[int(a)] = (gi, row)

    def edges_of(self, a: int) -> np.ndarray:
        gi, row = self.where[a]
        group = self.graph.groups[gi]
        return group.edge_start + row * group.arity + np.arange(group.arity)

    def messages(self, gi: int, j: int, rows: np.ndarray):
        """``(n, D, *B)``: the new normalized messages of factors ``rows`` of group ``gi`` to
        their variable at position ``j``, from the current messages."""
        group, g = self.graph.groups[gi], self.graph
        k = group.arity
        # One row: a view (a fancy index would copy the table first).
        t = group.table[rows[0]: rows[0] + 1] if len(rows) == 1 else group.table[rows]
        for p in range(k):
            if p != j:
                e = group.edge_start + rows * k + p
                t = t + _expand(self.bsum[g.edge_var[e]] - self.f2v[e], p, k, self.nb)
        axes = tuple(1 + p for p in range(k) if p != j)
        return normalize(self.semiring, self.semiring.reduce(t, axes) if axes else t)

    def send(self, edges: np.ndarray, values) -> None:
        """``f2v[edges] = values``, then ``bsum`` of their variables recomputed exactly (no
        drift from running sums)."""
        g = self.graph
        self.f2v = ops.scatter_set(self.f2v, (edges,), values)
        vs = g.edge_var[edges]
        self.bsum = ops.scatter_set(self.bsum, (vs,), ops.sum(self.f2v[g.var_edges[vs]], axis=1))

    def result_f2v(self):
        return self.f2v[: self.graph.num_edges]


def _damped(state, edges, new, damping):
    return new if not damping else state.f2v[edges] * damping + new * (1.0 - damping)


def ordered_bp(graph: FactorGraph, semiring, f2v, damping: float, tol: float, max_iters: int,
               orders):
    """Sequential / random BP: sweep ``it`` updates the factors ``orders(it)`` in turn,
    each from the newest messages. Returns ``(f2v, residuals, num_iters, num_messages)``;
    a sweep's residual is its largest message change (as ``bp``'s vectorized sweep).

    Example:
        >>> from funsor_core.algorithms.loopy.graph import FactorGraph
        >>> from funsor_core.algorithms.loopy.messages import Semiring
        >>> g = FactorGraph.build([fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})])
        >>> ordered_bp(g, Semiring(), np.zeros((2, 2)), 0.0, 1e-8, 5, lambda it: [0])[2]
        2
    """
    state = _State(graph, semiring, f2v)
    residuals, messages = [], 0
    for it in range(max_iters):
        worst = 0.0
        for a in orders(it):
            a = int(a)
            gi, row = state.where[a]
            edges = state.edges_of(a)
            rows = np.array([row])
            new = ops.cat([state.messages(gi, j, rows) for j in range(len(edges))], 0)
            new = _damped(state, edges, new, damping)
            worst = max(worst, float(ops.detach(ops.amax(ops.abs(new - state.f2v[edges])))))
            state.send(edges, new)
            messages += len(edges)
        residuals.append(worst)
        if worst < tol:
            break
    return state.result_f2v(), residuals, len(residuals), messages


def _dynamic_range(new, old, nb: int, states=None) -> np.ndarray:
    """``(n,)``: per message, ``max_y d - min_y d`` of ``d = new - old`` over the states
    that are not log 0 in both (impossible states; ``states``: the real ones, a numpy mask
    without padding), the largest over the batch."""
    d = new - old
    live = ops.or_(new > 0.5 * NEG, old > 0.5 * NEG)
    if states is not None:
        live = ops.and_(live, ops.new_array(d, states))
    hi = ops.amax(ops.where(live, d, -np.inf), axis=1)
    lo = ops.amin(ops.where(live, d, np.inf), axis=1)
    r = np.asarray(ops.to_numpy(ops.detach(hi - lo)), dtype=float)
    r = r.reshape(r.shape[0], -1).max(axis=1) if nb else r
    return np.maximum(r, 0.0)  # no live state: -inf, nothing to send


def _rows(states, edges=None):
    return states if states is None or edges is None else states[edges]


class _StalePlan(NamedTuple):
    groups: list  # (group, position, rows, edges) of the messages to recompute
    ranked: np.ndarray  # the edges whose residual changes: those, then a's own
    owners: np.ndarray  # the factor of each recomputed message
    touched: list  # the factors whose priority changes (a included)


# Stale plans by factor-graph structure (the scopes and the edge numbering), so that anytime
# BP's steps on one structure share them.
_PLANS = Cache("loopy.residual_stale_plans", maxsize=16)


class _Neighbourhood:
    """Per factor ``a``, what an update of ``a`` makes stale: the messages ``b -> j`` (``b``
    shares a variable ``i`` with ``a``, ``j != i``) grouped by ``(group, position)``, as a
    ``_StalePlan`` built once per factor and structure on first use."""

    def __init__(self, graph: FactorGraph, state: _State) -> None:
        self.graph, self.state = graph, state
        key = (graph.factor_vars, tuple(tuple(g.factor_ids.tolist()) for g in graph.groups))
        self.plans = _PLANS.setdefault(key, {})
        self.factors_of = None

    def _index(self) -> None:
        g = self.graph
        self.factors_of = [[] for _ in g.names]
        for e, (v, b) in enumerate(zip(g.edge_var, g.edge_factor)):
            self.factors_of[int(v)].append((int(b), e))

    def __call__(self, a: int) -> list:
        plan = self.plans.get(a)
        if plan is None:
            plan = self.plans[a] = self._build(a)
        return plan

    def _build(self, a: int) -> _StalePlan:
        if self.factors_of is None:
            self._index()
        g, state = self.graph, self.state
        stale: dict = {}
        for e in state.edges_of(a):
            i = int(g.edge_var[e])
            for b, e_bi in self.factors_of[i]:
                if b == a:
                    continue
                gi, row = state.where[b]
                k = g.groups[gi].arity
                pos_i = e_bi - g.groups[gi].edge_start - row * k
                for j in range(k):
                    if j != pos_i:
                        stale.setdefault((gi, j), set()).add(row)
        groups = []
        for (gi, j), rows in sorted(stale.items()):
            group = g.groups[gi]
            rows = np.array(sorted(rows), dtype=np.int64)
            groups.append((gi, j, rows, group.edge_start + rows * group.arity + j))
        stale_edges = np.concatenate([x[3] for x in groups] or [np.zeros(0, np.int64)])
        owners = g.edge_factor[stale_edges]
        return _StalePlan(groups, np.concatenate([stale_edges, state.edges_of(a)]), owners,
                          sorted(set(owners.tolist()) | {a}))


def residual_bp(graph: FactorGraph, semiring, f2v, damping: float, tol: float,
                max_iters: int):
    """Residual BP with a priority queue (see the module docstring). Returns ``(f2v,
    residuals, num_iters, num_messages, factor_updates, messages_computed)``; a residual (the
    largest priority) is recorded every ``F`` updates and at convergence; the last two
    ``(F,)`` count each factor's sends and the messages it computed (the first pass and the
    recomputed stale ones: the price of the priorities).

    Example:
        On a tree, one send per factor reaches the fixed point; its Bethe ``log Z`` is exact.

        >>> from funsor_core.algorithms.loopy.messages import Semiring, bethe_log_z
        >>> pu, pp = np.array([1.0, 3.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(pu), {"a": fc.Bint[2]}),
        ...                        fc.Tensor(np.log(pp), {"a": fc.Bint[2], "b": fc.Bint[2]})])
        >>> f2v, residuals, iters, sent, sends, computed = residual_bp(
        ...     g, Semiring(), np.zeros((g.num_edges, g.D)), 0.0, 1e-10, 100)
        >>> sends, np.allclose(bethe_log_z(Semiring(), g, f2v), np.log((pu[:, None] * pp).sum()))
        (array([1, 1]), True)
    """
    state = _State(graph, semiring, f2v)
    E = graph.num_edges
    # Undamped new messages of every edge, and each edge's priority, all at once to start.
    f2v = state.result_f2v()
    new = factor_to_var(semiring, graph, var_to_factor(semiring, state.bsum, f2v,
                                                        graph.edge_var))
    new = ops.cat([new, ops.new_zeros(new, (1,) + tuple(new.shape[1:]))], 0)
    scale = 1.0 - damping
    edge_pri = np.zeros(E + 1)
    edge_pri[:E] = scale * _dynamic_range(new[:E], f2v, state.nb, _rows(state.states))
    active = [a for a in range(graph.num_factors) if graph.factor_vars[a]]
    factor_edges = {a: state.edges_of(a) for a in active}
    stamp = dict.fromkeys(active, 0)
    heap = [(-float(edge_pri[factor_edges[a]].max()), 0, a) for a in active]
    heapq.heapify(heap)
    stale_of = _Neighbourhood(graph, state)
    per_iter, budget = max(len(active), 1), max_iters * max(len(active), 1)
    residuals, messages, updates = [], 0, 0
    sends = np.zeros(graph.num_factors, dtype=np.int64)
    # messages computed per factor: the first pass, then every stale message recomputed
    computed = np.array([len(vs) for vs in graph.factor_vars], dtype=np.int64)

    def top() -> float:
        while heap and heap[0][1] != stamp[heap[0][2]]:
            heapq.heappop(heap)
        return -heap[0][0] if heap else 0.0

    def push(a: int) -> None:
        stamp[a] += 1
        heapq.heappush(heap, (-float(edge_pri[factor_edges[a]].max()), stamp[a], a))

    while updates < budget:
        if top() < tol:
            if not residuals or updates % per_iter:  # else just recorded, nothing since
                residuals.append(top())
            break
        _, _, a = heapq.heappop(heap)
        edges = factor_edges[a]
        sent = _damped(state, edges, new[edges], damping)
        state.send(edges, sent)
        messages, updates = messages + len(edges), updates + 1
        sends[a] += 1
        plan = stale_of(a)
        for gi, j, rows, stale in plan.groups:
            new = ops.scatter_set(new, (stale,), state.messages(gi, j, rows))
        # The recomputed messages' residuals, and a's own: its inputs did not change
        # (v2f[i -> a] excludes f2v[a -> i]), its residual moves to 0 (or by the damping).
        r = plan.ranked
        edge_pri[r] = scale * _dynamic_range(new[r], state.f2v[r], state.nb,
                                             _rows(state.states, r))
        np.add.at(computed, plan.owners, 1)
        for b in plan.touched:
            push(b)
        if updates % per_iter == 0:
            residuals.append(top())
    return state.result_f2v(), residuals, len(residuals), messages, sends, computed
