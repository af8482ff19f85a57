"""The message passing of cluster BP on a ``ClusterGraph``: updates, sweeps and results.

``cluster_bp`` (in ``cluster_bp``, with the projections) is the entry point; this module holds
the two message updates of its module docstring, the sweeps over them (LoopyBP's schedules:
flooding, sequential, random, residual), the message counters and the result. A message is a
normalized log Tensor over the batch inputs and its edge's variables (tempered: ``R`` is
``T logsumexp(x / T)``); the cluster-to-factor messages pass through the run's projection.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_graph import ClusterGraph
from funsor_core.algorithms.loopy.graph import NEG, Beliefs
from funsor_core.algorithms.loopy.messages import Semiring
from funsor_core.atoms.tensor import Tensor, align_tensor

__all__ = ["ClusterBPResult", "MessageCounts", "SWEEPS", "largest"]


def itemsize(x) -> int:
    """Bytes of one entry of array ``x``."""
    return int(x.dtype.itemsize)


def size(x) -> int:
    """Entries of array ``x``."""
    return math.prod(int(d) for d in x.shape)


@dataclass(frozen=True)
class MessageCounts:
    """Messages sent so far: ``network`` (cluster-to-factor, projected, once per receiving
    cluster, with the projection's bytes) and ``local`` (factor-to-cluster, dense).

    Example:
        >>> c = MessageCounts(network_messages=2, network_bytes=32, local_messages=1,
        ...                   local_entries=2, local_bytes=16)
        >>> c.messages, c.total_bytes
        (3, 48)
    """

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
    """The state of one cluster BP run: the graph, the semiring, the projection, the counters,
    the projections' states and the random schedule's generator. Messages are Tensors over
    the batch inputs then their edge's variables; their ``data`` is ``(*B, *vars)``."""

    graph: ClusterGraph
    semiring: Semiring
    project: Callable
    k: Any
    rng_key: Any  # an int seed, or a tuple of one per batch element
    eager: bool = True
    counts: MessageCounts = field(default_factory=MessageCounts)
    states: dict = field(default_factory=dict)
    _edges: dict = field(default_factory=dict)
    order_rng: Any = None

    def __post_init__(self) -> None:
        # As LoopyBP's schedule="random": one permutation per sweep from this seed.
        # (Per-element seeds, a tuple, exclude schedule="random": cluster_bp checks.)
        if isinstance(self.rng_key, int):
            self.order_rng = np.random.default_rng(self.rng_key)

    def edge_index(self, j: int, c: int) -> int:
        if not self._edges:
            self._edges.update((e, i) for i, e in enumerate(self.graph.edge_vars))
        return self._edges[j, c]

    @property
    def nb(self) -> int:
        return len(self.graph.batch)

    def reduce(self, t: Tensor, names) -> Tensor:
        """``R`` over ``names`` of a Tensor: ``max``, or ``T logsumexp(t / T)``."""
        names = frozenset(names) & frozenset(t.inputs)
        if not names:
            return t
        temperature = self.semiring.temperature
        if self.semiring.is_max:
            return t.reduce(ops.max, names)
        if temperature == 1.0:
            return t.reduce(ops.logaddexp, names)
        return (t * (1.0 / temperature)).reduce(ops.logaddexp, names) * temperature

    def reduce_all(self, t: Tensor) -> Tensor:
        """``R`` over every variable of ``t`` (the batch inputs stay)."""
        return self.reduce(t, frozenset(t.inputs) - frozenset(self.graph.batch))

    def normalized(self, data):
        # m - R_x m over the variables' axes (after the batch's); one reduction over all of
        # them (Semiring.reduce unrolls binary axes, for XLA).
        axes = tuple(range(self.nb, data.ndim))
        if not axes:
            return data
        if self.semiring.is_max:
            return data - ops.amax(data, axis=axes, keepdims=True)
        t = self.semiring.temperature
        if t == 1.0:
            return data - ops.logsumexp(data, axis=axes, keepdims=True)
        return data - ops.logsumexp(data / t, axis=axes, keepdims=True) * t

    def inputs(self, names) -> dict:
        return {**self.graph.batch, **{v: self.graph.domains[v] for v in names}}

    def dense(self, t: Tensor, names):
        """``t``'s data as ``(*B, *names)``, broadcast over batch inputs it lacks."""
        return align_tensor(self.inputs(names), t, expand=True)

    def tensor(self, data, names) -> Tensor:
        return Tensor(data, self.inputs(names))


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
    t = run.reduce(cavity(run, f2c, c, skip=j), frozenset(g.clusters[c]) - frozenset(keep))
    # Common random numbers: each message draws with its own fixed key, so a sampled message is
    # a function of its table and a run can converge once the tables do (fresh keys per call
    # would redraw the samples at every iteration and never meet `tol`).
    # Batched, an int seed gives every element the key it has alone (shared numbers); a
    # tuple of per-element seeds gives each element the key it has alone with its seed.
    e = run.edge_index(j, c)
    key = tuple(_EDGE_KEYS * s + e for s in run.rng_key) if isinstance(run.rng_key, tuple) \
        else _EDGE_KEYS * run.rng_key + e
    extra = {"batch_dims": run.nb} if run.nb else {}
    proj = run.project(run.normalized(run.dense(t, keep)), k=run.k, rng_key=key,
                       state=run.states.get((j, c)), **extra)
    run.states[j, c] = proj.state
    copies = len(g.factor_clusters[j]) - 1
    run.counts = replace(run.counts, network_messages=run.counts.network_messages + copies,
                         network_bytes=run.counts.network_bytes + copies * int(proj.nbytes))
    return run.tensor(run.normalized(ops.clamp(proj.log_table, min=NEG)), keep)


def _factor_to_cluster(run: Run, c2f: dict, j: int, c: int):
    # The new message's data (*B, *touched), normalized.
    g, keep = run.graph, run.graph.touched[j, c]
    t = g.factors[j]
    for other in g.factor_clusters[j]:
        if other != c:
            t = t + c2f[j, other]
    data = run.normalized(run.dense(run.reduce(t, frozenset(t.inputs) - frozenset(keep)
                                               - frozenset(g.batch)), keep))
    n = size(data)
    run.counts = replace(run.counts, local_messages=run.counts.local_messages + 1,
                         local_entries=run.counts.local_entries + n,
                         local_bytes=run.counts.local_bytes + n * itemsize(data))
    return data


def _edges(graph: ClusterGraph, j: int):
    return [(j, c) for c in graph.factor_clusters[j]]


def _candidates(run: Run, f2c: dict, c2f: dict, j: int, damping: float) -> dict:
    # Cluster factor j's new messages to its clusters from the current ones, damped in log
    # space (the factor-to-cluster messages are dense): edge -> data.
    edges = _edges(run.graph, j)
    for e in edges:
        c2f[e] = _cluster_to_factor(run, f2c, *e)
    news = {e: _factor_to_cluster(run, c2f, *e) for e in edges}
    if damping:
        news = {e: run.normalized(f2c[e].data * damping + d * (1.0 - damping))
                for e, d in news.items()}
    return news


def _change(f2c: dict, news: dict) -> list:
    return [ops.amax(ops.abs(d - f2c[e].data)) for e, d in news.items()]


def _apply(run: Run, f2c: dict, news: dict) -> list:
    # Sets the messages; returns their changes.
    changes = _change(f2c, news)
    for e, d in news.items():
        f2c[e] = run.tensor(d, run.graph.touched[e])
    return changes


def _flooding(run: Run, f2c: dict, c2f: dict, damping: float):
    news = [_candidates(run, f2c, c2f, j, damping) for j in range(len(run.graph.factors))]
    return [c for n in news for c in _apply(run, f2c, n)]


def _in_order(run: Run, f2c: dict, c2f: dict, damping: float, order) -> list:
    # Cluster factors in `order`, each from the newest messages (Gauss-Seidel).
    return [c for j in order for c in _apply(run, f2c, _candidates(run, f2c, c2f, j, damping))]


def _sequential(run: Run, f2c: dict, c2f: dict, damping: float):
    return _in_order(run, f2c, c2f, damping, range(len(run.graph.factors)))


def _random(run: Run, f2c: dict, c2f: dict, damping: float):
    return _in_order(run, f2c, c2f, damping, run.order_rng.permutation(len(run.graph.factors)))


def _residual(run: Run, f2c: dict, c2f: dict, damping: float):
    # F updates, each of the cluster factor whose new messages differ most from its current
    # ones (ties: the first); eagerly a candidate is recomputed only when its inputs changed
    # (the factors sharing a cluster with the updated one; Elidan et al. 2006).
    if not run.eager:
        return _residual_traced(run, f2c, c2f, damping)
    g, cands, worst = run.graph, {}, []
    for _ in range(len(g.factors)):
        for j in range(len(g.factors)):
            if j not in cands:
                news = _candidates(run, f2c, c2f, j, damping)
                cands[j] = (news, max(float(ops.detach(c)) for c in _change(f2c, news)))
        best = max(cands, key=lambda j: (cands[j][1], -j))
        worst.append(cands[best][1])
        _apply(run, f2c, cands[best][0])
        for j in _sharing(g, best):
            cands.pop(j, None)
    return [max(worst)] if worst else []


def _sharing(graph: ClusterGraph, j: int) -> set:
    return {i for c in graph.factor_clusters[j] for i in graph.cluster_factors(c)}


def _residual_traced(run: Run, f2c: dict, c2f: dict, damping: float):
    # The same choice with traced arrays: every candidate each step, one kept by `where`.
    worst = []
    for _ in range(len(run.graph.factors)):
        cands = [_candidates(run, f2c, c2f, j, damping) for j in range(len(run.graph.factors))]
        res = ops.stack([largest(_change(f2c, n)) for n in cands], 0)
        best = ops.argmax(res, 0)
        worst.append(ops.amax(res))
        for j, news in enumerate(cands):
            for e, d in news.items():
                f2c[e] = run.tensor(ops.where(best == j, d, f2c[e].data), run.graph.touched[e])
    return worst


def largest(changes):
    """The largest of the message changes (0.0 for none), as an array op (traced or not).

    Example:
        >>> float(largest([np.array(0.5), np.array(2.0)])), largest([])
        (2.0, 0.0)
    """
    if not changes:
        return 0.0
    out = changes[0]
    for c in changes[1:]:
        out = ops.max(out, c)
    return out


SWEEPS = {"flooding": _flooding, "parallel": _flooding, "sequential": _sequential,
          "random": _random, "residual": _residual}


class ClusterBPResult:
    """What ``cluster_bp`` returns: ``beliefs`` (name -> normalized log belief Tensor;
    max-product: max-marginals, max 0), ``cluster_beliefs`` (one Tensor per cluster, over its
    variables), ``residuals`` (the largest change of a factor-to-cluster message per
    iteration), ``num_iters``, ``converged``, ``counts`` (``MessageCounts``), ``history``
    (the counts after each iteration), ``num_messages`` and ``log_z``, the cluster graph's
    Bethe log Z in message form (``messages``' formula with the clusters as variables and
    ``phi_C`` their potentials): exact on a tree-shaped cluster graph with ``full``
    messages, loopy BP's Bethe log Z with one variable per cluster; a Tensor over the batch
    inputs, reduced by ``R`` at the run's temperature.

    Example:
        A chain ``a - b - c`` in clusters ``(a, b)`` and ``(c,)``: a tree-shaped cluster
        graph, so full messages give the exact marginals and ``log Z``.

        >>> from funsor_core.algorithms.loopy.cluster_bp import cluster_bp
        >>> p1, p2 = np.array([[1.0, 2.0], [3.0, 1.0]]), np.array([[2.0, 1.0], [1.0, 1.0]])
        >>> r = cluster_bp([fc.Tensor(np.log(p1), {"a": fc.Bint[2], "b": fc.Bint[2]}),
        ...                 fc.Tensor(np.log(p2), {"b": fc.Bint[2], "c": fc.Bint[2]})],
        ...                [("a", "b"), ("c",)])
        >>> joint = np.einsum("ab,bc->abc", p1, p2)
        >>> r.converged, np.allclose(float(r.log_z.data), np.log(joint.sum()))
        (True, True)
        >>> np.allclose(np.exp(r.beliefs["c"].data), joint.sum((0, 1)) / joint.sum())
        True
        >>> r.counts.network_messages, r.cluster_beliefs[0].inputs
        (4, {'a': Bint[2], 'b': Bint[2]})
    """

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
        return bool(r[-1] < self.tol)  # a Python bool, as BPResult.converged

    @property
    def num_messages(self) -> int:
        return self.counts.messages

    def map_assignment(self) -> dict:
        """Not built for cluster BP: raises ``NotImplementedError`` saying what to use.

        Example:
            >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
            >>> from funsor_core.algorithms.loopy.cluster_bp import cluster_bp
            >>> cluster_bp([f], [("a",), ("b",)], sum_op=ops.max).map_assignment()
            Traceback (most recent call last):
            ...
            NotImplementedError: map_assignment() decodes loopy_bp's factor beliefs; ...
        """
        raise NotImplementedError(
            "map_assignment() decodes loopy_bp's factor beliefs; cluster BP keeps none yet. "
            "With sum_op=ops.max, cluster_beliefs are max-marginals over each cluster: their "
            "argmax is a MAP on a tree-shaped cluster graph when the maximum is unique; or "
            "decode loopy_bp(factors, sum_op=ops.max) without clusters")

    @cached_property
    def cluster_beliefs(self) -> list:
        run, g = self._run, self.graph
        return [run.tensor(run.normalized(run.dense(cavity(run, self.f2c, c), vs)), vs)
                for c, vs in enumerate(g.clusters)]

    @cached_property
    def beliefs(self) -> dict:
        out = {}
        for c, vs in enumerate(self.graph.clusters):
            b = self.cluster_beliefs[c]
            for v in vs:
                out[v] = self._run.reduce(b, frozenset(vs) - {v})
        return Beliefs((v, out[v]) for v in self.graph.domains)

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
                t = t + run.reduce(cavity(run, self.f2c, c, skip=j), eliminated)
            total = _plus(total, run.reduce_all(t))
        for c in range(len(g.clusters)):
            weight = 1 - len(g.cluster_factors(c))
            if weight:
                total = _plus(total, run.reduce_all(cavity(run, self.f2c, c)) * weight)
        return total


def _plus(total, term):
    return term if total is None else total + term
