"""A schedule's terms built step by step, where its array program may not stand in (under
``lazy``, a tape, a user rule): ``build_steps``, and the lazy roots it records.

Each step is built through the active interpretation, so every interpretation sees each
Contraction and Reduce. What a step's constructor checks and sorts depends on the
structure of its operands only, and a schedule fixes that structure, so the first build of a
schedule whose steps all come out as their plain terms (no rule rewrote one) keeps, per
Contraction step, the canonical order of its operands, the merged inputs and the output
(``_RECIPES``); later builds of that schedule pass them to ``Contraction.prepared`` instead
of re-checking, and build a Reduce step by its rules directly (what ``Funsor.reduce`` runs
after its checks). A step that comes out otherwise turns the rest back to the constructors.

The lone result of such a plain build from distinct factors is recorded (``recorded_root``):
its tree is a function of the schedule, so ``apply_optimizer`` finds the program that
computes it without walking it (``algorithms.eliminate.term_program``).

Example:
    >>> from interpretations import lazy
    >>> from funsor_core.algorithms.eliminate.schedule import plan_elimination, structure_of
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> s = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [f]),
    ...                      frozenset("ij"), frozenset("i"))
    >>> with lazy:
    ...     e = build_steps(s, [f])[0]
    >>> type(e).__name__, recorded_root(e)[0] is s
    ('Reduce', True)
"""

from __future__ import annotations

import weakref
from functools import partial
from operator import attrgetter, is_
from typing import Any

from funsor_core.algorithms.contract.replay import CONTRACT
from funsor_core.algorithms.eliminate.graph import _contract
from funsor_core.engine.cache import FastCache
from funsor_core.engine.fast_path import eager_rules, run_rules
from funsor_core.terms.base import Reduce
from funsor_core.terms.contraction import Contraction

__all__ = ["build_steps", "recorded_root"]

_DATA = attrgetter("data")
_ref = weakref.ref


def build_steps(schedule: Any, factors) -> list:
    """The results of ``schedule`` (a ``Schedule``) on ``factors``, each step's term built
    through the active interpretation (see the module's docstring).

    Example:
        >>> from funsor_core.algorithms.eliminate.schedule import plan_elimination, structure_of
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> s = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [f]),
        ...                      frozenset("j"), frozenset())
        >>> build_steps(s, [f])[0].data
        array([3., 3.])
    """
    sum_op, prod_op = schedule.sum_op, schedule.prod_op
    values = list(factors)
    # Whether every step came out as the plain term of its step: then the recipe holds, and a
    # lone result built from distinct factors is recorded.
    plain = schedule.program is not None and len(schedule.outputs) == 1
    recipe = _RECIPES.data.get(id(schedule)) if plain else None
    if recipe is not None and recipe[0] is schedule and len(
            set(map(type, map(_DATA, factors)))) == 1:  # (one array type: one backend)
        done = _build_by_recipe(sum_op, prod_op, schedule.steps, recipe[1], values)
        plain = done == len(schedule.steps)
        done = len(values) - len(factors)
        found = None
    else:
        done = 0
        found = [] if plain else None
    for kind, operands, names in schedule.steps[done:]:
        group = [values[i] for i in operands]
        if kind == CONTRACT:
            value = _contract(sum_op, prod_op, group, names)
        else:
            value = group[0].reduce(prod_op, names)
        if plain:
            plain = _is_plain(value, sum_op if kind == CONTRACT else prod_op, group, names)
            if found is not None and plain:
                found.append(_step_recipe(value, group))
        values.append(value)
    results = [values[k] for k in schedule.outputs]
    if plain and schedule.steps and len(set(map(id, factors))) == len(factors):
        if found is not None:
            _RECIPES.put(id(schedule), (schedule, tuple(found)))
        _record(results[0], schedule, factors)
    return results


def _build_by_recipe(sum_op, prod_op, steps: tuple, recipe: tuple, values: list) -> int:
    # Builds steps by their recipe onto ``values`` while each comes out plain; returns the
    # index of the first that did not (built too: the run ends there), or len(steps).
    for k, ((kind, operands, names), step) in enumerate(zip(steps, recipe)):
        if step is not None:  # a Contraction: (operand order, merged inputs, output)
            order, inputs, out = step
            terms = tuple([values[operands[i]] for i in order])
            value = Contraction.prepared((sum_op, prod_op, names, terms), inputs, out)
            values.append(value)
            if type(value) is not Contraction or not all(map(is_, value.terms, terms)):
                return k
        else:  # a Reduce of names its operand has, by a reduction op (checked once)
            op = sum_op if kind == CONTRACT else prod_op
            arg = values[operands[0]]
            rules = eager_rules((Reduce, type(op), type(arg), frozenset))
            # (``()``: built as it is, e.g. under ``lazy``: ``run_rules`` builds the term the
            # constructor would, its arguments being what ``_prepare`` returns for them.)
            value = (Reduce(op, arg, names) if rules is None
                     else run_rules(rules, Reduce, (op, arg, names)))
            values.append(value)
            if type(value) is not Reduce or value.arg is not arg or value.op is not op:
                return k
    return len(steps)


def _step_recipe(term, group: list) -> tuple | None:
    if type(term) is not Contraction:
        return None
    where = {id(t): i for i, t in enumerate(group)}
    inputs: dict = {}
    for t in term.terms:
        inputs.update(t.inputs)
    return tuple(where[id(t)] for t in term.terms), inputs, term.output


def _is_plain(term, op, group: list, names: frozenset) -> bool:
    # The term of a step as its constructor builds it when no rule rewrites it: the
    # Contraction of the group (in any order) or the Reduce of the lone operand, over names.
    cls = type(term)
    if cls is Contraction:
        args = term._args
        return (args[0] is op and args[2] == names and len(args[3]) == len(group) > 1
                and sorted(map(id, args[3])) == sorted(map(id, group)))
    return (cls is Reduce and len(group) == 1 and term.arg is group[0] and term.op is op
            and term.reduced_vars == names)


# Per schedule whose steps were built plain once: (schedule, per step its Contraction's
# (operand order, merged inputs, output), or None for a Reduce), by id(schedule); the entry
# keeps its schedule, so the id is not reused while it is held.
_RECIPES = FastCache("eliminate.step_recipes", 256)

# Lazy roots built plain from distinct factors: id(root) -> (weak reference to the root, its
# schedule, its factors). The entry leaves with its root (the reference's callback), so it
# keeps no factor alive any longer than the root does.
_ROOTS = FastCache("eliminate.lazy_roots", 256)


def _record(root, schedule, factors) -> None:
    key = id(root)
    entry = _ROOTS.data.get(key)
    if entry is not None and entry[0]() is root:
        return
    _ROOTS.put(key, (_ref(root, partial(_forget, key)), schedule, tuple(factors)))


def _forget(key: int, ref) -> None:
    entry = _ROOTS.data.get(key)
    if entry is not None and entry[0] is ref:
        del _ROOTS.data[key]


def recorded_root(expr) -> tuple | None:
    """``(schedule, factors)`` where ``expr`` is the lone lazy result that ``build_steps``
    built from distinct ``factors`` step by step as ``schedule`` planned (each step the plain
    Contraction or Reduce of its operands, no rule rewriting it), so that ``expr``'s tree is
    a function of the schedule alone; None otherwise.

    Example:
        >>> f = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> recorded_root(f) is None
        True
    """
    entry = _ROOTS.data.get(id(expr))
    if entry is None or entry[0]() is not expr:
        return None
    return entry[1], entry[2]
