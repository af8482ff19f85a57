# ruff: noqa: UP006, UP007, UP035  (this module is about the typing module's own objects)
"""Structured runtime types, as in funsor's ``funsor.typing``: the type of a nested tuple or
frozenset, and ``issubclass``/``isinstance`` that understand ``typing.Tuple``,
``typing.FrozenSet``, ``typing.Union`` and ``typing.Any`` as well as classes.

funsor-core's own rule patterns use ``funsor_core.engine.interpreter.Tuple`` (resolved once per
type key); this module is for code written against funsor's typing helpers, and for
multipledispatch signatures that contain ``typing`` objects (``typing_wrap``, ``Variadic``).

Example:
    >>> import typing
    >>> from funsor_core.engine.typing import deep_isinstance, deep_type
    >>> deep_type((1, ("a", 2.0)))
    typing.Tuple[int, typing.Tuple[str, float]]
    >>> deep_isinstance((1, 2, 3), typing.Tuple[int, ...])
    True
"""

from __future__ import annotations

import functools
import typing
import weakref

from multipledispatch.variadic import Variadic as _Variadic
from multipledispatch.variadic import isvariadic

from funsor_core.engine.cache import cached

__all__ = [
    "GenericTypeMeta", "Variadic", "deep_isinstance", "deep_issubclass", "deep_type",
    "get_args", "get_origin", "get_type_hints", "params_subclass", "register_subclasscheck",
    "typing_wrap",
]


# =============================================================================================
# The structured type of a value.
def deep_type(obj) -> type:
    """``type(obj)``, but a tuple gives ``typing.Tuple`` of its elements' deep types and a
    frozenset ``typing.FrozenSet`` of its (one) element type.

    Raises:
        NotImplementedError: a frozenset whose elements have no common type here.

    Example:
        >>> deep_type(frozenset({"a", "b"}))
        typing.FrozenSet[str]
    """
    if type(obj) is tuple:
        return typing.Tuple[tuple(map(deep_type, obj))] if obj else typing.Tuple
    if type(obj) is frozenset:
        if not obj:
            return typing.FrozenSet
        types = {deep_type(x) for x in obj}
        if len(types) == 1:
            return typing.FrozenSet[types.pop()]
        origins = {get_origin(t) for t in types}
        if len(origins) == 1:  # e.g. tuples of different lengths: FrozenSet[tuple]
            return typing.FrozenSet[origins.pop()]
        raise NotImplementedError(
            f"deep_type of a frozenset with elements of different types {sorted(map(str, types))}"
            " is not supported; use a frozenset of one type")
    return type(obj)


def get_origin(tp):
    """The unparametrized form of ``tp`` (``Tuple[int]`` -> ``tuple``, ``Reduce[...]`` ->
    ``Reduce``), or ``tp`` itself when it has none.

    Example:
        >>> get_origin(typing.Tuple[int]), get_origin(int)
        (<class 'tuple'>, <class 'int'>)
    """
    if isinstance(tp, type):  # GenericTypeMeta classes and term classes (Reduce[...])
        return tp.__dict__.get("__origin__", tp)
    result = typing.get_origin(tp)
    return tp if result is None else result


def get_args(tp) -> tuple:
    """The parameters of ``tp`` (``Tuple[int, ...]`` -> ``(int, ...)``), or ``()``.

    Example:
        >>> get_args(typing.Union[int, str]), get_args(int)
        ((<class 'int'>, <class 'str'>), ())
    """
    if isinstance(tp, type):
        return tuple(tp.__dict__.get("__args__", None) or ())
    return typing.get_args(tp)


@functools.wraps(typing.get_type_hints)
def get_type_hints(obj, globalns=None, localns=None, **kwargs):
    return typing.get_type_hints(obj, globalns=globalns, localns=localns, **kwargs)


# =============================================================================================
# issubclass for structured types.
_SUBCLASSCHECKS: dict = {}


