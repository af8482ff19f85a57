"""The interpreter: every term constructor passes through here.

A term constructor ``Cls(*args)`` asks the active interpretation for the rules matching
``(Cls, type(arg0), type(arg1), ...)``. Rules are tried most specific first, then the rules of
the next interpretation in the chain; the first rule that returns a value wins, and if all
decline (return ``None``) the term is built as it is (``reflect``), cons-hashed.

The active interpretation lives in a ``contextvars.ContextVar``, so each thread and each
asyncio task has its own. The rule list for a type tuple is resolved once and cached, so the
hot path is one dict lookup.

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

__all__ = [
    "Interpretation", "get_interpretation", "reflect", "set_default_interpretation",
    "set_debug", "interpret", "build",
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


def _ignore_ambiguities(dispatcher, ambiguities) -> None:
    # Two equally specific patterns are both tried, in registration order; not an error.
    pass


_ALL_INTERPRETATIONS: list[Interpretation] = []


class Interpretation:
    """A set of rewrite rules plus the interpretation tried when none of them fires.

    Use it as a context manager (``with lazy:``) or decorator (``@lazy``); nesting works and
    is isolated per thread and per asyncio task.

    Example:
        >>> toy = Interpretation("toy", base=reflect)
        >>> toy.name
        'toy'
    """

    def __init__(self, name: str, base: Interpretation | None = None) -> None:
        self.name = name
        self.base = base
        self._dispatchers: dict[type, Dispatcher] = {}
        self._cache: dict[tuple, tuple] = {}
        _ALL_INTERPRETATIONS.append(self)

    # -- rules ---------------------------------------------------------------------------------
    def register(self, cls: type, *arg_types: Any) -> Callable:
        """Register a rule for terms ``cls(*args)`` whose args match ``arg_types``.

        A rule returns the rewritten term, or ``None`` to decline.
        """

        def decorator(fn: Callable) -> Callable:
            dispatcher = self._dispatchers.get(cls)
            if dispatcher is None:
                dispatcher = self._dispatchers[cls] = Dispatcher(f"{self.name}_{cls.__name__}")
            dispatcher.add((cls,) + tuple(arg_types), fn)
            dispatcher.reorder(on_ambiguity=_ignore_ambiguities)
            for interp in _ALL_INTERPRETATIONS:
                interp._cache.clear()
            return fn

        return decorator

    def own_rules(self, key: tuple) -> tuple:
        """The rules of this interpretation alone matching ``key``, most specific first."""
        rules = []
        for cls in key[0].__mro__:
            dispatcher = self._dispatchers.get(cls)
            if dispatcher is not None:
                for fn in dispatcher.dispatch_iter(*key):
                    if fn not in rules:
                        rules.append(fn)
        return tuple(rules)

    def rules(self, key: tuple) -> tuple:
        """All rules of this chain matching ``key``, in the order they are tried."""
        result = self._cache.get(key)
        if result is None:
            result = self.own_rules(key)
            if self.base is not None:
                result = result + tuple(r for r in self.base.rules(key) if r not in result)
            self._cache[key] = result
        return result

    def interpret(self, cls: type, args: tuple) -> Any:
        """Build ``cls(*args)`` under this interpretation."""
        key = (cls, *map(type, args))
        rules = self._cache.get(key)
        if rules is None:
            rules = self.rules(key)
        for rule in rules:
            result = rule(*args)
            if result is not None:
                if _DEBUG[0]:
                    _LOG.debug("%s: %s -> %s", rule.__name__, cls.__name__, _short(result))
                return result
        return build(cls, args)

    # -- context manager and decorator ---------------------------------------------------------
    def __enter__(self) -> Interpretation:
        _STATE.set((self, _STATE.get(None) or (_DEFAULT[0], None)))
        return self

    def __exit__(self, *exc) -> None:
        _STATE.set(_STATE.get()[1])

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped

    def __repr__(self) -> str:
        return self.name

    def chain(self) -> list[str]:
        """Names of the interpretations tried, in order."""
        names, interp = [], self
        while interp is not None:
            names.append(interp.name)
            interp = interp.base
        return names


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
    """Build ``cls(*args)`` with no rewriting, cons-hashed by argument identity."""
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
