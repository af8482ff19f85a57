"""Lazy sum-product terms of Tensors run as the array program of their own schedule.

A lazy ``sum_product`` (or ``einsum``) of Tensors is a small tree of ``Contraction`` and
``Reduce`` terms over Tensor leaves, and that tree is already a ``Schedule``: each
Contraction is a "contract" step of its terms over its reduced variables, each Reduce by the
product op a "reduce" step over its plates (a Reduce by the sum op: a contract step of one
operand). ``term_program`` walks the tree once (one pass over the nodes, no term rebuilt),
keys it by structure alone (leaf inputs and outputs, ops, names, sharing) and compiles that
key once into the ``ArrayProgram`` that ``sum_product`` runs for the same schedule
(``algorithms.contract.replay``); ``run_term_program`` runs it on the leaves' arrays.

It stands in only where that changes nothing but rounding: the program's guard passes
(``ArrayProgram.run``: under ``exact``, with no hook, wrapping interpretation or user rule on
the way) and every node is a kernel call (real scalar Tensors, one semiring with a kernel,
whose reduction distributes without reading signs). Anything else gives None, and the caller
takes its general path. ``apply_optimizer`` uses it: under ``exact`` the pairwise plan it
would build is one order of the same sum, which the program's own plan (opt_einsum's path
per Contraction, the plated elimination's order) computes as well.

Example:
    >>> from funsor_core.sum_product import sum_product
    >>> from interpretations import lazy
    >>> f = fc.Tensor(np.full((2, 3), 2.0), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> g = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
    >>> with lazy:
    ...     e = sum_product(ops.add, ops.mul, [f, g], frozenset("ij"), frozenset("i"))
    >>> float(run_term_program(e).data)  # j is global: sum_j g(j) * prod_i f(i, j)
    12.0
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from funsor_core import ops
from funsor_core.algorithms.contract.replay import CONTRACT, REDUCE, compile_elimination
from funsor_core.algorithms.eliminate.built_steps import recorded_root
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.cache import FastCache, cached
from funsor_core.terms.base import Reduce
from funsor_core.terms.contraction import Contraction

__all__ = ["term_program", "run_term_program"]

_DATA, _IKEY, _OUTPUT = attrgetter("data"), attrgetter("_ikey"), attrgetter("output")


class _Unrecognized(Exception):
    # A node that is not a Contraction, Reduce or Tensor, or a tree deeper than _MAX_DEPTH.
    pass


# Deeper trees take apply_optimizer's passes, which walk any depth: a recursive walk is
# twice as fast as a stack-driven one on the few levels a plated model has (4 vs 9 us).
_MAX_DEPTH = 100


def _walk(expr) -> tuple | None:
    # Post-order over the DAG of Contraction/Reduce nodes (cons-hashing shares equal
    # subterms: each is one value). Returns (leaves, leaf structures, steps); a step is
    # (tag, refs), where a ref k >= 0 is the k-th leaf and ~s the s-th step. None at the
    # first node of another kind.
    if type(expr) is Contraction and set(map(type, expr.terms)) == {Tensor}:
        # One Contraction of Tensors (a tree's sum_product): its structure in C-level passes,
        # as ``structure_of`` gathers it, since a 1,000-variable tree has 2,000 leaves.
        terms = expr.terms
        tag = (CONTRACT, expr.red_op, expr.bin_op, expr.reduced_vars)
        return (list(terms), tuple(zip(map(_IKEY, terms), map(_OUTPUT, terms))),
                ((tag, tuple(range(len(terms)))),))
    leaves: list = []
    leaf_keys: list = []
    steps: list = []
    try:
        _visit(expr, 0, {}, leaves, leaf_keys, steps)
    except _Unrecognized:
        return None
    return leaves, tuple(leaf_keys), tuple(steps)


def _visit(node, depth: int, refs: dict, leaves: list, leaf_keys: list, steps: list) -> int:
    # One node of ``_walk``'s post-order: its ref, entering its children first. A module
    # function, not a closure: a closure that calls itself is a reference cycle, and that cycle
    # would keep the leaves (arrays, or an eager jax.grad's tracers and their whole trace)
    # alive until the next cyclic collection.
    ref = refs.get(id(node))
    if ref is not None:
        return ref
    cls = type(node)
    if cls is Tensor:
        ref = refs[id(node)] = len(leaves)
        leaves.append(node)
        leaf_keys.append((node._ikey, node.output))
        return ref
    if depth > _MAX_DEPTH:
        raise _Unrecognized
    if cls is Contraction:
        kids = tuple([_visit(c, depth + 1, refs, leaves, leaf_keys, steps) for c in node.terms])
        tag = (CONTRACT, node.red_op, node.bin_op, node.reduced_vars)
    elif cls is Reduce:
        kids = (_visit(node.arg, depth + 1, refs, leaves, leaf_keys, steps),)
        tag = (REDUCE, node.op, None, node.reduced_vars)
    else:
        raise _Unrecognized
    ref = refs[id(node)] = ~len(steps)
    steps.append((tag, kids))
    return ref


def _semiring(steps: tuple) -> tuple | None:
    # The one (sum_op, prod_op) of the tree's Contractions, or None: none, or several.
    found = {(tag[1], tag[2]) for tag, _ in steps if tag[0] == CONTRACT}
    return found.pop() if len(found) == 1 else None


@cached("eliminate.term_programs", maxsize=256)
def _compile(leaf_keys: tuple, steps: tuple) -> Any:
    semiring = _semiring(steps)
    if semiring is None or semiring in ops.NONNEGATIVE_DISTRIBUTIVE_OPS:
        return None  # (max, mul) and (min, mul) distribute only over signs we do not read
    sum_op, prod_op = semiring
    n = len(leaf_keys)
    schedule = []
    for (kind, op, _, names), refs in steps:
        pos = tuple(r if r >= 0 else n + ~r for r in refs)
        if kind == REDUCE:
            if op is sum_op:
                kind = CONTRACT  # a lone operand summed out
            elif op is not prod_op:
                return None
        schedule.append((kind, pos, names))
    return compile_elimination(sum_op, prod_op, leaf_keys, schedule, (n + len(steps) - 1,))


def term_program(expr) -> tuple | None:
    """``(program, leaves)`` for a lazy tree of Contractions and Reduces over Tensors whose
    steps are kernel calls in one semiring: the compiled ``ArrayProgram`` (cached by the
    tree's structure) and the Tensors whose arrays it takes, in order; None otherwise.

    Example:
        >>> from interpretations import lazy
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> with lazy:
        ...     e = f.reduce(ops.add, "j").reduce(ops.mul, "i")
        >>> term_program(e) is None  # no Contraction: no semiring to name
        True
        >>> g = fc.Tensor(np.ones((3, 4)), {"j": fc.Bint[3], "k": fc.Bint[4]})
        >>> with lazy:
        ...     e = fc.Contraction(ops.add, ops.mul, frozenset("j"), (f, g))
        >>> term_program(e)[0]
        ArrayProgram(1 steps, 1 results)
    """
    walked = _walk(expr)
    if walked is None or not walked[2]:
        return None
    leaves, leaf_keys, steps = walked
    program = _compile(leaf_keys, steps)
    return None if program is None else (program, leaves)


# A lazy root that run_schedule built as its schedule planned (``recorded_root``) has the
# tree of that schedule, so the walk's answer for one such root holds for all of them: per
# schedule, the program and the walk's leaves as positions among the schedule's factors.
# Values are then those of the walk, bit for bit, without walking. (Schedule -> entry by id;
# the entry keeps its schedule, so the id is not reused while it is held.)
_WALKS = FastCache("eliminate.recorded_walks", 256)


def _recorded_program(expr) -> tuple | None:
    recorded = recorded_root(expr)
    if recorded is None:
        return None
    schedule, factors = recorded
    entry = _WALKS.data.get(id(schedule))
    if entry is None or entry[0] is not schedule:
        found = term_program(expr)
        where = {id(f): k for k, f in enumerate(factors)}
        if found is None or not all(id(t) in where for t in found[1]):
            entry = (schedule, None, ())
        else:
            entry = (schedule, found[0], tuple(where[id(t)] for t in found[1]))
        _WALKS.put(id(schedule), entry)
    if entry[1] is None:
        return None
    return entry[1], [factors[k] for k in entry[2]]


def run_term_program(expr) -> Tensor | None:
    """``expr``'s value computed by its ``term_program`` on its leaves' arrays under the
    active interpretation, or None where there is no program or its guard declines (e.g.
    under ``lazy``): then the caller builds terms.

    Example:
        >>> from interpretations import lazy
        >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> g = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
        >>> with lazy:
        ...     e = fc.Contraction(ops.add, ops.mul, frozenset("j"), (f, g))
        >>> run_term_program(e).data
        array([ 3., 12.])
        >>> with lazy:
        ...     run_term_program(e) is None
        True
    """
    found = _recorded_program(expr) or term_program(expr)
    if found is None:
        return None
    program, leaves = found
    arrays = program.run(list(map(_DATA, leaves)))
    if arrays is None:
        return None
    # As ``run_schedule``: the rule of the last step builds its result with Tensor.make from
    # the array its registered implementation computes and these inputs.
    ikey = program.out_ikeys[0]
    return Tensor.make(arrays[0], dict(ikey), "real", ikey=ikey, output=leaves[0].output)
