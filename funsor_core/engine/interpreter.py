"""The interpreter: every term constructor passes through here.

A term constructor ``Cls(*args)`` asks the active interpretation to build it. An
interpretation tries its rules matching the *type key* ``(Cls, type(arg0), type(arg1), ...)``,
most specific first; the first rule that returns a value wins. When all decline, the term goes
to the interpretation's fallback, *through the fallback's own* ``interpret``, and so on down
the chain; at the end the term is built as it is (``reflect``), cons-hashed.

Interpretations are *kinds* (classes) that own the rule tables, and *instances* that carry
state. ``Interpretation("exact", fallback=normalize)`` makes a stateless kind with one
instance; a stateful kind subclasses ``Interpretation`` and its rules receive the instance
first (see ``Interpretation.register``). Each instance names its fallback: a fixed
interpretation, or ``ENTERED``, the interpretation that was active when it was entered.

Composition holds at any depth of a chain:

- A kind may override ``interpret`` (memoization, a tape that records what is built); such an
  instance is consulted through its ``interpret`` wherever it sits in a chain.
- Two instances of one kind in a chain each run the kind's rules with their own state.
- Re-entering the active interpretation changes nothing; entering an instance that is
  already further down the active chain raises, since it would make the chain a cycle.
- A rule hands a term to the rest of the chain with ``interp.defer(cls, args)``, and a whole
  computation with ``with interp.rest():``; it never needs to touch ``base``.
- Every result passes the canonicalization hooks of the interpretations it went through
  (``Interpretation.canonical``), so an interpretation may normalize what any rule returns.

For speed, the consecutive interpretations of a chain that keep the default ``interpret`` are
flattened into one rule list per type key, resolved once and cached per instance: the hot path
is one dict lookup.

Example:
    >>> from interpretations import lazy, exact
    >>> with lazy:
    ...     get_interpretation().name
    'lazy'
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from multipledispatch import Dispatcher
from multipledispatch.utils import expand_tuples

from funsor_core.engine.cache import CacheFamily, FastCache
from funsor_core.engine.cons import _hashable, build  # noqa: F401  (re-exported)
from funsor_core.engine.patterns import (
    MAX_CACHE,
    Tuple,
    check_tuple_lengths,
    mark_deep,
    tuple_type,
    type_key,
    uses_tuple_pattern,
)

__all__ = [
    "Interpretation", "ENTERED", "get_interpretation", "reflect", "set_default_interpretation",
    "set_debug", "interpret", "build", "Tuple", "rule_name", "tuple_type", "type_key",
]

_LOG = logging.getLogger("funsor_core.rules")
_DEBUG = [False]


def set_debug(on: bool = True) -> None:
    """Log every rule that fires (its name, input term and output) to ``funsor_core.rules``.

    Example:
        >>> set_debug(False)
    """
    _DEBUG[0] = bool(on)
    _clear_all_caches()  # the cached direct_rules answers depend on the switch
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


class _Entered:
    """The fallback marker ``ENTERED``: an interpretation whose fallback it is falls back to
    the interpretation that was active when it was entered.

    Example:
        >>> from interpretations import lazy
        >>> with lazy:
        ...     with Interpretation("demo_entered", ENTERED):
        ...         fc.get_interpretation().chain()
        ['demo_entered', 'lazy', 'reflect']
    """

    def __repr__(self) -> str:
        return "ENTERED"


ENTERED = _Entered()
"""Fallback marker: fall back to the interpretation active when this one was entered."""

# Each kind's own rules per type key, and each instance's flattened rule lists per type key:
# one bounded cache per kind and per instance, all cleared when a rule or hook is added.
_OWN_RULES = CacheFamily("engine.own_rules", MAX_CACHE)
_DISPATCH = CacheFamily("engine.dispatch", MAX_CACHE)

_CYCLE = ("cannot enter {name!r} here: it is already active further down the chain "
          "{chain}, and entering it again on top would make the chain a cycle. Nest a new "
          "instance instead (e.g. {kind}(...)), or exit the outer one first.")


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

    A kind may override ``interpret(cls, args)`` to wrap construction (memoize, a tape): it
    is called wherever the instance sits in a chain, and hands terms on with ``defer``.

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
        cls._own_box: FastCache = _OWN_RULES.new()
        cls._own_cache: dict = cls._own_box.data  # read directly; written through the box
        cls._wants_cls: set = set()
        cls._canonical_fn = None
        # Whether instances keep the default interpret, so a chain may flatten through them.
        cls._flat = cls.interpret is Interpretation.interpret

    def __new__(cls, *args, **kwargs):
        if cls is Interpretation:
            # A plain Interpretation(name, ...) is the one instance of a kind of its own.
            name = args[0] if args else kwargs["name"]
            cls = type(f"{name.title().replace('_', '')}Interpretation", (Interpretation,), {})
        return super().__new__(cls)

    def __init__(self, name: str, fallback: Interpretation | _Entered | None = None,
                 *, base: Interpretation | None = None, doc: str | None = None) -> None:
        if doc is not None:  # what ``help(interp)`` shows: the docstring of its own kind
            type(self).__doc__ = doc
        self.name = name
        self.fallback = base if base is not None else fallback
        self.base = None if self.fallback is ENTERED else self.fallback
        self._cache_box: FastCache = _DISPATCH.new()
        self._cache: dict = self._cache_box.data  # read directly; written through the box
        # direct_rules per type key (engine/fast_path.py ``eager_rules``), cleared with _cache.
        self._direct_box: FastCache = _DISPATCH.new()
        self._direct: dict = self._direct_box.data
        self._entered: list = []
        self._dependents: weakref.WeakSet = weakref.WeakSet()

    # -- rules ---------------------------------------------------------------------------------
    @classmethod
    def register(cls, term_cls: type, *arg_types: Any, term_class: bool = False) -> Callable:
        """Register a rule for terms ``term_cls(*args)`` whose args match ``arg_types``.

        A pattern is a class, a tuple of classes (any of them), or ``Tuple[...]`` to look
        inside a tuple argument. The rule returns the rewritten term, or ``None`` to decline.
        On a stateful kind, the rule is called as ``rule(interp, *args)``. With
        ``term_class=True`` it also receives the class of the term being built, after the
        instance: ``rule(cls, *args)`` (or ``rule(interp, cls, *args)``), so one rule
        registered on a base class (e.g. ``Funsor``) serves all its subclasses.

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
            if term_class:
                cls._wants_cls.add(fn)
            if any(uses_tuple_pattern(t) for t in arg_types):
                check_tuple_lengths(arg_types)
                mark_deep(term_cls)
            _clear_all_caches()
            return fn

        return decorator

    @classmethod
    def canonical(cls, fn: Callable) -> Callable:
        """Register ``fn`` as this kind's canonicalization hook (a decorator).

        Every term that an instance of this kind returns (a rule's result, a term built by
        the rest of its chain, or by ``reflect``) passes through ``fn(term)`` (stateful kinds:
        ``fn(interp, term)``), which returns the term or an equal canonical one. Results of
        rules built with ``Tensor.make``/``Gaussian.make`` are seen too. The hook must be
        idempotent: its own output passes through it again.

        Example:
            >>> seen = []
            >>> spy = Interpretation("spy", fallback=reflect)
            >>> @spy.canonical
            ... def spy_canonical(term):
            ...     seen.append(type(term).__name__)
            ...     return term
            >>> with spy:
            ...     _ = fc.Variable("x", fc.Real)
            >>> seen
            ['Variable']
        """
        if cls is Interpretation:
            raise TypeError("register a hook on an interpretation or a kind, not the base class")
        cls._canonical_fn = fn
        _clear_all_caches()
        return fn

    @classmethod
    def own_rules(cls, key: tuple) -> tuple:
        """The rules of this kind alone matching ``key``, most specific first (unbound)."""
        result = cls._own_cache.get(key)
        if result is None:
            rules = []
            for term_cls in key[0].__mro__:
                dispatcher = cls._dispatchers.get(term_cls)
                if dispatcher is not None:
                    for same in dispatcher.dispatch_iter(*key):
                        rules.extend(fn for fn in same if fn not in rules)
            result = cls._own_box.put(key, tuple(rules))
        return result

    def bound_rules(self, key: tuple) -> tuple:
        """This instance's own rules for ``key``, bound to it (stateful kinds) and to the term
        class (rules registered with ``term_class=True``), ready to call with the args."""
        wants = type(self)._wants_cls
        if not self.stateful and not wants:
            return self.own_rules(key)
        out = []
        for rule in self.own_rules(key):
            if rule in wants:
                rule = (functools.partial(rule, self, key[0]) if self.stateful
                        else functools.partial(rule, key[0]))
            elif self.stateful:
                rule = functools.partial(rule, self)
            out.append(rule)
        return tuple(out)

    def _hook(self) -> Callable | None:
        fn = type(self)._canonical_fn
        if fn is None or not self.stateful:
            return fn
        return functools.partial(fn, self)

    def _resolve(self, key: tuple) -> tuple:
        # (rules, rest, hooks): the rules of this instance and of the instances after it that
        # keep the default interpret (tried in that order), the first later instance that
        # overrides interpret (it gets the term when they all decline; None: build it), and
        # the canonicalization hooks of the flattened instances.
        # A flat base's own entry is the rest of this one: a new instance (a MonteCarlo per
        # step) binds its own rules and reuses the chain's cached lists. ``_clear_dependents``
        # is transitive, so depending on the base covers the instances after it.
        entry = self._cache.get(key)
        if entry is not None:
            return entry
        rules = self.bound_rules(key)
        hook = self._hook()
        hooks = () if hook is None else (hook,)
        base = self.base
        if base is not None and base._flat:
            if not self._cache:  # the first entry since a clear, which also reset base's set
                base._dependents.add(self)
            base_rules, base, base_hooks = base._cache.get(key) or base._resolve(key)
            rules, hooks = rules + base_rules, hooks + base_hooks
        return self._cache_box.put(key, (rules, base, hooks))

    def rules(self, key: tuple) -> tuple:
        """The rules this instance tries for ``key``, in order: its own, then those of the
        following instances of its chain up to the first that overrides ``interpret``
        (stateful rules bound to their instance).

        Example:
            >>> from interpretations import exact
            >>> [rule_name(r) for r in exact.rules((fc.Binary, type(ops.add), fc.Tensor,
            ...                                      fc.Tensor))][:1]
            ['exact_binary_tensor_tensor']
        """
        return self._resolve(key)[0]

    def direct_rules(self, key: tuple) -> tuple | None:
        """``rules(key)`` when calling them in order is all that building a term of ``key``
        does under this instance: it keeps the default ``interpret``, no canonicalization hook
        applies, the term reaches no instance that overrides ``interpret`` (when all rules
        decline, it is built as it is), and the debug log is off. None otherwise.

        Code that replays a computation without building its terms checks this first.

        Example:
            >>> from interpretations import exact
            >>> key = (fc.Tensor, np.ndarray, tuple, str)
            >>> exact.direct_rules(key)  # no rule rewrites a Tensor: it is built as it is
            ()
        """
        if not type(self)._flat or _DEBUG[0]:
            return None
        rules, rest, hooks = self._cache.get(key) or self._resolve(key)
        return rules if rest is None and not hooks else None

    def builds_class_as_is(self, cls: type) -> bool:
        """Whether every term of class ``cls`` is built as it is under this instance: no
        kind of its chain has a rule for ``cls`` or a base class, no canonicalization hook or
        wrapping interpretation sees it, and the debug log is off. ``direct_rules(key) ==
        ()`` then holds for every key of ``cls``, decided once per class, not per term.

        Example:
            >>> from interpretations import exact, lazy
            >>> exact.builds_class_as_is(fc.Tensor), lazy.builds_class_as_is(fc.Binary)
            (True, True)
        """
        result = self._direct.get(cls)  # (class keys never collide with the tuple keys)
        if result is None:
            result = self._direct_box.put(cls, self._class_as_is(cls))
        return result

    def _class_as_is(self, cls: type) -> bool:
        if _DEBUG[0]:
            return False
        interp = self
        while interp is not None:
            kind = type(interp)
            if not kind._flat or kind._canonical_fn is not None:
                return False
            if any(c in kind._dispatchers for c in cls.__mro__):
                return False
            if interp is not self:  # a change of its chain clears this answer too
                interp._dependents.add(self)
            interp = interp.base
        return True

    def interpret(self, cls: type, args: tuple) -> Any:
        """Build ``cls(*args)`` under this interpretation."""
        if cls._deep_key:
            key = type_key(cls, args)
        elif len(args) == 3:  # most terms: spelled out, half the time of a map
            a, b, c = args
            key = (cls, type(a), type(b), type(c))
        elif len(args) == 2:
            a, b = args
            key = (cls, type(a), type(b))
        else:
            key = (cls, *map(type, args))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._resolve(key)
        rules, rest, hooks = entry
        for rule in rules:
            result = rule(*args)
            if result is not None:
                if _DEBUG[0]:
                    _LOG.debug("%s: %s -> %s", rule_name(rule), cls.__name__, _short(result))
                break
        else:
            result = rest.interpret(cls, args) if rest is not None else build(cls, args)
        for hook in hooks:
            result = hook(result)
        return result

    def defer(self, cls: type, args: tuple) -> Any:
        """Build ``cls(*args)`` with the rest of the chain, after this instance.

        A rule that intercepts a term and wants the interpretations below it to build that
        very term (or one of the same pattern) calls this instead of the constructor, which
        would come back to the rule. Subterms that those build still start from the active
        interpretation.

        Example:
            >>> from interpretations import exact, lazy
            >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
            >>> type(lazy.defer(fc.Binary, (ops.add, x, x))).__name__  # lazy's rest: reflect
            'Binary'
            >>> exact.defer(fc.Tensor, x._args) is x  # (prepared args) no rule: cons-hashed
            True
        """
        base = self.base
        return base.interpret(cls, args) if base is not None else build(cls, args)

    @contextlib.contextmanager
    def rest(self) -> Iterator[Interpretation | None]:
        """Make the rest of this chain (the interpretations after this one) active for a
        block: what a rule builds inside it skips this interpretation and those above it.

        Example:
            >>> from interpretations import exact
            >>> with exact.rest():
            ...     y = fc.Number(1.0) + fc.Number(2.0)
            >>> type(y).__name__  # normalize's chain rewrites to normal form, does not evaluate
            'Contraction'
        """
        state = _STATE.get(None) or (_DEFAULT[0], None)
        _STATE.set((self.base if self.base is not None else reflect, state))
        try:
            yield self.base
        finally:
            _STATE.set(state)

    # -- the chain -----------------------------------------------------------------------------
    def _set_base(self, base: Interpretation | None) -> None:
        self.base = base
        _clear_dependents(self)

    def _in_chain(self, other: Interpretation) -> bool:
        interp = self
        while interp is not None:
            if interp is other:
                return True
            interp = interp.base
        return False

    def chain(self) -> list[str]:
        """Names of the interpretations tried, in order."""
        names, interp = [], self
        while interp is not None:
            names.append(interp.name)
            interp = interp.base
        return names

    # -- context manager and decorator ---------------------------------------------------------
    def __enter__(self) -> Interpretation:
        state = _STATE.get(None) or (_DEFAULT[0], None)
        if self.fallback is ENTERED:
            previous = state[0]
            if previous is not self and previous is not self.base:
                if previous._in_chain(self):
                    raise ValueError(_CYCLE.format(
                        name=self.name, chain=" -> ".join(previous.chain()),
                        kind=type(self).__name__))
                self._entered.append(self.base)
                self._set_base(previous)
            else:
                self._entered.append(self.base)
        _STATE.set((self, state))
        return self

    def __exit__(self, *exc) -> None:
        _STATE.set(_STATE.get()[1])
        if self.fallback is ENTERED:
            base = self._entered.pop()
            if base is not self.base:
                self._set_base(base)

    def __call__(self, fn: Callable = None) -> Callable:
        if not callable(fn):  # `with lazy():`, or lazy(term) meant as "evaluate lazily"
            raise TypeError(f"{self.name} is a context manager or decorator: `with {self.name}:"
                            f"` or @{self.name} above a function; got {type(fn).__name__}")
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


