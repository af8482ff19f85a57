"""Every elementwise, matrix and reduction op applied to Tensors vs numpy brute force.

Inputs are deliberately ordered differently on the two sides (lhs (i, j), rhs (j, k) or
(k, i)); the oracle broadcasts the numpy arrays by hand with explicit new axes.
"""

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.testing import assert_close

NI, NJ, NK = 2, 3, 4


def tensor(data, inputs, dtype="real"):
    """A Tensor on the active backend from numpy data."""
    kind = "real" if dtype == "real" else "int"
    return fc.Tensor(backend_module().asarray(data, kind), inputs, dtype)


def expect(data, inputs, dtype="real"):
    return fc.Tensor(np.asarray(data, float if dtype == "real" else None), inputs, dtype)


def positive(*shape):
    return np.random.uniform(0.5, 2.0, shape)


# -- unary ops --------------------------------------------------------------------------------
UNARY = [
    (ops.neg, np.negative, positive),
    (ops.abs, np.abs, np.random.randn),
    (ops.exp, np.exp, np.random.randn),
    (ops.log, np.log, positive),
    (ops.log1p, np.log1p, positive),
    (ops.expm1, np.expm1, np.random.randn),
    (ops.sqrt, np.sqrt, positive),
    (ops.sigmoid, lambda x: 1 / (1 + np.exp(-x)), np.random.randn),
    (ops.tanh, np.tanh, np.random.randn),
    (ops.reciprocal, lambda x: 1 / x, positive),
]


@pytest.mark.parametrize("op,np_fn,gen", UNARY, ids=[u[0].name for u in UNARY])
def test_unary_elementwise(backend, op, np_fn, gen):
    np.random.seed(0)
    x = gen(NI, NJ, 2)
    f = tensor(x, {"i": Bint[NI], "j": Bint[NJ]})
    assert_close(op(f), expect(np_fn(x), {"i": Bint[NI], "j": Bint[NJ]}))


def test_unary_methods_match_ops(backend):
    np.random.seed(1)
    x = positive(NI, 3)
    f = tensor(x, {"i": Bint[NI]})
    for name in ["exp", "log", "log1p", "expm1", "sqrt", "sigmoid", "tanh", "reciprocal"]:
        assert_close(getattr(f, name)(), getattr(ops, name)(f))
    assert_close(-f, expect(-x, {"i": Bint[NI]}))
    assert_close(abs(-f), expect(x, {"i": Bint[NI]}))


def test_unary_isfinite_invert_clamp_astype(backend):
    x = np.array([[0.5, np.inf], [-np.inf, -2.0]])
    f = tensor(x, {"i": Bint[2]})
    fin = ops.isfinite(f)
    assert fin.output.dtype == 2
    assert_close(ops.to_numpy(fin.data), np.isfinite(x))
    assert_close(ops.to_numpy((~fin).data), ~np.isfinite(x))
    assert_close(ops.clamp(f, min=-1.0, max=1.0), expect(np.clip(x, -1, 1), {"i": Bint[2]}))
    n = tensor(np.array([0, 2, 1]), {"i": Bint[3]}, 3)
    r = ops.astype(n, dtype="real")
    assert r.output is Real
    assert_close(ops.to_numpy(r.data), np.array([0.0, 2.0, 1.0]))


