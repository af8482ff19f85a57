"""The interpreter: every term constructor passes through here.

A term constructor ``Cls(*args)`` asks the active interpretation for the rules matching the
*type key* ``(Cls, type(arg0), type(arg1), ...)``. Rules are tried most specific first, then
the rules of the interpretation's fallback, and so on down the chain; the first rule that
returns a value wins. When every rule declines (returns ``None``) the term is built as it is
(``reflect``), cons-hashed.

Interpretations are *kinds* (classes) that own the rule tables, and *instances* that carry
state. ``Interpretation("exact", fallback=normalize)`` makes a stateless kind with one
instance; a stateful kind subclasses ``Interpretation`` and its rules receive the instance
first (see ``Interpretation.register``). Each instance names its fallback: a fixed
interpretation, or ``ENTERED``, the interpretation that was active when it was entered.

Patterns may look inside tuples of terms: ``Tuple[Gaussian, Tensor]`` matches a tuple of
exactly a Gaussian and a Tensor, ``Tuple[(Tensor, Number), ...]`` any tuple of Tensors and
Numbers. The rule list for a type key is resolved once and cached per instance, so the hot
path is one dict lookup.

Example:
    >>> from interpretations import lazy, exact
    >>> with lazy:
    ...     get_interpretation().name
    'lazy'
"""

from __future__ import annotations

import contextvars
import functools
import logging
import weakref
from collections.abc import Callable
from typing import Any

from multipledispatch import Dispatcher
from multipledispatch.utils import expand_tuples

__all__ = [
    "Interpretation", "ENTERED", "get_interpretation", "reflect", "set_default_interpretation",
    "set_debug", "interpret", "build", "Tuple", "rule_name",
]

_LOG = logging.getLogger("funsor_core.rules")
_DEBUG = [False]


def set_debug(on: bool = True) -> None:
    """Log every rule that fires (its name, input term and output) to ``funsor_core.rules``.

    Example:
        >>> set_debug(False)
    """
    _DEBUG[0] = bool(on)
    if on:
        logging.basicConfig()
        _LOG.setLevel(logging.DEBUG)


def rule_name(rule: Callable) -> str:
    """The name of a rule as the debug log shows it (stateful rules are bound partials).

    Example:
        >>> rule_name(rule_name)
        'rule_name'
    """
    return getattr(getattr(rule, "func", rule), "__name__", repr(rule))


# =============================================================================================
# Tuple patterns: a tuple argument's type key is the class Tuple[type(x0), type(x1), ...].
class _TupleMeta(type):
    """Classes ``Tuple[T0, T1, ...]`` (fixed length) and ``Tuple[T, ...]`` (any length).

    An element may be a class, a tuple of classes (a union) or another ``Tuple[...]``.
    ``issubclass`` compares elementwise, so multipledispatch orders patterns by specificity.
    """

    _cache: dict = {}

    def __getitem__(cls, items) -> type:
        if not isinstance(items, tuple):
            items = (items,)
        variadic = len(items) == 2 and items[1] is Ellipsis
        elems = (items[0],) if variadic else items
        if any(e is Ellipsis for e in elems):
            raise TypeError(f"Tuple[...] takes element types, or one type and '...' (any "
                            f"length), got {items!r}")
        key = (elems, variadic)
        result = _TupleMeta._cache.get(key)
        if result is None:
            if len(_TupleMeta._cache) >= _MAX_CACHE:
                _TupleMeta._cache.clear()  # a pattern class stays valid; only reuse is lost
            names = ", ".join(_elem_name(e) for e in elems) + (", ..." if variadic else "")
            result = _TupleMeta(f"Tuple[{names}]", (tuple,), {
                "__slots__": (), "_elems": elems, "_variadic": variadic})
            _TupleMeta._cache[key] = result
        return result

    def __subclasscheck__(cls, sub) -> bool:
        if cls is Tuple:
            return isinstance(sub, _TupleMeta)
        if not isinstance(sub, _TupleMeta) or sub is Tuple:
            return False
        if cls._variadic:
            elem = cls._elems[0]
            return all(_elem_le(e, elem) for e in sub._elems)
        if sub._variadic or len(sub._elems) != len(cls._elems):
            return False
        return all(_elem_le(a, b) for a, b in zip(sub._elems, cls._elems))

    def __instancecheck__(cls, obj) -> bool:
        return type(obj) is tuple and issubclass(tuple_type(obj), cls)

    def __repr__(cls) -> str:
        return cls.__name__


