"""Regressions for user-reported defects 1-8 (second round), each against an independent oracle:
numpy float64 ufuncs, numpy on int arrays, explicit substitution and reduction, numpy sums,
brute-force enumeration, and the unit table of each reduction.
"""

import itertools
import math

import numpy as np
import pytest
import scipy.special

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.ops.builtin import _SCALAR_KERNELS
from funsor_core.sum_product import sum_product
from interpretations import lazy


def _array(data, dtype="real"):
    return backend_module().asarray(np.asarray(data), dtype)


# ---------------------------------------------------------------------------------------------
# Defect 1: Python-number kernels answer as numpy's float64 kernels (inf, nan, -0.0).
_FLOATS = [0.0, -0.0, 0.5, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 1000.0, -1000.0, 1e308, -1e308,
           math.inf, -math.inf, math.nan]
_INTS = [0, 1, -1, 2, 3, -3]
_FMAX, _TINY = np.finfo(np.float64).max, np.finfo(np.float64).tiny
# The numpy counterpart of every op in the table (sigmoid is scipy's expit; safesub and
# safediv clamp as their docstrings say).
_NUMPY = {
    ops.neg: np.negative, ops.abs: np.abs, ops.exp: np.exp, ops.log: np.log,
    ops.log1p: np.log1p, ops.expm1: np.expm1, ops.sqrt: np.sqrt,
    ops.sigmoid: scipy.special.expit, ops.tanh: np.tanh,
    ops.reciprocal: lambda x: np.true_divide(1.0, x), ops.invert: np.logical_not,
    ops.isfinite: np.isfinite, ops.add: np.add, ops.sub: np.subtract, ops.mul: np.multiply,
    ops.truediv: np.true_divide, ops.floordiv: np.floor_divide, ops.mod: np.mod,
    ops.pow: np.power, ops.min: np.minimum, ops.max: np.maximum, ops.logaddexp: np.logaddexp,
    ops.sample: np.logaddexp,
    ops.safesub: lambda a, b: np.subtract(a, np.minimum(b, _FMAX)),
    ops.safediv: lambda a, b: np.true_divide(a, np.maximum(b, _TINY)),
    ops.and_: np.bitwise_and, ops.or_: np.bitwise_or, ops.xor: np.bitwise_xor,
    ops.lt: np.less, ops.le: np.less_equal, ops.gt: np.greater, ops.ge: np.greater_equal,
    ops.eq: np.equal, ops.ne: np.not_equal,
}
# Ops whose value is real whatever the arguments: numpy sees float64 arguments.
_REAL_OPS = {ops.exp, ops.log, ops.log1p, ops.expm1, ops.sqrt, ops.sigmoid, ops.tanh,
             ops.reciprocal, ops.truediv, ops.pow, ops.logaddexp, ops.sample, ops.safesub,
             ops.safediv}
_LOGICAL_OPS = {ops.and_, ops.or_, ops.xor, ops.invert}


def _agrees(actual, expected) -> bool:
    expected = expected.item()
    if isinstance(actual, complex) or not isinstance(actual, (bool, int, float)):
        return False
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if expected == 0 and isinstance(expected, float):  # the sign of zero must agree too
        return actual == 0 and math.copysign(1, actual) == math.copysign(1, expected)
    if isinstance(expected, float) and math.isfinite(expected):
        return actual == pytest.approx(expected, rel=4e-16, abs=0)  # libm may differ by an ulp
    return actual == expected


def test_scalar_kernel_table_is_covered():
    assert set(_SCALAR_KERNELS) == set(_NUMPY)


@pytest.mark.parametrize("op", list(_SCALAR_KERNELS), ids=lambda op: op.name)
def test_scalar_kernels_agree_with_numpy_float64(op):
    arity = 1 if isinstance(op, ops.UnaryOp) else 2
    domains = [[False, True]] if op in _LOGICAL_OPS else [_FLOATS, _INTS, [False, True]]
    if op in _LOGICAL_OPS and op is not ops.invert:
        domains.append(_INTS)
    for domain in domains:
        for args in itertools.product(domain, repeat=arity):
            # A bool is the integer 0 or 1 (True + True is 2), except for logical ops.
            np_args = args if op in _LOGICAL_OPS else tuple(int(a) if isinstance(a, bool)
                                                             else a for a in args)
            if op in _REAL_OPS:
                np_args = tuple(np.float64(a) for a in np_args)
            else:
                np_args = tuple(np.asarray(a)[()] for a in np_args)
            with np.errstate(all="ignore"):
                expected = _NUMPY[op](*np_args)
            actual = op(*args)
            assert _agrees(actual, expected), (
                f"ops.{op.name}{args} = {actual!r}, numpy gives {expected!r}")


