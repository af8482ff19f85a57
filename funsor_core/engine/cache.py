"""The one cache utility: every memo in the library is a named, bounded, registered cache.

A ``Cache`` is a least-recently-used map with a fixed bound: a hit moves its entry to the
young end, an insertion past the bound evicts the oldest entry. Memory therefore grows to the
bound and stays there (no wipe-when-full sawtooth, where what a test measures depends on how
full the caches were when it started). Every cache registers itself by name at creation, so
``clear_caches()`` empties them all at once and ``cache_info()`` reports each one.

``cached(name, maxsize)`` memoizes a function of hashable arguments in such a cache.

Hot paths (the interpreter's dispatch, op kernels, eager alignment) use ``FastCache``: its
hits are plain ``dict`` reads of its ``data`` (no reordering, no wrapper call), and an
insertion past the bound evicts the oldest insertion. Per-object caches (one per
interpretation instance, one per op) are the members of one registered ``CacheFamily``.

Not registered, on purpose: interning tables (the interpreter's cons-hash of terms, the
interned domains, ops and parametrized classes). They are weak maps whose entries die with
their objects, so they are bounded by what is alive; and clearing one would break ``is``
between an object made before and an equal one made after.

This module imports nothing of the library, so every layer (``ops`` and the backends too)
may use it.

Example:
    >>> from funsor_core.engine.cache import Cache, cached, cache_info, clear_caches
    >>> squares = Cache("doc.squares", maxsize=2)
    >>> squares[1] = 1; squares[2] = 4; squares[3] = 9   # evicts 1, the oldest
    >>> (1 in squares, squares.get(3))
    (False, 9)
    >>> @cached("doc.double", maxsize=8)
    ... def double(x):
    ...     return 2 * x
    >>> double(4), cache_info()["doc.double"].size
    (8, 1)
    >>> clear_caches(); len(squares)
    0
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

__all__ = ["Cache", "CacheFamily", "CacheInfo", "FastCache", "cached", "cache_info",
           "clear_caches", "get_cache"]

_MISSING = object()
_REGISTRY: dict[str, Any] = {}  # name -> Cache | FastCache | CacheFamily
_REGISTRY_LOCK = threading.Lock()


def _register(cache: Any) -> None:
    with _REGISTRY_LOCK:
        if cache.name in _REGISTRY:
            raise ValueError(f"a cache named {cache.name!r} exists already; pick another name")
        _REGISTRY[cache.name] = cache


def _check_bound(name: str, maxsize: int) -> None:
    if maxsize < 1:
        raise ValueError(f"cache {name!r}: maxsize must be at least 1, got {maxsize}")


class CacheInfo(NamedTuple):
    """What ``cache_info()`` reports of one cache.

    Example:
        >>> info = fc.cache_info()["terms.bint_numbers"]
        >>> info.name, info.maxsize
        ('terms.bint_numbers', 4096)
    """

    name: str
    size: int
    maxsize: int
    misses: int


class Cache:
    """A named least-recently-used map of at most ``maxsize`` entries, registered for
    ``clear_caches()``.

    Reads are ``cache.get(key)`` (``None`` or ``default`` on a miss) and ``key in cache``;
    writes are ``cache[key] = value`` or ``cache.setdefault(key, value)``. A second cache with
    a name already taken raises, so names stay meaningful in ``cache_info()``.

    Example:
        >>> c = Cache("doc.example", maxsize=4)
        >>> c.setdefault("k", 1), c.get("k"), c.get("missing", 0)
        (1, 1, 0)
    """

    __slots__ = ("name", "maxsize", "misses", "_data")

    def __init__(self, name: str, maxsize: int = 1024):
        _check_bound(name, maxsize)
        self.name = name
        self.maxsize = maxsize
        self.misses = 0
        self._data: OrderedDict = OrderedDict()
        _register(self)

    def get(self, key: Hashable, default: Any = None) -> Any:
        data = self._data
        value = data.get(key, _MISSING)
        if value is _MISSING:
            self.misses += 1
            return default
        try:
            data.move_to_end(key)
        except KeyError:  # evicted by another thread between the read and the move
            pass
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        data = self._data
        data[key] = value
        data.move_to_end(key)
        while len(data) > self.maxsize:
            try:
                data.popitem(last=False)
            except KeyError:  # emptied by another thread
                break

    def setdefault(self, key: Hashable, value: Any) -> Any:
        """The cached value of ``key``, storing ``value`` first if there is none."""
        found = self.get(key, _MISSING)
        if found is _MISSING:
            self[key] = value
            return value
        return found

    def pop(self, key: Hashable, default: Any = None) -> Any:
        return self._data.pop(key, default)

    def clear(self) -> None:
        self._data.clear()
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Cache({self.name!r}, {len(self._data)}/{self.maxsize})"


class FastCache:
    """A named, bounded map for hot paths. Its entries live in ``data``, a plain ``dict``
    that a hot path reads directly (``data.get(key)``: no wrapper, no reordering); writes go
    through ``put`` (or ``cache[key] = value``), which evicts the oldest insertion once
    ``maxsize`` entries are held (first in, first out). ``clear()`` empties ``data`` in place,
    so a reference to it stays valid. Registered for ``clear_caches()`` unless it is a member
    of a ``CacheFamily``; ``misses`` counts insertions since the last clear.

    Example:
        >>> f = FastCache("doc.fast", maxsize=2)
        >>> f["a"] = 1; f["b"] = 2; f.data.get("a"); f.put("c", 3)   # evicts "a", the oldest
        1
        3
        >>> sorted(f.data), f.misses
        (['b', 'c'], 3)
    """

    __slots__ = ("name", "maxsize", "misses", "data", "__weakref__")

    def __init__(self, name: str, maxsize: int = 1024, *, register: bool = True):
        _check_bound(name, maxsize)
        self.name = name
        self.maxsize = maxsize
        self.misses = 0
        self.data: dict = {}
        if register:
            _register(self)

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` under ``key`` (evicting the oldest insertion when full); returns it."""
        data = self.data
        self.misses += 1
        while len(data) >= self.maxsize and key not in data:
            try:
                del data[next(iter(data))]
            except (KeyError, RuntimeError, StopIteration):  # changed by another thread
                break
        data[key] = value
        return value

    __setitem__ = put

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __getitem__(self, key: Hashable) -> Any:
        return self.data[key]

    def __contains__(self, key: Hashable) -> bool:
        return key in self.data

    def setdefault(self, key: Hashable, value: Any = None) -> Any:
        found = self.data.get(key, _MISSING)
        return self.put(key, value) if found is _MISSING else found

    def clear(self) -> None:
        self.data.clear()
        self.misses = 0

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"FastCache({self.name!r}, {len(self.data)}/{self.maxsize})"


