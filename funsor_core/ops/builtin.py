"""The op vocabulary and its algebra tables (output domains: ``ops.domain_rules``)."""

from __future__ import annotations

import math
import operator
import sys

import numpy as np

from funsor_core.ops.op import (
    ArrayOp,
    AssociativeOp,
    BinaryOp,
    CatOp,
    ComparisonOp,
    EinsumOp,
    Op,
    ReductionOp,
    StackOp,
    TransformOp,
    UnaryOp,
    make_op,
)
from funsor_core.ops.op_docs import document_ops

# ---------------------------------------------------------------------------------------------
# Elementwise unary ops.
neg = make_op("neg", UnaryOp)
abs = make_op("abs", UnaryOp)  # noqa: A001
exp = make_op("exp", TransformOp)
log = make_op("log", TransformOp)
log1p = make_op("log1p", UnaryOp)
expm1 = make_op("expm1", UnaryOp)
sqrt = make_op("sqrt", UnaryOp)
sigmoid = make_op("sigmoid", TransformOp)
tanh = make_op("tanh", TransformOp)
atanh = make_op("atanh", TransformOp)
reciprocal = make_op("reciprocal", UnaryOp)
invert = make_op("invert", UnaryOp)  # logical not of booleans, ``~x``
isfinite = make_op("isfinite", UnaryOp)
clamp = make_op("clamp", UnaryOp)  # clamp(x, min=None, max=None)
astype = make_op("astype", UnaryOp)  # astype(x, dtype) with dtype "real" or "int" or "bool"

# Elementwise binary ops.
add = make_op("add", AssociativeOp)
sub = make_op("sub", BinaryOp)
mul = make_op("mul", AssociativeOp)
truediv = make_op("truediv", BinaryOp)
floordiv = make_op("floordiv", BinaryOp)
mod = make_op("mod", BinaryOp)
lshift = make_op("lshift", BinaryOp)  # x << y on integers
rshift = make_op("rshift", BinaryOp)  # x >> y on integers
pow = make_op("pow", BinaryOp)  # noqa: A001
min = make_op("min", AssociativeOp)  # noqa: A001
max = make_op("max", AssociativeOp)  # noqa: A001
logaddexp = make_op("logaddexp", AssociativeOp)
# ``ops.sample``: a sampling reduction. It computes as ``logaddexp`` (backends register
# logaddexp's kernel for it; same unit and distributivity; ``exact`` rewrites a sampling
# reduction to a logaddexp one), but it is its own op, so that an interpretation can tell
# "draw a sample of v" (Monte Carlo, the adjoint's sampling semiring) from "marginalize v".
sample = make_op("sample", AssociativeOp)
safesub = make_op("safesub", BinaryOp)  # a - b, with b = -inf giving a - (-max) (finite)
safediv = make_op("safediv", BinaryOp)  # a / b, with b = 0 giving a * max (0 / 0 = 0)
and_ = make_op("and_", AssociativeOp)
or_ = make_op("or_", AssociativeOp)
xor = make_op("xor", AssociativeOp)
lt = make_op("lt", ComparisonOp)
le = make_op("le", ComparisonOp)
gt = make_op("gt", ComparisonOp)
ge = make_op("ge", ComparisonOp)
eq = make_op("eq", ComparisonOp)
ne = make_op("ne", ComparisonOp)