def test_number_overflow_and_domain_errors_match_tensor():
    assert fc.Number(1000.0).exp().data == math.inf
    assert math.isnan((fc.Number(-2.0) ** 0.5).data)
    t = fc.Tensor(np.array([1000.0, -2.0]), {"i": Bint[2]})
    with np.errstate(all="ignore"):
        expected = [np.exp(1000.0), np.power(-2.0, 0.5)]
        tensor_exp, tensor_sqrt = t.exp()(i=0).data, (t ** 0.5)(i=1).data
    assert fc.Number(1000.0).exp().data == expected[0] == tensor_exp
    assert math.isnan(expected[1]) and math.isnan(tensor_sqrt)
    assert math.copysign(1, (fc.Number(-0.0) * 1.0).data) == -1.0


# ---------------------------------------------------------------------------------------------
# Defect 2: arithmetic on comparison outputs is integer arithmetic.
@pytest.mark.parametrize("op", [ops.add, ops.sub, ops.mul, ops.floordiv, ops.mod, ops.pow,
                                ops.truediv, ops.logaddexp], ids=lambda op: op.name)
def test_bool_data_arithmetic_is_integer(backend, op):
    x = np.array([1, 0, 2])
    m = fc.Tensor(_array(x, "int"), {"j": Bint[3]}, 3) == 0
    n = fc.Tensor(_array(x, "int"), {"j": Bint[3]}, 3) <= 1
    mi, ni = (x == 0).astype(np.int64), (x <= 1).astype(np.int64)
    with np.errstate(all="ignore"):
        if op in (ops.floordiv, ops.mod):
            expected = _NUMPY[op](mi, np.maximum(ni, 1))  # no division by zero
            actual = op(m, n | (fc.Tensor(_array(x, "int"), {"j": Bint[3]}, 3) >= 0))
        else:
            expected, actual = _NUMPY[op](mi.astype(float) if op in _REAL_OPS else mi, ni), op(m, n)
    data = ops.to_numpy(ops.detach(actual.data))
    assert data.dtype != np.bool_
    assert np.allclose(data, expected, equal_nan=True)


def test_bool_sum_domain_and_data(backend):
    m = fc.Tensor(_array([1, 0, 2], "int"), {"j": Bint[3]}, 3) == 0
    s = m + m
    assert s.output is Bint[3]  # Bint[2] + Bint[2] takes values 0..2, as in funsor
    assert ops.to_numpy(s.data).tolist() == [0, 2, 0]
    assert ops.to_numpy((-m).data).tolist() == [0, -1, 0]


def test_or_xor_domain_bounds_every_value():
    for a, b in itertools.product(range(1, 6), repeat=2):
        for op, fn in ((ops.or_, np.bitwise_or), (ops.xor, np.bitwise_xor)):
            bound = ops.infer_domain(op, Bint[a], Bint[b]).dtype
            values = fn(np.arange(a)[:, None], np.arange(b)[None, :])
            assert values.max() < bound, (op.name, a, b)
    assert ops.infer_domain(ops.or_, Bint[2], Bint[2]) is Bint[2]


# ---------------------------------------------------------------------------------------------
# Defect 3: substituting into Independent.
def _independent_example():
    np.random.seed(3)
    c = fc.Tensor(np.random.randn(3, 2), {"i": Bint[3]})
    b = fc.Tensor(np.random.randn(3, 4), {"i": Bint[3], "b": Bint[4]})
    fn = (c * fc.Variable("x_i", Reals[2])).sum() + b
    return fn, fc.Independent(fn, "x", "i", "x_i")


def test_independent_substitution():
    fn, g = _independent_example()
    assert g.inputs == {"b": Bint[4], "x": Reals[3, 2]}
    value = np.random.randn(3, 2)
    expected = fn(x_i=fc.Tensor(value, {"i": Bint[3]})).reduce(ops.add, "i")
    actual = g(x=value)
    assert isinstance(actual, fc.Tensor) and actual.inputs == {"b": Bint[4]}
    assert np.allclose(actual.data, expected.data)
    with lazy:
        lazy_result = g(x=value)
    assert "x" not in lazy_result.inputs
    assert np.allclose(fc.reinterpret(lazy_result).data, expected.data)


def test_independent_substitution_of_batched_value_and_rename():
    fn, g = _independent_example()
    value = np.random.randn(5, 3, 2)
    # The value's own input "i" is not the bound plate "i": it must survive.
    actual = g(x=fc.Tensor(value, {"i": Bint[5]}))
    assert set(actual.inputs) == {"b", "i"}
    for k in range(5):
        expected = fn(x_i=fc.Tensor(value[k], {"i": Bint[3]})).reduce(ops.add, "i")
        assert np.allclose(actual(i=k).align(("b",)).data, expected.align(("b",)).data)
    renamed = g(x="y")
    assert isinstance(renamed, fc.Independent) and renamed.reals_var == "y"
    assert renamed.inputs["y"] is Reals[3, 2]