def register_subclasscheck(cls):
    """Register ``fn(cls, subcls)`` as the subclass check that ``deep_issubclass`` uses for
    types whose origin is ``cls``.

    Example:
        >>> @register_subclasscheck(complex)
        ... def _check_complex(cls, subcls):
        ...     return subcls in (int, float, complex)
        >>> deep_issubclass(int, complex)
        True
        >>> del _SUBCLASSCHECKS[complex]; deep_issubclass.cache_clear()
    """
    def decorator(fn):
        _SUBCLASSCHECKS[cls] = fn
        deep_issubclass.cache_clear()
        return fn

    return decorator


@cached("engine.deep_issubclass", maxsize=4096, fast=True)
def deep_issubclass(subcls, cls) -> bool:
    """``issubclass`` that also compares ``typing.Tuple``, ``FrozenSet``, ``Union`` and
    ``Any``, and parametrized ``GenericTypeMeta`` classes, elementwise (covariantly).

    Example:
        >>> deep_issubclass(typing.Tuple[bool, int], typing.Tuple[int, ...])
        True
        >>> deep_issubclass(typing.Tuple[int, ...], typing.Tuple[int, int])
        False
    """
    if isinstance(subcls, _WrapMeta):  # unwrap typing_wrap(...)
        subcls = subcls.__args__[0]
    if isinstance(cls, _WrapMeta):
        cls = cls.__args__[0]
    if get_origin(subcls) is typing.Union:
        return all(deep_issubclass(a, cls) for a in get_args(subcls))
    if subcls is typing.Any:
        return cls is typing.Any
    check = _SUBCLASSCHECKS.get(get_origin(cls))
    if check is not None:
        return check(cls, subcls)
    if not isinstance(subcls, type):
        subcls = get_origin(subcls)
    return isinstance(subcls, type) and isinstance(cls, type) and issubclass(subcls, cls)


@register_subclasscheck(typing.Any)
def _subclasscheck_any(cls, subcls) -> bool:
    return True


@register_subclasscheck(typing.Union)
def _subclasscheck_union(cls, subcls) -> bool:
    return any(deep_issubclass(subcls, a) for a in get_args(cls))


@register_subclasscheck(frozenset)
def _subclasscheck_frozenset(cls, subcls) -> bool:
    origin = get_origin(subcls)
    if not (isinstance(origin, type) and issubclass(origin, frozenset)):
        return False
    (elem,) = get_args(cls) or (typing.Any,)
    sub_args = get_args(subcls)
    if not sub_args:
        return elem is typing.Any
    return deep_issubclass(sub_args[0], elem)


@register_subclasscheck(tuple)
def _subclasscheck_tuple(cls, subcls) -> bool:
    origin = get_origin(subcls)
    if not (isinstance(origin, type) and issubclass(origin, get_origin(cls))):
        return False
    args, sub_args = get_args(cls), get_args(subcls)
    if not args:
        return True  # any tuple
    if not sub_args:
        return args[0] is typing.Any and (len(args) == 1 or args[1] is Ellipsis)
    if args[-1] is Ellipsis:  # Tuple[T, ...]: every element (or the repeated one) is a T
        return all(deep_issubclass(a, args[0]) for a in sub_args if a is not Ellipsis)
    if sub_args[-1] is Ellipsis:  # any length is not a fixed length
        return False
    return len(args) == len(sub_args) and all(map(deep_issubclass, sub_args, args))


def deep_isinstance(obj, cls) -> bool:
    """``isinstance`` by ``deep_issubclass(deep_type(obj), cls)``.

    Example:
        >>> deep_isinstance((1, ("a", "b")), typing.Tuple[int, typing.Tuple[str, ...]])
        True
    """
    try:
        return deep_issubclass(deep_type(obj), cls)
    except (TypeError, NotImplementedError):
        return isinstance(obj, cls)


