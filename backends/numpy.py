"""NumPy kernels for every op in ``funsor_core.ops.REQUIRED_OPS``, plus array creation and RNG.

Example:
    >>> from funsor_core import ops
    >>> ops.logsumexp(np.log(np.ones(4)), axis=0)
    array(1.38629436)
"""

from __future__ import annotations

import numpy as np

from backends.numpy_facts import as_float32
from backends.numpy_trace import TracedNdarray
from funsor_core import ops
from funsor_core.engine.cache import FastCache
from funsor_core.ops.op import cast_bool_args, expand_shape, in_float32, register_array_type
from funsor_core.ops.op import register_scalar_type as declare_number
from funsor_core.ops.tracer import register_traced_type

NAME = "numpy"
ARRAY_TYPES = (np.ndarray, np.generic)
FLOAT_DTYPE = np.float64


def _empty_unit(x, axis, keepdims, unit):
    # The reduction of no values is the op's unit (max: -inf, min: +inf, logsumexp: -inf), as
    # numpy already gives for sum (0) and prod (1); np.amax raises "no identity" instead. An
    # integer or bool array takes the unit of its own type (the smallest/largest value).
    shape = np.sum(x, axis=axis, keepdims=keepdims).shape
    dtype = x.dtype
    if dtype == np.bool_:
        unit = unit > 0
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        unit = info.min if unit < 0 else info.max
    return np.full(shape, unit, dtype=dtype)