class CacheFamily:
    """One registered name for many small per-object ``FastCache``s (one per interpretation
    instance, one per op), each bounded by ``maxsize``; ``clear()`` empties every live member.

    Example:
        >>> fam = CacheFamily("doc.family", maxsize=8)
        >>> a, b = fam.new(), fam.new()
        >>> a[1] = "x"; b.put(2, "y")
        'y'
        >>> len(fam), cache_info()["doc.family"].size
        (2, 2)
        >>> fam.clear(); len(a) + len(b)
        0
    """

    __slots__ = ("name", "maxsize", "_members")

    def __init__(self, name: str, maxsize: int = 1024):
        _check_bound(name, maxsize)
        self.name = name
        self.maxsize = maxsize
        self._members: weakref.WeakSet = weakref.WeakSet()
        _register(self)

    def new(self) -> FastCache:
        """A new member: a ``FastCache`` of this family's bound, cleared with the family."""
        cache = FastCache(self.name, self.maxsize, register=False)
        self._members.add(cache)
        return cache

    @property
    def misses(self) -> int:
        return sum(c.misses for c in list(self._members))

    def clear(self) -> None:
        for cache in list(self._members):
            cache.clear()

    def __len__(self) -> int:
        return sum(len(c) for c in list(self._members))

    def __repr__(self) -> str:
        return f"CacheFamily({self.name!r}, {len(self._members)} members)"


def get_cache(name: str) -> Cache | FastCache | CacheFamily:
    """The registered cache called ``name``.

    Example:
        >>> get_cache("engine.dispatch").name
        'engine.dispatch'
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no cache named {name!r}; registered: {sorted(_REGISTRY)}") from None


def cached(name: str, maxsize: int = 1024, *, fast: bool = False) -> Callable[[Callable], Callable]:
    """Memoize a function of hashable positional arguments in a registered cache: a ``Cache``
    (least recently used), or with ``fast=True`` a ``FastCache`` (hits do not reorder; for
    functions called on hot paths).

    The wrapper exposes the cache as ``fn.cache`` and empties it with ``fn.cache_clear()``.

    Example:
        >>> @cached("doc.cube", maxsize=4)
        ... def cube(x):
        ...     return x ** 3
        >>> cube(3), len(cube.cache)
        (27, 1)
    """
    cache = FastCache(name, maxsize) if fast else Cache(name, maxsize)

    def decorate(fn: Callable) -> Callable:
        if fast:
            data, put = cache.data, cache.put

            @functools.wraps(fn)
            def wrapper(*args):
                value = data.get(args, _MISSING)
                if value is _MISSING:
                    value = put(args, fn(*args))
                return value
        else:
            @functools.wraps(fn)
            def wrapper(*args):
                value = cache.get(args, _MISSING)
                if value is _MISSING:
                    value = fn(*args)
                    cache[args] = value
                return value

        wrapper.cache = cache
        wrapper.cache_clear = cache.clear  # as functools' caches spell it
        return wrapper

    return decorate


def clear_caches() -> None:
    """Empty every registered cache (plans, dispatch tables, compiled programs, ...).

    Example:
        >>> clear_caches()
    """
    with _REGISTRY_LOCK:
        caches = list(_REGISTRY.values())
    for cache in caches:
        cache.clear()


def cache_info() -> dict[str, CacheInfo]:
    """Each registered cache by name: its size, bound (per member, for a family) and misses
    (insertions, for a ``FastCache``) since it was last cleared.

    Example:
        >>> _ = Cache("doc.info", maxsize=4)
        >>> info = cache_info()["doc.info"]
        >>> info.maxsize
        4
    """
    with _REGISTRY_LOCK:
        caches = list(_REGISTRY.values())
    return {c.name: CacheInfo(c.name, len(c), c.maxsize, c.misses) for c in caches}