def _spd(*batch, n=3):
    a = np.random.randn(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


MATRIX_UNARY = [
    (ops.cholesky, np.linalg.cholesky, {}),
    (ops.det, np.linalg.det, {}),
    (ops.logdet, lambda x: np.linalg.slogdet(x)[1], {}),
    (ops.inv, np.linalg.inv, {}),
    (ops.transpose, lambda x: np.swapaxes(x, -1, -2), {}),
    (ops.diagonal, lambda x: np.diagonal(x, axis1=-2, axis2=-1), {}),
    (ops.triu, lambda x: np.triu(x, 1), {"k": 1}),
    (ops.tril, np.tril, {}),
    (ops.cholesky_inverse, lambda x: np.linalg.inv(x @ np.swapaxes(x, -1, -2)), {}),
]


@pytest.mark.parametrize("op,np_fn,kw", MATRIX_UNARY, ids=[u[0].name for u in MATRIX_UNARY])
def test_unary_matrix(backend, op, np_fn, kw):
    np.random.seed(2)
    x = _spd(NI)
    if op is ops.cholesky_inverse:
        x = np.linalg.cholesky(x)
    f = tensor(x, {"i": Bint[NI]})
    assert_close(op(f, **kw), expect(np_fn(x), {"i": Bint[NI]}), atol=1e-8)


def test_unary_qr_r_and_diag_embed(backend):
    np.random.seed(3)
    x = np.random.randn(NI, 4, 3)
    f = tensor(x, {"i": Bint[NI]})
    r = ops.to_numpy(ops.qr_r(f).data)
    # R is determined up to the signs of its rows: compare R^T R = X^T X.
    assert_close(np.swapaxes(r, -1, -2) @ r, np.swapaxes(x, -1, -2) @ x)
    v = np.random.randn(NI, 3)
    g = ops.diag_embed(tensor(v, {"i": Bint[NI]}))
    expected = np.stack([np.diag(v[a]) for a in range(NI)])
    assert_close(g, expect(expected, {"i": Bint[NI]}))


# -- binary ops -------------------------------------------------------------------------------
BINARY = [
    (ops.add, np.add), (ops.sub, np.subtract), (ops.mul, np.multiply),
    (ops.truediv, np.true_divide), (ops.floordiv, np.floor_divide), (ops.mod, np.mod),
    (ops.pow, np.power), (ops.min, np.minimum), (ops.max, np.maximum),
    (ops.logaddexp, np.logaddexp), (ops.safesub, np.subtract), (ops.safediv, np.true_divide),
]
COMPARISON = [(ops.lt, np.less), (ops.le, np.less_equal), (ops.gt, np.greater),
              (ops.ge, np.greater_equal), (ops.eq, np.equal), (ops.ne, np.not_equal)]
LOGICAL = [(ops.and_, np.logical_and), (ops.or_, np.logical_or), (ops.xor, np.logical_xor)]


def _operands(rhs_order, lhs_gen, rhs_gen, dtype="real"):
    """lhs (i, j) and rhs (j, k) or (k, i), with numpy versions broadcast to (i, j, k)."""
    x = lhs_gen(NI, NJ)
    lhs = tensor(x, {"i": Bint[NI], "j": Bint[NJ]}, dtype)
    x_b = x[:, :, None]
    if rhs_order == "jk":
        y = rhs_gen(NJ, NK)
        rhs = tensor(y, {"j": Bint[NJ], "k": Bint[NK]}, dtype)
        y_b = y[None, :, :]
    else:
        y = rhs_gen(NK, NI)
        rhs = tensor(y, {"k": Bint[NK], "i": Bint[NI]}, dtype)
        y_b = y.T[:, None, :]
    return lhs, rhs, x_b, y_b


IJK = {"i": Bint[NI], "j": Bint[NJ], "k": Bint[NK]}


@pytest.mark.parametrize("rhs_order", ["jk", "ki"])
@pytest.mark.parametrize("op,np_fn", BINARY, ids=[b[0].name for b in BINARY])
def test_binary_tensor_tensor(backend, op, np_fn, rhs_order):
    np.random.seed(4)
    lhs, rhs, x, y = _operands(rhs_order, positive, positive)
    result = op(lhs, rhs)
    assert result.inputs.keys() == IJK.keys()
    assert_close(result, expect(np_fn(x, y), IJK), atol=1e-8)


@pytest.mark.parametrize("rhs_order", ["jk", "ki"])
@pytest.mark.parametrize("op,np_fn", COMPARISON, ids=[b[0].name for b in COMPARISON])
def test_comparison_gives_bint2(backend, op, np_fn, rhs_order):
    np.random.seed(5)
    gen = lambda *s: np.random.randint(0, 3, s).astype(float)  # ties exercise eq/le/ge
    lhs, rhs, x, y = _operands(rhs_order, gen, gen)
    result = op(lhs, rhs)
    assert result.output is Bint[2]
    assert_close(ops.to_numpy(result.align(tuple(IJK)).data), np_fn(x, y))


@pytest.mark.parametrize("op,np_fn", LOGICAL, ids=[b[0].name for b in LOGICAL])
def test_logical_ops(backend, op, np_fn):
    np.random.seed(6)
    gen = lambda *s: np.random.randint(0, 2, s)
    lhs, rhs, x, y = _operands("ki", gen, gen, dtype=2)
    result = op(lhs, rhs)
    assert result.output is Bint[2]
    data = ops.to_numpy(result.align(tuple(IJK)).data)
    assert_close(data.astype(bool), np_fn(x, y))


@pytest.mark.parametrize("op,np_fn", BINARY + COMPARISON, ids=[b[0].name for b in BINARY +
                                                                 COMPARISON])
def test_binary_with_number(backend, op, np_fn):
    np.random.seed(7)
    x = positive(NI, NJ)
    f = tensor(x, {"i": Bint[NI], "j": Bint[NJ]})
    inputs = {"i": Bint[NI], "j": Bint[NJ]}
    for result, expected in [(op(f, fc.Number(1.5)), np_fn(x, 1.5)),
                             (op(fc.Number(1.5), f), np_fn(1.5, x)),
                             (op(f, 1.5), np_fn(x, 1.5))]:
        assert result.inputs == inputs
        assert_close(ops.to_numpy(result.data), expected)


def test_operators_match_ops(backend):
    np.random.seed(8)
    lhs, rhs, x, y = _operands("ki", positive, positive)
    for result, expected in [(lhs + rhs, x + y), (lhs - rhs, x - y), (lhs * rhs, x * y),
                             (lhs / rhs, x / y), (lhs ** rhs, x ** y)]:
        assert_close(result, expect(expected, IJK))
    x = x[:, :, 0]
    ij = {"i": Bint[NI], "j": Bint[NJ]}
    for result, expected in [(2.0 - lhs, 2.0 - x), (2.0 / lhs, 2.0 / x), (2.0 ** lhs, 2.0 ** x),
                             (3 * lhs, 3 * x), (1 + lhs, 1 + x), (lhs - 1, x - 1)]:
        assert_close(result, expect(expected, ij))


# -- output-shape broadcasting and matmul -----------------------------------------------------
def test_output_broadcasting(backend):
    np.random.seed(9)
    v = np.random.randn(NI, 3)
    s = np.random.randn(NJ)
    f = tensor(v, {"i": Bint[NI]}) + tensor(s, {"j": Bint[NJ]})
    assert f.output is Reals[3]
    assert_close(f, expect(v[:, None, :] + s[None, :, None], {"i": Bint[NI], "j": Bint[NJ]}))
    m = np.random.randn(NJ, 2, 3)
    g = tensor(m, {"j": Bint[NJ]}) * tensor(v, {"i": Bint[NI]})
    assert g.output is Reals[2, 3]
    assert_close(g, expect(m[:, None, :, :] * v[None, :, None, :], {"j": Bint[NJ], "i": Bint[NI]}))


@pytest.mark.parametrize("lshape,rshape", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                           ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                                           ((2, 3), (5, 3, 4))])
def test_matmul_with_batch_inputs(backend, lshape, rshape):
    np.random.seed(10)
    x = np.random.randn(NI, NJ, *lshape)
    y = np.random.randn(NK, NI, *rshape)
    lhs = tensor(x, {"i": Bint[NI], "j": Bint[NJ]})
    rhs = tensor(y, {"k": Bint[NK], "i": Bint[NI]})
    result = lhs @ rhs
    expected = np.empty((NI, NJ, NK) + np.matmul(np.ones(lshape), np.ones(rshape)).shape)
    for a in range(NI):
        for b in range(NJ):
            for c in range(NK):
                expected[a, b, c] = np.matmul(x[a, b], y[c, a])
    assert result.output is Reals[expected.shape[3:]]
    assert_close(result, expect(expected, IJK), atol=1e-8)


