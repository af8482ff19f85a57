"""Reductions and contractions of Tensors of int or bool data, as numbers (h64).

A Real-labelled Tensor of int8, uint8 or bool data reduces and contracts in floats (an int8
sum wrapped around, numpy's logaddexp of int8 was float16 and of bool raised, torch refused
an int8 einsum); a Bint Tensor's sum widens its domain and keeps integer data that does not
wrap, and its max and min stay in its domain and dtype. Decided by dtype alone, so the same
under ``jax.jit``. Oracles: numpy float64 reductions, Python int sums, ``opt_einsum.contract``
of float64 arrays."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum
from funsor_core.sum_product import sum_product
from tests.backend_values import as_backend_array as _arr

RAW = {
    "int8": np.array([[100, 100, -3], [90, 1, 0]], np.int8),
    "uint8": np.array([[200, 255, 3], [90, 1, 0]], np.uint8),
    "bool": np.array([[True, False, True], [True, True, False]]),
}
NUMPY_REDUCE = {
    ops.add: np.sum,
    ops.mul: np.prod,
    ops.logaddexp: lambda x, axis: np.logaddexp.reduce(x, axis=axis),
    ops.mean: np.mean,
    ops.max: np.max,
    ops.min: np.min,
}
IJ = {"i": fc.Bint[2], "j": fc.Bint[3]}


def _is_float(data) -> bool:
    return np.asarray(data).dtype.kind == "f"


@pytest.mark.parametrize("kind", sorted(RAW))
def test_real_reduction_of_integers_is_float(backend, kind):
    raw = RAW[kind]
    ref = raw.astype(np.float64)
    for _ in range(2):  # the rule, then the cached fast path (reduce_tensor_name)
        t = fc.Tensor(_arr(raw, backend), IJ)
        assert t.dtype == "real"
        for op, np_op in NUMPY_REDUCE.items():
            for names, axis in [("i", 0), ("j", 1), (frozenset("ij"), (0, 1))]:
                r = t.reduce(op, names)
                assert r.output == fc.Real and _is_float(r.data), (op, names, r.data.dtype)
                np.testing.assert_allclose(np.asarray(r.data), np_op(ref, axis=axis),
                                           rtol=1e-6, err_msg=f"{op} {names}")
            if kind == "bool":  # a mask labelled Real: logical reductions keep bools
                for op, np_op in [(ops.and_, np.all), (ops.or_, np.any)]:
                    r = t.reduce(op, names)
                    assert np.asarray(r.data).dtype == bool
                    np.testing.assert_array_equal(np.asarray(r.data), np_op(raw, axis=axis))


def test_bint_reductions_keep_integers_without_wrapping(backend):
    raw = RAW["uint8"]
    t = fc.Tensor(_arr(raw, backend), IJ, 256)
    total = t.reduce(ops.add, frozenset("ij"))
    assert total.output == fc.Bint[6 * 255 + 1]  # six values below 256
    assert not _is_float(total.data)
    assert int(total.data) == sum(int(v) for v in raw.flat)  # Python ints: no wrap
    rows = t.reduce(ops.add, "j")
    np.testing.assert_array_equal(np.asarray(rows.data), [sum(map(int, r)) for r in raw])
    for op, np_op in [(ops.max, np.max), (ops.min, np.min)]:
        r = t.reduce(op, "i")
        assert r.output == fc.Bint[256]  # stays in the domain, and in the dtype
        assert str(r.data.dtype).endswith("uint8")
        np.testing.assert_array_equal(np.asarray(r.data), np_op(raw, axis=0))
    # logaddexp and mean of a Bint are Real: float data, not computed on the integers
    for op, np_op in [(ops.logaddexp, NUMPY_REDUCE[ops.logaddexp]), (ops.mean, np.mean)]:
        r = t.reduce(op, "i")
        assert r.output == fc.Real and _is_float(r.data)
        np.testing.assert_allclose(np.asarray(r.data), np_op(raw.astype(float), axis=0),
                                   rtol=1e-6)


def test_contraction_of_integers_is_float(backend):
    a_raw, b_raw = RAW["int8"], np.array([3, 4, -2], np.int8)
    a = fc.Tensor(_arr(a_raw, backend), IJ)
    b = fc.Tensor(_arr(b_raw, backend), {"j": fc.Bint[3]})
    af, bf = a_raw.astype(np.float64), b_raw.astype(np.float64)
    cases = [
        (sum_product(ops.add, ops.mul, [a, b], frozenset("ij")),
         opt_einsum.contract("ij,j->", af, bf)),
        (sum_product(ops.add, ops.mul, [a, b], frozenset("j")),
         opt_einsum.contract("ij,j->i", af, bf)),
        (sum_product(ops.add, ops.mul, [a, b], frozenset("ij"), frozenset("i")),
         sum(bf[j] * af[0, j] * af[1, j] for j in range(3))),  # j is global to plate i
        (sum_product(ops.logaddexp, ops.add, [a, b], frozenset("j")),
         np.logaddexp.reduce(af + bf, axis=1)),
        (einsum("ij,j->i", a, b), opt_einsum.contract("ij,j->i", af, bf)),
    ]
    for r, expected in cases:
        assert r.output == fc.Real and _is_float(r.data), r.data.dtype
        np.testing.assert_allclose(np.asarray(r.data), expected, rtol=1e-6)


def test_jit_reductions_of_integers_are_float():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        raw = RAW["int8"]

        def f(x):
            t = fc.Tensor(x, IJ)
            b = fc.Tensor(x[0], {"j": fc.Bint[3]})
            return (t.reduce(ops.add, "i").data, t.reduce(ops.logaddexp, "j").data,
                    sum_product(ops.add, ops.mul, [t, b], frozenset("ij")).data)

        s, lse, sp = jax.jit(f)(jax.numpy.asarray(raw))
        ref = raw.astype(np.float64)
        for x in (s, lse, sp):
            assert _is_float(x)
        np.testing.assert_allclose(np.asarray(s), ref.sum(0), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(lse), np.logaddexp.reduce(ref, axis=1),
                                   rtol=1e-6)
        np.testing.assert_allclose(np.asarray(sp), (ref * ref[0]).sum(), rtol=1e-6)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend, semiring", [  # (jax: one case, its compiles cost)
    ("numpy", "linear"), ("numpy", "log"), ("torch", "linear"), ("torch", "log"),
    ("jax", "log")], indirect=["backend"])
def test_markov_chain_of_integers_is_float(backend, semiring):
    from funsor_core.sum_product import sequential_sum_product

    raw = np.array([[[100, 2], [3, 100]], [[1, 0], [5, 7]], [[9, 1], [0, 100]]], np.int8)
    trans = fc.Tensor(_arr(raw, backend),
                      {"t": fc.Bint[3], "x_prev": fc.Bint[2], "x_curr": fc.Bint[2]})
    m = raw.astype(np.float64)
    if semiring == "linear":
        sum_op, prod_op = ops.add, ops.mul
        expected = m[0] @ m[1] @ m[2]  # an int8 product wrapped around
    else:
        sum_op, prod_op = ops.logaddexp, ops.add
        expected = m[0]
        for k in (1, 2):  # log-space matrix product by enumeration of the middle state
            expected = np.logaddexp.reduce(expected[:, :, None] + m[k][None], axis=1)
    step = {"x_prev": "x_curr"}
    results = [
        sequential_sum_product(sum_op, prod_op, trans, fc.Variable("t", fc.Bint[3]), step),
        fc.MarkovProduct(sum_op, prod_op, trans, "t", step, (("x_prev", "x_curr"),)),
    ]
    for r in results:
        assert _is_float(r.data)
        np.testing.assert_allclose(np.asarray(r.align(("x_prev", "x_curr")).data), expected,
                                   rtol=1e-6)


# Reductions over the output dims (h79): t.sum() and t.prod() of a Bint Tensor widen the
# bound as a Reduce over inputs does (they kept Bint[256] holding 265); logsumexp of integer
# data is Real and computed in floats (x - max of uint8 wrapped: logsumexp([1, 2, 3]) was
# inf). funsor 0.4.8 raises NotImplementedError for these. Oracle: numpy on int64 / float64.
def test_output_reductions_of_integers(backend):
    raw = RAW["uint8"]
    t = fc.Tensor(_arr(raw, backend), {"i": fc.Bint[2]}, 256)
    wide = raw.astype(np.int64)
    assert t.sum().output == fc.Bint[3 * 255 + 1]
    np.testing.assert_array_equal(np.asarray(t.sum().data), wide.sum(1))
    assert t.prod().output == fc.Bint[255 ** 3 + 1]
    np.testing.assert_array_equal(np.asarray(t.prod().data), wide.prod(1))
    lse = np.logaddexp.reduce(raw.astype(np.float64), axis=1)
    for x in (t, fc.Tensor(_arr(raw, backend), {"i": fc.Bint[2]})):  # Bint and Real labels
        assert x.logsumexp().output == fc.Real
        np.testing.assert_allclose(np.asarray(x.logsumexp().data), lse, rtol=1e-6)
    assert t.max().output == fc.Bint[256]
    np.testing.assert_array_equal(np.asarray(t.max().data), raw.max(1))
    nine = fc.Tensor(_arr(np.full((2, 9), 255, np.uint8), backend), {"i": fc.Bint[2]}, 256)
    with pytest.raises(fc.IntRangeError, match=r"ops.prod to the output(.|\n)*Array\[256, "):
        nine.prod()