# Matrix ops on the rightmost dims, batched on the left.
matmul = make_op("matmul", BinaryOp)
cholesky = make_op("cholesky", UnaryOp)
# triangular_solve(x, y, upper=False, transpose=False) solves y @ z = x (or y.T @ z = x).
triangular_solve = make_op("triangular_solve", BinaryOp)
cholesky_solve = make_op("cholesky_solve", BinaryOp)  # (y @ y.T)^{-1} @ x
cholesky_inverse = make_op("cholesky_inverse", UnaryOp)  # (x @ x.T)^{-1}
det = make_op("det", UnaryOp)
logdet = make_op("logdet", UnaryOp)  # log|det x|
inv = make_op("inv", UnaryOp)
transpose = make_op("transpose", UnaryOp)  # transpose(x, dim0=-2, dim1=-1)
qr_r = make_op("qr_r", UnaryOp)  # the R factor of a reduced QR decomposition
diagonal = make_op("diagonal", UnaryOp)  # diagonal(x, dim1=-2, dim2=-1), as a last dim
diag_embed = make_op("diag_embed", UnaryOp)  # inverse of diagonal
triu = make_op("triu", UnaryOp)  # triu(x, k=0)
tril = make_op("tril", UnaryOp)
flip = make_op("flip", UnaryOp)  # flip(x, axis=None): reverse the order along axes
# triangular_inv(x, upper=False): the inverse of the lower (upper) triangle of x.
triangular_inv = make_op("triangular_inv", UnaryOp)
# The factorizations and solves, which no backend computes in 16-bit floats (backends run them
# in float32 there: ``kernel_helpers.in_float32``).
LINALG_OPS = (cholesky, triangular_solve, cholesky_solve, cholesky_inverse, det, logdet, inv,
              qr_r, triangular_inv)

# Reductions over axes of an array: op(x, axis=None, keepdims=False).
sum = make_op("sum", ReductionOp)  # noqa: A001
prod = make_op("prod", ReductionOp)
logsumexp = make_op("logsumexp", ReductionOp)
amax = make_op("amax", ReductionOp)
amin = make_op("amin", ReductionOp)
argmax = make_op("argmax", ReductionOp)  # argmax(x, axis) with one int axis
argmin = make_op("argmin", ReductionOp)
all = make_op("all", ReductionOp)  # noqa: A001
any = make_op("any", ReductionOp)  # noqa: A001
mean = make_op("mean", ReductionOp)
std = make_op("std", ReductionOp)  # std(x, axis=None, ddof=0, keepdims=False)
var = make_op("var", ReductionOp)  # var(x, axis=None, ddof=0, keepdims=False)

# N-ary ops.
einsum = make_op("einsum", EinsumOp)  # einsum(equation, *operands)
cat = make_op("cat", CatOp)  # cat(parts, axis=0)
stack = make_op("stack", StackOp)  # stack(parts, axis=0)

# Structural array ops used by rules; each takes an array prototype first. permute, expand
# and full_like are UnaryOps, as in funsor: on a funsor they act on its output.
permute = make_op("permute", UnaryOp)  # permute(x, axes)
# reshape(x, shape), or reshape(x, shape, ndim=k): only the rightmost k dims are reshaped,
# so the bound op of a funsor's reshape leaves a Tensor's batch dims alone. A UnaryOp on
# funsors (it acts on the output shape), an array op for rules.
reshape = make_op("reshape", UnaryOp)
expand = make_op("expand", UnaryOp)  # expand(x, shape): broadcast_to
getitem = make_op("getitem", ArrayOp)  # getitem(x, index) = x[index]
where = make_op("where", ArrayOp)  # where(cond, x, y)
full_like = make_op("full_like", UnaryOp)  # full_like(x, fill_value)
new_zeros = make_op("new_zeros", ArrayOp)  # new_zeros(proto, shape)
new_full = make_op("new_full", ArrayOp)  # new_full(proto, shape, value)
new_arange = make_op("new_arange", ArrayOp)  # new_arange(proto, start, stop, step)
new_eye = make_op("new_eye", ArrayOp)  # new_eye(proto, n)
new_array = make_op("new_array", ArrayOp)  # new_array(proto, data): data as proto's backend
scatter_add = make_op("scatter_add", ArrayOp)  # scatter_add(dest, index_tuple, values)
# scatter_set(dest, index_tuple, values): dest with dest[index] = values, out of place (the
# indices must not repeat: which write wins is up to the backend).
scatter_set = make_op("scatter_set", ArrayOp)
to_numpy = make_op("to_numpy", ArrayOp)
is_floating = make_op("is_floating", ArrayOp)
# Whether an array has values now (False for a jax tracer under jit): checks that read values
# run only on concrete arrays, and rules decline or decide structurally otherwise.
is_concrete = make_op("is_concrete", ArrayOp)
detach = make_op("detach", ArrayOp)