# ---------------------------------------------------------------------------------------------
# Defect 4: Integrate over a Delta's name and the batch input of its point.
@pytest.mark.parametrize("weighted", [True, False])
def test_integrate_delta_over_name_and_batch(weighted):
    np.random.seed(4)
    p, ld, c = np.random.randn(3), np.random.randn(3), np.random.randn(3)
    point = fc.Tensor(p, {"i": Bint[3]})
    delta = fc.Delta("x", point, fc.Tensor(ld, {"i": Bint[3]})) if weighted else fc.Delta(
        "x", point)
    w = np.exp(ld) if weighted else np.ones(3)
    x = fc.Variable("x", Real)
    cases = [(x * fc.Tensor(c, {"i": Bint[3]}) + x ** 2, p * c + p ** 2),
             (x.sigmoid(), scipy.special.expit(p)), (fc.Number(2.0), np.full(3, 2.0)),
             (fc.Tensor(c, {"i": Bint[3]}), c)]
    for f, values in cases:
        actual = fc.Integrate(delta, f, {"x", "i"})
        assert np.allclose(actual.data, (w * values).sum())


# ---------------------------------------------------------------------------------------------
# Defect 5: mixed numpy/torch arrays raise at construction.
def test_mixed_backends_raise_at_construction():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="numpy.*torch"):
        fc.Gaussian(mean=np.zeros(2), covariance=torch.eye(2, dtype=torch.float64),
                    inputs={"x": Reals[2]})
    with pytest.raises(TypeError, match="numpy.*torch"):
        fc.Gaussian(white_vec=np.zeros(2), prec_sqrt=torch.eye(2), inputs={"x": Reals[2]})
    a = fc.Tensor(np.zeros(2), {"j": Bint[2]})
    b = fc.Tensor(torch.ones(2, dtype=torch.float64), {"j": Bint[2]})
    for make in (lambda: fc.Stack("i", (a, b)), lambda: fc.Cat("j", (a, b))):
        with pytest.raises(TypeError, match="numpy.*torch"):
            make()
        with lazy, pytest.raises(TypeError, match="numpy.*torch"):
            make()
    # One backend with Python numbers still works, and keeps the backend.
    s = fc.Stack("i", (b, fc.Number(3.0)))
    assert isinstance(s.data, torch.Tensor)
    assert ops.to_numpy(s.data).tolist() == [[1.0, 1.0], [3.0, 3.0]]


# ---------------------------------------------------------------------------------------------
# Defect 6: bad Gaussian parameters raise a ValueError naming them.
_SINGULAR = np.array([[1.0, 1.0], [1.0, 1.0]])
_NAN = np.array([[1.0, np.nan], [np.nan, 1.0]])


@pytest.mark.parametrize("name", ["covariance", "precision", "scale_tril"])
def test_gaussian_bad_scale_names_parameter(backend, name):
    bad_matrix = np.zeros((2, 2)) if name == "scale_tril" else _SINGULAR
    what = "singular" if name == "scale_tril" else "not positive definite"
    with pytest.raises(ValueError, match=f"{name}= is {what}"):
        fc.Gaussian(mean=_array(np.zeros(2)), **{name: _array(bad_matrix)},
                    inputs={"x": Reals[2]})
    with pytest.raises(ValueError, match=f"{name}= has NaN"):
        fc.Gaussian(mean=_array(np.zeros(2)), **{name: _array(_NAN)}, inputs={"x": Reals[2]})


def test_gaussian_nan_mean_and_info_vec(backend):
    with pytest.raises(ValueError, match="mean= has NaN"):
        fc.Gaussian(mean=_array([0.0, np.inf]), covariance=_array(np.eye(2)),
                    inputs={"x": Reals[2]})
    with pytest.raises(ValueError, match=r"info_vec= has NaN.*batch index \(1,\)"):
        fc.Gaussian(info_vec=_array([[0.0, 1.0], [np.nan, 0.0]]),
                    precision=_array(np.eye(2)), inputs={"i": Bint[2], "x": Reals[2]})


def test_gaussian_bad_parameters_under_jit_give_nan():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    @jax.jit
    def normalizer(covariance):
        g = fc.Gaussian(mean=jnp.zeros(2), covariance=covariance, inputs={"x": Reals[2]})
        return g.reduce(ops.logaddexp, "x").data

    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    expected = 0.5 * np.log(np.linalg.det(2 * np.pi * good))  # log of N's normalizer
    assert np.allclose(normalizer(jnp.asarray(good)), expected)
    for bad in (_SINGULAR, _NAN, -np.eye(2)):
        assert np.isnan(normalizer(jnp.asarray(bad)))