def test_matmul_shape_error():
    a = fc.Tensor(np.zeros(3))
    with pytest.raises(ValueError, match=r"ops.matmul cannot combine outputs .*inner dims"):
        a @ fc.Tensor(np.zeros(4))


def test_triangular_and_cholesky_solve(backend):
    np.random.seed(11)
    s = _spd(NI)
    chol = np.linalg.cholesky(s)
    b = np.random.randn(NJ, 3, 2)
    lf = tensor(chol, {"i": Bint[NI]})
    bf = tensor(b, {"j": Bint[NJ]})
    ij = {"i": Bint[NI], "j": Bint[NJ]}
    tri = ops.triangular_solve(bf, lf)
    expected = np.stack([[np.linalg.solve(chol[a], b[c]) for c in range(NJ)] for a in range(NI)])
    assert_close(tri, expect(expected, ij).align(tuple(tri.inputs)), atol=1e-8)
    cs = ops.cholesky_solve(bf, lf)
    expected = np.stack([[np.linalg.solve(s[a], b[c]) for c in range(NJ)] for a in range(NI)])
    assert_close(cs, expect(expected, ij).align(tuple(cs.inputs)), atol=1e-8)


# -- reductions over inputs -------------------------------------------------------------------
REDUCE = [(ops.add, np.sum), (ops.mul, np.prod), (ops.logaddexp, None), (ops.max, np.max),
          (ops.min, np.min)]