# -- Special functions of distribution log densities (issue #17) ------------------------------
# Elementwise; real-valued on integer arguments. Python-number kernels: end of this module.
lgamma = make_op("lgamma", UnaryOp)  # log |Gamma(x)|
digamma = make_op("digamma", UnaryOp)  # d/dx log Gamma(x)
i0e = make_op("i0e", UnaryOp)  # exp(-|x|) I_0(x): log I_0(x) = log(i0e(x)) + |x| never overflows
xlogy = make_op("xlogy", BinaryOp)  # x * log(y), 0 where x == 0 (and y is not NaN)
xlog1py = make_op("xlog1py", BinaryOp)  # x * log1p(y), 0 where x == 0 (and y is not NaN)
# log |B(x, y)| = lgamma(x) + lgamma(y) - lgamma(x + y); jax's and scipy's kernels (NumPyro's
# Beta and BetaBinomial densities call them) stay accurate where the lgammas cancel (y >> x).
betaln = make_op("betaln", BinaryOp)
cos = make_op("cos", UnaryOp)  # angles of the von Mises distribution
acos = make_op("acos", UnaryOp)
SPECIAL_OPS = (lgamma, digamma, i0e, xlogy, xlog1py, betaln, cos, acos)
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# Algebra tables.
UNITS: dict[Op, object] = {
    add: 0.0, mul: 1.0, logaddexp: -math.inf, sample: -math.inf, max: -math.inf,
    min: math.inf, and_: True, or_: False, xor: False,
}
# A reduction op for each associative binary op (Reduce over inputs uses these).
REDUCE_OPS: dict[Op, Op] = {
    add: sum, mul: prod, logaddexp: logsumexp, sample: logsumexp, max: amax, min: amin,
    and_: all, or_: any,
}
ASSOCIATIVE_OPS = frozenset(REDUCE_OPS) | {xor}
# (sum_op, prod_op) pairs where prod distributes over sum: the semirings.
# Ops that compute arithmetic (not logic or comparison) on their arguments' values: a bool
# array is a Bint[2] of 0s and 1s to them, so backends cast bools to ints before calling them.
ARITHMETIC_OPS = (
    neg, exp, log, log1p, expm1, sqrt, sigmoid, tanh, atanh, reciprocal, add, sub, mul,
    truediv, floordiv, mod, pow, logaddexp, safesub, safediv,
) + SPECIAL_OPS
DISTRIBUTIVE_OPS = frozenset([
    (logaddexp, add), (sample, add), (add, mul), (max, mul), (min, mul), (max, add),
    (min, add), (or_, and_), (xor, and_),
])
# The pairs above that distribute only over nonnegative factors: max_j (a * t_j) is
# a * max_j t_j for a >= 0 but a * min_j t_j for a < 0. A rule pulling a factor out of such a
# reduction must know its sign (funsor_core.analysis.sign.distributes).
NONNEGATIVE_DISTRIBUTIVE_OPS = frozenset([(max, mul), (min, mul)])
UNARY_INVERSES = {add: neg, mul: reciprocal}
BINARY_INVERSES = {add: sub, mul: truediv, logaddexp: safesub}
# An idempotent sum op (x + x = x) lets a reduction over an absent variable be dropped.
IDEMPOTENT_OPS = frozenset([max, min, and_, or_])
# Repeating a reduction of an absent Bint[n] variable n times, in terms of prod_op.
COMPARISON_OPS = frozenset([lt, le, gt, ge, eq, ne])
LOGICAL_OPS = frozenset([and_, or_, xor])

