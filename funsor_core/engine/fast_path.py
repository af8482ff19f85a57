"""The one fast path from rules to array programs: registration and the one guard.

A rule may register an *array implementation* of a kind of step: a function on arrays that
computes what the rule computes for the terms such a step stands for (``"contraction"``,
``"reduce"``: ``algorithms.contract.replay``; ``"collapse"``: the moment-matching collapse
that ``algorithms.filter.fused`` repeats). Code that repeats a computation on arrays instead
of building its terms asks ``fast_path(key, kind)`` for the implementation to call. The answer
is None unless building a term of ``key`` under the active interpretation would only call its
rules in order (``Interpretation.direct_rules``: no canonicalization hook, no interpretation
wrapping construction, no debug log) and the first of them registered an implementation of
``kind``. A user rule registered ahead of the built-in one, ``lazy``, a tape, or the debug log
thus turn the fast path off, and the terms are built again.

The eager operators (``f + g``, ``f(i=0)``, ``f.reduce(op, "i")``) take the same guard per
call through ``eager_rules``: when building their term would only call its rules, they make
the checks of the term's ``_prepare`` and call the rules themselves, skipping the constructor
and the interpreter's frames; the rules (and so every interpretation's semantics) are the same.

A rule may also register an *eager program*: a function that returns what the rule returns for
the commonest arguments of an eager operator (two Tensors with the same inputs, one integer
index) in one frame, or None where it would have to check more. The operator looks it up for the
first of its ``eager_rules`` in ``eager_programs(kind)`` (one dict lookup), or reads it in one
lookup of the active interpretation's cached table under ``eager_program_key(kind, key)``
(``eager_program`` fills it), and, when it returns None, runs the rules as above.

This is the only place that decides whether a fast path may run; callers never inspect
``rules[0]`` for anything but the lookup in a table this module keeps.

Example:
    >>> from funsor_core.engine.fast_path import array_program, fast_path
    >>> toy = Interpretation("toy_fast", fallback=None)
    >>> @toy.register(fc.Binary, object, fc.Number, fc.Number)
    ... @array_program("toy_add", lambda x, y: x + y)
    ... def toy_binary_number_number(op, lhs, rhs):
    ...     return fc.Number(lhs.data + rhs.data)
    >>> key = (fc.Binary, type(ops.add), fc.Number, fc.Number)
    >>> with toy:
    ...     fast_path(key, "toy_add")(1.0, 2.0)
    3.0
    >>> fast_path(key, "another_kind", toy) is None
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from funsor_core.engine.cons import build
from funsor_core.engine.interpreter import _DEFAULT, _STATE_GET, Interpretation, get_interpretation
from funsor_core.engine.patterns import type_key

__all__ = ["array_program", "builds_as_is", "eager_program", "eager_program_key", "eager_programs",
           "eager_rules", "fast_path", "rebuild", "register_array_program", "run_rules"]

# rule function -> {kind: array implementation}. A registry, not a cache: one entry per rule
# that declares an implementation, never evicted.
_PROGRAMS: dict[Callable, dict[str, Callable]] = {}
# kind -> {rule function: implementation}: the same registry by kind, for the eager operators'
# one-lookup guard (``eager_programs``).
_BY_KIND: dict[str, dict[Callable, Callable]] = {}


def register_array_program(rule: Callable, kind: str, impl: Callable) -> Callable:
    """Declare that ``rule`` computes what ``impl`` computes on arrays for a step of
    ``kind``; returns ``rule`` unchanged. The contract of each kind (the arguments ``impl``
    takes) is defined by the code that runs it.

    Example:
        >>> def toy_rule(op, arg, reduced_vars):
        ...     return None
        >>> register_array_program(toy_rule, "toy_kind", abs) is toy_rule
        True
    """
    _PROGRAMS.setdefault(rule, {})[kind] = impl
    _BY_KIND.setdefault(kind, {})[rule] = impl
    return rule


def eager_programs(kind: str) -> dict[Callable, Callable]:
    """The live table ``{rule: implementation}`` of the rules that registered an
    implementation of ``kind``: an eager operator holding ``rules = eager_rules(key)`` may call
    ``eager_programs(kind).get(rules[0])`` in place of the first rule, with the arguments the
    kind's contract names, and must run the rules when it returns None.

    Example:
        >>> @array_program("toy_eager", lambda x: x + 1)
        ... def toy_rule3(x):
        ...     return None
        >>> eager_programs("toy_eager")[toy_rule3](1)
        2
    """
    return _BY_KIND.setdefault(kind, {})


def array_program(kind: str, impl: Callable) -> Callable[[Callable], Callable]:
    """``register_array_program`` as a decorator on a rule.

    Example:
        >>> @array_program("toy_kind2", abs)
        ... def toy_rule2(op, arg, reduced_vars):
        ...     return None
        >>> toy_rule2.__name__
        'toy_rule2'
    """

    def mark(rule: Callable) -> Callable:
        return register_array_program(rule, kind, impl)

    return mark


def fast_path(key: tuple, kind: str, interp: Interpretation | None = None) -> Any:
    """The array implementation of ``kind`` that may stand in for building a term of dispatch
    key ``key`` under ``interp`` (default: the active interpretation), or None: the guard of
    every fast path.

    Example:
        >>> from interpretations import exact, lazy
        >>> key = (fc.Reduce, type(ops.add), fc.Tensor, frozenset)
        >>> fast_path(key, "reduce", exact) is not None, fast_path(key, "reduce", lazy)
        (True, None)
    """
    rules = (interp or get_interpretation()).direct_rules(key)
    if not rules:
        return None
    rule = rules[0]
    impls = _PROGRAMS.get(rule)
    if impls is None:
        if type(rule) is not functools.partial:
            return None
        impls = _PROGRAMS.get(rule.func)  # a stateful kind's rule, bound to its instance
        if impls is None:
            return None
    return impls.get(kind)


def builds_as_is(key: tuple, interp: Interpretation | None = None) -> bool:
    """Whether a term of dispatch key ``key`` would be built as it is under ``interp``: no
    rule matches it and nothing else runs (the guard for skipping a term's construction).

    Example:
        >>> from interpretations import exact
        >>> builds_as_is((fc.Tensor, np.ndarray, tuple, str), exact)
        True
    """
    return (interp or get_interpretation()).direct_rules(key) == ()


_MISSING = object()


def eager_rules(key: tuple) -> tuple | None:
    """``direct_rules(key)`` of the active interpretation, cached per instance and type key
    (resolved once, then one dict lookup): the rules that building a term of dispatch key
    ``key`` would call, in order, when that is all it would do; None or ``()`` otherwise.

    A caller holding arguments that passed the term's ``_prepare`` unchanged may call the
    rules in order and, when all decline, build the term with its constructor (which tries
    them again). Classes whose dispatch looks inside tuples (``_deep_key``) get None.

    Example:
        >>> from interpretations import exact, lazy
        >>> key = (fc.Binary, type(ops.add), fc.Tensor, fc.Tensor)
        >>> rules = eager_rules(key)
        >>> with lazy:
        ...     lazy_rules = eager_rules(key)
        >>> rules[0].__name__, rules is exact.direct_rules(key), lazy_rules
        ('exact_binary_tensor_tensor', True, ())
    """
    state = _STATE_GET(None)
    interp = _DEFAULT[0] if state is None else state[0]
    rules = interp._direct.get(key, _MISSING)
    if rules is _MISSING:
        rules = None if key[0]._deep_key else interp.direct_rules(key)
        interp._direct_box.put(key, rules)
    return rules


class _ProgramKey:
    # A key of the ``_direct`` table hashed and compared by identity (one per (kind, type
    # key), interned below): a tuple key would be hashed element by element on every call.
    __slots__ = ("kind", "key")

    def __init__(self, kind: str, key: tuple) -> None:
        self.kind, self.key = kind, key

    def __repr__(self) -> str:
        return f"eager_program_key({self.kind!r}, {self.key!r})"


# (kind, type key) -> its _ProgramKey. A registry of the operators' fixed keys, never evicted.
_PROGRAM_KEYS: dict[tuple, _ProgramKey] = {}


def eager_program_key(kind: str, key: tuple) -> _ProgramKey:
    """The key under which ``eager_program`` caches the eager program of ``kind`` for the type
    key ``key`` in the active interpretation's ``_direct`` table (the table of
    ``eager_rules``; class and type-tuple keys never equal it). An operator on the hot path
    may read that table with this key itself, and must call ``eager_program(pkey)`` where it
    finds nothing (None). One object per (kind, key), so a lookup hashes an address.

    Example:
        >>> k = eager_program_key("eager_subs_int", (fc.Subs, fc.Tensor, tuple))
        >>> k is eager_program_key("eager_subs_int", (fc.Subs, fc.Tensor, tuple))
        True
    """
    pkey = _PROGRAM_KEYS.get((kind, key))
    if pkey is None:
        pkey = _PROGRAM_KEYS.setdefault((kind, key), _ProgramKey(kind, key))
    return pkey


def eager_program(pkey: _ProgramKey) -> Any:
    """``eager_programs(pkey.kind).get(eager_rules(pkey.key)[0])`` under the active
    interpretation, or False where there is none; cached per instance in the table
    ``eager_rules`` uses (cleared with it whenever a rule, a chain or the debug switch
    changes), under ``pkey`` (from ``eager_program_key``).

    Example:
        >>> from interpretations import lazy
        >>> pkey = eager_program_key("eager_subs_int", (fc.Subs, fc.Tensor, tuple))
        >>> eager_program(pkey).__name__
        'subs_tensor_int'
        >>> with lazy:
        ...     eager_program(pkey)
        False
    """
    state = _STATE_GET(None)
    interp = _DEFAULT[0] if state is None else state[0]
    program = interp._direct.get(pkey)
    if program is None:
        rules = eager_rules(pkey.key)
        program = (_BY_KIND.get(pkey.kind, {}).get(rules[0]) if rules else None) or False
        interp._direct_box.put(pkey, program)
    return program


def run_rules(rules: tuple, cls: type, args: tuple) -> Any:
    """Build ``cls(*args)`` as the interpreter does for a type key whose ``eager_rules`` are
    ``rules``: the first rule's result that is not None, else the term as it is (cons-hashed).
    ``args`` must be what the class's ``_prepare`` returns for them.

    Example:
        >>> x = fc.Tensor(np.arange(2.0), {"i": fc.Bint[2]})
        >>> rules = eager_rules((fc.Unary, type(ops.exp), fc.Tensor))
        >>> run_rules(rules, fc.Unary, (ops.exp, x)).data
        array([1.        , 2.71828183])
    """
    for rule in rules:
        result = rule(*args)
        if result is not None:
            return result
    return build(cls, args)


def rebuild(term: Any) -> Any:
    """``type(term)(*term._args)`` under the active interpretation, for a term whose arguments
    are its own: what the constructor would give, without its ``_prepare`` (the arguments of
    a built term are already prepared, and ``_prepare`` is idempotent on them) and, when the
    rules would be all that runs and all decline, without hashing the arguments again (the
    cons table would return ``term`` itself).

    ``reinterpret`` calls this for a term none of whose children changed: a pass of
    ``apply_optimizer`` over a Contraction of 2,000 Tensors that no rule rewrites then costs
    its rule calls, not a second validation of 2,000 terms.

    Example:
        >>> from interpretations import exact, lazy
        >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> with lazy:
        ...     y = x + x
        >>> rebuild(y).data
        array([2., 2.])
        >>> with lazy:
        ...     rebuild(y) is y
        True
    """
    cls, args = type(term), term._args
    state = _STATE_GET(None)
    interp = _DEFAULT[0] if state is None else state[0]
    rules = interp.direct_rules(type_key(cls, args))
    if rules is None:
        return interp.interpret(cls, args)
    for rule in rules:
        result = rule(*args)
        if result is not None:
            return result
    return term
