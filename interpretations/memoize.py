"""``memoize``: build each distinct term once, reusing the result (common subexpression
elimination across whole computations).

``with memoize() as cache:`` wraps the interpretation active when it is entered. A term
``Cls(*args)`` whose arguments are identical (by the same key cons-hashing uses) to those of
a term built before under the same ``cache`` returns that earlier result, without asking any
rule: so evaluating one lazy expression twice, or two lazy expressions sharing subterms,
computes each shared piece once, and the results are the same objects. Passing the same
``cache`` dict to a later ``memoize(cache)`` reuses it. The cache holds the arguments of every
entry as well as its result, so an argument's identity cannot be reused by a new object while
its entry exists.

Example:
    >>> from interpretations import lazy, memoize
    >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    >>> with lazy:
    ...     expr = (x * x).reduce(ops.add, "i")
    >>> with memoize() as cache:
    ...     a, b = fc.reinterpret(expr), fc.reinterpret(expr)
    >>> a is b, float(a.data), fc.reinterpret(expr) is a
    (True, 5.0, False)
"""

from __future__ import annotations

import contextlib
from typing import Any

from funsor_core.engine.interpreter import ENTERED, Interpretation, _hashable

__all__ = ["Memoize", "memoize"]


class Memoize(Interpretation):
    """The interpretation that ``memoize`` enters: a cache in front of the interpretation
    that was active when it was entered (``fallback=ENTERED``).

    Example:
        >>> m = Memoize()
        >>> with m:
        ...     one, again = fc.Number(1.0) + 2, fc.Number(1.0) + 2
        >>> one is again, len(m.cache) > 0
        (True, True)
    """

    def __init__(self, cache: dict | None = None) -> None:
        super().__init__("memoize", fallback=ENTERED)
        if cache is None:
            cache = {}
        elif not isinstance(cache, dict):
            raise TypeError(f"memoize(cache) takes a dict, got {type(cache).__name__}")
        self.cache = cache

    def interpret(self, cls: type, args: tuple) -> Any:
        # The key is the one cons-hashing uses: funsors and arrays by identity (funsors are
        # cons-hashed, so identical means equal), plain values by value and type.
        key = (cls, cls._cons_key(args) if cls._cons_key is not None
               else tuple(map(_hashable, args)))
        entry = self.cache.get(key)
        if entry is not None:
            return entry[0]
        # Subterms that the rules below build start again from the active interpretation,
        # so they pass here and are memoized too (when this one is above them).
        value = self.defer(cls, args)
        self.cache[key] = (value, args)  # args kept alive: their ids stay unique
        return value


@contextlib.contextmanager
def memoize(cache: dict | None = None):
    """Memoize every term built inside the block; yields the ``cache`` dict.

    Example:
        >>> with memoize() as cache:
        ...     x = fc.Number(2.0) * 3
        >>> isinstance(cache, dict), float(x.data)
        (True, 6.0)
    """
    with Memoize(cache) as interp:
        yield interp.cache