def _logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x)
    if axis == ():
        return x
    if x.size == 0:
        return _empty_unit(x.astype(np.result_type(x.dtype, np.float64)), axis, keepdims,
                           -np.inf)
    # ufunc.reduce directly: np.amax/np.sum wrappers cost more than the math on small arrays.
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    # (The ufunc's reduce: ndarray.all's Python wrapper costs more than the test.)
    if not np.logical_and.reduce(np.isfinite(m), axis=None):
        # A slice of all -inf sums to -inf: shift it by 0 instead of by -inf (which gives nan).
        m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            result = np.log(np.add.reduce(np.exp(x - m), axis=axis, keepdims=True)) + m
    else:
        result = np.log(np.add.reduce(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        result = result.squeeze(axis) if axis is not None else result.reshape(())
    return np.asarray(result)


def _reduction(fn):
    # A reduction over all axes gives a numpy scalar; keep Tensor data a 0-d array instead.
    def kernel(x, axis=None, keepdims=False):
        return x if axis == () else np.asarray(fn(x, axis=axis, keepdims=keepdims))

    return kernel


def _extremum(fn, unit):
    def kernel(x, axis=None, keepdims=False):
        if axis == ():
            return x
        x = np.asarray(x)
        if x.size == 0:
            return _empty_unit(x, axis, keepdims, unit)
        return np.asarray(fn(x, axis=axis, keepdims=keepdims))

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _moment(fn):
    # std/var over axes; numpy already averages integers as floats and gives 0 over axis=().
    def kernel(x, axis=None, ddof=0, keepdims=False):
        return np.asarray(fn(x, axis=axis, ddof=ddof, keepdims=keepdims))

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _reshape(x, shape, ndim=None):
    # ndim=k reshapes only the rightmost k dims (a funsor's output), keeping batch dims.
    if ndim is not None:
        shape = tuple(x.shape[: np.ndim(x) - ndim]) + tuple(shape)
    return np.reshape(x, shape)


def _sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def _safesub(x, y):  # funsor's safe inverses of add and mul: see funsor_core/ops/builtin.py
    y = np.asarray(y, dtype := np.result_type(x, y, np.float32))
    return x - np.maximum(y, -np.finfo(dtype).max)


def _safediv(x, y):
    y = np.asarray(y, dtype := np.result_type(x, y, np.float32))
    with np.errstate(over="ignore"):  # y = 0 gives x * max (0 / 0 = 0); negative y divide
        return np.where(y == 0, x * np.finfo(dtype).max, x / np.where(y == 0, 1, y))


def _power(x, y):
    # A power is Real (ops.infer_domain), so integers are raised in floats: a negative integer
    # exponent gives 1 / x^k rather than numpy's "Integers to negative integer powers" error.
    if _is_integer(x) and _is_integer(y):
        x = np.asarray(x, dtype=FLOAT_DTYPE)
    return np.power(x, y)


def _is_integer(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype.kind in "iub" if dtype is not None else type(x) in (int, bool)


_TRIANGLES = FastCache("backends.numpy.triangle_masks", 256)  # (n, m, upper) -> mask


def _triangle(x, upper: bool):
    """The named triangle of ``x``, the other zeroed, with a cached mask: np.triu builds its
    mask per call, which costs more than the small inverses of a filter step."""
    n, m = x.shape[-2:]
    mask = _TRIANGLES.data.get((n, m, upper))
    if mask is None:
        mask = _TRIANGLES[n, m, upper] = np.triu(np.ones((n, m), bool)) if upper else np.tril(
            np.ones((n, m), bool))
    return np.where(mask, x, x.dtype.type(0))


def _triangular_solve(x, y, upper=False, transpose=False):
    # numpy has no batched triangular solve; a general solve is exact enough for the sizes a
    # Gaussian atom sees and keeps broadcasting over batch dims.
    # Read only the named triangle of y, as torch, jax and scipy do.
    y = _triangle(y, upper)
    if transpose:
        y = np.swapaxes(y, -1, -2)
    return np.linalg.solve(y, x)


def _cholesky_solve(x, y):
    z = _triangular_solve(x, y)
    return _triangular_solve(z, y, transpose=True)


def _cholesky_inverse(x):
    eye = np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)
    return _cholesky_solve(eye, x)


def _logdet(x):
    return np.linalg.slogdet(x)[1]


def _transpose(x, dim0=-2, dim1=-1):
    return np.swapaxes(x, dim0, dim1)


def _permute(x, axes=None):
    # What np.transpose calls, without its Python wrapper (0.2-0.4 us of an eager 3x3 op).
    return x.transpose(axes)


def _qr_r(x):
    return np.linalg.qr(x, mode="r")


def _diagonal(x, dim1=-2, dim2=-1):
    return np.diagonal(x, axis1=dim1, axis2=dim2)


def _triangular_inv(x, upper=False):
    # The inverse of the named triangle (the other one is ignored, as in torch and jax).
    # np.linalg.inv is LAPACK's gesv against the identity, as _triangular_solve(eye, x) is,
    # without building the identity (a third fewer calls on the small matrices of a filter).
    return np.linalg.inv(_triangle(x, upper))


def _diag_embed(x):
    # Assign rather than multiply by eye: inf * 0 would put nan off the diagonal.
    n = x.shape[-1]
    out = np.zeros(tuple(x.shape) + (n,), dtype=x.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = x
    return out


def _triu(x, k=0):
    return np.triu(x, k)


def _tril(x, k=0):
    return np.tril(x, k)


def _clamp(x, min=None, max=None):  # noqa: A002
    return np.clip(x, min, max)


def _astype(x, dtype):
    # kinds: "real"/"float" (a float kept, ints to the default float), "int", "bool"; any
    # other name or dtype ("float32", "uint8", np.int32) exactly, as funsor's ops.astype.
    x = np.asarray(x)
    if dtype == "real" or dtype == "float":
        return x if np.issubdtype(x.dtype, np.floating) else x.astype(FLOAT_DTYPE)
    if dtype == "bool":
        return x.astype(bool)
    if dtype == "int":
        return x.astype(np.int64)
    return x.astype(np.dtype(dtype))


def _matmul(x, y):
    return np.matmul(x, y)


def _einsum(equation, *operands):
    return np.einsum(equation, *operands)


def _cat(parts, axis=0):
    return np.concatenate(parts, axis=axis)


def _stack(parts, axis=0):
    return np.stack(parts, axis=axis)


def _scatter_add(dest, index, values):
    out = np.array(dest, copy=True)
    np.add.at(out, index, values)
    return out


def _scatter_set(dest, index, values):
    out = np.array(dest, copy=True)
    out[index] = values
    return out


def _new_zeros(proto, shape):
    return np.zeros(shape, dtype=getattr(proto, "dtype", FLOAT_DTYPE))


def _new_full(proto, shape, value):
    return np.full(shape, value, dtype=getattr(proto, "dtype", FLOAT_DTYPE))


def _new_arange(proto, start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    return np.arange(start, stop, step)


def _new_eye(proto, n):
    dtype = getattr(proto, "dtype", FLOAT_DTYPE)
    if isinstance(n, tuple):  # funsor's new_eye(x, shape): identities of shape + (shape[-1],)
        return np.broadcast_to(np.eye(n[-1], dtype=dtype), n + n[-1:])
    return np.eye(n, dtype=dtype)


def _new_array(proto, data):
    # As on torch and jax: arrays keep their dtype, Python floats take the prototype's float.
    out = np.asarray(data)
    return out.astype(proto.dtype) if out.dtype.kind == "f" and not isinstance(
        data, np.ndarray) and getattr(proto, "dtype", out.dtype).kind == "f" else out


def _is_floating(x):
    return np.issubdtype(np.asarray(x).dtype, np.floating)


def _expand(x, shape):
    # -1 keeps x's size in that dim (torch's and funsor's expand); broadcast_to needs sizes.
    return np.broadcast_to(x, expand_shape(np.shape(x), shape))



# ---------------------------------------------------------------------------------------------
# Special functions of distribution log densities (issue #17). scipy.special is used where it
# is installed (it is not a dependency); otherwise the numpy implementations below, which
# tests/distribution/test_distribution_ops.py checks against scipy.
def _float_array(x):
    x = np.asarray(x)
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(FLOAT_DTYPE)


# Lanczos approximation (g = 7, 9 terms): Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t A(z)
# with t = z + g + 1/2; relative error below 1e-15 for z >= 1/2.
_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
)
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def lgamma_numpy(x):
    """log |Gamma(x)| with numpy only: Lanczos for x >= 1/2, the reflection formula below.

    Example:
        >>> lgamma_numpy(np.array([4.0, 0.5])).round(6)  # log 3!, log sqrt(pi)
        array([1.791759, 0.572365])
    """
    x = _float_array(x)
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        z = np.where(reflect, 1.0 - x, x) - 1.0
        series = np.full_like(z, _LANCZOS[0])
        for k, c in enumerate(_LANCZOS[1:], start=1):
            series = series + c / (z + k)
        t = z + _LANCZOS_G + 0.5
        lg = _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(series)
        # Gamma(x) Gamma(1 - x) = pi / sin(pi x); the poles (x = 0, -1, ...) give +inf.
        sin = np.abs(np.sin(np.pi * np.where(reflect, x - np.floor(x), 0.5)))
        out = np.where(reflect, np.log(np.pi / sin) - lg, lg)
        out = np.where(reflect & (x == np.floor(x)), np.inf, out)
        out = np.where(np.isposinf(x), np.inf, out)
    return out.astype(x.dtype, copy=False)


def digamma_numpy(x):
    """d/dx log Gamma(x) with numpy only: recurrence up to x >= 10, then the asymptotic series
    (error below 1e-13); the reflection formula for x < 0; at the poles NaN (-inf at 0),
    as scipy.

    Example:
        >>> digamma_numpy(np.array([1.0])).round(6)  # minus the Euler-Mascheroni constant
        array([-0.577216])
    """
    x = _float_array(x)
    with np.errstate(all="ignore"):
        neg = x < 0
        y = np.where(neg, 1.0 - x, x)
        acc = np.zeros_like(y)
        for _ in range(10):  # psi(y) = psi(y + 1) - 1 / y
            small = y < 10.0
            acc = acc - np.where(small, 1.0 / y, 0.0)
            y = np.where(small, y + 1.0, y)
        r = 1.0 / (y * y)
        series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))
        out = acc + np.log(y) - 0.5 / y - series
        out = np.where(neg, out - np.pi / np.tan(np.pi * x), out)
        out = np.where((x < 0) & (x == np.floor(x)), np.nan, out)
        out = np.where(x == 0, -np.inf, out)
        out = np.where(np.isposinf(x), np.inf, out)
    return out.astype(x.dtype, copy=False)


def i0e_numpy(x):
    """exp(-|x|) I_0(x) with numpy only: np.i0 below |x| = 700, the asymptotic series above.

    Example:
        >>> i0e_numpy(np.array([0.0, 1000.0])).round(6)  # 1 and about (2 pi 1000)^-1/2
        array([1.      , 0.012617])
    """
    x = _float_array(x)
    a = np.abs(x)
    with np.errstate(all="ignore"):
        small = np.exp(-np.minimum(a, 700.0)) * np.i0(np.minimum(a, 700.0))
        # I_0(a) e^-a ~ (2 pi a)^-1/2 sum_k ((2k - 1)!!)^2 / (k! (8 a)^k)
        term, total = np.ones_like(a), np.ones_like(a)
        for k in range(1, 7):
            term = term * (2 * k - 1) ** 2 / (k * 8.0 * a)
            total = total + term
        large = total / np.sqrt(2.0 * np.pi * a)
    return np.where(a <= 700.0, small, large).astype(x.dtype, copy=False)


def _xlog(fn):
    def kernel(x, y):
        x, y = np.asarray(x), np.asarray(y)
        with np.errstate(all="ignore"):
            out = x * fn(y)
        return np.where((x == 0) & ~np.isnan(y), np.zeros_like(out), out)

    kernel.__name__ = f"_x{fn.__name__}"
    return kernel


def _betaln_numpy(x, y):
    x, y = _float_array(x), _float_array(y)
    return lgamma_numpy(x) + lgamma_numpy(y) - lgamma_numpy(x + y)


_SPECIAL = {ops.lgamma: lgamma_numpy, ops.digamma: digamma_numpy, ops.i0e: i0e_numpy,
            ops.xlogy: _xlog(np.log), ops.xlog1py: _xlog(np.log1p), ops.betaln: _betaln_numpy}
_SCIPY_FREE = {ops.cos: np.cos, ops.acos: np.arccos}


def _special_kernel(op):
    # scipy.special when installed (imported on the first call, not at import), else numpy.
    cell = []

    def kernel(*args):
        if not cell:
            try:
                import scipy.special as sp

                cell.append({ops.lgamma: sp.gammaln, ops.digamma: sp.psi, ops.i0e: sp.i0e,
                             ops.xlogy: sp.xlogy, ops.xlog1py: sp.xlog1py,
                             ops.betaln: sp.betaln}[op])
            except ImportError:  # pragma: no cover  (the test extra installs scipy)
                cell.append(_SPECIAL[op])
        out = np.asarray(cell[0](*args))
        if all(getattr(a, "dtype", None) == np.float16 for a in args):  # scipy: no float16 loops
            out = out.astype(np.float16)
        return out

    kernel.__name__ = f"_{op.name}"
    return kernel

KERNELS = {
    ops.neg: np.negative, ops.abs: np.abs, ops.exp: np.exp, ops.log: np.log,
    ops.log1p: np.log1p, ops.expm1: np.expm1, ops.sqrt: np.sqrt, ops.sigmoid: _sigmoid,
    ops.tanh: np.tanh, ops.atanh: np.arctanh, ops.reciprocal: lambda x: np.true_divide(1.0, x),
    ops.invert: np.invert,
    ops.isfinite: np.isfinite, ops.clamp: _clamp, ops.astype: _astype,
    ops.add: np.add, ops.sub: np.subtract, ops.mul: np.multiply, ops.truediv: np.true_divide,
    ops.floordiv: np.floor_divide, ops.mod: np.mod, ops.pow: _power,
    ops.lshift: np.left_shift, ops.rshift: np.right_shift, ops.safesub: _safesub,
    ops.min: np.minimum, ops.max: np.maximum, ops.logaddexp: np.logaddexp, ops.safediv: _safediv,
    ops.and_: np.bitwise_and, ops.or_: np.bitwise_or, ops.xor: np.bitwise_xor,
    ops.lt: np.less, ops.le: np.less_equal, ops.gt: np.greater, ops.ge: np.greater_equal,
    ops.eq: np.equal, ops.ne: np.not_equal,
    ops.matmul: _matmul, ops.cholesky: np.linalg.cholesky,
    ops.triangular_solve: _triangular_solve, ops.cholesky_solve: _cholesky_solve,
    ops.cholesky_inverse: _cholesky_inverse, ops.det: np.linalg.det, ops.logdet: _logdet,
    ops.inv: np.linalg.inv, ops.transpose: _transpose, ops.qr_r: _qr_r,
    ops.diagonal: _diagonal, ops.diag_embed: _diag_embed, ops.triu: _triu, ops.tril: _tril,
    ops.flip: np.flip, ops.triangular_inv: _triangular_inv,
    ops.sum: _reduction(np.sum), ops.prod: _reduction(np.prod), ops.logsumexp: _logsumexp,
    ops.amax: _extremum(np.amax, -np.inf), ops.amin: _extremum(np.amin, np.inf),
    ops.argmax: _reduction(np.argmax),
    ops.argmin: _reduction(np.argmin), ops.all: _reduction(np.all), ops.any: _reduction(np.any),
    ops.mean: _reduction(np.mean), ops.std: _moment(np.std), ops.var: _moment(np.var),
    ops.einsum: _einsum, ops.cat: _cat, ops.stack: _stack,
    ops.permute: _permute, ops.reshape: _reshape, ops.expand: _expand,
    ops.getitem: lambda x, index: x[index], ops.where: np.where,
    ops.full_like: np.full_like, ops.new_zeros: _new_zeros, ops.new_full: _new_full,
    ops.new_arange: _new_arange, ops.new_eye: _new_eye, ops.new_array: _new_array,
    ops.scatter_add: _scatter_add, ops.scatter_set: _scatter_set, ops.to_numpy: np.asarray,
    ops.is_floating: _is_floating, ops.is_concrete: lambda x: True, ops.detach: lambda x: x,
}
KERNELS.update({op: _special_kernel(op) for op in _SPECIAL})  # issue #17
KERNELS.update(_SCIPY_FREE)


# A bool array holds Bint[2] values, the integers 0 and 1 (comparisons make them): arithmetic on
# it is integer arithmetic, so True + True is 2 (in Bint[3]), as for Python bools. The array
# libraries would compute a logical or (add), refuse (sub, neg), or answer in int8 / float16.
# Logical ops (and_, or_, xor, invert) and comparisons keep bools.
_BOOL = np.dtype(bool)


for _op in ops.ARITHMETIC_OPS:
    KERNELS[_op] = cast_bool_args(KERNELS[_op], _BOOL, lambda a: a.astype(np.int64))
for _op in ops.LINALG_OPS:  # numpy.linalg refuses float16: computed in float32
    KERNELS[_op] = in_float32(KERNELS[_op], (np.dtype(np.float16),),
                              as_float32, lambda a, dtype: a.astype(dtype))
del _op
KERNELS[ops.sample] = KERNELS[ops.logaddexp]  # a sampling reduction computes as logaddexp


def asarray(data, dtype=None):
    """Convert ``data`` to a numpy array (``dtype`` "real" gives float64, "int" int64)."""
    if dtype == "real":
        return np.asarray(data, dtype=FLOAT_DTYPE)
    if dtype == "int":
        return np.asarray(data, dtype=np.int64)
    return np.asarray(data)


def new_rng_key(seed: int = 0):
    """A numpy Generator used where other backends take a key."""
    return np.random.default_rng(seed)


def split_rng_key(key) -> tuple:
    """``(key, subkey)`` as jax splits keys: a generator advances itself, so both are it."""
    return key, key


def randn(shape, rng_key=None):
    rng = rng_key if rng_key is not None else np.random
    return rng.standard_normal(size=shape) if rng is not np.random else np.random.randn(*shape)


def rand(shape, rng_key=None):
    rng = rng_key if rng_key is not None else np.random
    return rng.random(size=shape) if rng is not np.random else np.random.rand(*shape)


def randint(low, high, shape, rng_key=None):
    rng = rng_key if rng_key is not None else np.random
    return rng.integers(low, high, size=shape) if rng is not np.random else np.random.randint(
        low, high, size=shape)


# Samplers of the distribution families (issue #17): arrays of parameters in, draws of their
# broadcast shape out, in the parameters' float dtype. ``rng_key`` is a Generator or None (the
# global state); numpy has no gradients, so nothing here is reparameterized.
def _rng(rng_key):
    return rng_key if rng_key is not None else np.random


def _like(draw, proto):
    proto = np.asarray(proto)
    dtype = proto.dtype if np.issubdtype(proto.dtype, np.floating) else FLOAT_DTYPE
    return np.asarray(draw, dtype=dtype)


def standard_gamma(alpha, rng_key=None):
    """Gamma(alpha, 1) draws of alpha's shape.

    Example:
        >>> standard_gamma(np.ones(3), new_rng_key(0)).shape
        (3,)
    """
    return _like(_rng(rng_key).standard_gamma(alpha), alpha)


def poisson(rate, rng_key=None):
    """Poisson(rate) draws of rate's shape, as floats.

    Example:
        >>> poisson(np.zeros(2), new_rng_key(0))
        array([0., 0.])
    """
    return _like(_rng(rng_key).poisson(rate), rate)


def binomial(total_count, probs, rng_key=None):
    """Binomial(total_count, probs) draws of the broadcast shape, as floats.

    Example:
        >>> binomial(np.array([3.0, 5.0]), np.array(1.0), new_rng_key(0))
        array([3., 5.])
    """
    n = np.asarray(total_count).astype(np.int64)
    return _like(_rng(rng_key).binomial(n, probs), probs)


def split_key(rng_key, n: int) -> list:
    """``n`` keys for ``n`` independent draws: a Generator advances its own state.

    Example:
        >>> key = new_rng_key(0)
        >>> split_key(key, 2) == [key, key]
        True
    """
    return [rng_key] * n


# -- random keys and array facts (core asks, never names) --
from backends.numpy_facts import *  # noqa: E402, F403


def install() -> None:
    for typ in ARRAY_TYPES:
        register_array_type(typ)
        for op, fn in KERNELS.items():
            op.register(typ, fn)
    declare_number(np.bool_)  # a number like np.float64(1.0), not a 0-d array
    register_traced_type(np.ndarray, TracedNdarray)


install()



# -- control flow and platform facts --
# Algorithms ask the backend for its loops and facts instead of its name; numpy's live in
# their own module (a Python loop, or the identity, where numpy has nothing better).
from backends.eager_control import (  # noqa: E402, F401
    checkpoint,
    cond,
    differentiate_as,
    is_traced,
    jit,
)
from backends.numpy_control import (  # noqa: E402, F401
    CALL_SECONDS,
    COMPILES,
    DIFFERENTIABLE,
    LOOP_FNS,
    platform,
    scan,
)
