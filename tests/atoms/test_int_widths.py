"""Integer Tensor data wide enough for its domain, and real results as floats (h60).

``Bint[256] + Bint[256]`` is ``Bint[511]``, but the backends add uint8 arrays as uint8 and
wrap around (200 + 200 was 144); the result is recomputed on the default integer type when
the array's dtype cannot hold the domain (by dtype and size: the same under ``jax.jit``).
A real Tensor of bool or int data with a Python int (``t + 1``) has float data, as funsor's
real Number is a float. Oracle: the same arithmetic on Python ints / numpy float64."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from tests.backend_values import as_backend_array as _arr

U = np.array([200, 100, 7], np.uint8)
V = np.array([255, 3, 250], np.uint8)
PY = {ops.add: lambda a, b: a + b, ops.mul: lambda a, b: a * b}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=str)
@pytest.mark.parametrize("op", [ops.add, ops.mul], ids=str)
def test_bint_arithmetic_does_not_wrap(backend, op, dtype):
    u, v = (U % 100).astype(dtype) + 27, (V % 100).astype(dtype) + 27  # <= 126: fits int8
    size = 127
    expected = [PY[op](int(a), int(b)) for a, b in zip(u, v)]  # Python ints: no wrap
    t = fc.Tensor(_arr(u, backend), {"i": fc.Bint[3]}, size)
    s = fc.Tensor(_arr(v, backend), {"i": fc.Bint[3]}, size)
    for _ in range(2):  # the rule, then the cached fast path
        r = op(t, s)
        assert r.output == fc.Bint[PY[op](size - 1, size - 1) + 1]
        np.testing.assert_array_equal(np.asarray(r.data), expected)
    perm = fc.Tensor(_arr(np.stack([v, v]), backend), {"j": fc.Bint[2], "i": fc.Bint[3]}, size)
    r = op(t, perm)  # the inputs aligned by name: (i, j)
    assert list(r.inputs) == ["i", "j"]
    np.testing.assert_array_equal(np.asarray(r.data), [[e, e] for e in expected])
    r = op(t, fc.Number(120, size))  # Tensor with Number, both sides
    np.testing.assert_array_equal(np.asarray(r.data), [PY[op](int(a), 120) for a in u])
    r = op(fc.Number(120, size), t)
    np.testing.assert_array_equal(np.asarray(r.data), [PY[op](120, int(a)) for a in u])
    if backend == "jax" and dtype is np.uint8:  # from dtype and size: the same when traced
        import jax

        def traced(a, b):
            return op(fc.Tensor(a, {"i": fc.Bint[3]}, size),
                      fc.Tensor(b, {"i": fc.Bint[3]}, size)).data

        np.testing.assert_array_equal(np.asarray(jax.jit(traced)(t.data, s.data)), expected)


def test_the_reported_uint8_sum():
    t = fc.Tensor(np.array([200, 100], np.uint8), {"i": fc.Bint[2]}, 256)
    assert (t + t).output == fc.Bint[511]
    np.testing.assert_array_equal((t + t).data, [400, 200])
    wide = fc.Tensor(np.array([200, 100], np.int64), {"i": fc.Bint[2]}, 256)
    assert (wide + wide).data.dtype == np.int64  # wide enough: kept as it is


@pytest.mark.parametrize("data", [np.array([True, False]), np.array([3, -1])], ids=str)
def test_real_tensor_of_integers_with_an_int_is_float(backend, data):
    t = fc.Tensor(_arr(data, backend), {"i": fc.Bint[2]})
    assert t.dtype == "real"
    for r, expected in [(t + 1, data.astype(float) + 1), (1 - t, 1 - data.astype(float)),
                        (t * 3, data.astype(float) * 3), (t / 2, data.astype(float) / 2)]:
        assert r.dtype == "real"
        assert np.asarray(r.data).dtype.kind == "f"
        np.testing.assert_allclose(np.asarray(r.data), expected)


def test_float_data_keeps_its_precision(backend):
    t = fc.Tensor(_arr(np.array([1.5, -2.0], np.float32), backend), {"i": fc.Bint[2]})
    r = t + 1
    assert str(r.data.dtype).endswith("float32")
    np.testing.assert_allclose(np.asarray(r.data), [2.5, -1.0])


# A bound past the widest integer (h79): 256**9 > 2**63, so nine Bint[256] values multiplied
# do not fit int64. The check is by the domain and the dtype (the same under jax.jit): an
# IntRangeError naming the inputs and domains instead of wrapped numbers. Oracle: Python ints
# for the bounds that fit, and the bound itself for those that do not.
def test_bint_results_past_the_widest_int_raise(backend):
    t = fc.Tensor(_arr(np.full(9, 255, np.uint8), backend), {"i": fc.Bint[9]}, 256)
    for _ in range(2):
        with pytest.raises(fc.IntRangeError, match=r"reduce input 'i': Bint\[9\] with ops.mul"
                           r"(.|\n)*Bint\[256\]"):
            t.reduce(ops.mul, "i")
    seven = fc.Tensor(_arr(np.full(7, 255, np.uint8), backend), {"i": fc.Bint[7]}, 256)
    r = seven.reduce(ops.mul, "i")  # 255**7 < 2**63: exact
    assert r.output == fc.Bint[255 ** 7 + 1] and int(r.data) == 255 ** 7
    assert int(t.reduce(ops.add, "i").data) == 9 * 255
    half = 2 ** 62 + 1  # values up to 2**62: the sum's bound is 2**63 + 1
    big = fc.Tensor(_arr(np.array([2 ** 40, 3]), backend), {"j": fc.Bint[2]}, half)
    for _ in range(2):  # the rule, then again (no fast path may skip the check)
        with pytest.raises(fc.IntRangeError, match=r"apply ops.add(.|\n)*inputs \{'j': "
                           r"Bint\[2\]\} and output Bint\[4611686018427387905\]"):
            big + big
        with pytest.raises(fc.IntRangeError, match="apply ops.mul"):
            big * fc.Number(2, half)
    fits = fc.Tensor(_arr(np.array([2 ** 40, 3]), backend), {"j": fc.Bint[2]}, 2 ** 61)
    np.testing.assert_array_equal(np.asarray((fits + fits).data), [2 ** 41, 6])


def test_bint_range_under_jit_is_decided_by_the_domain():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        t = fc.Tensor(jax.numpy.asarray(np.full(9, 255, np.uint8)), {"i": fc.Bint[9]}, 256)
        with pytest.raises(fc.IntRangeError, match="ops.mul"):
            jax.jit(lambda t: t.reduce(ops.mul, "i"))(t)
        seven = fc.Tensor(jax.numpy.asarray(np.full(7, 255)), {"i": fc.Bint[7]}, 256)
        f = jax.jit(lambda t: t.reduce(ops.mul, "i"))  # 255**7 fits int64: exact
        assert int(f(seven).data) == 255 ** 7
    finally:
        fc.set_backend("numpy")


def test_bint_contractions_past_the_widest_int_raise():
    # Each product fits int64 but the sum of eight does not (8 * 2**61 = 2**64): the same
    # IntRangeError from a Contraction, sum_product and the optimized plan; one fewer fits.
    from funsor_core.sum_product import sum_product
    from interpretations import lazy

    a = fc.Tensor(np.full((2, 8), 2 ** 61), {"i": fc.Bint[2], "j": fc.Bint[8]}, 2 ** 61 + 1)
    b = fc.Tensor(np.ones(8, np.int64), {"j": fc.Bint[8]}, 2)
    with lazy:
        lazy_sum = (a * b).reduce(ops.add, "j")
    for run in (lambda: fc.Contraction(ops.add, ops.mul, frozenset({"j"}), (a, b)),
                lambda: sum_product(ops.add, ops.mul, [a, b], frozenset({"j"})),
                lambda: fc.apply_optimizer(lazy_sum)):
        with pytest.raises(fc.IntRangeError, match=r"reduce input 'j': Bint\[8\] with ops.add"):
            run()
    r = fc.Contraction(ops.add, ops.mul, frozenset({"j"}), (a(j=fc.Slice("j", 0, 3, 1, 8)),
                                                             b(j=fc.Slice("j", 0, 3, 1, 8))))
    np.testing.assert_array_equal(r.data, [3 * 2 ** 61] * 2)  # Python ints: 3 * 2**61 < 2**63
