"""funsor 0.4.8's surface of terms and ops, each checked against numpy by hand: input_vars,
op names and classes, atanh, shifts, floor division and remainder on funsors, reshape of the
output, mean/var/std over inputs and over output dims, funsor's einsum argument order,
find_domain, and the index helpers.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Array, Bint, Real, Reals, find_domain
from funsor_core.ops.builtin import _SCALAR_KERNELS_FUNSOR
from interpretations import lazy


def _tensor(shape, inputs, rng=0):
    data = np.random.default_rng(rng).standard_normal(shape)
    return fc.Tensor(data, inputs), data


# -- terms ------------------------------------------------------------------------------------
def test_input_vars_are_the_inputs_as_variables():
    f, _ = _tensor((2, 3), {"i": Bint[2], "x": Bint[3]})
    assert f.input_vars == {fc.Variable("i", Bint[2]), fc.Variable("x", Bint[3])}
    assert fc.Number(1.0).input_vars == frozenset()
    # funsor's idiom: reduce over the names one funsor has and another lacks.
    g, _ = _tensor((2,), {"i": Bint[2]})
    assert (f.input_vars - g.input_vars) == {fc.Variable("x", Bint[3])}
    assert f.reduce(ops.add, f.input_vars - g.input_vars).inputs == {"i": Bint[2]}


@pytest.mark.parametrize("op, np_op", [
    (ops.floordiv, np.floor_divide), (ops.mod, np.mod),
    (ops.lshift, np.left_shift), (ops.rshift, np.right_shift),
])
def test_integer_operators_on_funsors(op, np_op):
    a = np.array([[5, 6, 7], [0, 3, 4]])
    b = np.array([1, 2, 3])
    x = fc.Tensor(a, {"i": Bint[2], "j": Bint[3]}, 8)
    y = fc.Tensor(b, {"j": Bint[3]}, 4)
    python_op = {ops.floordiv: operator.floordiv, ops.mod: operator.mod,
                 ops.lshift: operator.lshift, ops.rshift: operator.rshift}[op]
    actual = python_op(x, y)  # the Python operator on funsors
    assert actual.inputs == {"i": Bint[2], "j": Bint[3]}
    np.testing.assert_array_equal(actual.data, np_op(a, b[None]))
    # The values fit the inferred bound.
    assert actual.data.max() < actual.dtype
    reflected = python_op(3, y)
    np.testing.assert_array_equal(reflected.data, np_op(3, b))


def test_real_floordiv_and_mod_on_funsors():
    f, data = _tensor((4,), {"i": Bint[4]})
    np.testing.assert_allclose((f // 0.5).data, np.floor_divide(data, 0.5))
    np.testing.assert_allclose((f % 0.5).data, np.mod(data, 0.5))


def test_abs_and_atanh_methods():
    f, data = _tensor((3, 2), {"i": Bint[3]})
    np.testing.assert_allclose(f.abs().data, np.abs(data))
    g = fc.Tensor(np.tanh(data), {"i": Bint[3]})
    np.testing.assert_allclose(g.atanh().data, data)


@pytest.mark.parametrize("new_shape", [(6,), (3, 2), (2, -1), (1, 6, 1)])
def test_reshape_keeps_inputs(new_shape):
    f, data = _tensor((4, 2, 3), {"i": Bint[4]})
    actual = f.reshape(new_shape)
    expected_shape = tuple(6 // 2 if s == -1 else s for s in new_shape)
    assert actual.inputs == {"i": Bint[4]}
    assert actual.output == Reals[expected_shape]
    for i in range(4):  # each input value's output reshaped on its own
        np.testing.assert_allclose(actual(i=i).data, data[i].reshape(expected_shape))


def test_reshape_lazy_and_errors():
    x = fc.Variable("x", Reals[2, 3])
    with lazy:
        y = ops.reshape(x, (6,))
    assert y.output == Reals[6] and y.inputs == {"x": Reals[2, 3]}
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(y(x=fc.Tensor(value)).data, value.reshape(6))
    with pytest.raises(ValueError, match=r"cannot reshape a funsor of output Reals\[2, 3\]"):
        x.reshape((4,))


@pytest.mark.parametrize("op, np_fn", [(ops.mean, np.mean), (ops.var, np.var),
                                       (ops.std, np.std)])
@pytest.mark.parametrize("names", [("i",), ("j",), ("i", "j"), ()])
def test_moments_over_inputs(op, np_fn, names):
    f, data = _tensor((2, 3, 4), {"i": Bint[2], "j": Bint[3]})
    actual = f.reduce(op, frozenset(names))
    axes = tuple("ij".index(n) for n in names)
    expected = np_fn(data, axis=axes) if axes else (data if op is ops.mean else 0 * data)
    kept = {k: d for k, d in f.inputs.items() if k not in names}
    assert actual.inputs == kept and actual.output == Reals[4]
    np.testing.assert_allclose(actual.align(tuple(kept)).data, expected, atol=1e-12)


def test_moment_over_real_input_is_an_error():
    x = fc.Variable("x", Real) * fc.Tensor(np.ones(2), {"i": Bint[2]})
    with pytest.raises(ValueError, match=r"ops.mean over the real inputs \['x'\]"):
        x.reduce(ops.mean, "x")


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_std_var_over_output(axis, ddof):
    f, data = _tensor((2, 3, 4), {"i": Bint[2]})
    np_axis = None if axis is None else tuple(
        a + 1 if a >= 0 else a for a in ((axis,) if isinstance(axis, int) else axis))
    if np_axis is None:
        np_axis = (1, 2)
    np.testing.assert_allclose(f.var(axis, ddof).data, np.var(data, np_axis, ddof=ddof))
    np.testing.assert_allclose(f.std(axis, ddof).data, np.std(data, np_axis, ddof=ddof))
    # Positionally as numpy orders them: axis, ddof, keepdims.
    np.testing.assert_allclose(ops.std(f, axis, ddof, True).data,
                               np.std(data, np_axis, ddof=ddof, keepdims=True))


# -- ops --------------------------------------------------------------------------------------
def test_every_op_has_a_name_and_an_exported_class():
    for op in ops.REQUIRED_OPS:
        assert op.__name__ == op.name
        cls = getattr(ops, type(op).__name__)
        assert isinstance(op, cls)
    assert isinstance(ops.logaddexp, ops.LogaddexpOp)
    assert not isinstance(ops.add, ops.LogaddexpOp)
    assert ops.sum.bind(axis=-1).__name__ == "sum"


def test_funsor_op_families():
    assoc = {op for op in ops.REQUIRED_OPS if isinstance(op, ops.AssociativeOp)}
    assert assoc == set(ops.REDUCE_OPS) | {ops.xor}
    assert all(isinstance(op, ops.ComparisonOp) for op in ops.COMPARISON_OPS)
    assert {ops.exp, ops.log, ops.tanh, ops.atanh, ops.sigmoid} <= {
        op for op in ops.REQUIRED_OPS if isinstance(op, ops.TransformOp)}
    assert ops.FinitaryOp is ops.NaryOp and isinstance(ops.einsum, ops.FinitaryOp)


def test_scalar_kernels_of_funsor_ops_agree_with_numpy():
    for x in [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, 0, 1, True]:
        with np.errstate(all="ignore"):
            expected = np.arctanh(np.float64(x))
        actual = ops.atanh(x)
        if math.isnan(expected) or math.isinf(expected) or expected == 0:
            assert str(actual) == str(expected.item())  # nan, the signed inf, the signed zero
        else:
            assert actual == pytest.approx(expected, rel=4e-16)  # libm may differ by an ulp
    for a, b in itertools.product([0, 1, 5, 7, True], [0, 1, 3, False]):
        assert ops.lshift(a, b) == np.left_shift(int(a), int(b))
        assert ops.rshift(a, b) == np.right_shift(int(a), int(b))
    assert set(_SCALAR_KERNELS_FUNSOR) == {ops.atanh, ops.lshift, ops.rshift}


def test_einsum_in_funsor_argument_order():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    expected = x @ y  # by hand: sum over the shared index b
    np.testing.assert_allclose(ops.einsum([x, y], "ab,bc->ac"), expected)
    np.testing.assert_allclose(ops.einsum((x, y), "ab,bc->ac"), expected)
    with pytest.raises(TypeError, match="funsor's"):
        ops.einsum([x, y], "ab,bc->ac", "extra")


def test_parse_ellipsis_and_slice():
    assert ops.parse_ellipsis(()) == ((), ())
    assert ops.parse_ellipsis((Ellipsis, Ellipsis)) == ((), ())
    assert ops.parse_ellipsis((1, Ellipsis)) == ((1,), ())
    assert ops.parse_ellipsis((slice(None), None, Ellipsis, 1, slice(1, 2))) == (
        (slice(None), None), (1, slice(1, 2)))
    for size in range(6):
        for start, stop in itertools.product([None, -9, -3, 0, 2, 9], repeat=2):
            s = slice(start, stop)
            begin, end, step = ops.parse_slice(s, size)
            assert 0 <= begin <= size and 0 <= end <= size and step == 1
            assert list(range(size))[s] == list(range(begin, end))


# -- domains ----------------------------------------------------------------------------------
@pytest.mark.parametrize("op, domains, expected", [
    (ops.add, (Reals[3, 1], Reals[2]), Reals[3, 2]),
    (ops.matmul, (Reals[2, 3], Reals[3, 4]), Reals[2, 4]),
    (ops.lt, (Real, Reals[2]), Array[2, (2,)]),
    (ops.exp, (Bint[3],), Real),
    (ops.sum.bind(axis=-1), (Reals[2, 3],), Reals[2]),
    (ops.reshape.bind(shape=(6,), ndim=2), (Reals[2, 3],), Reals[6]),
])
def test_find_domain(op, domains, expected):
    assert find_domain(op, *domains) is expected


def test_find_domain_of_integers_bounds_every_value():
    # Enumerate every pair of values and check the inferred bound holds them all.
    for op, np_op in [(ops.add, np.add), (ops.mul, np.multiply), (ops.lshift, np.left_shift),
                      (ops.rshift, np.right_shift), (ops.floordiv, np.floor_divide),
                      (ops.mod, np.mod), (ops.max, np.maximum)]:
        for a, b in [(2, 3), (4, 4), (1, 1), (5, 2)]:
            bound = find_domain(op, Bint[a], Bint[b]).dtype
            with np.errstate(all="ignore"):
                values = [np_op(x, y) for x in range(a) for y in range(b)]
            assert all(0 <= v < bound for v in values), (op, a, b, bound)


def test_number_minus_bint_variable_is_bint():
    u = fc.Variable("u", Bint[2])
    with lazy:
        i = fc.Number(1, 2) - u
    assert i.output == Bint[2]
    f = fc.Tensor(np.array([10.0, 20.0]), {"i": Bint[2]})
    # i = 1 - u reverses the index: f(i=1-u) at u is f[1-u].
    assert [f(i=i)(u=u).item() for u in range(2)] == [20.0, 10.0]


def test_iterating_a_bint_domain_enumerates_its_values():
    # funsor's idiom: substitute every value of a Bint input, then compare with a reduction.
    f, data = _tensor((3,), {"i": Bint[3]})
    assert sum(f(i=i).item() for i in Bint[3]) == pytest.approx(data.sum())
    with pytest.raises(TypeError, match=r"cannot iterate over the values of Reals\[2\]"):
        list(Reals[2])