def _elem_name(e) -> str:
    if isinstance(e, tuple):
        return "(" + ", ".join(_elem_name(x) for x in e) + ")"
    return getattr(e, "__name__", repr(e))


def _elem_le(a, b) -> bool:
    # a <= b for pattern elements: every member of union a is a subclass of union b.
    if isinstance(a, tuple):
        return all(_elem_le(x, b) for x in a)
    if isinstance(b, tuple):
        return any(_elem_le(a, y) for y in b)
    return issubclass(a, b)


class Tuple(tuple, metaclass=_TupleMeta):
    """Pattern for tuple arguments: ``Tuple[Gaussian, Tensor]``, ``Tuple[(Tensor, Number), ...]``.

    Example:
        >>> issubclass(Tuple[int, str], Tuple[object, ...])
        True
        >>> isinstance((1, "a"), Tuple[int, int])
        False
    """

    __slots__ = ()
    _elems: tuple = ()
    _variadic = True


_TUPLE_TYPES: dict[tuple, type] = {}

# Every cache keyed by types or type tuples is bounded by clearing it when it passes
# _MAX_CACHE entries: the check runs only on a miss, so the hot path stays one dict lookup,
# and a long-running program that keeps meeting new tuple shapes or classes (deep keys of
# Contractions of many terms) keeps its memory flat.
_MAX_CACHE = 4096
# Tuples longer than this are typed by their set of element types (see tuple_type).
_LONG_TUPLE = 8


def tuple_type(arg: tuple) -> type:
    """The type key of a tuple argument: ``Tuple`` of its elements' type keys.

    Example:
        >>> tuple_type((1, ("a", 2.0))).__name__
        'Tuple[int, Tuple[str, float]]'
    """
    elems = tuple(tuple_type(a) if type(a) is tuple else type(a) for a in arg)
    if len(elems) > _LONG_TUPLE:
        # A long tuple is typed by the set of its element types, as ``Tuple[(A, B), ...]``:
        # exact for every variadic pattern, and no fixed-length pattern is this long (register
        # refuses them), so the rules found are the same. A sum of 10^4 terms then has one key,
        # not one per length, and the caches stay small.
        elems = (*dict.fromkeys(elems), Ellipsis)
    result = _TUPLE_TYPES.get(elems)
    if result is None:
        if len(_TUPLE_TYPES) >= _MAX_CACHE:
            _TUPLE_TYPES.clear()
        if elems and elems[-1] is Ellipsis:
            union = elems[:-1]
            result = Tuple[union[0] if len(union) == 1 else union, ...]
        else:
            result = Tuple[elems] if elems else Tuple[()]
        _TUPLE_TYPES[elems] = result
    return result


def _uses_tuple_pattern(pattern) -> bool:
    if isinstance(pattern, tuple):
        return any(_uses_tuple_pattern(p) for p in pattern)
    return isinstance(pattern, _TupleMeta)


def type_key(cls: type, args: tuple) -> tuple:
    """The dispatch key of ``cls(*args)``: deep (tuples typed by their elements) when some
    rule for ``cls`` looks inside tuples, else the plain argument types."""
    if cls._deep_key:
        return (cls, *(tuple_type(a) if type(a) is tuple else type(a) for a in args))
    return (cls, *map(type, args))