# ---------------------------------------------------------------------------------------------
# Defect 7: reducing over Bint[0] gives each op's unit on every backend.
_UNIT = {ops.logaddexp: -np.inf, ops.sample: -np.inf, ops.add: 0.0, ops.mul: 1.0, ops.max: -np.inf,
         ops.min: np.inf, ops.and_: True, ops.or_: False}


@pytest.mark.parametrize("op", list(ops.REDUCE_OPS), ids=lambda op: op.name)
def test_reduce_over_empty_input_is_unit(backend, op):
    assert set(_UNIT) == set(ops.REDUCE_OPS)
    logical = op in (ops.and_, ops.or_)
    data = _array(np.zeros((2, 0)))
    if logical:
        data = data > 0
    t = fc.Tensor(data, {"b": Bint[2], "i": Bint[0]}, 2 if logical else "real")
    result = t.reduce(op, "i")
    assert result.inputs == {"b": Bint[2]}
    assert ops.to_numpy(result.data).tolist() == [_UNIT[op]] * 2
    # The array kernel alone, over every axis of an empty array.
    reduced = ops.REDUCE_OPS[op](data[0], axis=None)
    assert ops.to_numpy(reduced).tolist() == _UNIT[op]


# ---------------------------------------------------------------------------------------------
# Defect 8: a plate not in `eliminate` stays an input of sum_product's result.
def test_sum_product_keeps_plate_not_eliminated():
    np.random.seed(8)
    fa = np.random.rand(2)  # f(a)
    gaq = np.random.rand(2, 3)  # g(a, q), q an eliminated plate
    hap = np.random.rand(2, 4)  # h(a, p), p a plate that is kept
    kabp = np.random.rand(2, 5, 4)  # k(a, b, p), b a variable inside plate p
    factors = [fc.Tensor(fa, {"a": Bint[2]}), fc.Tensor(gaq, {"a": Bint[2], "q": Bint[3]}),
               fc.Tensor(hap, {"a": Bint[2], "p": Bint[4]}),
               fc.Tensor(kabp, {"a": Bint[2], "b": Bint[5], "p": Bint[4]})]
    result = sum_product(ops.add, ops.mul, factors, eliminate=frozenset("abq"),
                         plates=frozenset("pq"))
    assert result.inputs == {"p": Bint[4]}
    # Brute force: one factor graph per value of p; sum over (a, b), product over q.
    expected = np.zeros(4)
    for p in range(4):
        for a, b in itertools.product(range(2), range(5)):
            expected[p] += fa[a] * np.prod(gaq[a]) * hap[a, p] * kabp[a, b, p]
    assert np.allclose(result.data, expected)


def test_bool_substituted_for_a_bint_input_selects_row():
    x = np.arange(6.0).reshape(2, 3)
    a = fc.Tensor(x, {"i": fc.Bint[2]})
    assert a(i=True).shape == (3,) and a(i=False).shape == (3,)
    np.testing.assert_allclose(a(i=True).data, x[1])
    np.testing.assert_allclose(a(i=False).data, x[0])


def test_lazy_substitution_into_stack_and_cat_index_is_not_dropped():
    # Stack and Cat make their index input themselves: a value for it must reach the term,
    # not be pushed into the parts (where it was dropped, or hit each part's own index).
    x = fc.Variable("x", fc.Real)
    with lazy:
        s = fc.Stack("i", (x, x + 1.0))(i=1)
    assert "i" not in s.inputs
    assert fc.reinterpret(s)(x=2.0).data == 3.0
    a = fc.Tensor(np.arange(4.0).reshape(2, 2), {"t": fc.Bint[2], "a": fc.Bint[2]})
    b = fc.Tensor(np.arange(6.0).reshape(3, 2), {"t": fc.Bint[3], "a": fc.Bint[2]})
    sub = fc.Slice("t", 1, 5, 2, 5)
    with lazy:
        c = fc.Cat("t", (a, b))(t=sub)
    expected = np.concatenate([a.data, b.data])[1:5:2]
    np.testing.assert_allclose(fc.reinterpret(c).align(("t", "a")).data, expected)
    np.testing.assert_allclose(fc.Cat("t", (a, b))(t=sub).align(("t", "a")).data, expected)


def test_stack_index_renamed_or_sliced_under_every_interpretation():
    # Oracle: the Stack built directly from the renamed / selected parts.
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    parts = (fc.Number(0.0), x, x * y)
    f = fc.Stack("i", parts)
    assert f(i="j") is fc.Stack("j", parts)
    xs = tuple(fc.Number(float(k)) for k in range(10))
    with lazy:
        sliced = fc.Stack("i", xs)(i=fc.Slice("j", 1, 10, 3, 10))
        assert sliced is fc.Stack("j", xs[1:10:3])
    np.testing.assert_allclose(fc.reinterpret(sliced).data, np.arange(10.0)[1:10:3])