def _clear_dependents(interp: Interpretation) -> None:
    # interp's chain changed: its cached rule lists, and those of every instance whose cached
    # lists flattened through it, are stale.
    stack, seen = [interp], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        x._cache.clear()
        x._direct.clear()
        if x._dependents:  # a WeakSet's len is cheap; iterating an empty one is not
            stack.extend(x._dependents)
            x._dependents = weakref.WeakSet()


def _clear_all_caches() -> None:
    _OWN_RULES.clear()
    _DISPATCH.clear()


def _short(term: Any) -> str:
    text = repr(term)
    return text if len(text) < 200 else text[:197] + "..."


reflect = Interpretation("reflect", doc="""Build every term as it is, cons-hashed (engine/cons.py),
evaluating nothing: the end of every chain of interpretations. Example:

    >>> with fc.reflect:
    ...     type(fc.Number(1.0) + 2).__name__
    'Binary'
""")

_STATE: contextvars.ContextVar = contextvars.ContextVar("funsor_core_interpretation")
# ``_STATE.get`` bound once for the hot paths of term construction: CPython 3.11 compiles
# ``_STATE.get(None)`` on an imported name as an attribute load building a bound method.
_STATE_GET = _STATE.get
_DEFAULT = [reflect]


def set_default_interpretation(interp: Interpretation) -> None:
    """Make ``interp`` the interpretation of every context that entered none.

    Example:
        >>> from interpretations import exact, lazy
        >>> fc.set_default_interpretation(lazy)
        >>> lazy_sum = fc.Number(1.0) + 2
        >>> fc.set_default_interpretation(exact)
        >>> type(lazy_sum).__name__, type(fc.Number(1.0) + 2).__name__
        ('Binary', 'Number')
    """
    _DEFAULT[0] = interp
    _STATE.set((interp, None))


def get_interpretation() -> Interpretation:
    """The interpretation active in this thread or task.

    Example:
        >>> with fc.reflect:
        ...     fc.get_interpretation().name
        'reflect'
    """
    state = _STATE.get(None)
    if state is None:
        _STATE.set((_DEFAULT[0], None))
        return _DEFAULT[0]
    return state[0]


def interpret(cls: type, args: tuple) -> Any:
    """Build ``cls(*args)`` under the active interpretation: its rules rewrite the term, or
    it is kept as built.

    Example:
        >>> two, three = fc.Number(2.0), fc.Number(3.0)
        >>> interpret(fc.Binary, (ops.add, two, three))
        Number(5.0, 'real')
        >>> from interpretations import lazy
        >>> with lazy:
        ...     type(interpret(fc.Binary, (ops.add, two, three))).__name__
        'Binary'
    """
    state = _STATE.get(None)
    interp = _DEFAULT[0] if state is None else state[0]
    return interp.interpret(cls, args)