def _np_logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m, axis=axis)


@pytest.mark.parametrize("names", ["i", "j", ("i", "k"), ("i", "j", "k")])
@pytest.mark.parametrize("op,np_fn", REDUCE, ids=[r[0].name for r in REDUCE])
def test_reduce_over_inputs(backend, op, np_fn, names):
    np.random.seed(12)
    x = np.random.randn(NJ, NK, NI, 2)
    f = tensor(x, {"j": Bint[NJ], "k": Bint[NK], "i": Bint[NI]})
    names = (names,) if isinstance(names, str) else names
    axes = tuple(["j", "k", "i"].index(n) for n in names)
    fn = np_fn or _np_logsumexp
    expected = fn(x, axis=axes)
    rest = {n: d for n, d in f.inputs.items() if n not in names}
    result = f.reduce(op, names if len(names) > 1 else names[0])
    assert_close(result, expect(expected, rest), atol=1e-8)
    if len(names) == 3:
        assert_close(f.reduce(op), result)


@pytest.mark.parametrize("op,np_fn", [(ops.and_, np.all), (ops.or_, np.any),
                                      (ops.max, np.max), (ops.min, np.min)])
def test_reduce_logical_over_inputs(backend, op, np_fn):
    np.random.seed(13)
    x = np.random.randint(0, 2, (NI, NJ))
    f = tensor(x, {"i": Bint[NI], "j": Bint[NJ]}, 2)
    result = f.reduce(op, "j")
    assert result.output is Bint[2]
    assert_close(ops.to_numpy(result.data).astype(int), np_fn(x, axis=1).astype(int))


# -- reductions and indexing over output dims -------------------------------------------------
def test_reductions_over_output(backend):
    np.random.seed(14)
    x = np.random.randn(NI, 3, 4)
    f = tensor(x, {"i": Bint[NI]})
    inp = {"i": Bint[NI]}
    assert_close(f.sum(), expect(x.sum((1, 2)), inp))
    assert_close(f.sum(0), expect(x.sum(1), inp))
    assert_close(f.sum(-1, keepdims=True), expect(x.sum(2, keepdims=True), inp))
    assert_close(f.prod(1), expect(x.prod(2), inp))
    assert_close(f.logsumexp(-1), expect(_np_logsumexp(x, 2), inp))
    assert_close(f.logsumexp(), expect(_np_logsumexp(x.reshape(NI, -1), 1), inp))
    assert_close(f.max(), expect(x.max((1, 2)), inp))
    assert_close(f.min(0), expect(x.min(1), inp))
    assert_close(f.mean(), expect(x.mean((1, 2)), inp))
    am = f.argmax()
    assert am.output.dtype == 4 and am.output.shape == (3,)
    assert_close(ops.to_numpy(am.data), x.argmax(-1))
    am0 = f.argmax(0)
    assert am0.output.dtype == 3
    assert_close(ops.to_numpy(am0.data), x.argmax(1))
    amin = ops.argmin(f, axis=1)
    assert_close(ops.to_numpy(amin.data), x.argmin(2))
    b = f > 0
    assert_close(ops.to_numpy(b.all(-1).data).astype(bool), (x > 0).all(2))
    assert_close(ops.to_numpy(b.any().data).astype(bool), (x > 0).any((1, 2)))


def test_getitem_on_output(backend):
    np.random.seed(15)
    x = np.random.randn(NI, 3, 4)
    f = tensor(x, {"i": Bint[NI]})
    inp = {"i": Bint[NI]}
    assert_close(f[1], expect(x[:, 1], inp))
    assert_close(f[:, 2], expect(x[:, :, 2], inp))
    assert_close(f[1:, ::2], expect(x[:, 1:, ::2], inp))
    assert_close(f[..., -1], expect(x[..., -1], inp))
    assert_close(f[None, 0], expect(x[:, None, 0], inp))
    assert f[0, 0].output is Real
    assert [g.output for g in f] == [Reals[4]] * 3