# =============================================================================================
# Parametrized classes with covariant parameters, and typing objects in dispatch signatures.
def _as_typing(tp):
    return typing.Any if tp is object else tp


def params_subclass(sub_args: tuple, args: tuple) -> bool:
    """Whether parameters ``sub_args`` are covariantly below ``args`` (no ``args``: any).

    Example:
        >>> params_subclass((bool, str), (int, typing.Any)), params_subclass((), (int,))
        (True, False)
    """
    if not args:
        return True
    if len(sub_args) != len(args):
        return False
    return all(deep_issubclass(_as_typing(s), _as_typing(c)) for s, c in zip(sub_args, args))


class GenericTypeMeta(type):
    """Metaclass of classes parametrized like ``A[int, str]``: each parametrization is one
    cached subclass, and ``issubclass`` compares parameters covariantly (``A[bool]`` is a
    subclass of ``A[int]`` and of ``A``).

    Example:
        >>> class Box(metaclass=GenericTypeMeta):
        ...     pass
        >>> Box[int] is Box[int], issubclass(Box[bool], Box[int]), issubclass(Box, Box[int])
        (True, True, False)
    """

    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        if "__args__" not in ns:
            cls.__args__ = ()
            # Interning of parametrized classes (``Box[int] is Box[int]``): weak, bounded by
            # what is alive, and not a clearable cache (a clear would break that ``is``).
            cls._type_cache = weakref.WeakValueDictionary()

    def __getitem__(cls, params):
        params = tuple(map(_as_typing, params if isinstance(params, tuple) else (params,)))
        if cls.__args__:
            raise TypeError(f"{cls!r} is already parametrized")
        if any(isvariadic(p) for p in params):
            raise TypeError("variadic parameters cannot be nested in a parametrized type")
        result = cls._type_cache.get(params)
        if result is None:
            ns = {"__args__": params, "__origin__": cls, "__module__": cls.__module__}
            result = type(cls)(cls.__name__, (cls,), ns)
            cls._type_cache[params] = result
        return result

    def __subclasscheck__(cls, sub) -> bool:
        if cls is sub:
            return True
        origin = get_origin(cls)
        if not type.__subclasscheck__(origin, get_origin(sub) if isinstance(
                sub, GenericTypeMeta) else sub):
            return False
        sub_args = get_args(sub) if isinstance(sub, GenericTypeMeta) else ()
        return params_subclass(sub_args, get_args(cls))

    def __repr__(cls) -> str:
        args = get_args(cls)
        name = get_origin(cls).__name__
        return name + (f"[{', '.join(map(repr, args))}]" if args else "")


class _WrapMeta(GenericTypeMeta):
    def __call__(cls, tp):
        tp = _as_typing(tp)
        return tp if isinstance(tp, GenericTypeMeta) or isvariadic(tp) else cls[tp]

    def __subclasscheck__(cls, sub) -> bool:
        return deep_issubclass(sub, cls.__args__[0])


class typing_wrap(metaclass=_WrapMeta):
    """``typing_wrap(tp)``: a class standing for the ``typing`` object ``tp`` whose
    ``issubclass`` is ``deep_issubclass``, so that multipledispatch can use ``tp`` in a
    signature.

    Example:
        >>> issubclass(tuple, typing_wrap(typing.Tuple)), issubclass(int, typing_wrap(str))
        (True, False)
    """


class _VariadicMeta(type):
    def __getitem__(cls, types):
        types = types if isinstance(types, tuple) else (types,)
        return _Variadic[tuple(map(typing_wrap, types))]


class Variadic(metaclass=_VariadicMeta):
    """multipledispatch's ``Variadic[...]`` (any number of trailing arguments), accepting
    ``typing`` objects: ``Variadic[typing.Tuple[int, int]]``.

    Example:
        >>> from multipledispatch.variadic import isvariadic

from funsor_core.engine.cache import cached
        >>> isvariadic(Variadic[int])
        True
    """
