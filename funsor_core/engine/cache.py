"""The one cache utility: every memo in the library is a named, bounded, registered cache.

A ``Cache`` is a least-recently-used map with a fixed bound: a hit moves its entry to the
young end, an insertion past the bound evicts the oldest entry. Memory therefore grows to the
bound and stays there (no wipe-when-full sawtooth, where what a test measures depends on how
full the caches were when it started). Every cache registers itself by name at creation, so
``clear_caches()`` empties them all at once and ``cache_info()`` reports each one.

``cached(name, maxsize)`` memoizes a function of hashable arguments in such a cache.

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
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

__all__ = ["Cache", "CacheInfo", "cached", "cache_info", "clear_caches", "get_cache"]

_MISSING = object()
_REGISTRY: dict[str, Cache] = {}
_REGISTRY_LOCK = threading.Lock()


class CacheInfo(NamedTuple):
    """What ``cache_info()`` reports of one cache."""

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
        if maxsize < 1:
            raise ValueError(f"cache {name!r}: maxsize must be at least 1, got {maxsize}")
        self.name = name
        self.maxsize = maxsize
        self.misses = 0
        self._data: OrderedDict = OrderedDict()
        with _REGISTRY_LOCK:
            if name in _REGISTRY:
                raise ValueError(f"a cache named {name!r} exists already; pick another name")
            _REGISTRY[name] = self

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


def get_cache(name: str) -> Cache:
    """The registered cache called ``name``.

    Example:
        >>> get_cache("doc.example").name
        'doc.example'
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no cache named {name!r}; registered: {sorted(_REGISTRY)}") from None


def cached(name: str, maxsize: int = 1024) -> Callable[[Callable], Callable]:
    """Memoize a function of hashable positional arguments in a registered ``Cache``.

    The wrapper exposes the cache as ``fn.cache``.

    Example:
        >>> @cached("doc.cube", maxsize=4)
        ... def cube(x):
        ...     return x ** 3
        >>> cube(3), len(cube.cache)
        (27, 1)
    """
    cache = Cache(name, maxsize)

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args):
            value = cache.get(args, _MISSING)
            if value is _MISSING:
                value = fn(*args)
                cache[args] = value
            return value

        wrapper.cache = cache
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
    """Each registered cache by name: its size, bound and misses since it was last cleared.

    Example:
        >>> info = cache_info()["doc.example"]
        >>> info.maxsize
        4
    """
    with _REGISTRY_LOCK:
        caches = list(_REGISTRY.values())
    return {c.name: CacheInfo(c.name, len(c._data), c.maxsize, c.misses) for c in caches}