def test_ops_on_arrays_and_numbers(backend):
    np.random.seed(16)
    x = np.random.randn(3)
    a = backend_module().asarray(x, "real")
    assert_close(ops.logaddexp(a, a), np.logaddexp(x, x))
    assert_close(ops.logsumexp(a, axis=0), _np_logsumexp(x, 0))
    assert ops.add(1.0, 2.0) == 3.0
    assert ops.logaddexp(0.0, -float("inf")) == 0.0
    assert ops.exp(0.0) == 1.0


# Python-number kernels must agree with the numpy array kernels, edges included.
_EDGES = [-math.inf, -2.5, -1.0, 0.0, 0.5, 3.0, math.inf]


@pytest.mark.parametrize("op", [ops.safesub, ops.safediv, ops.logaddexp, ops.add, ops.max,
                                ops.min], ids=lambda op: op.name)
def test_scalar_kernels_match_numpy_binary(op):
    for a in _EDGES:
        for b in _EDGES:
            with np.errstate(all="ignore"):
                expected = op(np.array(a), np.array(b))
            actual = op(a, b)
            np.testing.assert_allclose(actual, expected, err_msg=f"{op.name}({a}, {b})")


@pytest.mark.parametrize("op", [ops.log, ops.sigmoid, ops.neg, ops.abs, ops.tanh, ops.exp],
                         ids=lambda op: op.name)
def test_scalar_kernels_match_numpy_unary(op):
    for a in _EDGES + [-800.0, 800.0]:
        if op is ops.exp and a > 700:
            continue  # math.exp raises OverflowError where numpy gives inf, as Python does
        with np.errstate(all="ignore"):
            expected = op(np.array(a))
        np.testing.assert_allclose(op(a), expected, err_msg=f"{op.name}({a})")


# ---------------------------------------------------------------------------------------------
# Guards: every Python-number kernel answers as numpy's float64 kernel does (inf, nan, -0.0);
# arithmetic on comparison outputs is integer arithmetic; a reduction over Bint[0] is the op's
# unit. (Moved from tests/test_defects_8.py, defects 1, 2 and 7.)
_FLOATS = [0.0, -0.0, 0.5, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 1000.0, -1000.0, 1e308, -1e308,
           math.inf, -math.inf, math.nan]
_INTS = [0, 1, -1, 2, 3, -3]
_FMAX = np.finfo(np.float64).max


def _expit(x):
    from scipy.special import expit

    return expit(x)


# The numpy counterpart of every op in the table (sigmoid is scipy's expit; safesub and
# safediv clamp as their docstrings say).
_NUMPY_OF_OP = {
    ops.neg: np.negative, ops.abs: np.abs, ops.exp: np.exp, ops.log: np.log,
    ops.log1p: np.log1p, ops.expm1: np.expm1, ops.sqrt: np.sqrt,
    ops.sigmoid: _expit, ops.tanh: np.tanh,
    ops.reciprocal: lambda x: np.true_divide(1.0, x), ops.invert: np.logical_not,
    ops.isfinite: np.isfinite, ops.add: np.add, ops.sub: np.subtract, ops.mul: np.multiply,
    ops.truediv: np.true_divide, ops.floordiv: np.floor_divide, ops.mod: np.mod,
    ops.pow: np.power, ops.min: np.minimum, ops.max: np.maximum, ops.logaddexp: np.logaddexp,
    ops.sample: np.logaddexp,
    ops.safesub: lambda a, b: np.subtract(a, np.maximum(b, -_FMAX)),
    ops.safediv: lambda a, b: np.where(b == 0, a * _FMAX, a / np.where(b == 0, 1.0, b)),
    ops.and_: np.bitwise_and, ops.or_: np.bitwise_or, ops.xor: np.bitwise_xor,
    ops.lt: np.less, ops.le: np.less_equal, ops.gt: np.greater, ops.ge: np.greater_equal,
    ops.eq: np.equal, ops.ne: np.not_equal,
}
# Ops whose value is real whatever the arguments: numpy sees float64 arguments.
_REAL_OPS = {ops.exp, ops.log, ops.log1p, ops.expm1, ops.sqrt, ops.sigmoid, ops.tanh,
             ops.reciprocal, ops.truediv, ops.pow, ops.logaddexp, ops.sample, ops.safesub,
             ops.safediv}
