"""Loopy belief propagation on a ``FactorGraph``: schedules, damping, convergence, results.

Schedules (libDAI's set):

- ``"flooding"`` (alias ``"parallel"``): every message from the previous iteration's, one
  vectorized step over all edges (a gather, a sum, the factor reductions by arity);
- ``"sequential"``: factors in a fixed order, each sending its messages from the newest ones
  (Gauss-Seidel); ``"random"``: a fresh random order every sweep (seeded by ``rng_key``);
- ``"residual"``: one factor at a time, the one whose new messages differ most from its
  current ones (Elidan et al. 2006; the dynamic range of Singh 2014 eq. 7.6 on concrete
  arrays); an iteration is ``F`` such updates.

On concrete numpy/torch arrays the three asynchronous schedules run ``asynchronous.py``: one
factor's messages per update, and for ``"residual"`` a priority queue that recomputes only
the messages an update made stale. Traced (under ``jax.jit``) and on eager jax (a compiled
sweep) a step computes every candidate message and keeps one factor's (a ``where``): the same
array program on every backend, ``O(E)`` per factor.
Damping mixes in log space, ``m <- damping * m_old + (1 - damping) * m_new``. Eagerly the loop
stops once the largest message change is below ``tol``; under ``jax.jit`` (traced arrays) it
is a ``scan`` of ``max_iters`` iterations that freezes the messages once converged.

Example:
    >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> r = run_bp(FactorGraph.build([f]))
    >>> round(float(r.log_z.data), 6) == round(float(np.log(10.0)), 6)
    True
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.asynchronous import ordered_bp, residual_bp
from funsor_core.algorithms.loopy.graph import NEG, Beliefs, FactorGraph, backend_of_graph
from funsor_core.algorithms.loopy.messages import (
    Semiring,
    bethe_log_z,
    check_damping,
    factor_log_beliefs,
    factor_to_var,
    normalize,
    roundoff_tol,
    var_to_factor,
    variable_sums,
)
from funsor_core.algorithms.loopy.runners import compiled, uses_compiled
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint

__all__ = ["run_bp", "BPResult", "SCHEDULES"]

SCHEDULES = ("flooding", "parallel", "sequential", "random", "residual")


class BPResult:
    """What ``loopy_bp`` returns: the final messages and, computed from them on demand,
    ``beliefs`` (name -> normalized log belief Tensor; max-product: max-marginals, max 0),
    ``factor_beliefs`` (one Tensor per input factor, in order), ``log_z`` (Bethe; a Tensor
    over the batch inputs), ``residuals`` (largest message change per iteration),
    ``num_iters``, ``num_messages``, ``num_message_entries``, ``factor_updates`` and
    ``converged``.

    Example:
        On a tree BP is exact: the beliefs and ``log Z`` match enumeration.

        >>> from funsor_core.algorithms.loopy.api import loopy_bp
        >>> pu, pp = np.array([1.0, 3.0]), np.array([[1.0, 2.0], [3.0, 1.0]])
        >>> r = loopy_bp([fc.Tensor(np.log(pu), {"a": fc.Bint[2]}),
        ...               fc.Tensor(np.log(pp), {"a": fc.Bint[2], "b": fc.Bint[2]})])
        >>> joint = pu[:, None] * pp
        >>> r.converged, np.allclose(float(r.log_z.data), np.log(joint.sum()))
        (True, True)
        >>> np.allclose(np.exp(r.beliefs["b"].data), joint.sum(0) / joint.sum())
        True
        >>> r  # doctest: +ELLIPSIS
        BPResult(variables=['a', 'b'], num_iters=..., converged=True, num_messages=...)
    """

    def __init__(self, graph, semiring, f2v, residuals, num_iters, num_messages, tol,
                 factor_updates=None, messages_computed=None):
        self.graph, self.semiring, self.f2v = graph, semiring, f2v
        self.residuals, self.num_iters, self.num_messages = residuals, num_iters, num_messages
        self.tol, self._factor_updates = tol, factor_updates
        self._computed = messages_computed

    def __repr__(self) -> str:
        # structure and counters only: no belief is computed to print the result
        return (f"BPResult(variables={list(self.graph.names)}, num_iters={self.num_iters}, "
                f"converged={self.converged}, num_messages={self.num_messages})")

    @property
    def messages_computed(self) -> np.ndarray:
        """``(F,)`` messages each factor computed: residual BP also computes candidates it
        does not send (to rank them); otherwise ``factor_updates`` times the arity."""
        if getattr(self, "_computed", None) is not None:
            return self._computed
        return self.factor_updates * np.array([len(vs) for vs in self.graph.factor_vars])

    @property
    def factor_updates(self) -> np.ndarray:
        """``(F,)`` how often each factor sent its messages: the residual schedule's own
        count; otherwise ``num_iters`` for every factor with variables (one per sweep)."""
        if getattr(self, "_factor_updates", None) is not None:
            return self._factor_updates
        arity = np.array([len(vs) for vs in self.graph.factor_vars])
        return np.where(arity > 0, int(self.num_iters), 0)

    @property
    def converged(self):
        r = self.residuals
        return bool(len(r) and r[-1] < self.tol) if isinstance(r, list) else None

    @property
    def num_message_entries(self):
        return self.num_messages * self.graph.D * int(np.prod(self.graph.bshape, dtype=int))

    @cached_property
    def _compiled(self):
        """``(bsum, beliefs, log Z)`` from one program compiled once per structure on a
        backend that compiles (eager jax compiles each small op on its first use: the Bethe
        log Z alone took 4 s); None elsewhere (each is computed when asked)."""
        g, f2v, t = self.graph, self.f2v, self.semiring.temperature
        if not uses_compiled(g, f2v):
            return None
        run = compiled(g, "bp_summary", (t,), lambda: lambda tables, m: _summary(
            Semiring(ops.logaddexp, t) if t else Semiring(ops.max), g.with_tables(tables), m))
        return run([grp.table for grp in g.groups], f2v)

    @cached_property
    def _bsum(self):
        if self._compiled is not None:
            return self._compiled[0]
        return variable_sums(self.graph, self.f2v, self.graph.var_edges)

    @cached_property
    def beliefs(self) -> dict:
        b = self._compiled[1] if self._compiled is not None else normalize(
            self.semiring, real_states(self.graph, self._bsum))
        b = ops.where(b <= NEG / 2, ops.full_like(b, -math.inf), b)  # log 0 as -inf; NaN kept
        b = self._undefined_where_zero_mass(b, 2)
        return Beliefs((k, self.graph.variable_tensor(i, b[i]))
                       for i, k in enumerate(self.graph.names))

    def _undefined_where_zero_mass(self, x, lead: int):
        # A model of zero mass (log Z = -inf) has no normalized beliefs: NaN, as 0/0, where
        # BP would otherwise report uniform ones; by value, so eagerly and under jax.jit alike.
        z = self.log_z.data
        ok = z > -math.inf
        if ops.is_concrete(ok) and bool(np.all(ops.to_numpy(ok))):
            return x
        ok = ops.reshape(ok, (1,) * lead + tuple(np.shape(ok))) if np.ndim(ok) else ok
        return ops.where(ok, x, ops.full_like(x, math.nan))

    @cached_property
    def factor_beliefs(self) -> list:
        g = self.graph
        v2f = var_to_factor(self.semiring, self._bsum, self.f2v, g.edge_var)
        out = [None] * g.num_factors
        for group in g.groups:
            t = factor_log_beliefs(self.semiring, g, group, v2f)
            t = ops.where(t <= NEG / 2, ops.full_like(t, -math.inf), t)  # log 0 as -inf; NaN kept
            t = self._undefined_where_zero_mass(t, len(t.shape) - len(g.bshape))
            for row, a in enumerate(group.factor_ids):
                vs = g.factor_vars[a]
                data = t[(row,) + tuple(slice(0, g.sizes[g.names.index(v)]) for v in vs)]
                out[a] = Tensor(data, {**{v: _bint(g, v) for v in vs}, **g.batch})
        return out

    @cached_property
    def log_z(self) -> Tensor:
        z = self._compiled[2] if self._compiled is not None else bethe_log_z(
            self.semiring, self.graph, self.f2v)
        # A model of zero mass (every assignment -inf) sums NEG-clamped tables to ~NEG:
        # report its log Z as -inf, as exact elimination does. A NaN (a NaN table under
        # jax.jit, where it cannot be refused) stays NaN: -inf would claim mass zero.
        z = ops.where(z <= NEG / 2, ops.full_like(z, -math.inf), z)
        return Tensor(z, dict(self.graph.batch))

    def map_assignment(self) -> dict:
        """A maximizing assignment decoded from the factor beliefs (best run with
        ``sum_op=ops.max``): variables are fixed factor by factor in breadth-first order, each
        factor's free variables to its best entry given the fixed ones, among the entries
        that the factors this choice completes allow (they join a free variable to a fixed
        one on a loopy graph: a hard constraint closing a loop is kept). On a tree this is an
        exact MAP, ties included; on a loopy graph a heuristic. Eager and unbatched only."""
        g = self.graph
        if not ops.is_concrete(self.log_z.data):
            # The decoding walks the graph in Python on host values: a traced belief has none.
            raise TypeError("map_assignment() decodes on the host and cannot run under "
                            "jax.jit: return the beliefs (or factor_beliefs) from the "
                            "jitted function and call loopy_bp(...).map_assignment() "
                            "outside it, or decode with argmax of each belief")
        if g.bshape:
            raise NotImplementedError("map_assignment() decodes one model: index the batch "
                                      "inputs first (e.g. run loopy_bp per batch element)")
        if float(ops.to_numpy(ops.detach(self.log_z.data))) == -math.inf:
            raise ValueError("map_assignment(): the model has mass zero (every assignment has "
                             "a log factor of -inf, log Z = -inf), so no assignment is "
                             "most probable; look for contradictory evidence")
        return _decode(g, [ops.to_numpy(ops.detach(f.data)) for f in self.factor_beliefs],
                       {k: ops.to_numpy(ops.detach(b.data)) for k, b in self.beliefs.items()},
                       _host_tables(g))


def _host_tables(graph) -> list:
    # Each factor's log table on the host, unpadded (the decoder's loop-closing penalties).
    tables = [None] * graph.num_factors
    for group in graph.groups:
        data = ops.to_numpy(ops.detach(group.table))
        for row, a in enumerate(group.factor_ids):
            sizes = [graph.sizes[graph.names.index(u)] for u in graph.factor_vars[a]]
            tables[int(a)] = data[row][tuple(slice(0, n) for n in sizes)]
    return tables


def _summary(semiring, graph, f2v):
    bsum = variable_sums(graph, f2v, graph.var_edges)
    return bsum, normalize(semiring, real_states(graph, bsum)), bethe_log_z(semiring, graph, f2v)


def real_states(graph: FactorGraph, bsum):
    """``bsum`` ``(V, D, *B)`` with each variable's padded states at ``NEG``: before any
    update (``max_iters=0``) the messages are uniform over all ``D`` states, padding
    included, and a belief normalized over them would miss mass on the real states."""
    if not graph.ragged:
        return bsum
    pad = np.arange(graph.D)[None, :] >= np.array(graph.sizes)[:, None]
    pad = ops.astype(ops.new_array(bsum, np.where(pad, NEG, 0.0)), bsum.dtype)  # (no float64)
    return bsum + pad[(Ellipsis,) + (None,) * len(graph.bshape)]


def _bint(graph, name):
    return Bint[graph.sizes[graph.names.index(name)]]


def _decode(graph, factor_beliefs, beliefs, tables) -> dict:
    value: dict = {}
    touching: dict = {k: [] for k in graph.names}
    for a, vs in enumerate(graph.factor_vars):
        for v in vs:
            touching[v].append(a)
    for root in graph.names:
        if root in value:
            continue
        value[root] = int(np.argmax(beliefs[root]))
        queue, seen = [root], set()
        while queue:
            v = queue.pop(0)
            for a in touching[v]:
                if a in seen:
                    continue
                seen.add(a)
                vs = graph.factor_vars[a]
                index = tuple(value[u] if u in value else slice(None) for u in vs)
                sub = factor_beliefs[a][index]
                free = [u for u in vs if u not in value]
                if free:
                    # A factor joining a free variable to a fixed one closes a loop (none on
                    # a tree): its zero entries are excluded, so a hard constraint holds.
                    sub = sub + _closing(graph, tables, a, free, value, touching, seen)
                    best = np.unravel_index(int(np.argmax(sub)), sub.shape)
                    for u, x in zip(free, best):
                        value[u] = int(x)
                        queue.append(u)
    return value


def _closing(graph, tables, a, free, value, touching, seen):
    total = 0.0
    for c in sorted({c for u in free for c in touching[u]} - seen - {a}):
        vs = graph.factor_vars[c]
        if not any(u in value for u in vs) or not all(u in value or u in free for u in vs):
            continue
        seen.add(c)  # fully determined by this choice: nothing left for it to fix
        index = tuple(value[u] if u in value else slice(None) for u in vs)
        part = [u for u in vs if u not in value]
        # Only its zeros (log 0): adding a soft table would count its evidence twice, as
        # the messages already carry it.
        table = np.where(tables[c][index] <= NEG / 2, NEG, 0.0)
        table = np.transpose(table, sorted(range(len(part)), key=lambda k: free.index(part[k])))
        total = total + np.expand_dims(table, [k for k in range(len(free)) if free[k] not in part])
    return total


def run_bp(graph: FactorGraph, sum_op=ops.logaddexp, schedule: str = "flooding",
           damping: float = 0.0, tol: float = 1e-8, max_iters: int = 1000,
           temperature: float = 1.0, rng_key=0, *, init=None) -> BPResult:
    """Belief propagation on ``graph`` (see the module docstring); ``loopy_bp`` is the face.
    ``init``: starting factor-to-variable messages ``(E, D, *B)`` (default uniform), or
    ``"unary"``: each single-variable factor's messages start at their final value (the
    factor's own table: it has no other variable to reduce), the others uniform, so damping
    does not delay the evidence (PGMax's evidence; the fixed points are the same).

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> run_bp(FactorGraph.build([f]), schedule="sequential").num_iters
        2
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {SCHEDULES}")
    check_damping(damping)
    semiring = Semiring(sum_op, temperature)
    proto = graph.prototype()
    f2v = _initial_messages(graph, semiring, proto, init)
    tol = roundoff_tol([g.table for g in graph.groups], math.log(graph.D), tol)
    schedule = "flooding" if schedule == "parallel" else schedule
    options = (sum_op, semiring.temperature, schedule, damping, rng_key, max_iters)
    if uses_compiled(graph):
        # Eager jax: one compiled sweep per structure and options, the tables its argument.
        step = compiled(graph, "bp_sweep", options, lambda: _compiled_sweep(graph, *options))
        tables = [g.table for g in graph.groups]
        return _eager_loop(graph, semiring, lambda m, it: step(tables, m, it), f2v, tol,
                           max_iters)
    if ops.is_concrete(proto) and ops.is_concrete(f2v) and schedule != "flooding":
        # One factor at a time, touching its messages only (asynchronous.py).
        out = _asynchronous(graph, semiring, schedule, f2v, damping, tol, max_iters, rng_key)
        return BPResult(graph, semiring, *out[:4], tol, *out[4:])
    sweep = _SWEEPS[schedule](graph, semiring, damping, proto, rng_key, max_iters)
    if ops.is_concrete(proto):
        return _eager_loop(graph, semiring, sweep, f2v, tol, max_iters)
    return _traced_loop(graph, semiring, sweep, f2v, tol, max_iters)


def _initial_messages(graph, semiring, proto, init):
    # Uniform messages, unnormalized (messages are scale-free; every update normalizes):
    # normalizing a constant makes XLA fold it at compile time, 40 s at E*D*B = 4e6.
    if init is not None and not isinstance(init, str):
        return init
    if init not in (None, "unary"):
        raise ValueError(f"init must be None, 'unary' or messages (E, D, *B); got {init!r}")
    zeros = ops.new_zeros(proto, (graph.num_edges, graph.D) + graph.bshape)
    return zeros if init is None else _unary_messages(graph, semiring, proto, zeros)


def _unary_messages(graph, semiring, proto, zeros):
    # A single-variable factor's message is its normalized table whatever the other
    # messages are (nothing to reduce), so on its edges it starts at its final value.
    first = factor_to_var(semiring, graph, zeros)
    arity = np.bincount(graph.edge_factor, minlength=graph.num_factors)[graph.edge_factor]
    mask = ops.new_array(proto, (arity == 1).astype(float))
    mask = mask[(slice(None),) + (None,) * (1 + len(graph.bshape))] > 0.5
    return ops.where(mask, first, zeros)


def _asynchronous(graph, semiring, schedule, f2v, damping, tol, max_iters, rng_key):
    if schedule == "residual":
        return residual_bp(graph, semiring, f2v, damping, tol, max_iters)
    if schedule == "sequential":
        order = _with_messages(graph)
        return ordered_bp(graph, semiring, f2v, damping, tol, max_iters, lambda it: order)
    if not isinstance(rng_key, (int, np.integer)):
        raise TypeError("schedule='random' draws its orders on the host: pass an int rng_key")
    rng, ids = np.random.default_rng(int(rng_key)), _with_messages(graph)
    # One permutation per sweep, drawn as the vectorized schedule draws them (same orders).
    return ordered_bp(graph, semiring, f2v, damping, tol, max_iters,
                      lambda it: rng.permutation(ids))


def _compiled_sweep(graph, sum_op, temperature, schedule, damping, rng_key, max_iters):
    def step(tables, f2v, it):
        g = graph.with_tables(tables)
        sweep = _SWEEPS[schedule](g, Semiring(sum_op, temperature), damping, g.prototype(),
                                  rng_key, max_iters)
        new, res, _ = sweep(f2v, it)
        return new, res
    return step


def _candidates(graph, semiring, damping, f2v):
    # One flooding update of every message (damped).
    bsum = variable_sums(graph, f2v, graph.var_edges)
    new = factor_to_var(semiring, graph, var_to_factor(semiring, bsum, f2v, graph.edge_var))
    return new if not damping else f2v * damping + new * (1.0 - damping)


def _change(new, old):
    return ops.amax(ops.abs(new - old))


def _edge_change(new, old):
    # (E,): the largest change of each edge's message (over states and batch).
    d = ops.abs(new - old)
    return ops.amax(d, axis=tuple(range(1, d.ndim)))


def _flooding(graph, semiring, damping, proto, rng_key, max_iters):
    def sweep(f2v, it):
        new = _candidates(graph, semiring, damping, f2v)
        return new, _change(new, f2v), graph.num_edges
    return sweep


def _edge_mask(graph, proto):
    nb = len(graph.bshape)
    ef = ops.new_array(proto, graph.edge_factor.astype(float))
    return ef[(slice(None),) + (None,) * (1 + nb)]


def _ordered(graph, semiring, damping, proto, orders):
    # One sweep = the factors (with messages) in orders[it], each updated from the newest.
    module = backend_of_graph(graph)
    ef = _edge_mask(graph, proto)
    arity = np.bincount(graph.edge_factor, minlength=graph.num_factors)

    def step(carry, a):
        f2v, worst = carry
        new = _candidates(graph, semiring, damping, f2v)
        mask = ef == a
        worst = ops.max(worst, ops.amax(ops.where(mask, ops.abs(new - f2v), 0.0)))
        return (ops.where(mask, new, f2v), worst), None

    def sweep(f2v, it):
        order = orders(it)
        (f2v, worst), _ = module.scan(step, (f2v, ops.new_zeros(proto, ())), order)
        return f2v, worst, int(arity.sum())
    return sweep


def _sequential(graph, semiring, damping, proto, rng_key, max_iters):
    order = ops.new_array(proto, _with_messages(graph).astype(float))
    return _ordered(graph, semiring, damping, proto, lambda it: order)


def _random(graph, semiring, damping, proto, rng_key, max_iters):
    if not isinstance(rng_key, (int, np.integer)):
        raise TypeError("schedule='random' draws its orders on the host: pass an int rng_key")
    rng = np.random.default_rng(int(rng_key))
    ids = _with_messages(graph)
    orders = ops.new_array(proto, np.stack([rng.permutation(ids) for _ in range(max_iters)])
                           .astype(float))
    return _ordered(graph, semiring, damping, proto, lambda it: orders[it])


def _with_messages(graph):
    return np.array([a for a, vs in enumerate(graph.factor_vars) if vs], dtype=np.int64)


def _residual(graph, semiring, damping, proto, rng_key, max_iters):
    module = backend_of_graph(graph)
    ef = _edge_mask(graph, proto)
    arity = np.bincount(graph.edge_factor, minlength=graph.num_factors)
    steps = ops.new_zeros(proto, (max(int((arity > 0).sum()), 1),))

    def step(carry, _):
        f2v, worst = carry
        new = _candidates(graph, semiring, damping, f2v)
        r = _edge_change(new, f2v)
        r = ops.cat([r, ops.new_zeros(r, (1,))], 0)[graph.factor_edges]  # (F, max arity)
        per_factor = ops.amax(r, axis=1)
        best = ops.argmax(per_factor, axis=0)
        mask = ef == best
        return (ops.where(mask, new, f2v), ops.max(worst, ops.amax(per_factor))), None

    def sweep(f2v, it):
        (f2v, worst), _ = module.scan(step, (f2v, ops.new_zeros(proto, ())), steps)
        return f2v, worst, int(arity.sum())
    return sweep


_SWEEPS = {"flooding": _flooding, "sequential": _sequential, "random": _random,
           "residual": _residual}


def _eager_loop(graph, semiring, sweep, f2v, tol, max_iters) -> BPResult:
    residuals, messages, it = [], 0, 0
    for it in range(max_iters):  # noqa: B007
        f2v, res = sweep(f2v, it)[:2]
        residuals.append(float(ops.detach(res)))
        messages += sweep_messages(graph)
        if residuals[-1] < tol:
            break
    return BPResult(graph, semiring, f2v, residuals, it + 1 if max_iters else 0, messages, tol)


def _traced_loop(graph, semiring, sweep, f2v, tol, max_iters) -> BPResult:
    module = backend_of_graph(graph)
    proto = graph.prototype()

    def body(carry, it):
        f2v, done, count = carry
        new, res, _ = sweep(f2v, it)
        if tol <= 0:  # it never converges: every iteration runs, nothing to freeze
            return (new, done, count + 1.0), res
        f2v = ops.where(done, f2v, new)
        count = count + ops.where(done, 0.0, 1.0)
        return (f2v, ops.or_(done, res < tol), count), res

    init = (f2v, ops.new_zeros(proto, ()) > 1.0, ops.new_zeros(proto, ()))
    (f2v, _, count), residuals = module.scan(body, init, ops.new_array(
        proto, np.arange(max_iters)))
    per_iter = sweep_messages(graph)
    return BPResult(graph, semiring, f2v, residuals, count, count * per_iter, tol)


def sweep_messages(graph) -> int:
    """Messages one iteration of any schedule sends (each edge once)."""
    return graph.num_edges
