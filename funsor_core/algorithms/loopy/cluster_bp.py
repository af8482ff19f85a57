"""Cluster BP with compressed messages: generalized BP on a cluster graph (Singh 2014, ch. 8).

On a ``ClusterGraph`` (clusters partition the variables; cluster factors join clusters), the
messages are joint log tables over an edge's message variables ``S`` (``cluster_graph``):

    m_{C->Psi}(x_S) = P[ R_{x_C \\ S} (phi_C(x_C) + sum_{Psi' ∋ C, Psi' != Psi} m_{Psi'->C}) ]
    m_{Psi->C}(x_T) = R_{x_Psi \\ T} (Psi(x_Psi) + sum_{C' ∈ Psi, C' != C} m_{C'->Psi})

with ``R`` the semiring's reduction (``logsumexp``; ``max`` for max-product), ``T`` the
variables of ``C`` that ``Psi`` touches, and ``P`` a projection, the compression of a cluster
message (ch. 8.2): ``full`` (generalized BP, Kikuchi), ``factorized`` (the product of the
single-variable marginals, 8.2.1), ``kbest`` (the ``k`` best configurations keep their
values, zero mass elsewhere, 8.2.3). Each message is normalized (``R_x m = 0``) before and
after its projection. Inside a cluster the elimination is exact, on dense tables over the
cluster (``|Y|^|C|`` entries: 64 for a 3x2 binary cluster, 19,683 for 3x3 of domain 3).

The cluster-to-factor messages are the ones that cross the network (each cluster is a
machine; a cluster factor's messages to a cluster are computed on that cluster's machine
from the other clusters' messages): ``network`` counts them once per receiving cluster,
with the projection's ``nbytes``; ``local`` counts the dense factor-to-cluster messages.
On a tree-shaped cluster graph, ``full`` gives the exact marginals; with one variable per
cluster every projection is the identity, and cluster BP is loopy BP.

What ``factorized`` computes: the exact marginal of the message variables in the cluster's
cavity ``phi_C + sum_{Psi' != Psi} m_{Psi'->C}`` (eliminated exactly inside the cluster),
projected to the product of its single-variable marginals. The thesis calls this loopy BP
(8.1, 8.2.1); it is loopy BP on the original factors only where the inside of a cluster adds
nothing BP would not: one variable per cluster, or clusters without inner factors whose
variables meet each cluster factor through separate factors (both tested). With inner
factors, the cluster's correlations reach the marginals (on three of Fig 8.6's 9x8 grids in
3x2 clusters, its marginals differ from loopy BP's by 0.19-0.62; L2 error 0.037-0.066
against loopy BP's 0.091-0.145).
Nor is it EP's factorized message (8.3), which projects the belief (the cavity times the
incoming ``m_{Psi->C}``) and divides the incoming message out. A mode that is loopy BP
(per-variable messages inside each cluster, the original factors kept apart across
clusters) would be ``loopy_bp`` itself with a cluster-ordered schedule, so there is none.
LoopyBP's options carry
over with its names: the schedules (flooding, sequential, random, residual), ``temperature``
(``R = T logsumexp(x / T)``; a projection compresses ``m / T``) and ``batch`` (independent
copies of the model in one vectorized run).

Example:
    >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> r = cluster_bp([f], [("a",), ("b",)])
    >>> np.exp(r.beliefs["a"].data).round(3).tolist()
    [0.3, 0.7]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy import cluster_compress
from funsor_core.algorithms.loopy.cluster_compress import INDEX_BYTES, Projection, top_mask
from funsor_core.algorithms.loopy.cluster_graph import ClusterGraph
from funsor_core.algorithms.loopy.cluster_messages import (
    SWEEPS,
    ClusterBPResult,
    MessageCounts,
    Run,
    itemsize,
    largest,
    size,
)
from funsor_core.algorithms.loopy.messages import Semiring, check_damping, roundoff_tol

__all__ = ["Projection", "project_full", "project_factorized", "project_kbest", "PROJECTIONS",
           "cluster_bp", "ClusterBPResult", "MessageCounts", "CLUSTER_SCHEDULES",
           "INT_NBYTES", "BATCHED_PROJECTIONS"]

CLUSTER_SCHEDULES = ("flooding", "parallel", "sequential", "random", "residual")
INT_NBYTES = INDEX_BYTES  # bytes of one stored configuration index (|C| of them each)


def project_full(log_table, *, k=None, rng_key=None, state=None, batch_dims=0) -> Projection:
    """No compression: generalized BP's message, every entry stored (of every batch element:
    ``batch_dims`` leading axes index independent messages).

    Example:
        >>> project_full(np.zeros((2, 2))).nbytes
        32
    """
    return Projection(log_table, size(log_table) * itemsize(log_table), None)


def _factorized(log_table, reduce, nb: int = 0) -> Projection:
    # prod_i m_i(x_i) with m_i = R_{x \ x_i} m - R_x m: normalized marginals, times R_x m;
    # the first nb axes index a batch of messages.
    n = log_table.ndim
    total = reduce(log_table, tuple(range(nb, n)), True)
    out = total
    for i in range(nb, n):
        out = out + (reduce(log_table, tuple(a for a in range(nb, n) if a != i), True) - total)
    out = ops.expand(out, tuple(log_table.shape))
    shape = [int(d) for d in log_table.shape]
    return Projection(out, math.prod(shape[:nb]) * sum(shape[nb:]) * itemsize(log_table), None)


def _logsumexp(x, axes, keepdims):
    return ops.logsumexp(x, axis=axes, keepdims=keepdims)


def _amax(x, axes, keepdims):
    return ops.amax(x, axis=axes, keepdims=keepdims)


def project_factorized(log_table, *, k=None, rng_key=None, state=None,
                       batch_dims=0) -> Projection:
    """The product of the single-variable marginals of the table, times its total (ch. 8.2.1;
    loopy BP's message only with one variable per cluster: see the module docstring).

    Example:
        >>> t = np.log(np.array([[0.4, 0.1], [0.1, 0.4]]))
        >>> np.exp(project_factorized(t).log_table).round(3).tolist()
        [[0.25, 0.25], [0.25, 0.25]]
    """
    return _factorized(log_table, _logsumexp, batch_dims)


def project_max_factorized(log_table, *, k=None, rng_key=None, state=None,
                           batch_dims=0) -> Projection:
    """``factorized`` in the max-product semiring: the product of the max-marginals
    (``compression="factorized"`` with ``sum_op=ops.max``).

    Example:
        >>> t = np.log(np.array([[0.4, 0.1], [0.2, 0.3]]))
        >>> np.exp(project_max_factorized(t).log_table).round(3).tolist()
        [[0.4, 0.3], [0.3, 0.225]]
    """
    return _factorized(log_table, _amax, batch_dims)


def project_kbest(log_table, *, k=None, rng_key=None, state=None, batch_dims=0) -> Projection:
    """The ``k`` best configurations keep their values, ``-inf`` elsewhere (ch. 8.2.3); ties
    go to the lowest flat index. ``k`` at least the table's size keeps everything. The first
    ``batch_dims`` axes index independent messages (``k`` best of each).

    Example:
        >>> t = np.log(np.array([[0.4, 0.1], [0.1, 0.4]]))
        >>> np.exp(project_kbest(t, k=2).log_table).tolist()
        [[0.4, 0.0], [0.0, 0.4]]
    """
    if k is None or int(k) < 1:
        raise ValueError(f"compression 'kbest' needs k >= 1, got k={k!r}; pass "
                         "compression=('kbest', k)")
    shape = tuple(int(d) for d in log_table.shape)
    lead, n = shape[:batch_dims], math.prod(shape[batch_dims:])
    keep = min(int(k), n)
    nbytes = math.prod(lead) * keep * (itemsize(log_table)
                                       + (len(shape) - batch_dims) * INT_NBYTES)
    if keep == n:
        return Projection(log_table, nbytes, None)
    mask = ops.reshape(top_mask(ops.reshape(log_table, lead + (n,)), keep), shape)
    out = ops.where(mask, log_table, ops.new_full(log_table, shape, -float("inf")))
    return Projection(out, nbytes, None)


PROJECTIONS: dict[str, Callable] = {"full": project_full, "factorized": project_factorized,
                                    "kbest": project_kbest, **cluster_compress.PROJECTIONS}
_KEEPS_K = ("kbest", "merged", "frak")
_MAX_PROJECTIONS = {"factorized": project_max_factorized}
# The projections that take batch_dims (one vectorized call for a batch of messages): all
# the named ones; samples and FRAK keep per-element sets (a mask over each element's table).
# A callable projects one table: batched, it is called once per element (`_per_element`).
BATCHED_PROJECTIONS = ("full", "factorized", "kbest", "samples", "merged", "frak")
_BAD_SEEDS = ("cluster BP: rng_key is an int seed{per}; got {got}")
_PER_ELEMENT = (", or a sequence of one int seed per batch element ({size} for batch shape "
                "{shape}, in C order)")
_RANDOM_SEEDS = ("cluster BP: schedule='random' draws one update order shared by the batch, "
                 "from an int rng_key; per-element seeds would need one order per element: "
                 "pass an int rng_key, or loop over the batch")


def _per_element(project: Callable) -> Callable:
    """A callable projection of one table, run on a batch of messages: element ``i`` (C order
    over the ``batch_dims`` leading axes) is projected alone, with the key it has alone
    (``rng_key``, or ``rng_key[i]`` for per-element seeds) and its own state; the tables are
    stacked, the bytes summed, the states kept as a tuple of one per element.

    Example:
        >>> looped = _per_element(project_kbest)
        >>> t = np.log(np.array([[0.4, 0.6], [0.7, 0.3]]))
        >>> np.exp(looped(t, k=1, batch_dims=1).log_table).tolist()
        [[0.0, 0.6], [0.7, 0.0]]
    """
    def looped(log_table, *, k=None, rng_key=None, state=None, batch_dims=0) -> Projection:
        shape = tuple(int(d) for d in log_table.shape)
        n = math.prod(shape[:batch_dims])
        rows = ops.reshape(log_table, (n,) + shape[batch_dims:])
        keys = rng_key if isinstance(rng_key, tuple) else (rng_key,) * n
        states = (None,) * n if state is None else state
        outs = [project(rows[i], k=k, rng_key=keys[i], state=states[i]) for i in range(n)]
        table = ops.reshape(ops.stack([o.log_table for o in outs], 0), shape)
        return Projection(table, sum(o.nbytes for o in outs), tuple(o.state for o in outs))
    return looped


def _seeds(rng_key, graph: ClusterGraph, schedule: str):
    """An int seed, or a tuple of one int seed per batch element (flattened in C order)."""
    if isinstance(rng_key, (int, np.integer)) and not isinstance(rng_key, bool):
        return int(rng_key)
    size = math.prod(graph.bshape)
    shape = tuple(graph.bshape)
    try:
        seeds = np.asarray(rng_key)
        ok = graph.batch and seeds.dtype.kind in "iu" and seeds.size == size
    except Exception:  # noqa: BLE001 - anything that is not an array of ints
        ok = False
    if not ok:
        per = _PER_ELEMENT.format(size=size, shape=shape) if graph.batch else ""
        raise TypeError(_BAD_SEEDS.format(per=per, got=repr(rng_key)[:80]))
    if schedule == "random":
        raise ValueError(_RANDOM_SEEDS)
    return tuple(int(s) for s in seeds.reshape(-1))


def _tempered(project, temperature: float):
    # At temperature T a message's distribution is exp(m / T): project m / T and scale back
    # (k-best keeps the same entries; merged spreads T logsumexp(rest / T)).
    def tempered(log_table, **kwargs) -> Projection:
        p = project(log_table / temperature, **kwargs)
        return Projection(p.log_table * temperature, p.nbytes, p.state)
    return tempered


_BAD_K = ("compression {c!r}: k is the number of {what} per message, an int >= 1; got "
          "k={k!r}")
_NO_K = ("compression {name!r} takes no k (it keeps {what}); got compression={c!r}: pass "
         "compression={name!r}, or a compression that keeps k configurations, e.g. "
         "('kbest', {k!r})")


def _check_k(name: str, k, compression) -> None:
    if name in ("full", "factorized"):
        if k is not None:
            raise ValueError(_NO_K.format(name=name, c=compression, k=k, what=(
                "every configuration" if name == "full" else "the single-variable marginals")))
        return
    if k is None and name != "frak":
        raise ValueError(f"compression {name!r} needs k: pass compression=({name!r}, k)")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))
                          or k < 1):
        raise ValueError(_BAD_K.format(c=compression, k=k, what="draws" if name == "samples"
                                       else "configurations kept"))


def _at_most_the_table(project):
    # k-best, merged and FRAK keep min(k, N) of a message's N configurations: a message with
    # at most k of them is kept whole (messages differ in size across edges).
    def clamped(log_table, *, k=None, batch_dims=0, **kwargs) -> Projection:
        n = math.prod(int(d) for d in log_table.shape[batch_dims:])
        k = k if k is None else min(int(k), n)
        return project(log_table, k=k, batch_dims=batch_dims, **kwargs)
    return clamped


def _projection(compression, is_max: bool) -> tuple:
    k, given = None, compression
    if isinstance(compression, tuple):
        if len(compression) != 2:
            raise ValueError(f"compression=(name, k) takes two items, got {compression!r}")
        compression, k = compression
    if callable(compression):
        return compression, k
    if not isinstance(compression, str) or compression not in PROJECTIONS:
        raise ValueError(f"unknown compression {compression!r}; choose one of "
                         f"{sorted(PROJECTIONS)}, a (name, k) pair such as ('kbest', 8), or a "
                         "callable project(log_table, *, k, rng_key, state) -> Projection")
    _check_k(compression, k, given)
    fn = _MAX_PROJECTIONS.get(compression, PROJECTIONS[compression]) if is_max \
        else PROJECTIONS[compression]
    return (_at_most_the_table(fn) if compression in _KEEPS_K else fn), k


def cluster_bp(factors, clusters, compression="full", sum_op=ops.logaddexp,
               schedule: str = "flooding", damping: float = 0.0, tol: float = 1e-8,
               max_iters: int = 100, *, temperature: float = 1.0, batch=(),
               scope: str = "boundary", rng_key=0,
               callback: Callable | None = None) -> ClusterBPResult:
    """Generalized BP on the cluster graph of ``factors`` with compressed cluster messages
    (Singh 2014, ch. 8; see the module docstring); ``loopy_bp(clusters=...)`` is the face,
    with ``loopy_bp``'s argument names and meanings.

    Args:
        factors: discrete Tensors (log potentials) whose sum is the model.
        clusters: a partition of the variables, a list of tuples of names.
        compression: a name in ``PROJECTIONS`` (``"full"``, ``"factorized"``, ``"kbest"``,
            and from ``cluster_compress``: ``"samples"``, ``"merged"``, ``"frak"``), a
            ``(name, k)`` pair (``("kbest", 8)``; ``k``, an int >= 1, is required by kbest,
            samples (draws) and merged, optional for frak: the new configurations a call may
            add; full and factorized take none; a message with at most ``k``
            configurations is kept whole by kbest, merged and frak; under max-product
            samples draw from ``exp`` of the max-normalized message), or a
            callable with ``project_full``'s signature (or a ``(callable, k)`` pair); it
            gets ``k``, an int ``rng_key`` (fixed per message, derived from ``rng_key`` and
            the message's edge: common random numbers, so sampled messages are a function of
            their table and a run can converge) and its previous ``state`` for the message.
        sum_op: ``ops.logaddexp`` (sum-product) or ``ops.max`` (max-product; ``factorized``
            then keeps the max-marginals).
        schedule: as ``loopy_bp``'s, over cluster factors: ``"flooding"`` (``"parallel"``),
            ``"sequential"`` (in order, each from the newest messages), ``"random"`` (a
            permutation per sweep drawn from ``rng_key``) or ``"residual"`` (one cluster
            factor at a time, the one whose new messages change most; an iteration is as
            many updates as there are cluster factors; batched, the largest change over the
            batch chooses, as in ``loopy_bp``, so the elements share one order and reach
            their own fixed points).
        damping: weight of the old factor-to-cluster message in log space, in ``[0, 1)``.
        tol, max_iters: stop once no factor-to-cluster message changes more than ``tol``
            (eagerly), or after ``max_iters`` iterations (always, with traced arrays);
            float32 tables raise ``tol`` to their roundoff (``messages.roundoff_tol``).
        temperature: of the sum-product reduction ``T logsumexp(x / T)`` (messages, beliefs,
            ``log_z``; a projection sees ``m / T``); 0 is max-product.
        batch: names of inputs that index independent copies of the model: one vectorized
            run for all, equal to a loop over the elements (every named compression; samples
            and FRAK keep per-element sets of configurations); a callable compression is
            called once per element, with that element's key and state (a loop).
        scope: the message variables, ``"boundary"`` (the cluster's variables the cluster
            factor touches) or ``"cluster"`` (all of them, as the thesis' messages).
        rng_key: an int seed passed on to the projections and the random schedule. With
            ``batch``, an int gives every element the random numbers it gets alone with that
            seed; a sequence of ints (one per element, C order over the batch inputs) gives
            element ``i`` those of ``rng_key=seeds[i]`` alone (not with ``"random"``).
        callback: called with the ``ClusterBPResult`` so far after each iteration (eager).

    Returns:
        A ``ClusterBPResult``.

    Raises:
        ValueError: clusters that are not a partition of the variables (naming them), an
            unknown compression, schedule or scope, a bad ``k`` (not an int >= 1, or
            given to full or factorized), damping outside ``[0, 1)``.
        TypeError: an ``rng_key`` that is neither an int nor one int per batch element.

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> g = fc.Tensor(np.log(np.array([[1.0, 1.0], [1.0, 3.0]])),
        ...               {"b": fc.Bint[2], "c": fc.Bint[2]})
        >>> r = cluster_bp([f, g], [("a", "b"), ("c",)], compression=("kbest", 1))
        >>> r.counts.network_messages, np.exp(r.beliefs["c"].data).round(3).tolist()
        (4, [0.25, 0.75])
    """
    if schedule not in CLUSTER_SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r} for cluster BP; choose one of "
                         f"{CLUSTER_SCHEDULES}")
    check_damping(damping)
    semiring = Semiring(sum_op, temperature)
    graph = ClusterGraph.build(factors, clusters, scope, batch)
    seeds = _seeds(rng_key, graph, schedule)
    project, k = _projection(compression, semiring.is_max)
    if graph.batch and callable(compression[0] if isinstance(compression, tuple)
                                else compression):
        project = _per_element(project)
    if not semiring.is_max and semiring.temperature != 1.0:
        project = _tempered(project, semiring.temperature)
    # Traced if any factor is (a cluster without inner factors has concrete zeros).
    eager = all(ops.is_concrete(t.data) for t in graph.local + graph.factors)
    run = Run(graph, semiring, project, k, seeds, eager)
    f2c = {e: run.tensor(ops.new_zeros(graph.local[0].data, tuple(graph.bshape) + tuple(
        graph.domains[v].size for v in graph.touched[e])), graph.touched[e])
        for e in graph.touched}
    if callback is not None and not eager:
        raise ValueError("callback= needs concrete arrays (it is called between iterations)")
    size = max(math.prod(graph.domains[v].size for v in vs) for vs in graph.touched.values())
    tol = roundoff_tol([t.data for t in graph.local + graph.factors], math.log(size), tol)
    return _loop(run, f2c, SWEEPS[schedule], damping, tol, max_iters, eager, callback)


def _loop(run: Run, f2c: dict, sweep, damping, tol, max_iters, eager, callback):
    c2f: dict = {}
    residuals, history, it = [], [], 0
    for it in range(1, max_iters + 1):  # noqa: B007
        changes = sweep(run, f2c, c2f, damping)
        res = largest(changes)
        residuals.append(float(ops.detach(res)) if eager and not isinstance(res, float)
                         else res)
        history.append(run.counts)
        if callback is not None:
            callback(ClusterBPResult(run, f2c, residuals, it, tol, history))
        # Traced arrays: no host decision, every iteration runs.
        if eager and residuals[-1] < tol:
            break
    return ClusterBPResult(run, f2c, residuals, it if max_iters else 0, tol, history)
