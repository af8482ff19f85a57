"""Differences of unsigned Bint data, and real Tensors of int/bool data, as numbers (h63).

``Bint[n] - Bint[n]`` stays ``Bint[n]`` (as funsor 0.4.8), so a difference below 0 is out of
its domain; but a uint8 array must not wrap it around (100 - 200 was 156): the difference is
computed on the backend's default signed int. A real Tensor of bool or int data, negated or
combined with another Tensor, has float data (it was an integer array labelled Real). Oracle:
the same arithmetic on Python ints and numpy float64."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from tests.backend_values import as_backend_array as _arr

A = [100, 0, 255, 7]
B = [200, 255, 0, 7]


def _bint(values, backend, dtype=np.uint8, size=256):
    return fc.Tensor(_arr(np.array(values, dtype), backend), {"i": fc.Bint[len(values)]}, size)


def test_unsigned_difference_does_not_wrap(backend):
    a, b = _bint(A, backend), _bint(B, backend)
    expected = [x - y for x, y in zip(A, B)]  # Python ints: no wrap
    for _ in range(2):  # the rule, then the cached fast path
        r = a - b
        assert r.output == fc.Bint[256]  # funsor's domain, unchanged
        np.testing.assert_array_equal(np.asarray(r.data), expected)
    np.testing.assert_array_equal(np.asarray((fc.Number(100, 256) - b).data),
                                  [100 - y for y in B])
    np.testing.assert_array_equal(np.asarray((a - fc.Number(200, 256)).data),
                                  [x - 200 for x in A])
    swapped = fc.Tensor(_arr(np.array([B, B], np.uint8).T, backend),
                        {"i": fc.Bint[4], "j": fc.Bint[2]}, 256)
    r = a - swapped.align(("j", "i"))  # aligned by name
    np.testing.assert_array_equal(np.asarray(r.align(("i", "j")).data),
                                  [[e, e] for e in expected])
    if backend == "jax":  # decided from dtypes: the same when traced
        import jax

        def traced(x, y):
            i = {"i": fc.Bint[4]}
            return (fc.Tensor(x, i, 256) - fc.Tensor(y, i, 256)).data

        np.testing.assert_array_equal(np.asarray(jax.jit(traced)(a.data, b.data)), expected)


def test_signed_difference_keeps_its_dtype():
    a, b = _bint(A[:2], "numpy", np.int16), _bint(B[:2], "numpy", np.int16)
    r = a - b
    assert r.data.dtype == np.int16  # int16 holds -255..255: nothing recomputed
    np.testing.assert_array_equal(r.data, [-100, -255])


@pytest.mark.parametrize("data", [[True, False], [100, -3]], ids=str)
def test_real_tensor_of_integers_is_float(backend, data):
    raw = np.array(data, np.int8 if isinstance(data[0], int) and not isinstance(data[0], bool)
                   else bool)
    ref = raw.astype(np.float64)
    t = fc.Tensor(_arr(raw, backend), {"i": fc.Bint[2]})
    x = fc.Tensor(_arr(np.array([0.5, 2.0]), backend), {"i": fc.Bint[2]})
    assert t.dtype == "real"
    for _ in range(2):  # the rule, then the cached fast path
        u = fc.Tensor(_arr(raw, backend), {"i": fc.Bint[2]})  # a new Tensor of the same data
        for r, expected in [(-t, -ref), (t + t, ref + ref), (t * u, ref * ref),
                            (t - u, ref - ref), (t + x, ref + [0.5, 2.0]), (abs(t), abs(ref)),
                            (ops.exp(t), np.exp(ref))]:
            assert r.dtype == "real"
            assert np.asarray(r.data).dtype.kind == "f", r
            np.testing.assert_allclose(np.asarray(r.data), expected, rtol=1e-6)
    assert (t == u).dtype == 2  # comparisons stay Bint[2]


def test_real_results_of_float_data_keep_their_dtype(backend):
    t = fc.Tensor(_arr(np.array([1.5, -2.0], np.float32), backend), {"i": fc.Bint[2]})
    for r in (t + t, -t, t * t):
        assert str(r.data.dtype).endswith("float32")
    np.testing.assert_allclose(np.asarray((t + t).data), [3.0, -4.0])


def test_astype_int_of_a_real_tensor_is_not_cast_back():
    t = fc.Tensor(np.array([1.5, 2.5]), {"i": fc.Bint[2]})
    r = ops.astype(t, "int")
    assert r.data.dtype.kind == "i"
    np.testing.assert_array_equal(r.data, np.array([1.5, 2.5]).astype(int))


def test_difference_of_two_bint_sizes_is_real_float():
    a = fc.Tensor(np.array([1, 2], np.uint8), {"i": fc.Bint[2]}, 3)
    b = fc.Tensor(np.array([4, 0], np.uint8), {"i": fc.Bint[2]}, 5)
    r = a - b  # Bint[3] - Bint[5] has no integer bound here: Real
    assert r.output == fc.Real and r.data.dtype.kind == "f"
    np.testing.assert_array_equal(r.data, [1 - 4, 2 - 0])