# =============================================================================================
# Interpretations.
class _Entered:
    def __repr__(self) -> str:
        return "ENTERED"


ENTERED = _Entered()
"""Fallback marker: fall back to the interpretation active when this one was entered."""

_KIND_CACHES: list = []  # own-rule caches of every kind, cleared when a rule is added
_INSTANCES: weakref.WeakSet = weakref.WeakSet()


def _ignore_ambiguities(dispatcher, ambiguities) -> None:
    # Two equally specific patterns are both tried, in registration order; not an error.
    pass


class Interpretation:
    """An interpretation: a kind's rewrite rules, an instance's state, and a fallback.

    ``Interpretation(name, fallback)`` makes a stateless interpretation: a fresh kind with
    one instance, whose rules are registered with ``interp.register``. A stateful kind
    subclasses ``Interpretation``; all its instances share its rules, and each rule receives
    the instance whose chain is being tried as its first argument. ``fallback`` is a fixed
    interpretation, ``None`` (the end of every chain), or ``ENTERED``: the interpretation
    that was active when this one was entered (``with lazy: with MonteCarlo(...):`` falls
    back to ``lazy``).

    Use it as a context manager (``with lazy:``) or decorator (``@lazy``); nesting works and
    is isolated per thread and per asyncio task.

    Example:
        >>> toy = Interpretation("toy", fallback=reflect)
        >>> toy.name, toy.chain()
        ('toy', ['toy', 'reflect'])
    """

    stateful = False  # set on stateful kinds: their rules receive the instance first

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatchers: dict[type, Dispatcher] = {}
        cls._own_cache: dict[tuple, tuple] = {}
        _KIND_CACHES.append(cls._own_cache)

    def __new__(cls, *args, **kwargs):
        if cls is Interpretation:
            # A plain Interpretation(name, ...) is the one instance of a kind of its own.
            name = args[0] if args else kwargs["name"]
            cls = type(f"{name.title().replace('_', '')}Interpretation", (Interpretation,), {})
        return super().__new__(cls)

    def __init__(self, name: str, fallback: Interpretation | _Entered | None = None,
                 *, base: Interpretation | None = None) -> None:
        self.name = name
        self.fallback = base if base is not None else fallback
        self.base = None if self.fallback is ENTERED else self.fallback
        self._cache: dict[tuple, tuple] = {}
        self._entered: list = []
        _INSTANCES.add(self)

    # -- rules ---------------------------------------------------------------------------------
    @classmethod
    def register(cls, term_cls: type, *arg_types: Any) -> Callable:
        """Register a rule for terms ``term_cls(*args)`` whose args match ``arg_types``.

        A pattern is a class, a tuple of classes (any of them), or ``Tuple[...]`` to look
        inside a tuple argument. The rule returns the rewritten term, or ``None`` to decline.
        On a stateful kind, the rule is called as ``rule(interp, *args)``.

        Example:
            >>> toy = Interpretation("toy2", fallback=reflect)
            >>> @toy.register(fc.Binary, object, fc.Number, fc.Number)
            ... def toy_binary_number_number(op, lhs, rhs):
            ...     return fc.Number(42.0)
            >>> with toy:
            ...     (fc.Number(1.0) + fc.Number(2.0)).data
            42.0
        """
        if cls is Interpretation:
            raise TypeError("register rules on an interpretation or a kind, not the base class")

        def decorator(fn: Callable) -> Callable:
            dispatcher = cls._dispatchers.get(term_cls)
            if dispatcher is None:
                dispatcher = cls._dispatchers[term_cls] = Dispatcher(
                    f"{cls.__name__}_{term_cls.__name__}")
            # Rules with the same pattern are all kept, tried in registration order.
            for signature in expand_tuples((term_cls,) + tuple(arg_types)):
                signature = tuple(signature)
                same = dispatcher.funcs.get(signature)
                if same is None:
                    dispatcher.add(signature, [fn])
                else:
                    same.append(fn)
            dispatcher.reorder(on_ambiguity=_ignore_ambiguities)
            if any(_uses_tuple_pattern(t) for t in arg_types):
                _check_tuple_lengths(arg_types)
                _mark_deep(term_cls)
            for cache in _KIND_CACHES:
                cache.clear()
            for interp in list(_INSTANCES):
                interp._cache.clear()
            return fn

        return decorator

    @classmethod
    def own_rules(cls, key: tuple) -> tuple:
        """The rules of this kind alone matching ``key``, most specific first."""
        result = cls._own_cache.get(key)
        if result is None:
            rules = []
            for term_cls in key[0].__mro__:
                dispatcher = cls._dispatchers.get(term_cls)
                if dispatcher is not None:
                    for same in dispatcher.dispatch_iter(*key):
                        rules.extend(fn for fn in same if fn not in rules)
            if len(cls._own_cache) >= _MAX_CACHE:
                cls._own_cache.clear()
            result = cls._own_cache[key] = tuple(rules)
        return result

    def rules(self, key: tuple) -> tuple:
        """All rules of this chain matching ``key``, in the order they are tried (stateful
        rules bound to their instance)."""
        result = self._cache.get(key)
        if result is None:
            own = self.own_rules(key)
            if self.stateful:
                own = tuple(functools.partial(rule, self) for rule in own)
            result = own
            if self.base is not None:
                seen = {getattr(r, "func", r) for r in own}
                result += tuple(r for r in self.base.rules(key)
                                if getattr(r, "func", r) not in seen)
            if len(self._cache) >= _MAX_CACHE:
                self._cache.clear()
            self._cache[key] = result
        return result

    def interpret(self, cls: type, args: tuple) -> Any:
        """Build ``cls(*args)`` under this interpretation."""
        key = (cls, *map(type, args)) if not cls._deep_key else type_key(cls, args)
        rules = self._cache.get(key)
        if rules is None:
            rules = self.rules(key)
        for rule in rules:
            result = rule(*args)
            if result is not None:
                if _DEBUG[0]:
                    _LOG.debug("%s: %s -> %s", rule_name(rule), cls.__name__, _short(result))
                return result
        return build(cls, args)

    # -- context manager and decorator ---------------------------------------------------------
    def __enter__(self) -> Interpretation:
        state = _STATE.get(None) or (_DEFAULT[0], None)
        if self.fallback is ENTERED:
            previous = state[0]
            self._entered.append(self.base)
            if previous is not self and previous is not self.base:
                self.base = previous
                self._cache.clear()
        _STATE.set((self, state))
        return self

    def __exit__(self, *exc) -> None:
        _STATE.set(_STATE.get()[1])
        if self.fallback is ENTERED:
            base = self._entered.pop()
            if base is not self.base:
                self.base = base
                self._cache.clear()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped

    def __repr__(self) -> str:
        return self.name

    @property
    def __name__(self) -> str:  # funsor's interpretations are named like functions
        return self.name

    def chain(self) -> list[str]:
        """Names of the interpretations tried, in order."""
        names, interp = [], self
        while interp is not None:
            names.append(interp.name)
            interp = interp.base
        return names