builtins_max = __builtins__["max"] if isinstance(__builtins__, dict) else __builtins__.max
builtins_min = __builtins__["min"] if isinstance(__builtins__, dict) else __builtins__.min


def parse_ellipsis(index) -> tuple[tuple, tuple]:
    """Split an index at its ellipsis: the parts before the first ``...`` and the parts after
    the last one (all parts are "left" when there is none), as funsor's helper of that name.

    Example:
        >>> parse_ellipsis((0, Ellipsis, slice(1, 2)))
        ((0,), (slice(1, 2, None),))
    """
    if not isinstance(index, tuple):
        index = (index,)
    dots = [i for i, part in enumerate(index) if part is Ellipsis]
    if not dots:
        return index, ()
    return index[: dots[0]], index[dots[-1] + 1:]


def parse_slice(s: slice, size: int) -> tuple[int, int, int]:
    """The nonnegative ``(start, stop, step)`` that slice ``s`` selects from ``size`` items,
    with negative bounds counted from the end and all bounds clipped to ``0..size``.

    Example:
        >>> parse_slice(slice(-3, None), 5), parse_slice(slice(-9, 3), 5)
        ((2, 5, 1), (0, 3, 1))
    """
    step = 1 if s.step is None else s.step
    if step <= 0:
        raise ValueError(f"parse_slice needs a positive step, got {s}")
    return s.indices(size)


def known_true(x, test) -> bool:
    """Whether ``test(x)``, a test of array ``x`` by ops that answers one boolean, is known to
    be true now: False for a traced ``x`` (no value yet). Under ``jax.jit`` every op is staged,
    also on a concrete array the traced function closed over, so its answer is a tracer; then
    the test is redone on a numpy copy of ``x``, which has the values.

    Example:
        >>> known_true(np.array([1.0, 2.0]), lambda a: amin(a) > 0)
        True
    """
    if not is_concrete(x):
        return False
    ok = test(x)
    if not is_concrete(ok):
        ok = test(to_numpy(x))
    return bool(ok)


# ---------------------------------------------------------------------------------------------
# Kernels for Python scalars, so ``ops.exp(1.0)`` and Number arithmetic work without arrays.
# They answer as numpy's float64 kernels do, so that a Number agrees with a 0-d Tensor:
# overflow gives inf, a domain error nan (never a complex number), division by zero a signed
# inf (or nan for 0 / 0), and signed zeros survive. Integer arguments keep integer results
# where Python's and numpy's integer arithmetic agree; a bool counts as the integer 0 or 1
# (True + True is 2), as for the Bint[2] values it stands for.
_LOG_2 = math.log(2.0)


def _as_float64(args):
    return tuple(np.float64(a) for a in args)


def _ieee(fast, slow, real=True):
    """``fast`` on the ordinary cases; numpy's ``slow`` where Python raises or goes complex.

    The fast path is plain ``math``/``operator`` (a Python call, no array); only the edge
    cases pay for numpy. ``real`` ops see float64 arguments on the slow path (so an integer
    power of a negative integer is real, as its domain says); the others keep numpy's own
    integer semantics (``7 // 0`` is 0 there, with no exception).
    """
    def kernel(*args):
        try:
            result = fast(*args)
        except (OverflowError, ZeroDivisionError, ValueError):
            result = None
        if result is None or type(result) is complex:
            with np.errstate(all="ignore"):
                result = slow(*(_as_float64(args) if real else args)).item()
        return result

    kernel.__name__ = getattr(fast, "__name__", "kernel")
    return kernel


def _scalar_logaddexp(a, b):
    if a == b:  # includes +-inf twice, where a - b would be nan
        return a + _LOG_2
    if a == -math.inf:
        return b + 0.0  # + 0.0 turns -0.0 into 0.0, as log(exp(-0.0) + 0) is
    if b == -math.inf:
        return a + 0.0
    m = builtins_max(a, b)
    return m + math.log1p(math.exp(-builtins_abs(a - b)))


builtins_abs = __builtins__["abs"] if isinstance(__builtins__, dict) else __builtins__.abs


