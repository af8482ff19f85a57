"""Engine state: per-thread backends, linear printing, cheap canonical sorting, bounded caches.

No test here measures time: complexity is checked by output sizes, call counts and recursion
limits, and memory by tracemalloc.
"""

import asyncio
import gc
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine import backend
from funsor_core.terms import contraction
from funsor_core.testing import randn
from interpretations import lazy

BACKENDS = ("numpy", "torch", "jax", "numpy")


def _array_backend(x) -> str:
    return backend.backend_name_of(x)


# -- 1. the active backend belongs to the thread or task ---------------------------------------
def test_backend_is_per_thread():
    barrier = threading.Barrier(len(BACKENDS))
    wrong = [None] * len(BACKENDS)

    def work(k, name):
        fc.set_backend(name)
        barrier.wait()  # every thread has chosen before any makes arrays
        count = 0
        for _ in range(200):
            if _array_backend(randn(2)) != name or fc.get_backend() != name:
                count += 1
        wrong[k] = count

    threads = [threading.Thread(target=work, args=(k, n)) for k, n in enumerate(BACKENDS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == [0] * len(BACKENDS)
    assert fc.get_backend() == "numpy"  # the main thread's choice is untouched


def test_backend_is_per_asyncio_task():
    async def work(name):
        fc.set_backend(name)
        wrong = 0
        for _ in range(200):
            await asyncio.sleep(0)  # interleave the tasks
            if _array_backend(randn(2)) != name:
                wrong += 1
        return wrong

    async def main():
        return await asyncio.gather(*(work(n) for n in BACKENDS))

    assert asyncio.run(main()) == [0] * len(BACKENDS)
    assert fc.get_backend() == "numpy"


def test_new_thread_uses_process_default():
    seen = []

    def probe():
        seen.append((fc.get_backend(), _array_backend(randn(1))))

    try:
        fc.set_backend("torch")  # main thread, no event loop: also the process default
        t = threading.Thread(target=probe)
        t.start()
        t.join()
        backend.set_default_backend("jax")
        t = threading.Thread(target=probe)
        t.start()
        t.join()
    finally:
        backend.set_default_backend("numpy")
    assert seen == [("torch", "torch"), ("jax", "jax")]


def test_set_backend_in_a_thread_leaves_the_default():
    def probe():
        fc.set_backend("torch")

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    assert fc.get_backend() == "numpy"
    assert backend._DEFAULT[0] == "numpy"


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown backend 'tensorflow'"):
        fc.set_backend("tensorflow")


# -- 2. pretty and quote are linear and iterative ----------------------------------------------
def _lazy_sum(n):
    with lazy:
        s = fc.Variable("x0", Real)
        for k in range(1, n):
            s = s + fc.Variable(f"x{k}", Real)
    return s


def test_pretty_length_is_linear():
    small, large = len(fc.pretty(_lazy_sum(1000))), len(fc.pretty(_lazy_sum(2000)))
    assert large / small < 2.5


def test_pretty_and_quote_of_deep_chain_under_low_recursion_limit():
    s = _lazy_sum(2_000)  # ten times deeper than the recursion limit
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        text = fc.pretty(s)
        quoted = fc.quote(s)
    finally:
        sys.setrecursionlimit(limit)
    assert len(text.splitlines()) == 2 * 2_000 - 1  # one line per term, leaves included
    assert quoted.count("Variable(") == 2_000


def test_quote_of_shared_dag_is_linear_and_round_trips():
    # x_{k+1} = x_k * x_k: 30 distinct terms, 2^30 leaves when written out as a tree.
    ns = {"np": np, "ops": ops, **{k: getattr(fc, k) for k in fc.__all__}}
    with lazy:
        x = fc.Variable("x", Real).exp()
        for _ in range(30):
            x = fc.Binary(ops.add, x, x)
        text = fc.quote(x)
        assert len(text) < 40 * 60
        assert fc.quote(eval(text, dict(ns))) == text
        # The rebuilt term is the same cons-hashed term, shared structure included.
        assert eval(text, dict(ns)) is x


def test_pretty_of_shared_dag_names_repeats():
    with lazy:
        y = fc.Variable("y", Real).exp()
        z = y + y
    lines = fc.pretty(z).splitlines()
    assert lines[1].startswith("  Unary #1 ops.exp")
    assert lines[3] == "  Unary #1 (see above)"
    assert len(lines) == 4


def test_pretty_caps_indent_and_inputs():
    lines = fc.pretty(_lazy_sum(100)).splitlines()
    assert max(len(line) - len(line.lstrip(" ")) for line in lines) <= 2 * 32
    assert lines[0].count(": Real") == 8 and "92 more" in lines[0]
    deepest = next(line for line in lines if "Variable 'x0'" in line)
    assert deepest.startswith(" " * 64 + "[99] Variable 'x0' Real")


# -- 3. canonical term order: cheap key, no re-sorting ------------------------------------------
def test_sort_key_uses_no_repr(monkeypatch):
    calls = []
    monkeypatch.setattr(contraction, "repr", lambda x: calls.append(x) or "", raising=False)
    s = fc.Variable("x0", Real)
    for k in range(1, 50):
        s = s + fc.Variable(f"x{k}", Real)
    assert calls == []


def test_sum_built_term_by_term_sorts_once_per_step(monkeypatch):
    # Each step builds one Contraction of k terms: k keys, and no other sort of the terms.
    calls = [0]
    key = contraction.term_sort_key

    def counting_key(term):
        calls[0] += 1
        return key(term)

    monkeypatch.setattr(contraction, "term_sort_key", counting_key)
    n = 200
    s = fc.Variable("x0", Real)
    for k in range(1, n):
        s = s + fc.Variable(f"x{k:04d}", Real)
    assert len(s.terms) == n
    assert calls[0] == sum(range(2, n + 1))
    names = [t.name for t in s.terms]
    assert names == sorted(names)


def test_canonical_order_is_independent_of_build_order():
    xs = [fc.Variable(f"x{k}", Real) for k in range(12)]
    ys = [fc.Variable(f"y{k}", Reals[2]) for k in range(3)]
    forward, backward = fc.Number(0.5), fc.Number(0.5)
    for t in xs + ys:
        forward = forward + t
    for t in reversed(xs + ys):
        backward = backward + t
    assert forward is backward
    assert [contraction.term_sort_key(t) for t in forward.terms] == sorted(
        contraction.term_sort_key(t) for t in forward.terms)


def test_nested_sums_flatten_into_one_contraction():
    a = [fc.Variable(f"a{k}", Real) for k in range(5)]
    b = [fc.Variable(f"b{k}", Real) for k in range(5)]
    sa, sb = a[0], b[0]
    for t in a[1:]:
        sa = sa + t
    for t in b[1:]:
        sb = sb + t
    s = sa + sb
    assert isinstance(s, fc.Contraction) and len(s.terms) == 10
    assert {t.name for t in s.terms} == {t.name for t in a + b}


def test_long_sum_evaluates_like_numpy():
    # Oracle: substitute values into the lazy 30-term sum and compare with numpy's sum.
    values = np.random.RandomState(0).randn(30)
    s = fc.Variable("x0", Real)
    for k in range(1, 30):
        s = s + fc.Variable(f"x{k}", Real)
    result = s(**{f"x{k}": float(v) for k, v in enumerate(values)})
    np.testing.assert_allclose(result.data, values.sum())


# -- 4. caches are bounded or weak: memory stays flat over fresh names --------------------------
def _fresh_step(k, data, other, vector):
    # One cheap op per iteration, in rotation (the costlier ones less often), each meeting a
    # cache with a fresh key.
    kind = k % 8
    if kind == 0:
        fc.Tensor(data, {f"i{k}": Bint[2]}) + other  # align recipe of a fresh signature
    elif kind == 4:
        with lazy:
            fc.Variable(f"x{k}", Real) + 1.0  # a lazy term of a fresh name
    elif kind % 2:
        vector[k]  # a bound op with a fresh parameter, and its output domain
    else:
        fc.to_funsor(k, Bint[k + 1])  # an integer constant of a fresh Bint size


def _shrink_caches(bound):
    """Bound every registered cache (and each member of a cache family) by ``bound``; returns
    a function that restores the old bounds."""
    from funsor_core.engine.cache import CacheFamily, get_cache

    saved = []
    for name in fc.cache_info():
        cache = get_cache(name)
        members = list(cache._members) if isinstance(cache, CacheFamily) else []
        for c in [cache, *members]:
            saved.append((c, c.maxsize))
            c.maxsize = min(c.maxsize, bound)

    def restore():
        for c, maxsize in saved:
            c.maxsize = maxsize
    return restore


def test_memory_stays_flat_over_fresh_names():
    data, other = np.ones(2), fc.Tensor(np.ones(2), {"j": Bint[2]})
    vector = fc.Variable("v", Reals[100_000])
    # Every cache bounded by 32 (the property does not depend on the bound; smaller bounds
    # fill in fewer steps: was 128, 4x the warm-up, all of it under tracemalloc). Start from
    # empty caches, whatever ran before (a long chain leaves large entries that the fresh
    # steps below would evict, or not, depending on each cache's bound), then fill every
    # bounded cache: the align cache meets a fresh key every
    # 8th step, so 8 x 32 steps fill it (and the others, which meet one more often).
    # Traced from before the warm-up, so that an entry evicted later counts as freed.
    bound, extra = 32, 1_250
    restore = _shrink_caches(bound)
    fc.clear_caches()
    gc.collect()
    tracemalloc.start()
    try:
        warm = 8 * bound + 8
        for k in range(warm):
            _fresh_step(k, data, other, vector)
        info = fc.cache_info()
        for name in ("tensor.align_binary", "terms.bint_numbers", "domains.recent"):
            assert info[name].size == info[name].maxsize, info[name]  # the premise: full
        gc.collect()
        after_small = tracemalloc.get_traced_memory()[0]
        for k in range(warm, warm + extra):
            _fresh_step(k, data, other, vector)
        gc.collect()
        after_large = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        restore()
        fc.clear_caches()
    # 1,250 more fresh names: an unbounded cache would grow by an entry of a name, a key and
    # a value per step (100 bytes or more: 125 kB and up, twice the bound below, as 2,500
    # steps against 125 kB were); bounded ones, full, stay full (about 10 kB of noise here).
    assert after_large - after_small < 62_500, (after_small, after_large)


def test_bound_ops_are_interned_while_alive():
    op = ops.sum.bind(axis=12345)
    assert ops.sum.bind(axis=12345) is op
    for k in range(1000):  # overflow the strong front cache
        ops.sum.bind(axis=k)
    assert ops.sum.bind(axis=12345) is op  # still the same object: the weak map kept it


def test_long_tuple_keys_share_one_cache_entry():
    from funsor_core.engine.interpreter import Tuple, tuple_type

    assert tuple_type((1,) * 20) is tuple_type((2,) * 30)
    assert issubclass(tuple_type((1, "a") * 10), Tuple[(int, str), ...])
    assert not issubclass(tuple_type((1, "a") * 10), Tuple[int, ...])
    with pytest.raises(TypeError, match="fixed-length pattern"):
        from funsor_core.interpreter import Interpretation, reflect

        toy = Interpretation("toy_long", fallback=reflect)
        toy.register(fc.Contraction, object, object, frozenset, Tuple[(fc.Funsor,) * 9])(print)