def _check_tuple_lengths(patterns) -> None:
    # Long tuples are typed by their element types only (tuple_type), which a fixed-length
    # pattern this long could not tell apart; say so instead of silently never matching.
    for p in patterns:
        if isinstance(p, tuple):
            _check_tuple_lengths(p)
        elif isinstance(p, _TupleMeta) and p is not Tuple:
            if not p._variadic and len(p._elems) > _LONG_TUPLE:
                raise TypeError(f"a fixed-length pattern {p!r} is longer than {_LONG_TUPLE} "
                                f"elements; use a variadic one, Tuple[T, ...]")
            _check_tuple_lengths(p._elems)


def _mark_deep(term_cls: type) -> None:
    # Rules for term_cls look inside tuples: its keys (and its subclasses') become deep.
    stack = [term_cls]
    while stack:
        c = stack.pop()
        c._deep_key = True
        stack.extend(c.__subclasses__())


def _short(term: Any) -> str:
    text = repr(term)
    return text if len(text) < 200 else text[:197] + "..."


# -- reflect: build the term as it is, cons-hashed ----------------------------------------------
_CONS: dict[type, weakref.WeakValueDictionary] = {}


def _hashable(arg: Any) -> Any:
    typ = type(arg)
    if typ is str or typ is frozenset:
        return arg
    if typ is tuple:
        return tuple(map(_hashable, arg))
    if typ in (int, float, bool):
        return (typ, arg)
    if typ is dict:
        return tuple((k, _hashable(v)) for k, v in arg.items())
    try:
        hash(arg)
    except TypeError:
        return (typ, id(arg))
    if getattr(typ, "_is_funsor", False) or not _plain_hashable(typ):
        return (typ, id(arg))
    return arg


