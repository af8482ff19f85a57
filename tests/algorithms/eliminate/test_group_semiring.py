"""Unplated elimination with a pair (sum_op, prod_op) that is no semiring (h60). Summing each
group of factors that share no summed variable apart and multiplying the group sums equals the
sum over every assignment only when prod_op distributes over sum_op: under (add, add),
sum_x (b(x) + c) is sum_x b(x) + 3 * c, not sum_x b(x) + c. partial_sum_product raises now,
naming the ops and the variable; one group, no summed variable and (lattice) semirings keep
their numbers. Oracle: enumeration of every assignment (numpy broadcasting)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import partial_sum_product, sum_product

B = np.array([0.1, 0.2, 0.4])  # b(x)
D = np.array([[0.3, -1.2], [0.9, 0.1], [-0.4, 0.7]])  # d(x, y)
C = np.array(0.5)  # c()
NUMPY_OPS = {ops.add: np.add, ops.mul: np.multiply, ops.logaddexp: np.logaddexp,
             ops.max: np.maximum, ops.min: np.minimum}
REDUCE = {ops.add: np.sum, ops.mul: np.prod,
          ops.logaddexp: lambda a: np.logaddexp.reduce(np.ravel(a)),
          ops.max: np.max, ops.min: np.min}


def enumerated(sum_op, prod_op, *arrays):
    # Every factor broadcast over the full (x, y) grid, multiplied, then summed over all.
    p = NUMPY_OPS[prod_op]
    total = arrays[0]
    for a in arrays[1:]:
        total = p(total, a)
    return REDUCE[sum_op](np.broadcast_to(total, (3, 2)))


def _t(x, names):
    return fc.Tensor(fc.Tensor(x).data, {n: fc.Bint[s] for n, s in zip(names, x.shape)})


@pytest.mark.parametrize("sum_op, prod_op", [(ops.add, ops.add), (ops.logaddexp, ops.mul),
                                             (ops.add, ops.max)], ids=str)
@pytest.mark.parametrize("fn", [sum_product, partial_sum_product])
def test_groups_apart_raise_naming_the_ops_and_variable(backend, fn, sum_op, prod_op):
    b, c = _t(B, "x"), _t(C, "")
    assert enumerated(sum_op, prod_op, B[:, None], C) != pytest.approx(
        NUMPY_OPS[prod_op](REDUCE[sum_op](B), C))  # the old answer was wrong
    match = (rf"prod_op {prod_op} does not distribute over sum_op {sum_op}, .* 'x' "
             r"\(Bint\[3\]\) is summed in one group")
    with pytest.raises(ValueError, match=match):
        fn(sum_op, prod_op, [b, c], frozenset("x"))
    with pytest.raises(ValueError, match=match):  # two summed groups: b(x), d2(y)
        fn(sum_op, prod_op, [b, _t(D[0], "y")], frozenset("xy"))
    if backend == "jax":  # decided from names alone: the same error while tracing
        import jax
        import jax.numpy as jnp

        def traced(data):
            return fn(sum_op, prod_op, [fc.Tensor(data, {"x": fc.Bint[3]}),
                                        fc.Tensor(jnp.asarray(C))], frozenset("x"))

        with pytest.raises(ValueError, match=match):
            jax.jit(lambda d: (traced(d), d.sum())[1])(b.data)


def test_swapped_semiring_says_so():
    with pytest.raises(ValueError, match="arguments are swapped: sum_op comes first"):
        sum_product(ops.add, ops.logaddexp, [_t(B, "x"), _t(C, "")], frozenset("x"))


@pytest.mark.parametrize("sum_op, prod_op", [(ops.add, ops.add), (ops.logaddexp, ops.mul)],
                         ids=str)
def test_one_group_or_no_summed_variable_keeps_the_number(backend, sum_op, prod_op):
    # b(x) and d(x, y) share x: one group, multiplied before any sum, so b repeats over y.
    got = sum_product(sum_op, prod_op, [_t(B, "x"), _t(D, "xy")], frozenset("xy"))
    np.testing.assert_allclose(np.asarray(got.data),
                               enumerated(sum_op, prod_op, B[:, None], D), rtol=1e-6)
    got = sum_product(sum_op, prod_op, [_t(B, "x"), _t(C, "")], frozenset())
    np.testing.assert_allclose(np.asarray(got.data), NUMPY_OPS[prod_op](B, C), rtol=1e-6)


@pytest.mark.parametrize("sum_op, prod_op", [(ops.max, ops.max), (ops.min, ops.max),
                                             (ops.max, ops.logaddexp), (ops.logaddexp, ops.add),
                                             (ops.add, ops.mul), (ops.max, ops.add)], ids=str)
def test_semirings_sum_groups_apart(backend, sum_op, prod_op):
    got = sum_product(sum_op, prod_op, [_t(B, "x"), _t(C, ""), _t(D[0], "y")],
                      frozenset("xy"))
    np.testing.assert_allclose(np.asarray(got.data), enumerated(
        sum_op, prod_op, B[:, None], C, D[0][None, :]), rtol=1e-6)


def test_lattice_and_or_sum_groups_apart():
    b = np.array([True, False, True])
    y = np.array([False, True])
    got = sum_product(ops.and_, ops.or_, [_t(b, "x"), _t(y, "y")], frozenset("xy"))
    assert bool(got.data) == bool(np.all(b[:, None] | y[None, :]))
