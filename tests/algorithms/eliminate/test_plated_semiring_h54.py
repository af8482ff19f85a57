"""Plated elimination with a pair (sum_op, prod_op) that is no semiring (h54). Summing a
variable inside a plate and then multiplying along the plate equals the sum over every
assignment of the plate's copies only when prod_op distributes over sum_op; otherwise
partial_sum_product used to return that other number. It raises now, naming the ops, the
variable and the plate. Graphs that need no distribution (only global variables, a plate of
one member) and lattice semirings missing from ops.DISTRIBUTIVE_OPS keep their numbers.
Oracle: enumeration of every assignment of the unrolled plate's copies (numpy)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import partial_sum_product, sum_product

A = np.array([[0.3, -1.2, 0.5], [0.9, 0.1, -0.4]])  # a(i, x)
B = np.array([0.2, -0.7, 1.1])  # b(x)
NUMPY_OPS = {ops.add: np.add, ops.mul: np.multiply, ops.logaddexp: np.logaddexp,
             ops.max: np.maximum, ops.min: np.minimum}


def _fold(fn, values):
    values = list(values)
    out = values[0]
    for v in values[1:]:
        out = fn(out, v)
    return out


def unrolled_local(sum_op, prod_op, a):
    # sum over (x_0, ..., x_{n-1}) of prod over i of a(i, x_i): the plate's copies of x.
    s, p = NUMPY_OPS[sum_op], NUMPY_OPS[prod_op]
    n, k = a.shape
    return _fold(s, (_fold(p, (a[i, xs[i]] for i in range(n)))
                     for xs in itertools.product(range(k), repeat=n)))


def unrolled_global(sum_op, prod_op, a, b):
    # sum over x of (prod over i of a(i, x)) * b(x): x is outside the plate.
    s, p = NUMPY_OPS[sum_op], NUMPY_OPS[prod_op]
    return _fold(s, (p(_fold(p, a[:, x]), b[x]) for x in range(a.shape[1])))


NOT_SEMIRINGS = [(ops.add, ops.add), (ops.logaddexp, ops.mul), (ops.add, ops.logaddexp),
                 (ops.logaddexp, ops.logaddexp), (ops.add, ops.max)]


@pytest.mark.parametrize("sum_op, prod_op", NOT_SEMIRINGS, ids=str)
@pytest.mark.parametrize("fn", [sum_product, partial_sum_product])
def test_a_sum_inside_a_plate_raises_naming_the_ops(backend, fn, sum_op, prod_op):
    a = fc.Tensor(_array(A), {"i": fc.Bint[2], "x": fc.Bint[3]})
    assert unrolled_local(sum_op, prod_op, A) != pytest.approx(
        _fold(NUMPY_OPS[prod_op], _fold(NUMPY_OPS[sum_op], A.T)))  # the old answer was wrong
    match = (rf"prod_op {prod_op} does not distribute over sum_op {sum_op}, so 'x' "
             r"\(summed inside plate 'i': Bint\[2\]\)")
    with pytest.raises(ValueError, match=match):
        fn(sum_op, prod_op, [a], frozenset("ix"), frozenset("i"))
    if backend == "jax":  # decided from names and sizes: the same error while tracing
        import jax

        def traced(data):
            f = fc.Tensor(data, {"i": fc.Bint[2], "x": fc.Bint[3]})
            return fn(sum_op, prod_op, [f], frozenset("ix"), frozenset("i"))

        with pytest.raises(ValueError, match=match):
            jax.jit(lambda d: (traced(d), d.sum())[1])(a.data)


def _array(x):
    return fc.Tensor(x).data  # on the active backend


def test_swapped_semiring_says_so():
    a = fc.Tensor(A, {"i": fc.Bint[2], "x": fc.Bint[3]})
    with pytest.raises(ValueError, match="arguments are swapped: sum_op comes first"):
        sum_product(ops.add, ops.logaddexp, [a], frozenset("ix"), frozenset("i"))


@pytest.mark.parametrize("sum_op, prod_op", NOT_SEMIRINGS, ids=str)
def test_global_variables_need_no_distribution(backend, sum_op, prod_op):
    # x outside the plate: multiply along the plate, then sum over x; funsor's number stands.
    a = fc.Tensor(_array(A), {"i": fc.Bint[2], "x": fc.Bint[3]})
    b = fc.Tensor(_array(B), {"x": fc.Bint[3]})
    got = sum_product(sum_op, prod_op, [a, b], frozenset("ix"), frozenset("i"))
    np.testing.assert_allclose(np.asarray(got.data), unrolled_global(sum_op, prod_op, A, B),
                               rtol=1e-6)


def test_a_plate_of_one_member_needs_no_distribution():
    a = fc.Tensor(A[:1], {"i": fc.Bint[1], "x": fc.Bint[3]})
    got = sum_product(ops.add, ops.add, [a], frozenset("ix"), frozenset("i"))
    np.testing.assert_allclose(got.data, unrolled_local(ops.add, ops.add, A[:1]))


@pytest.mark.parametrize("sum_op, prod_op", [(ops.max, ops.logaddexp), (ops.max, ops.max),
                                             (ops.min, ops.max), (ops.logaddexp, ops.add)],
                         ids=str)
def test_semirings_sum_inside_plates(backend, sum_op, prod_op):
    a = fc.Tensor(_array(A), {"i": fc.Bint[2], "x": fc.Bint[3]})
    got = sum_product(sum_op, prod_op, [a], frozenset("ix"), frozenset("i"))
    np.testing.assert_allclose(np.asarray(got.data), unrolled_local(sum_op, prod_op, A),
                               rtol=1e-6)


def test_ops_and_factors_that_are_not_funsors_are_named():
    a = fc.Tensor(A, {"i": fc.Bint[2], "x": fc.Bint[3]})
    with pytest.raises(TypeError, match=r"takes ops of funsor_core.ops .* got \(<ufunc "
                                        r"'logaddexp'>, <ufunc 'add'>\)"):
        sum_product(np.logaddexp, np.add, [a], frozenset("ix"))
    with pytest.raises(TypeError, match="factor 1 is a ndarray, not a funsor"):
        sum_product(ops.logaddexp, ops.add, [a, B], frozenset("ix"))


def test_a_real_plate_raises_instead_of_a_lazy_term():
    a = fc.Tensor(A, {"i": fc.Bint[2], "x": fc.Bint[3]})
    r = fc.Variable("r", fc.Real)
    with pytest.raises(fc.DomainError, match=r"plate 'r' is Real in factor 1; a plate is a "
                                             r"Bint\[n\] input"):
        sum_product(ops.logaddexp, ops.add, [a, r], frozenset("ixr"), frozenset("r"))
    # The same graph with a Bint plate is the enumerated answer.
    got = sum_product(ops.add, ops.mul, [a.exp()], frozenset("ix"), frozenset("i"))
    np.testing.assert_allclose(got.data, unrolled_local(ops.add, ops.mul, np.exp(A)))
