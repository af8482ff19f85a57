"""Patterns that look inside tuple arguments, and the dispatch key of a term.

``Tuple[Gaussian, Tensor]`` matches a tuple of exactly a Gaussian and a Tensor,
``Tuple[(Tensor, Number), ...]`` any tuple of Tensors and Numbers. A tuple argument's type
key is ``Tuple`` of its elements' type keys, computed only for term classes some rule of
which looks inside tuples (their keys are *deep*); the rest dispatch on plain argument types.

Example:
    >>> tuple_type((1, ("a", 2.0))).__name__
    'Tuple[int, Tuple[str, float]]'
"""

from __future__ import annotations

from funsor_core.engine.cache import FastCache

__all__ = ["Tuple", "tuple_type", "type_key", "uses_tuple_pattern", "check_tuple_lengths",
           "mark_deep", "MAX_CACHE"]

# Every cache keyed by types or type tuples holds at most MAX_CACHE entries (a FastCache:
# the bound is kept on a miss, so the hot path stays one dict lookup), and a long-running
# program that keeps meeting new tuple shapes or classes (deep keys of Contractions of many
# terms) keeps its memory flat.
MAX_CACHE = 4096
_TUPLE_TYPES = FastCache("engine.tuple_types", MAX_CACHE)
_PATTERNS = FastCache("engine.tuple_patterns", MAX_CACHE)  # (elems, variadic) -> Tuple[...]


class _TupleMeta(type):
    """Classes ``Tuple[T0, T1, ...]`` (fixed length) and ``Tuple[T, ...]`` (any length).

    An element may be a class, a tuple of classes (a union) or another ``Tuple[...]``.
    ``issubclass`` compares elementwise, so multipledispatch orders patterns by specificity.
    """

    def __getitem__(cls, items) -> type:
        if not isinstance(items, tuple):
            items = (items,)
        variadic = len(items) == 2 and items[1] is Ellipsis
        elems = (items[0],) if variadic else items
        if any(e is Ellipsis for e in elems):
            raise TypeError(f"Tuple[...] takes element types, or one type and '...' (any "
                            f"length), got {items!r}")
        key = (elems, variadic)
        result = _PATTERNS.data.get(key)
        if result is None:  # an evicted pattern class stays valid; only reuse is lost
            names = ", ".join(_elem_name(e) for e in elems) + (", ..." if variadic else "")
            result = _TupleMeta(f"Tuple[{names}]", (tuple,), {
                "__slots__": (), "_elems": elems, "_variadic": variadic})
            _PATTERNS.put(key, result)
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


# Tuples longer than this are typed by their set of element types (see tuple_type).
_LONG_TUPLE = 8


def tuple_type(arg: tuple) -> type:
    """The type key of a tuple argument: ``Tuple`` of its elements' type keys.

    Example:
        >>> tuple_type((1, ("a", 2.0))).__name__
        'Tuple[int, Tuple[str, float]]'
    """
    if len(arg) > _LONG_TUPLE:
        kinds = dict.fromkeys(map(type, arg))
        if tuple not in kinds:  # (a long tuple of terms: one C-level pass)
            return _tuple_type((*kinds, Ellipsis))
    elems = tuple(map(type, arg))  # (a short tuple of terms: one C-level pass)
    if tuple in elems:
        elems = tuple(tuple_type(a) if type(a) is tuple else type(a) for a in arg)
    if len(elems) > _LONG_TUPLE:
        # A long tuple is typed by the set of its element types, as ``Tuple[(A, B), ...]``:
        # exact for every variadic pattern, and no fixed-length pattern is this long (register
        # refuses them), so the rules found are the same. A sum of 10^4 terms then has one key,
        # not one per length, and the caches stay small.
        elems = (*dict.fromkeys(elems), Ellipsis)
    return _tuple_type(elems)


def _tuple_type(elems: tuple) -> type:
    result = _TUPLE_TYPES.data.get(elems)
    if result is None:
        if elems and elems[-1] is Ellipsis:
            union = elems[:-1]
            result = Tuple[union[0] if len(union) == 1 else union, ...]
        else:
            result = Tuple[elems] if elems else Tuple[()]
        _TUPLE_TYPES.put(elems, result)
    return result


def uses_tuple_pattern(pattern) -> bool:
    """Whether a rule's pattern (a type, or a tuple of them) looks inside tuples.

    Example:
        >>> uses_tuple_pattern((fc.Tensor, Tuple[fc.Tensor, ...])), uses_tuple_pattern(fc.Tensor)
        (True, False)
    """
    if isinstance(pattern, tuple):
        return any(uses_tuple_pattern(p) for p in pattern)
    return isinstance(pattern, _TupleMeta)


def type_key(cls: type, args: tuple) -> tuple:
    """The dispatch key of ``cls(*args)``: deep (tuples typed by their elements) when some
    rule for ``cls`` looks inside tuples, else the plain argument types.

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> [t.__name__ for t in type_key(fc.Binary, (ops.add, x, fc.Number(1.0)))]
        ['Binary', 'AddOp', 'Variable', 'Number']
    """
    key = (cls, *map(type, args))
    if cls._deep_key and tuple in key:
        return (cls, *[tuple_type(a) if type(a) is tuple else type(a) for a in args])
    return key


def check_tuple_lengths(patterns) -> None:
    """Raise TypeError where a fixed-length ``Tuple[...]`` pattern is too long to match.

    Example:
        >>> check_tuple_lengths((Tuple[fc.Tensor, fc.Tensor],)) is None  # short: fine
        True
    """
    # Long tuples are typed by their element types only (tuple_type), which a fixed-length
    # pattern this long could not tell apart; say so instead of silently never matching.
    for p in patterns:
        if isinstance(p, tuple):
            check_tuple_lengths(p)
        elif isinstance(p, _TupleMeta) and p is not Tuple:
            if not p._variadic and len(p._elems) > _LONG_TUPLE:
                raise TypeError(f"a fixed-length pattern {p!r} is longer than {_LONG_TUPLE} "
                                f"elements; use a variadic one, Tuple[T, ...]")
            check_tuple_lengths(p._elems)


def mark_deep(term_cls: type) -> None:
    """Make the dispatch keys of ``term_cls`` and of its subclasses deep (``type_key`` types
    a tuple argument by its elements), because some rule for it looks inside tuples.

    Example:
        >>> class Term:
        ...     _deep_key = False
        >>> class SubTerm(Term):
        ...     pass
        >>> mark_deep(Term)
        >>> SubTerm._deep_key
        True
    """
    stack = [term_cls]
    while stack:
        c = stack.pop()
        c._deep_key = True
        stack.extend(c.__subclasses__())
