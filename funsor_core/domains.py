"""Domains: the types of funsor inputs and outputs.

A domain is a shape plus a dtype: ``"real"`` for real arrays, or an integer bound ``n`` for
integers in ``0..n-1``. Domains are interned, so ``is`` and ``==`` agree and hashing is cheap.

Example:
    >>> from funsor_core.domains import Bint, Real, Reals
    >>> Bint[3].size, Reals[2, 3].shape, Real.num_elements
    (3, (2, 3), 1)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["Array", "Bint", "Domain", "Real", "Reals", "bint", "reals"]


class Domain:
    """An interned (shape, dtype) pair. Build one with ``Bint[n]``, ``Reals[...]``, ``Array``.

    Example:
        >>> Bint[2] is Bint[2]
        True
    """

    __slots__ = ("shape", "dtype", "__weakref__")
    _CACHE: dict[tuple, Domain] = {}

    shape: tuple[int, ...]
    dtype: Any

    def __new__(cls, dtype: Any, shape: tuple[int, ...] = ()) -> Domain:
        key = (dtype, shape)
        self = cls._CACHE.get(key)
        if self is None:
            shape = tuple(shape)
            if not all(isinstance(s, int) and s >= 0 for s in shape):
                raise ValueError(f"a domain shape must be non-negative ints, got {shape}")
            if dtype != "real" and not (isinstance(dtype, int) and dtype >= 0):
                raise ValueError(f"a domain dtype must be 'real' or a bound n >= 0, got {dtype!r}")
            self = object.__new__(cls)
            object.__setattr__(self, "shape", shape)
            object.__setattr__(self, "dtype", dtype)
            cls._CACHE[(dtype, shape)] = self
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("domains are immutable")

    def __reduce__(self):
        return Domain, (self.dtype, self.shape)

    def __copy__(self) -> Domain:
        return self

    def __deepcopy__(self, memo) -> Domain:
        return self

    @property
    def size(self) -> int:
        """The number of values of a scalar ``Bint[n]`` (that is, ``n``)."""
        if self.dtype == "real":
            raise ValueError(f"{self} has no finite size; only Bint[n] does")
        return self.dtype

    @property
    def num_elements(self) -> int:
        """The number of scalar elements of the shape."""
        return math.prod(self.shape)

    @property
    def is_real(self) -> bool:
        return self.dtype == "real"

    def __repr__(self) -> str:
        if self.dtype == "real":
            if not self.shape:
                return "Real"
            return f"Reals[{', '.join(map(str, self.shape))}]"
        if not self.shape:
            return f"Bint[{self.dtype}]"
        return f"Array[{self.dtype}, {self.shape}]"

    __str__ = __repr__


class _BintFactory:
    """``Bint[n]``: integers ``0..n-1``."""

    def __getitem__(self, size: int) -> Domain:
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"Bint[n] needs an integer n, got {size!r}")
        return Domain(size, ())

    def __repr__(self) -> str:
        return "Bint"


class _RealsFactory:
    """``Reals[s1, s2, ...]``: real arrays of that shape; ``Reals[()]`` is ``Real``."""

    def __getitem__(self, shape) -> Domain:
        if not isinstance(shape, tuple):
            shape = (shape,)
        return Domain("real", tuple(shape))

    def __repr__(self) -> str:
        return "Reals"


class _ArrayFactory:
    """``Array[dtype, shape]`` for any dtype ('real' or a bound) and shape."""

    def __getitem__(self, key) -> Domain:
        dtype, shape = key
        if not isinstance(shape, tuple):
            shape = (shape,)
        return Domain(dtype, shape)

    def __repr__(self) -> str:
        return "Array"


Bint = _BintFactory()
Reals = _RealsFactory()
Array = _ArrayFactory()
Real = Reals[()]


def bint(size: int) -> Domain:
    """Functional form of ``Bint[size]``.

    Example:
        >>> bint(4)
        Bint[4]
    """
    return Bint[size]


def reals(*shape: int) -> Domain:
    """Functional form of ``Reals[shape]``.

    Example:
        >>> reals(2, 2)
        Reals[2, 2]
    """
    return Domain("real", tuple(shape))


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcasting of output shapes; raises ValueError naming the shapes."""
    n = max(map(len, shapes), default=0)
    result = []
    for i in range(n):
        size = 1
        for shape in shapes:
            j = i - n + len(shape)
            if j < 0:
                continue
            s = shape[j]
            if s != 1:
                if size != 1 and size != s:
                    raise ValueError(f"output shapes {shapes} do not broadcast together")
                size = s
        result.append(size)
    return tuple(result)
