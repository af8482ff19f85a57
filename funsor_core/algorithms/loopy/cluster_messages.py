"""The message passing of cluster BP on a ``ClusterGraph``: updates, sweeps and results.

``cluster_bp`` (in ``cluster_bp``, with the projections) is the entry point; this module holds
the two message updates of its module docstring, the flooding and sequential sweeps over
them, the message counters and the result. A message is a normalized log Tensor over its
edge's variables; the cluster-to-factor messages pass through the run's projection.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_graph import ClusterGraph
from funsor_core.algorithms.loopy.graph import NEG
from funsor_core.algorithms.loopy.messages import Semiring
from funsor_core.atoms.tensor import Tensor

__all__ = ["ClusterBPResult", "MessageCounts", "SWEEPS"]


def itemsize(x) -> int:
    """Bytes of one entry of array ``x``."""
    return int(x.dtype.itemsize)


def size(x) -> int:
    """Entries of array ``x``."""
    return math.prod(int(d) for d in x.shape)


@dataclass(frozen=True)
class MessageCounts:
    """Messages sent so far: ``network`` (cluster-to-factor, projected, once per receiving
    cluster, with the projection's bytes) and ``local`` (factor-to-cluster, dense)."""

    network_messages: int = 0
    network_bytes: int = 0
    local_messages: int = 0
    local_entries: int = 0
    local_bytes: int = 0

    @property
    def messages(self) -> int:
        return self.network_messages + self.local_messages

    @property
    def total_bytes(self) -> int:
        return self.network_bytes + self.local_bytes


@dataclass
class Run:
    graph: ClusterGraph
    semiring: Semiring
    project: Callable
    k: Any
    rng_key: int
    counts: MessageCounts = field(default_factory=MessageCounts)
    states: dict = field(default_factory=dict)
    _edges: dict = field(default_factory=dict)

    def edge_index(self, j: int, c: int) -> int:
        if not self._edges:
            self._edges.update((e, i) for i, e in enumerate(self.graph.edge_vars))
        return self._edges[j, c]

    @property
    def sum_op(self):
        return ops.max if self.semiring.is_max else ops.logaddexp

    def normalized(self, data):
        # One reduction over all axes (Semiring.reduce unrolls binary axes, for XLA).
        axes = tuple(range(data.ndim))
        if self.semiring.is_max:
            return data - ops.amax(data, axis=axes, keepdims=True)
        return data - ops.logsumexp(data, axis=axes, keepdims=True)

    def tensor(self, data, names) -> Tensor:
        return Tensor(data, {v: self.graph.domains[v] for v in names})


_EDGE_KEYS = 1_000_003  # a seed's keys: seed * _EDGE_KEYS + the message's edge index


def cavity(run: Run, f2c: dict, c: int, skip=None) -> Tensor:
    # phi_C + the messages of C's cluster factors other than `skip`.
    t = run.graph.local[c]
    for j in run.graph.cluster_factors(c):
        if j != skip:
            t = t + f2c[j, c]
    return t


def _cluster_to_factor(run: Run, f2c: dict, j: int, c: int) -> Tensor:
    g, keep = run.graph, run.graph.edge_vars[j, c]
    t = cavity(run, f2c, c, skip=j)
    t = t.reduce(run.sum_op, frozenset(g.clusters[c]) - frozenset(keep))
    # Common random numbers: each message draws with its own fixed key, so a sampled message is
    # a function of its table and a run can converge once the tables do (fresh keys per call
    # would redraw the samples at every iteration and never meet `tol`).
    key = _EDGE_KEYS * int(run.rng_key) + run.edge_index(j, c)
    proj = run.project(run.normalized(t.align(keep).data), k=run.k, rng_key=key,
                       state=run.states.get((j, c)))
    run.states[j, c] = proj.state
    copies = len(g.factor_clusters[j]) - 1
    run.counts = replace(run.counts, network_messages=run.counts.network_messages + copies,
                         network_bytes=run.counts.network_bytes + copies * int(proj.nbytes))
    return run.tensor(run.normalized(ops.clamp(proj.log_table, min=NEG)), keep)


def _factor_to_cluster(run: Run, c2f: dict, j: int, c: int) -> Tensor:
    g, keep = run.graph, run.graph.touched[j, c]
    t = g.factors[j]
    for other in g.factor_clusters[j]:
        if other != c:
            t = t + c2f[j, other]
    data = run.normalized(t.reduce(run.sum_op, frozenset(t.inputs) - frozenset(keep))
                          .align(keep).data)
    n = size(data)
    run.counts = replace(run.counts, local_messages=run.counts.local_messages + 1,
                         local_entries=run.counts.local_entries + n,
                         local_bytes=run.counts.local_bytes + n * itemsize(data))
    return run.tensor(data, keep)


def _update(run: Run, f2c: dict, new: Tensor, j: int, c: int, damping: float):
    # Damped in log space (the factor-to-cluster messages are dense); returns the change.
    old = f2c[j, c]
    data = new.data
    if damping:
        data = run.normalized(old.data * damping + data * (1.0 - damping))
    f2c[j, c] = run.tensor(data, run.graph.touched[j, c])
    return ops.amax(ops.abs(data - old.data))


def _edges(graph: ClusterGraph, j: int):
    return [(j, c) for c in graph.factor_clusters[j]]


def _flooding(run: Run, f2c: dict, c2f: dict, damping: float):
    g = run.graph
    for j in range(len(g.factors)):
        for e in _edges(g, j):
            c2f[e] = _cluster_to_factor(run, f2c, *e)
    news = {e: _factor_to_cluster(run, c2f, *e) for j in range(len(g.factors))
            for e in _edges(g, j)}
    return [_update(run, f2c, new, *e, damping) for e, new in news.items()]


def _sequential(run: Run, f2c: dict, c2f: dict, damping: float):
    # Cluster factors in order, each from the newest messages (Gauss-Seidel).
    g, changes = run.graph, []
    for j in range(len(g.factors)):
        for e in _edges(g, j):
            c2f[e] = _cluster_to_factor(run, f2c, *e)
        news = {e: _factor_to_cluster(run, c2f, *e) for e in _edges(g, j)}
        changes += [_update(run, f2c, new, *e, damping) for e, new in news.items()]
    return changes


SWEEPS = {"flooding": _flooding, "parallel": _flooding, "sequential": _sequential}


class ClusterBPResult:
    """What ``cluster_bp`` returns: ``beliefs`` (name -> normalized log belief Tensor;
    max-product: max-marginals, max 0), ``cluster_beliefs`` (one Tensor per cluster, over its
    variables), ``residuals`` (the largest change of a factor-to-cluster message per
    iteration), ``num_iters``, ``converged``, ``counts`` (``MessageCounts``), ``history``
    (the counts after each iteration), ``num_messages`` and ``log_z``, the cluster graph's
    Bethe log Z in message form (``messages``' formula with the clusters as variables and
    ``phi_C`` their potentials): exact on a tree-shaped cluster graph with ``full``
    messages, loopy BP's Bethe log Z with one variable per cluster."""

    def __init__(self, run: Run, f2c: dict, residuals, num_iters: int, tol: float,
                 history: list) -> None:
        self.graph, self.semiring = run.graph, run.semiring
        self._run, self.f2c = run, dict(f2c)
        self.residuals, self.num_iters, self.tol = list(residuals), num_iters, tol
        self.counts, self.history = run.counts, list(history)

    @property
    def converged(self):
        r = self.residuals
        if not r or not all(isinstance(x, float) for x in r):
            return None if r else True
        return r[-1] < self.tol

    @property
    def num_messages(self) -> int:
        return self.counts.messages

    @cached_property
    def cluster_beliefs(self) -> list:
        run, g = self._run, self.graph
        return [run.tensor(run.normalized(cavity(run, self.f2c, c).align(vs).data), vs)
                for c, vs in enumerate(g.clusters)]

    @cached_property
    def beliefs(self) -> dict:
        out = {}
        for c, vs in enumerate(self.graph.clusters):
            b = self.cluster_beliefs[c]
            for v in vs:
                out[v] = b.reduce(self._run.sum_op, frozenset(vs) - {v})
        return {v: out[v] for v in self.graph.domains}

    @cached_property
    def log_z(self) -> Tensor:
        """``sum_Psi R(Psi + sum_C v2f_C) + sum_C (1 - d_C) R(phi_C + sum_Psi m_Psi->C)`` with
        ``v2f_C`` the unprojected cavity of ``C`` reduced to the variables ``Psi`` touches;
        invariant to the scale of the messages (a shift of ``m_Psi->C`` adds ``1 - d_C``
        and ``d_C - 1`` times)."""
        run, g = self._run, self.graph
        total = None
        for j, cs in enumerate(g.factor_clusters):
            t = g.factors[j]
            for c in cs:
                eliminated = frozenset(g.clusters[c]) - frozenset(g.touched[j, c])
                t = t + cavity(run, self.f2c, c, skip=j).reduce(run.sum_op, eliminated)
            total = _plus(total, t.reduce(run.sum_op))
        for c in range(len(g.clusters)):
            weight = 1 - len(g.cluster_factors(c))
            if weight:
                total = _plus(total, cavity(run, self.f2c, c).reduce(run.sum_op) * weight)
        return total


def _plus(total, term):
    return term if total is None else total + term