def _safe_log(x):
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _scalar_sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


# numpy's minimum/maximum: a NaN on either side wins, and of two equal values (0.0 and -0.0)
# the second is returned.
def _scalar_min(a, b):
    return a if a < b or a != a else b


def _scalar_max(a, b):
    return a if a > b or a != a else b


# As the array kernels (funsor's safe inverses of add and mul): the subtrahend is clamped
# at minus the largest float (x - (-inf) is finite), a zero divisor gives x times the
# largest float (0 / 0 = 0); negative divisors divide as usual.
def _scalar_safesub(a, b):
    return a - builtins_max(b, -sys.float_info.max)


def _scalar_safediv(a, b):
    return a * sys.float_info.max if b == 0 else a / b


def _numpy_safediv(a, b):
    return np.where(b == 0, a * sys.float_info.max, a / np.where(b == 0, 1.0, b))


def _reciprocal(x):
    return 1.0 / x


def _scalar_pow(a, b):
    # numpy computes x ** 0.5 as sqrt(x): sqrt(-0.0) = -0.0 and sqrt(-inf) = nan, where C's
    # pow gives 0.0 and inf.
    if b == 0.5:
        return math.sqrt(a)
    return a ** b


_SCALAR_KERNELS = {
    neg: operator.neg, abs: builtins_abs, exp: _ieee(math.exp, np.exp), log: _safe_log,
    log1p: _ieee(math.log1p, np.log1p), expm1: _ieee(math.expm1, np.expm1),
    sqrt: _ieee(math.sqrt, np.sqrt), sigmoid: _scalar_sigmoid, tanh: math.tanh,
    reciprocal: _ieee(_reciprocal, np.reciprocal), invert: operator.not_,
    isfinite: math.isfinite,
    add: operator.add, sub: operator.sub, mul: operator.mul,
    truediv: _ieee(operator.truediv, np.true_divide),
    floordiv: _ieee(operator.floordiv, np.floor_divide, real=False),
    mod: _ieee(operator.mod, np.mod, real=False), pow: _ieee(_scalar_pow, np.power),
    min: _scalar_min, max: _scalar_max,
    logaddexp: _scalar_logaddexp, sample: _scalar_logaddexp, safesub: _scalar_safesub,
    safediv: _ieee(_scalar_safediv, _numpy_safediv),
    and_: operator.and_, or_: operator.or_, xor: operator.xor,
    lt: operator.lt, le: operator.le, gt: operator.gt, ge: operator.ge,
    eq: operator.eq, ne: operator.ne,
}
for _op, _fn in _SCALAR_KERNELS.items():
    for _t in (int, float, bool):
        _op.register(_t, _fn)
# The Python-number kernels of the ops added for funsor's surface
# (tests/compat/test_funsor_surface.py checks them against numpy).
# Shifts are integer ops: numpy, like Python, has no float shift.
_SCALAR_KERNELS_FUNSOR = {
    atanh: (_ieee(math.atanh, np.arctanh), (int, float, bool)),
    lshift: (operator.lshift, (int, bool)), rshift: (operator.rshift, (int, bool)),
}
for _op, (_fn, _types) in _SCALAR_KERNELS_FUNSOR.items():
    for _t in _types:
        _op.register(_t, _fn)
del _op, _fn, _t, _types


# -- Python-number kernels of the special functions (issue #17): the numpy kernel on a float64,
# so a Number agrees with a 0-d Tensor (the numpy backend is loaded by ``import funsor_core``).
def _via_numpy(op):
    def kernel(*args):
        with np.errstate(all="ignore"):
            return op(*(np.asarray(a, dtype=np.float64) for a in args)).item()

    kernel.__name__ = f"_scalar_{op.name}"
    return kernel


for _op in SPECIAL_OPS:
    for _t in (int, float, bool):
        _op.register(_t, _via_numpy(_op))
del _op, _t

document_ops(globals())
