# ruff: noqa: UP006, UP007, UP035  (this module is about the typing module's own objects)
"""``funsor_core.typing``: structured runtime types, checked against hand-written cases."""

from typing import Any, FrozenSet, Tuple, Union

import pytest
from multipledispatch import Dispatcher

from funsor_core.typing import (
    GenericTypeMeta,
    Variadic,
    deep_isinstance,
    deep_issubclass,
    deep_type,
    get_args,
    get_origin,
    get_type_hints,
    typing_wrap,
)


class A:
    pass


class B(A):
    pass


def test_deep_type():
    assert deep_type((1, 1.5, "a")) is Tuple[int, float, str]
    assert deep_type((1, (2, 3))) is Tuple[int, Tuple[int, int]]
    assert deep_type(()) is Tuple
    assert deep_type(frozenset(["a", "b"])) is FrozenSet[str]
    assert deep_type(3) is int
    with pytest.raises(NotImplementedError, match="different types"):
        deep_type(frozenset(["a", 1]))


@pytest.mark.parametrize("sub, sup, expected", [
    (Tuple[int, B], Tuple[int, A], True),
    (Tuple[int, A], Tuple[int, B], False),
    (Tuple[A, A], Tuple[A, ...], True),
    (Tuple[int, ...], Tuple, True),
    (Tuple[int], Tuple[int, ...], True),
    (Tuple[int, ...], Tuple[int, int], False),
    (Tuple[B, ...], Tuple[A, ...], True),
    (Tuple[A, ...], Tuple[B, ...], False),
    (Tuple[str], Tuple[int, ...], False),
    (Tuple[Tuple[int, str], Tuple[int, str]], Tuple[Tuple, ...], True),
    (FrozenSet[B], FrozenSet[A], True),
    (FrozenSet[A], FrozenSet[B], False),
    (Union[B, int], Union[A, int], True),
    (Union[A, int], B, False),
    (int, Any, True),
    (Any, int, False),
    (B, A, True),
])
def test_deep_issubclass(sub, sup, expected):
    assert deep_issubclass(sub, sup) is expected


def test_deep_isinstance():
    assert deep_isinstance((1, ("a", "b")), Tuple[int, Tuple[str, ...]])
    assert deep_isinstance((1, ("a", "b")), Tuple[Any, tuple])
    assert not deep_isinstance((1, ("a", 2)), Tuple[int, Tuple[str, ...]])
    assert deep_isinstance(frozenset({B(), B()}), FrozenSet[A])


def test_get_origin_and_args():
    assert get_origin(Any) is Any and get_origin(int) is int
    assert get_origin(Tuple[int]) is tuple and get_origin(FrozenSet[int]) is frozenset
    assert get_origin(Union[int, str]) is Union
    assert get_args(Tuple[int, ...]) == (int, ...)
    assert get_args(Union[int, int, str]) == (int, str)
    assert get_args(Tuple) == () and get_args(int) == ()


def test_get_type_hints():
    def f(a: Tuple[int, ...]) -> int:
        return 0

    assert get_type_hints(f) == {"a": Tuple[int, ...], "return": int}


def test_generic_type_meta_caches_and_is_covariant():
    class Box(metaclass=GenericTypeMeta):
        pass

    class Bag(metaclass=GenericTypeMeta):
        pass

    assert Box[int] is Box[int] and Box[int] is not Box[float] and Bag[int] is not Box[int]
    assert Box[Bag[int], int] is Box[Bag[int], int]
    assert issubclass(Box[B], Box[A]) and not issubclass(Box[A], Box[B])
    assert issubclass(Box[A], Box) and not issubclass(Box, Box[A])
    assert issubclass(Box[Tuple[B, B]], Box[Tuple[A, ...]])
    assert get_origin(Box[int]) is Box and get_args(Box[int, str]) == (int, str)
    assert repr(Box[int]) == "Box[<class 'int'>]"
    with pytest.raises(TypeError, match="already parametrized"):
        Box[int][int]


def test_typing_objects_in_dispatch_signatures():
    f = Dispatcher("f")
    f.add((Variadic[object],), lambda *args: 1)
    f.add((int, int), lambda a, b: 2)
    f.add((Variadic[int],), lambda *args: 3)
    f.add((typing_wrap(Tuple), typing_wrap(Tuple)), lambda a, b: 4)
    f.add((Variadic[Tuple],), lambda *args: 5)
    assert f(1.5) == 1 and f(1.5, 1) == 1
    assert f(1, 1) == 2 and f(1) == 3 and f(1, 2, 3) == 3
    assert f((1, 1), (1, 1)) == 4
    assert f((1, 2)) == 5 and f((1, 2), (3, 4), (5, 6)) == 5
