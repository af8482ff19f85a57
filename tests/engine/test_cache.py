"""The one cache utility (funsor_core/engine/cache.py): LRU and FIFO semantics against tiny
list-based reference models, the bound under random operations, the registry, and
``clear_caches`` / ``cache_info`` over every cache the library registers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funsor_core as fc
from funsor_core.engine import cache as cache_module
from funsor_core.engine.cache import Cache, CacheFamily, FastCache, cached, get_cache

_NAMES = (f"test.cache.{k}" for k in itertools.count())


class ListLRU:
    """Reference model: a list of (key, value), oldest first."""

    def __init__(self, maxsize):
        self.maxsize, self.items = maxsize, []

    def _find(self, key):
        return next((i for i, (k, _) in enumerate(self.items) if k == key), None)

    def get(self, key):
        i = self._find(key)
        if i is None:
            return None
        item = self.items.pop(i)
        self.items.append(item)
        return item[1]

    def set(self, key, value):
        i = self._find(key)
        if i is not None:
            self.items.pop(i)
        self.items.append((key, value))
        del self.items[:-self.maxsize]


class ListFIFO(ListLRU):
    """Reference model of FastCache: hits do not reorder; a new key evicts the oldest."""

    def get(self, key):
        i = self._find(key)
        return None if i is None else self.items[i][1]

    def set(self, key, value):
        i = self._find(key)
        if i is not None:
            self.items[i] = (key, value)
            return
        self.items.append((key, value))
        del self.items[:-self.maxsize]


_OPS = st.lists(st.tuples(st.sampled_from(["get", "set"]), st.integers(0, 9),
                          st.integers()), max_size=60)


@settings(max_examples=150, deadline=None)
@given(maxsize=st.integers(1, 5), program=_OPS)
def test_lru_matches_the_list_model(maxsize, program):
    cache, model = Cache(next(_NAMES), maxsize), ListLRU(maxsize)
    for op, key, value in program:
        if op == "get":
            assert cache.get(key) == model.get(key)
        else:
            cache[key] = value
            model.set(key, value)
        assert len(cache) <= maxsize
        assert list(cache._data.items()) == model.items


@settings(max_examples=150, deadline=None)
@given(maxsize=st.integers(1, 5), program=_OPS)
def test_fast_cache_matches_the_fifo_model(maxsize, program):
    cache, model = FastCache(next(_NAMES), maxsize), ListFIFO(maxsize)
    for op, key, value in program:
        if op == "get":
            assert cache.data.get(key) == model.get(key)
        else:
            cache.put(key, value)
            model.set(key, value)
        assert len(cache) <= maxsize
        assert list(cache.data.items()) == model.items


@settings(max_examples=50, deadline=None)
@given(maxsize=st.integers(1, 4), keys=st.lists(st.integers(0, 20), max_size=80))
def test_cached_function_and_family_members_respect_their_bound(maxsize, keys):
    calls = []

    @cached(next(_NAMES), maxsize)
    def square(x):
        calls.append(x)
        return x * x

    family = CacheFamily(next(_NAMES), maxsize)
    members = [family.new(), family.new()]
    for k in keys:
        assert square(k) == k * k
        members[k % 2].put(k, k)
        assert len(square.cache) <= maxsize
        assert all(len(m) <= maxsize for m in members)
    assert len(family) == sum(len(m) for m in members)
    assert len(calls) == square.cache.misses  # a miss per call of the function


def test_names_are_unique():
    name = next(_NAMES)
    Cache(name, 2)
    for make in (Cache, FastCache, CacheFamily):
        with pytest.raises(ValueError, match="exists already"):
            make(name, 2)
    with pytest.raises(ValueError, match="at least 1"):
        Cache(next(_NAMES), 0)
    assert len(cache_module._REGISTRY) == len(set(cache_module._REGISTRY))


def test_library_caches_are_registered_under_their_names():
    info = fc.cache_info()
    for name in ("engine.dispatch", "engine.own_rules", "engine.tuple_types", "ops.dispatch",
                 "ops.infer_domain", "tensor.align_binary", "domains.recent",
                 "terms.bint_numbers", "gaussian.layout", "engine.deep_issubclass"):
        assert name in info, name
        assert get_cache(name).name == name
        assert 1 <= info[name].maxsize
    with pytest.raises(KeyError, match="no cache named"):
        get_cache("no.such.cache")


def test_clear_caches_empties_every_registered_cache():
    x = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    y = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})  # other inputs than x's: aligned
    (x + y).reduce(fc.ops.logaddexp, "i")  # fills dispatch, domain and alignment caches
    mine = FastCache(next(_NAMES), 4)
    mine.put("k", 1)
    info = fc.cache_info()
    assert info["engine.dispatch"].size > 0 and info["tensor.align_binary"].size > 0
    assert info[mine.name] == (mine.name, 1, 4, 1)
    fc.clear_caches()
    assert all(i.size == 0 and i.misses == 0 for i in fc.cache_info().values())
    # Everything still works, and refills.
    assert float((x + x).reduce(fc.ops.add).data) == 12.0
    assert fc.cache_info()["engine.dispatch"].size > 0


def test_public_names_are_documented():
    assert fc.clear_caches.__doc__ and fc.cache_info.__doc__
    assert {"clear_caches", "cache_info"} <= set(fc.__all__)