_PLAIN: dict[type, bool] = {}


def _plain_hashable(typ: type) -> bool:
    # Objects hashed by value (domains, ops, None) are keys themselves; anything whose __eq__
    # is not a plain equality (arrays, funsors) is keyed by identity.
    result = _PLAIN.get(typ)
    if result is None:
        result = typ.__eq__ is object.__eq__ or typ.__module__ in (
            "builtins", "funsor_core.domains")
        _PLAIN[typ] = result
    return result


def build(cls: type, args: tuple) -> Any:
    """Build ``cls(*args)`` with no rewriting, cons-hashed by argument identity.

    Only the interpreter calls this (it is what ``reflect`` does); rules build terms with
    the constructors, so the active interpretation sees every term.
    """
    key = cls._cons_key(args) if cls._cons_key is not None else tuple(map(_hashable, args))
    cache = _CONS.get(cls)
    if cache is None:
        cache = _CONS[cls] = weakref.WeakValueDictionary()
    obj = cache.get(key)
    if obj is None:
        obj = object.__new__(cls)
        obj._init(*args)
        cache[key] = obj
    return obj


reflect = Interpretation("reflect")

_STATE: contextvars.ContextVar = contextvars.ContextVar("funsor_core_interpretation")
_DEFAULT = [reflect]


def set_default_interpretation(interp: Interpretation) -> None:
    """Make ``interp`` the interpretation of every context that entered none."""
    _DEFAULT[0] = interp
    _STATE.set((interp, None))


def get_interpretation() -> Interpretation:
    """The interpretation active in this thread or task."""
    state = _STATE.get(None)
    if state is None:
        _STATE.set((_DEFAULT[0], None))
        return _DEFAULT[0]
    return state[0]


def interpret(cls: type, args: tuple) -> Any:
    """Build ``cls(*args)`` under the active interpretation."""
    state = _STATE.get(None)
    interp = _DEFAULT[0] if state is None else state[0]
    return interp.interpret(cls, args)


# -- fresh names for users ------------------------------------------------------------------------
import itertools  # noqa: E402  (gensym is appended to this module; keep its import with it)

_GENSYM = itertools.count(1)


def gensym(x: Any = None) -> Any:
    """A fresh name: ``"V<k>"``, or ``"<x>_<k>"`` for a string ``x`` (funsor's
    ``funsor.interpreter.gensym``); for any other object, its ``id``.

    ``k`` comes from one process-wide counter, so two calls never return the same name.
    (Bound variables are renamed by ``traversal.alpha_rename``, not by this function.)

    Example:
        >>> a, b = gensym("x"), gensym("x")
        >>> a != b and a.startswith("x_") and gensym().startswith("V")
        True
    """
    k = next(_GENSYM)
    if x is None:
        return f"V{k}"
    if isinstance(x, str):
        return f"{x}_{k}"
    return id(x)
