"""Anytime belief propagation on sparse domains (Singh 2014, chapter 7.2).

BP on sparse domains ``S_i`` (a subset of each variable's states) fixes the marginals of the
other states at 0: it is BP on the truncated model, whose factors are indexed at ``S``.
Two layouts run it, with the same results. ``"compact"``: the factors substituted at index
arrays of the states in ``S`` (``anytime_compact``), in buckets of similar table sizes
(``anytime_buckets``), so the array work follows ``prod_j |S_j|``; beliefs are gathered back
to the full domains. ``"masked"``: the full padded tables with ``NEG`` (a finite ``log 0``) at
the states outside ``S``; the arrays keep their shapes, so every step reuses one compiled
sweep (the layout for jax, and for small domains where a step's gathers cost more than the
``D^k`` tables).

Anytime BP starts from one state per variable (the best by the fixed priority), then
alternately grows the domains by the value of highest priority and converges BP on them,
warm-started from the previous messages. Every intermediate result is a BP fixed point of
its truncated model; once every domain is full it is LoopyBP's. Priorities of a value
``y`` of variable ``i``:

- ``"fixed"`` (eq. 7.5, precomputed): ``sum_{f ∋ i} R_{y_f \\ y_i} log psi_f(y_f)``;
- ``"dynamic"`` (eqs. 7.3-7.4): ``d_i + sum_{f ∋ i} log m_{f -> i}(y)``, the messages of one
  update in which ``f``'s other variables range over their sparse domains (normalized over
  all of ``i``'s states, so that variables compare on one scale).

Example:
    >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> steps = list(anytime_bp([f], priority="fixed"))
    >>> [s.domains["b"] for s in steps]
    [(2,), (1, 2), (1, 2), (0, 1, 2)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.factor_list import factor_list
from funsor_core.algorithms.loopy.anytime_buckets import (
    bucket_bp,
    bucket_priorities,
    make_buckets,
)
from funsor_core.algorithms.loopy.anytime_compact import (
    CompactLayout,
    CompactResult,
    compact_dynamic_priorities,
    compact_graph,
    initial_messages,
    remap_messages,
    round_up_capacity,
)
from funsor_core.algorithms.loopy.bp import SCHEDULES, BPResult, run_bp
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph
from funsor_core.algorithms.loopy.messages import (
    Semiring,
    factor_to_var,
    var_to_factor,
    variable_sums,
)

__all__ = ["anytime_bp", "sparse_bp", "AnytimeStep", "PRIORITIES", "LAYOUTS", "domain_mask",
           "message_work", "factor_work"]

PRIORITIES = ("fixed", "dynamic")
LAYOUTS = ("auto", "compact", "masked")
# "auto" compacts from this many states per variable on. Below it the masked D^k tables are
# cheaper than a step's buckets (a few dozen small gathers and reductions): anytime fixed on
# 5x5 thesis grids, to L2 1e-7, numpy: L=16 compact 0.29 s / masked 0.10 s, L=30 0.47 / 0.25,
# L=60 0.033 / 0.061 (benchmarks/README.md, "Anytime BP: wall time").
COMPACT_MIN_STATES = 50

_BAD_DOMAIN = ("domains: variable '{name}' is {domain}, so its sparse domain must be a "
               "non-empty set of states in 0..{last}; got {values!r}")
_UNKNOWN = ("domains: '{name}' is not a variable of the model (variables: {names}); "
            "name only the model's variables, the others keep their full domains")


@dataclass
class AnytimeStep:
    """One converged step of anytime BP: the sparse ``domains`` (name -> sorted states),
    the BP ``result`` on them, and the message entries computed so far: a message
    ``f -> i`` counts the product of the sparse domain sizes of ``f``'s variables (the
    table entries a sparse implementation reads), see ``message_work``.

    Example:
        The domains grow one state at a time; the last step, on the full domains, is exact.

        >>> p = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> steps = list(anytime_bp([fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[2]})]))
        >>> [(s.domains["b"], s.num_message_entries) for s in steps]
        [((1,), 0), ((0, 1), 4), ((0, 1), 12)]
        >>> np.allclose(np.exp(steps[-1].result.beliefs["a"].data), p.sum(1) / p.sum())
        True
    """

    domains: dict
    result: BPResult
    num_message_entries: int


def domain_mask(graph: FactorGraph, domains: dict) -> np.ndarray:
    """``(V, D)`` True at the states of the sparse ``domains`` (name -> states); variables
    not named keep their full domains.

    Example:
        >>> g = FactorGraph.build([fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> domain_mask(g, {"b": [0, 2]}).astype(int).tolist()
        [[1, 1, 0], [1, 0, 1]]
    """
    sizes = np.array(graph.sizes)
    mask = np.arange(graph.D)[None, :] < sizes[:, None]
    for name, values in domains.items():
        if name not in graph.names:
            raise ValueError(_UNKNOWN.format(name=name, names=list(graph.names)))
        i = graph.names.index(name)
        if np.asarray(values).dtype == bool:  # [True, False] read as states would be {0, 1}
            raise ValueError(_BAD_DOMAIN.format(
                name=name, domain=f"Bint[{sizes[i]}]", last=sizes[i] - 1, values=values)
                + " (a boolean mask: pass its states, np.flatnonzero(mask))")
        try:  # states are integers: 0.5 must not truncate to state 0
            whole = all(int(v) == v for v in values)
            vals = np.asarray(sorted({int(v) for v in values}), dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole or not vals.size or vals.min() < 0 or vals.max() >= sizes[i]:
            raise ValueError(_BAD_DOMAIN.format(name=name, domain=f"Bint[{sizes[i]}]",
                                                last=sizes[i] - 1, values=values))
        mask[i] = False
        mask[i, vals] = True
    return mask


def message_work(graph: FactorGraph, mask: np.ndarray) -> int:
    """Entries of one BP iteration on the sparse domains ``mask`` (``(V, D)``): each edge
    ``f -> i`` sends once, reading ``prod_{j in f} |S_j|`` entries of ``f``'s table.

    Example:
        >>> g = FactorGraph.build([fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> message_work(g, domain_mask(g, {"b": [0, 2]}))  # two edges, 2 * 2 entries each
        8
    """
    return int(factor_work(graph, mask).sum())


def factor_work(graph: FactorGraph, mask: np.ndarray) -> np.ndarray:
    """``(F,)``: entries one update of each factor ``f`` reads on the sparse domains
    ``mask``, ``|f| * prod_{j in f} |S_j|`` (``message_work`` is their sum).

    Example:
        >>> g = FactorGraph.build([fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})])
        >>> factor_work(g, domain_mask(g, {"b": [0, 2]}))
        array([8])
    """
    active = mask.sum(1)
    out = np.zeros(graph.num_factors, dtype=np.int64)
    for g in graph.groups:
        out[g.factor_ids] = g.arity * np.prod(active[g.var_index], axis=1)
    return out


def _masked(graph: FactorGraph, mask: np.ndarray) -> FactorGraph:
    # log psi at NEG wherever a variable of the factor is outside its sparse domain.
    tables = []
    for g in graph.groups:
        ok = np.ones((len(g.factor_ids),) + (graph.D,) * g.arity, dtype=bool)
        for p in range(g.arity):
            shape = (len(g.factor_ids),) + tuple(graph.D if q == p else 1
                                                 for q in range(g.arity))
            ok = ok & mask[g.var_index[:, p]].reshape(shape)
        ok = ok.reshape(ok.shape + (1,) * len(graph.bshape))
        tables.append(ops.where(ops.new_array(g.table, ok), g.table, NEG))
    return graph.with_tables(tables)


def _use_compact(graph: FactorGraph, layout: str) -> bool:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {LAYOUTS}")
    if layout == "auto":  # a compiling backend: one masked shape, one compiled sweep
        return graph.D >= COMPACT_MIN_STATES and not round_up_capacity(graph)
    return layout == "compact"


def _edge_states(graph: FactorGraph, proto, states: np.ndarray):
    # (V, D) host booleans -> (E, D, *1) on proto's backend, per edge's variable.
    ok = states[graph.edge_var].reshape(states[graph.edge_var].shape + (1,) * len(graph.bshape))
    return ops.new_array(proto, ok)


def _masked_init(graph: FactorGraph, mask: np.ndarray):
    # Uniform on the sparse domains, NEG outside: a log 0 that stays put (no residual there).
    proto = graph.prototype()
    zeros = ops.new_zeros(proto, (graph.num_edges, graph.D) + graph.bshape)
    return ops.where(_edge_states(graph, proto, mask), zeros, NEG)


def sparse_bp(graph: FactorGraph, domains: dict, sum_op=ops.logaddexp, *, init=None,
              layout: str = "auto", **options) -> BPResult:
    """BP on the sparse ``domains`` of ``graph`` (its truncated model): beliefs keep the full
    domains, with probability 0 outside ``domains``; ``options`` as ``run_bp``'s.
    ``layout``: ``"compact"`` runs on tables of the sparse states only (``anytime_compact``;
    the domains are host structure, so this holds under ``jax.jit`` too), ``"masked"`` on the
    full tables with ``NEG`` outside, ``"auto"`` compacts from ``COMPACT_MIN_STATES`` on
    (eagerly on a compiling backend: masked, one compiled program).

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> r = sparse_bp(FactorGraph.build([f]), {"b": [1]})
        >>> np.exp(r.beliefs["a"].data).round(4).tolist(), round(float(np.exp(r.log_z.data)), 6)
        ([0.3333, 0.6667], 6.0)
    """
    mask = domain_mask(graph, domains)
    if _use_compact(graph, layout):
        lay = CompactLayout.build(graph, mask, round_up_capacity(graph))
        start = initial_messages(graph, lay) if init is None else remap_messages(
            graph, init, CompactLayout.build(graph, np.ones_like(mask)), lay)
        return compact_bp(graph, lay, sum_op, start, **options)
    start = _masked_init(graph, mask) if init is None else init
    return run_bp(_masked(graph, mask), sum_op, init=start, **options)


def fixed_priorities(graph: FactorGraph, semiring: Semiring) -> np.ndarray:
    """``(V, D)`` eq. 7.5: each factor's table reduced over its other variables, summed."""
    out = np.zeros((len(graph.names), graph.D))
    for g in graph.groups:
        t = np.asarray(ops.to_numpy(ops.detach(g.table)), dtype=float)
        for p in range(g.arity):
            axes = tuple(1 + q for q in range(g.arity) if q != p)
            red = _reduce(semiring, t, axes)  # (F, D)
            np.add.at(out, g.var_index[:, p], red)
    return out


def _reduce(semiring: Semiring, x: np.ndarray, axes: tuple) -> np.ndarray:
    if not axes:
        return x
    if semiring.is_max:
        return x.max(axis=axes)
    t = semiring.temperature
    xt = x if t == 1.0 else x / t
    m = xt.max(axis=axes, keepdims=True)
    # exp(x / t - m) in one buffer: eq. 7.5 reads every full table once per position, about
    # a flooding iteration, and it is most of anytime BP's first step on large domains.
    e = np.subtract(xt, m)
    np.exp(e, out=e)
    return t * (np.log(e.sum(axis=axes)) + np.squeeze(m, axes))


def dynamic_priorities(graph: FactorGraph, semiring: Semiring, f2v, mask) -> np.ndarray:
    """``(V, D)`` eqs. 7.3-7.4 from the converged messages ``f2v`` on the sparse domains."""
    bsum = variable_sums(graph, f2v, graph.var_edges)
    v2f = var_to_factor(semiring, bsum, f2v, graph.edge_var)
    ok = ops.new_array(v2f, mask[graph.edge_var])
    v2f = ops.where(ok, v2f, NEG)  # the other variables range over their sparse domains
    msgs = factor_to_var(semiring, graph, v2f)  # for every state of the receiving variable
    pri = np.asarray(ops.to_numpy(variable_sums(graph, msgs, graph.var_edges)), float)
    return pri + graph.degree[:, None]


def anytime_bp(factors, priority: str = "dynamic", sum_op=ops.logaddexp, *, grow: int = 1,
               schedule: str = "residual", damping: float = 0.0, tol: float = 1e-10,
               max_iters: int = 1000, temperature: float = 1.0, step_iters: int | None = None,
               layout: str = "auto"):
    """Anytime BP (see the module docstring): yields an ``AnytimeStep`` after the first
    convergence and after each growth of ``grow`` values, the last on full domains.

    Args:
        factors: discrete log-factor Tensors (no batch inputs).
        priority: ``"fixed"`` (eq. 7.5) or ``"dynamic"`` (eqs. 7.3-7.4).
        sum_op, schedule, damping, tol, max_iters, temperature: as ``loopy_bp``'s (the
            thesis converges each step by residual BP).
        step_iters: at most this many iterations before each growth (the thesis's
            interleaving of growth and message passing); ``None`` converges every step (then
            each step is BP on its truncated model). The full-domain step always converges.
        layout: ``"compact"``: each step runs on tables of the active states only
            (``anytime_compact``: the array work of a sparse implementation); ``"masked"``:
            on the full tables with ``NEG`` outside (one shape for every step); ``"auto"``:
            compact from ``COMPACT_MIN_STATES`` states on, masked on a backend that compiles
            (jax eagerly: each compact shape is a new program, 9.9 s against 0.5 s for three
            steps of a 3x3 pair). Both give the same steps. Eager only (the host picks the
            values to add); forced compact on a compiling backend rounds capacities to
            powers of two (at most ``log2 D + 1`` compiled sweeps).

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> [len(s.domains["a"]) + len(s.domains["b"]) for s in anytime_bp([f])]
        [2, 3, 4]
    """
    # Checked here, when called: the steps are a generator, which runs nothing until the
    # first next(), so a bad argument would otherwise surface far from the call.
    if priority not in PRIORITIES:
        raise ValueError(f"unknown priority {priority!r}; choose one of {PRIORITIES}")
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {SCHEDULES}")
    if not (0.0 <= damping < 1.0 and tol >= 0 and isinstance(max_iters, int) and max_iters >= 0):
        raise ValueError(f"anytime_bp needs damping in [0, 1), tol >= 0 and an int max_iters "
                         f">= 0; got damping={damping!r}, tol={tol!r}, max_iters={max_iters!r}")
    if grow < 1:
        raise ValueError(f"grow must be at least 1, got {grow}")
    if step_iters is not None and step_iters < 1:
        raise ValueError(f"step_iters must be None or at least 1, got {step_iters}")
    factors = factor_list(factors)
    graph = FactorGraph.build(factors)
    if not all(ops.is_concrete(f.data) for f in factors):  # priorities are read as numbers
        raise TypeError("anytime_bp grows the domains by reading message values, so it does "
                        "not run under jax.jit (traced factors); run it eagerly, or jit "
                        "loopy_bp(domains=...) on the domains it chose")
    run = _CompactRun(graph) if _use_compact(graph, layout) else _MaskedRun(graph)
    semiring = Semiring(sum_op, temperature)
    valid = np.arange(graph.D)[None, :] < np.array(graph.sizes)[:, None]
    fixed = np.where(valid, fixed_priorities(graph, semiring), -np.inf)
    mask = np.zeros_like(valid)
    mask[np.arange(len(graph.names)), np.argmax(fixed, axis=1)] = True
    mask &= valid  # a Bint[0] variable has no state to start from (its domain stays empty)
    options = dict(schedule=schedule, damping=damping, tol=tol, temperature=temperature)
    return _steps(graph, run, semiring, valid, fixed, mask, priority, sum_op, grow, step_iters,
                  max_iters, options)


def _steps(graph, run, semiring, valid, fixed, mask, priority, sum_op, grow, step_iters,
           max_iters, options):
    entries = 0
    while True:
        full = not (valid & ~mask).any()
        iters = max_iters if full or step_iters is None else min(step_iters, max_iters)
        result = run.step(mask, sum_op, max_iters=iters, **options)
        entries += int(result.factor_updates @ factor_work(graph, mask))
        domains = {k: tuple(np.flatnonzero(mask[i]).tolist()) for i, k in enumerate(graph.names)}
        yield AnytimeStep(domains, result, entries)
        left = valid & ~mask
        if not left.any():
            return
        pri = fixed if priority == "fixed" else run.dynamic_priorities(semiring)
        pri = np.where(left, pri, -np.inf).reshape(-1)
        mask = mask.copy()
        for flat in np.argsort(-pri, kind="stable")[: min(grow, int(left.sum()))]:
            mask[np.unravel_index(flat, mask.shape)] = True


class _MaskedRun:
    # Every step on the full tables, NEG outside the sparse domains (one shape throughout).
    def __init__(self, graph: FactorGraph) -> None:
        self.graph, self.mask, self.f2v = graph, None, None

    def step(self, mask, sum_op, **options) -> BPResult:
        g = self.graph
        if self.f2v is None:
            start = _masked_init(g, mask)
        else:  # warm start: old states keep their messages, new ones start neutral (0)
            start = ops.where(_edge_states(g, self.f2v, mask & ~self.mask), 0.0, self.f2v)
        result = run_bp(_masked(g, mask), sum_op, init=start, **options)
        self.mask, self.f2v = mask, result.f2v
        return result

    def dynamic_priorities(self, semiring: Semiring) -> np.ndarray:
        return dynamic_priorities(self.graph, semiring, self.f2v, self.mask)


def _buckets_pay(graph: FactorGraph, schedule: str) -> bool:
    # Buckets: flooding (a sweep of all messages at once), eager, on a backend that does not
    # compile (each bucket shape would be one more compiled program).
    return schedule in ("flooding", "parallel") and ops.is_concrete(graph.prototype()) \
        and not round_up_capacity(graph)


def compact_bp(graph: FactorGraph, layout: CompactLayout, sum_op, init, *,
               schedule: str = "flooding", damping: float = 0.0, tol: float = 1e-8,
               max_iters: int = 1000, temperature: float = 1.0, rng_key=0) -> CompactResult:
    """BP on the compact tables of ``layout`` from compact messages ``init``: flooding runs
    on buckets of factors sized by their own variables (``anytime_buckets``); the other
    schedules, and a backend that compiles, run ``run_bp`` on one capacity
    (``compact_graph``)."""
    semiring = Semiring(sum_op, temperature)
    if _buckets_pay(graph, schedule):
        buckets = make_buckets(graph, layout)
        f2v, residuals = bucket_bp(graph, layout, semiring, init, damping=damping, tol=tol,
                                   max_iters=max_iters, buckets=buckets)
        n = len(residuals)
        return CompactResult(graph, layout, semiring, f2v, residuals, n, n * graph.num_edges,
                             tol, buckets=buckets)
    inner = run_bp(compact_graph(graph, layout), sum_op, schedule, damping, tol, max_iters,
                   temperature, rng_key, init=init)
    return CompactResult.of(graph, layout, inner)


class _CompactRun:
    # Every step on the compact tables of the active states (anytime_compact, _buckets).
    def __init__(self, graph: FactorGraph) -> None:
        self.graph, self.layout, self.result = graph, None, None
        self.round_up = round_up_capacity(graph)

    def step(self, mask, sum_op, **options) -> BPResult:
        g, old = self.graph, self.layout
        self.layout = CompactLayout.build(g, mask, self.round_up)
        start = initial_messages(g, self.layout) if old is None else remap_messages(
            g, self.result.compact_f2v, old, self.layout)
        self.result = compact_bp(g, self.layout, sum_op, start, **options)
        return self.result

    def dynamic_priorities(self, semiring: Semiring) -> np.ndarray:
        buckets = self.result.buckets
        if buckets is not None:
            return bucket_priorities(self.graph, self.layout, semiring,
                                     self.result.compact_f2v, buckets)
        return compact_dynamic_priorities(self.graph, self.layout, semiring,
                                          self.result.compact_f2v)
