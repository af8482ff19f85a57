"""Repeated squaring, the one implementation: a chain whose step is the same at every time is
a power of that step under an associative product (the semiring product of two transition
matrices, the composition of two Gaussian steps, the contraction of two step terms).

Example:
    >>> repeated_squaring(lambda a, b: a @ b, np.array([[1, 1], [0, 1]]), 5).tolist()
    [[1, 5], [0, 1]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["repeated_squaring"]

T = TypeVar("T")


def repeated_squaring(mul: Callable[[T, T], T], x: T, n: int) -> T:
    """``x`` multiplied by itself ``n`` times with the associative ``mul``: ``floor(log2 n)``
    squarings and at most as many products (``x * x * ...`` in this order, so ``mul`` need
    not commute).

    Example:
        >>> repeated_squaring(lambda a, b: a + b, "ab", 3)
        'ababab'
    """
    if n < 1:
        raise ValueError(f"a chain needs at least one step, got {n}")
    result = None
    while True:
        if n & 1:
            result = x if result is None else mul(result, x)
        n >>= 1
        if not n:
            return result
        x = mul(x, x)
