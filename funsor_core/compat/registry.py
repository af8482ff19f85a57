"""Dispatchers keyed by structured types, as in funsor's ``funsor.registry``.

funsor-core's own rules live on interpretations (``Interpretation.register``); this module is
for code written against funsor's dispatch helpers. ``PartialDispatcher`` is a
multipledispatch ``Dispatcher`` that dispatches on ``deep_type`` of the arguments, so a
signature may name ``typing.Tuple[int, int]``; ``KeyedRegistry`` keeps one per key class.

Example:
    >>> import typing
    >>> f = PartialDispatcher(lambda *args: "default")
    >>> @f.register()
    ... def _(a: typing.Tuple[int, int]) -> str:
    ...     return "pair"
    >>> f((1, 2)), f((1, 2, 3))
    ('pair', 'default')
"""

from __future__ import annotations

from collections import defaultdict

from multipledispatch.dispatcher import Dispatcher, expand_tuples

from funsor_core.engine.typing import Variadic, deep_type, get_origin, get_type_hints, typing_wrap

__all__ = ["KeyedRegistry", "PartialDefault", "PartialDispatcher"]


class PartialDefault:
    """A default implementation, shaped like a dispatcher: ``partial_call`` returns it.

    Example:
        >>> PartialDefault(len).partial_call("anything") is len
        True
    """

    def __init__(self, default) -> None:
        self.default = default

    def __call__(self, *args):
        return self.default(*args)

    def partial_call(self, *args):
        return self.default


class PartialDispatcher(Dispatcher):
    """A multipledispatch ``Dispatcher`` on the deep types of its arguments.

    Signatures come from the arguments of ``register(*types)`` or, when none are given, from
    the function's type hints. A list ``[T]`` in a signature means any number of trailing
    ``T`` arguments (multipledispatch's ``Variadic``); a tuple of types means any of them.
    ``default`` (if given) handles every call that no signature matches.

    Example:
        >>> f = PartialDispatcher(lambda *args: 0)
        >>> @f.register([int])
        ... def _(*args):
        ...     return sum(args)
        >>> f(1, 2, 3), f(1.5)
        (6, 0)
    """

    def __init__(self, default=None, name: str = "PartialDispatcher") -> None:
        self.default = None if default is None else PartialDefault(default)
        super().__init__(name)
        if default is not None:
            self.add(([object],), self.default)

    def add(self, signature, func) -> None:
        if not signature:  # read the signature off the type hints
            hints = get_type_hints(func)
            hints.pop("return", None)
            signature = tuple(hints.values())
        if any(isinstance(tp, tuple) for tp in signature):  # a union: one entry per choice
            for expanded in expand_tuples(signature):
                self.add(expanded, func)
            return
        signature = tuple(typing_wrap(Variadic[tuple(tp)] if isinstance(tp, list) else tp)
                          for tp in signature)
        super().add(signature, func)

    def partial_call(self, *args):
        """The implementation that ``self(*args)`` would call, without calling it."""
        types = tuple(typing_wrap(deep_type(a)) for a in args)
        func = self._cache.get(types)
        if func is None:
            func = self.dispatch(*types)
            if func is None:
                names = ", ".join(getattr(t, "__name__", repr(t)) for t in types)
                raise NotImplementedError(f"{self.name} has no implementation for ({names})")
            self._cache[types] = func
        return func

    def __call__(self, *args):
        return self.partial_call(*args)(*args)


class KeyedRegistry:
    """One ``PartialDispatcher`` per key class (parametrized keys use their origin).

    Example:
        >>> registry = KeyedRegistry(default=lambda *args: None)
        >>> @registry.register(str, int)
        ... def _(n):
        ...     return n + 1
        >>> registry(str, 1), registry(str, "x"), registry(float, 1)
        (2, None, None)
    """

    def __init__(self, default=None) -> None:
        self.default = None if default is None else PartialDefault(default)
        self.registry: defaultdict = defaultdict(lambda: PartialDispatcher(default=default))

    def register(self, key, *types):
        register = self.registry[get_origin(key)].register

        def decorator(fn):
            register(*types)(fn)
            return fn  # the function itself, so decorators can be stacked

        return decorator

    def __contains__(self, key) -> bool:
        return get_origin(key) in self.registry

    def __getitem__(self, key):
        key = get_origin(key)
        if self.default is None:
            return self.registry[key]
        return self.registry.get(key, self.default)

    def __call__(self, key, *args):
        return self[key](*args)

    def dispatch(self, key, *args):
        return self[key].partial_call(*args)
