"""Anytime belief propagation on sparse domains (Singh 2014, chapter 7.2).

BP on sparse domains ``S_i`` (a subset of each variable's states) fixes the marginals of the
other states at 0: it is BP on the truncated model, whose factors are indexed at ``S``.
Here the truncation is a mask on the padded tables (``NEG``, a finite ``log 0``, at the
states outside ``S``): messages, beliefs and the Bethe log Z restricted to ``S`` are those of
BP on the truncated model, and the arrays keep their shapes, so every domain step reuses
one compiled sweep.

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
from funsor_core.algorithms.loopy.bp import BPResult, run_bp
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph
from funsor_core.algorithms.loopy.messages import (
    Semiring,
    factor_to_var,
    var_to_factor,
    variable_sums,
)

__all__ = ["anytime_bp", "sparse_bp", "AnytimeStep", "PRIORITIES", "domain_mask",
           "message_work"]

PRIORITIES = ("fixed", "dynamic")

_BAD_DOMAIN = ("domains: variable '{name}' is {domain}, so its sparse domain must be a "
               "non-empty set of states in 0..{last}; got {values!r}")
_UNKNOWN = ("domains: '{name}' is not a variable of the model (variables: {names}); "
            "name only the model's variables, the others keep their full domains")


@dataclass
class AnytimeStep:
    """One converged step of anytime BP: the sparse ``domains`` (name -> sorted states),
    the BP ``result`` on them, and the message entries computed so far: a message
    ``f -> i`` counts the product of the sparse domain sizes of ``f``'s variables (the
    table entries a sparse implementation reads), see ``message_work``."""

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
        vals = np.asarray(sorted({int(v) for v in values}), dtype=np.int64)
        if not vals.size or vals.min() < 0 or vals.max() >= sizes[i]:
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
    active = mask.sum(1)
    total = 0
    for g in graph.groups:
        total += g.arity * int(np.prod(active[g.var_index], axis=1).sum())
    return total


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


def sparse_bp(graph: FactorGraph, domains: dict, sum_op=ops.logaddexp, *, init=None,
              **options) -> BPResult:
    """BP on the sparse ``domains`` of ``graph`` (its truncated model): beliefs keep the full
    domains, with probability 0 outside ``domains``; ``options`` as ``run_bp``'s.

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> r = sparse_bp(FactorGraph.build([f]), {"b": [1]})
        >>> np.exp(r.beliefs["a"].data).round(4).tolist(), round(float(np.exp(r.log_z.data)), 6)
        ([0.3333, 0.6667], 6.0)
    """
    return run_bp(_masked(graph, domain_mask(graph, domains)), sum_op, init=init, **options)


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
    m = x.max(axis=axes, keepdims=True) / t
    return t * (np.log(np.exp(x / t - m).sum(axis=axes)) + np.squeeze(m, axes))


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
               max_iters: int = 1000, temperature: float = 1.0, step_iters: int | None = None):
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

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> [len(s.domains["a"]) + len(s.domains["b"]) for s in anytime_bp([f])]
        [2, 3, 4]
    """
    if priority not in PRIORITIES:
        raise ValueError(f"unknown priority {priority!r}; choose one of {PRIORITIES}")
    if grow < 1:
        raise ValueError(f"grow must be at least 1, got {grow}")
    if step_iters is not None and step_iters < 1:
        raise ValueError(f"step_iters must be None or at least 1, got {step_iters}")
    factors = list(factors)
    graph = FactorGraph.build(factors)
    if not all(ops.is_concrete(f.data) for f in factors):  # priorities are read as numbers
        raise TypeError("anytime_bp grows the domains by reading message values, so it does "
                        "not run under jax.jit (traced factors); run it eagerly, or jit "
                        "loopy_bp(domains=...) on the domains it chose")
    semiring = Semiring(sum_op, temperature)
    valid = np.arange(graph.D)[None, :] < np.array(graph.sizes)[:, None]
    fixed = np.where(valid, fixed_priorities(graph, semiring), -np.inf)
    mask = np.zeros_like(valid)
    mask[np.arange(len(graph.names)), np.argmax(fixed, axis=1)] = True
    options = dict(schedule=schedule, damping=damping, tol=tol, temperature=temperature)
    f2v, entries = None, 0
    while True:
        full = not (valid & ~mask).any()
        iters = max_iters if full or step_iters is None else min(step_iters, max_iters)
        result = run_bp(_masked(graph, mask), sum_op, init=f2v, max_iters=iters, **options)
        entries += int(result.num_messages) // max(graph.num_edges, 1) * message_work(graph,
                                                                                     mask)
        domains = {k: tuple(np.flatnonzero(mask[i]).tolist()) for i, k in enumerate(graph.names)}
        yield AnytimeStep(domains, result, entries)
        left = valid & ~mask
        if not left.any():
            return
        pri = fixed if priority == "fixed" else dynamic_priorities(graph, semiring,
                                                                   result.f2v, mask)
        pri = np.where(left, pri, -np.inf).reshape(-1)
        for flat in np.argsort(-pri, kind="stable")[: min(grow, int(left.sum()))]:
            mask[np.unravel_index(flat, mask.shape)] = True
        # Warm start: the messages so far, uniform (0) where they were log 0 (new states).
        f2v = ops.where(result.f2v < NEG / 2, 0.0, result.f2v)