_LOGICAL_OPS = {ops.and_, ops.or_, ops.xor, ops.invert}


def _active_array(data, dtype="real"):
    return backend_module().asarray(np.asarray(data), dtype)


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
    assert set(ops.builtin._SCALAR_KERNELS) == set(_NUMPY_OF_OP)


@pytest.mark.parametrize("op", list(ops.builtin._SCALAR_KERNELS), ids=lambda op: op.name)
def test_scalar_kernels_agree_with_numpy_float64(op):
    import itertools

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
                expected = _NUMPY_OF_OP[op](*np_args)
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


@pytest.mark.parametrize("op", [ops.add, ops.sub, ops.mul, ops.floordiv, ops.mod, ops.pow,
                                ops.truediv, ops.logaddexp], ids=lambda op: op.name)
def test_bool_data_arithmetic_is_integer(backend, op):
    x = np.array([1, 0, 2])
    m = fc.Tensor(_active_array(x, "int"), {"j": Bint[3]}, 3) == 0
    n = fc.Tensor(_active_array(x, "int"), {"j": Bint[3]}, 3) <= 1
    mi, ni = (x == 0).astype(np.int64), (x <= 1).astype(np.int64)
    with np.errstate(all="ignore"):
        if op in (ops.floordiv, ops.mod):
            expected = _NUMPY_OF_OP[op](mi, np.maximum(ni, 1))  # no division by zero
            actual = op(m, n | (fc.Tensor(_active_array(x, "int"), {"j": Bint[3]}, 3) >= 0))
        else:
            lhs = mi.astype(float) if op in _REAL_OPS else mi
            expected, actual = _NUMPY_OF_OP[op](lhs, ni), op(m, n)
    data = ops.to_numpy(ops.detach(actual.data))
    assert data.dtype != np.bool_
    assert np.allclose(data, expected, equal_nan=True)


def test_bool_sum_domain_and_data(backend):
    m = fc.Tensor(_active_array([1, 0, 2], "int"), {"j": Bint[3]}, 3) == 0
    s = m + m
    assert s.output is Bint[3]  # Bint[2] + Bint[2] takes values 0..2, as in funsor
    assert ops.to_numpy(s.data).tolist() == [0, 2, 0]
    assert ops.to_numpy((-m).data).tolist() == [0, -1, 0]


def test_or_xor_domain_bounds_every_value():
    import itertools

    for a, b in itertools.product(range(1, 6), repeat=2):
        for op, fn in ((ops.or_, np.bitwise_or), (ops.xor, np.bitwise_xor)):
            bound = ops.infer_domain(op, Bint[a], Bint[b]).dtype
            values = fn(np.arange(a)[:, None], np.arange(b)[None, :])
            assert values.max() < bound, (op.name, a, b)
    assert ops.infer_domain(ops.or_, Bint[2], Bint[2]) is Bint[2]


# Each reduction's unit, written out by hand.
_UNIT = {ops.logaddexp: -np.inf, ops.sample: -np.inf, ops.add: 0.0, ops.mul: 1.0, ops.max: -np.inf,
         ops.min: np.inf, ops.and_: True, ops.or_: False}


@pytest.mark.parametrize("op", list(ops.REDUCE_OPS), ids=lambda op: op.name)
def test_reduce_over_empty_input_is_unit(backend, op):
    assert set(_UNIT) == set(ops.REDUCE_OPS)
    logical = op in (ops.and_, ops.or_)
    data = _active_array(np.zeros((2, 0)))
    if logical:
        data = data > 0
    t = fc.Tensor(data, {"b": Bint[2], "i": Bint[0]}, 2 if logical else "real")
    result = t.reduce(op, "i")
    assert result.inputs == {"b": Bint[2]}
    assert ops.to_numpy(result.data).tolist() == [_UNIT[op]] * 2
    # The array kernel alone, over every axis of an empty array.
    reduced = ops.REDUCE_OPS[op](data[0], axis=None)
    assert ops.to_numpy(reduced).tolist() == _UNIT[op]
