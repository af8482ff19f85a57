"""JAX kernels for every op in ``funsor_core.ops.REQUIRED_OPS``, plus array creation and RNG.

Kernels keep numpy's calling conventions and are jit-traceable: no Python control flow on
values and no numpy conversion except in ``to_numpy``. This module never turns on x64; with
``jax.config.update("jax_enable_x64", True)`` fresh arrays are float64/int64, else 32-bit.

Example:
    >>> from funsor_core import ops
    >>> x = jnp.zeros((2, 3))
    >>> float(ops.logsumexp(x, axis=(0, -1)))  # log(6)
    1.7917...
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np

from backends.jax_facts import as_float32
from backends.jax_host import from_host, host_arange, on_host, small_constant
from backends.jax_logsumexp import logsumexp as _logsumexp
from backends.jax_logsumexp import (  # noqa: F401
    logsumexp_primitives,
    logsumexp_shared,
    reduce_merged,
)
from backends.jax_matmul import matmul as _matmul
from funsor_core import ops
from funsor_core.ops.op import cast_bool_args, expand_shape, in_float32, register_array_type

NAME = "jax"
# jax 0.10: tracers (under jit, grad, vmap) pass isinstance(x, jax.Array) through a metaclass
# hook but are not subclasses of it, and ops dispatch on type(x); registering
# jax.core.Tracer lets every tracer find the kernels through its MRO.
ARRAY_TYPES = (jax.Array, jax.core.Tracer)
# No forced float dtype: it depends on the x64 flag, read at call time by _float_dtype().
FLOAT_DTYPE = None


def _float_dtype():
    return jax.dtypes.canonicalize_dtype(np.float64)  # float32 unless x64 is enabled


def _int_dtype():
    return jax.dtypes.canonicalize_dtype(np.int64)


# ---------------------------------------------------------------------------------------------
# Elementwise adapters.
def _power(x, y):
    # A power is Real (ops.infer_domain), so integers are raised in floats: jnp.power of
    # integers with a negative exponent gives a wrong integer (0) silently.
    if _is_integer(x) and _is_integer(y):
        x = jnp.asarray(x, dtype=_float_dtype())
    return jnp.power(x, y)


def _is_integer(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return jnp.dtype(dtype).kind in "iub" if dtype is not None else type(x) in (int, bool)


def _float_result_type(x, y):
    dtype = jnp.result_type(x, y)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else _float_dtype()


def _safesub(x, y):
    # x - y with y = -inf (a log-space zero) clamped to minus the largest float, as funsor's
    # x + min(-y, max).
    dtype = _float_result_type(x, y)
    return x - jnp.maximum(jnp.asarray(y, dtype), -jnp.finfo(dtype).max)


def _safediv(x, y):
    # x / y, where y = 0 gives x times the largest float (so 0 / 0 = 0), as funsor's
    # x * min(1 / y, max); negative y divide as usual. The inner where keeps the gradient of
    # the unused branch finite.
    dtype = _float_result_type(x, y)
    y = jnp.asarray(y, dtype)
    zero = y == 0
    big = jnp.asarray(jnp.finfo(dtype).max, dtype)
    return jnp.where(zero, x * big, x / jnp.where(zero, 1, y))


def _clamp(x, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        return x
    return jnp.clip(x, min=min, max=max)


def _astype(x, dtype):
    # as numpy's: the kinds by "real"/"float", "int", "bool"; any other name or dtype exactly
    if dtype == "real" or dtype == "float":
        return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(_float_dtype())
    if dtype == "bool":
        return x.astype(bool)
    if dtype == "int":
        return x.astype(_int_dtype())
    return x.astype(jnp.dtype(dtype))


# ---------------------------------------------------------------------------------------------
# Reductions: `axis=()` returns x unchanged, as in every backend.
def _reduction(fn):
    def by_position(x, axis, keepdims):  # (jnp's third positional parameter is dtype)
        return fn(x, axis=axis, keepdims=keepdims)

    def kernel(x, axis=None, keepdims=False):
        if axis == ():
            return x
        if isinstance(axis, (tuple, list)) and len(axis) > 1:
            return reduce_merged(by_position, x, tuple(axis), keepdims)
        return fn(x, axis=axis, keepdims=keepdims)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _moment(fn):
    # std/var over axes; jnp averages integers as floats and gives 0 over axis=().
    def kernel(x, axis=None, ddof=0, keepdims=False):
        return fn(x, axis=axis, ddof=ddof, keepdims=keepdims)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _reshape(x, shape, ndim=None):
    # ndim=k reshapes only the rightmost k dims (a funsor's output), keeping batch dims.
    if ndim is not None:
        shape = tuple(x.shape[: x.ndim - ndim]) + tuple(shape)
    return jnp.reshape(x, shape)


def _extremum(fn, unit):
    # The max (min) of no values is the unit -inf (+inf), as sum gives 0 and prod 1; jnp.max
    # raises on an empty axis instead. Integer and bool arrays take the smallest (largest)
    # value of their own dtype. Sizes are static, so this branch is decided under jit too.
    def kernel(x, axis=None, keepdims=False):
        if axis == ():
            return x
        if x.size:
            return fn(x, axis=axis, keepdims=keepdims)
        shape = jnp.sum(x, axis=axis, keepdims=keepdims).shape
        if x.dtype == jnp.bool_:
            value = unit > 0
        elif jnp.issubdtype(x.dtype, jnp.floating):
            value = unit
        else:
            info = jnp.iinfo(x.dtype)
            value = info.min if unit < 0 else info.max
        return jnp.full(shape, value, dtype=x.dtype)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _arg_reduction(fn):
    def kernel(x, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


# ---------------------------------------------------------------------------------------------
# Linear algebra.
def _triangular_solve(x, y, upper=False, transpose=False):
    # Solves y @ z = x (or y.T @ z = x). Batch dims are broadcast here, since lax's
    # triangular solve wants equal batch shapes.
    if x.ndim > 2 or y.ndim > 2:
        batch = jnp.broadcast_shapes(x.shape[:-2], y.shape[:-2])
        x = jnp.broadcast_to(x, batch + x.shape[-2:])
        y = jnp.broadcast_to(y, batch + y.shape[-2:])
    return jax.scipy.linalg.solve_triangular(y, x, trans=1 if transpose else 0, lower=not upper)


def _cholesky_solve(x, y):
    # (y @ y.T)^{-1} @ x as two triangular solves.
    z = _triangular_solve(x, y)
    return _triangular_solve(z, y, transpose=True)


def _cholesky_inverse(x):
    eye = jnp.broadcast_to(jnp.eye(x.shape[-1], dtype=x.dtype), x.shape)
    return _cholesky_solve(eye, x)


def _logdet(x):
    return jnp.linalg.slogdet(x).logabsdet


def _transpose(x, dim0=-2, dim1=-1):
    return jnp.swapaxes(x, dim0, dim1)


def _qr_r(x):
    return jnp.linalg.qr(x, mode="r")


# Composite kernels jitted whole: eager jax compiles each op once per new shape, so one
# program instead of three to five shortens a small program's first call; a cached call
# costs one dispatch (diag_embed of a 4x3 array 1.1-2.0 ms eagerly before, 26-34 us; the
# diagonal 340-610 us before, 7-19 us). Under an outer jit they inline.
@functools.partial(jax.jit, static_argnums=(1, 2))
def _diagonal(x, dim1=-2, dim2=-1):
    # A strided slice of the flattened matrix ((i, i) is entry i (m + 1)), where
    # jnp.diagonal gathers: XLA keeps the gather's index arrays as kernels of their own
    # (hoisted out of a scan's loop, and carried through it).
    x = jnp.moveaxis(x, (dim1, dim2), (-2, -1))
    n, m = x.shape[-2:]
    flat = jnp.reshape(x, x.shape[:-2] + (n * m,))
    return flat[..., : min(n, m) * (m + 1) : m + 1]


def _flip(x, axis=None):
    return jnp.flip(x, axis)


def _triangular_inv(x, upper=False):
    eye = jnp.broadcast_to(jnp.eye(x.shape[-1], dtype=x.dtype), x.shape)
    return _triangular_solve(eye, x, upper=upper)


@jax.jit
def _diag_embed(x):
    # A select, not x * eye: an infinite entry must leave zeros off the diagonal.
    eye = jnp.eye(x.shape[-1], dtype=bool)
    return jnp.where(eye, x[..., :, None], jnp.zeros((), x.dtype))


def _triu(x, k=0):
    return jnp.triu(x, k)


def _tril(x, k=0):
    return jnp.tril(x, k)


# ---------------------------------------------------------------------------------------------
# Structural ops and array creation.
def _einsum(equation, *operands):
    return jnp.einsum(equation, *operands)


def _cat(parts, axis=0):
    return jnp.concatenate(parts, axis=axis)


def _stack(parts, axis=0):
    return jnp.stack(parts, axis=axis)


def _getitem(x, index):
    return x[index]


def _scatter_add(dest, index, values):
    # Functional update; repeated indices accumulate, as numpy's np.add.at.
    return dest.at[index].add(values)


def _scatter_set(dest, index, values):
    return dest.at[index].set(values)


def _new_zeros(proto, shape):
    out = small_constant(proto, shape, 0)
    return jnp.zeros(shape, dtype=proto.dtype) if out is None else out


def _new_full(proto, shape, value):
    out = small_constant(proto, shape, value) if isinstance(value, (int, float)) else None
    return jnp.full(shape, value, dtype=proto.dtype) if out is None else out


def _new_arange(proto, start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    try:
        bounds = operator.index(start), operator.index(stop), operator.index(step)
    except TypeError:  # traced or float bounds: jax's own
        return jnp.arange(start, stop, step, dtype=_int_dtype())
    return host_arange(*bounds, _int_dtype())


def _new_eye(proto, n):
    if isinstance(n, tuple):  # funsor's new_eye(x, shape): identities of shape + (shape[-1],)
        return jnp.broadcast_to(jnp.eye(n[-1], dtype=proto.dtype), n + n[-1:])
    return jnp.eye(n, dtype=proto.dtype)


def _new_array(proto, data):
    # Arrays keep their dtype; Python floats take the prototype's float dtype if it has one.
    if on_host(data):  # cast on the host: device_put compiles nothing
        host = np.asarray(data)
        if (host.dtype.kind == "f" and jnp.issubdtype(proto.dtype, jnp.floating)  # bfloat16
                and not isinstance(data, np.ndarray)):
            host = host.astype(proto.dtype)
        return from_host(host)
    result = jnp.asarray(data)
    if (jnp.issubdtype(result.dtype, jnp.floating) and jnp.issubdtype(proto.dtype, jnp.floating)
            and not isinstance(data, (jax.Array, np.ndarray))):
        result = result.astype(proto.dtype)
    return result


def _to_numpy(x):
    return np.asarray(x)


def _is_floating(x):
    return bool(jnp.issubdtype(x.dtype, jnp.floating))


def _expand(x, shape):
    # -1 keeps x's size in that dim (torch's and funsor's expand); broadcast_to needs sizes.
    return jnp.broadcast_to(x, expand_shape(jnp.shape(x), shape))



# ---------------------------------------------------------------------------------------------
# Special functions of distribution log densities (issue #17); integer arguments are real.
def _real(fn):
    def kernel(x, *rest):
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating) and not any(
                jnp.issubdtype(jnp.asarray(r).dtype, jnp.floating) for r in rest):
            x = x.astype(_float_dtype())
        return fn(x, *rest)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _betaln(x, y):
    # jax's, op by op when eager as NumPyro's Beta(Binomial) call it: float32 rounds as theirs.
    # Its series is cut for float32 (1e-6 off in float64 past max(x, y) = 8): float64 takes
    # the lgamma sum below 1,000 (< 1e-12 lost), the series beyond; jitted whole (_diagonal).
    dtype = jnp.result_type(x, y)
    dtype = dtype if jnp.issubdtype(dtype, jnp.floating) else _float_dtype()
    x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
    return jax.scipy.special.betaln(x, y) if dtype != jnp.float64 else _betaln64(x, y)


@jax.jit
def _betaln64(x, y):
    lg, series = jax.scipy.special.gammaln, jax.scipy.special.betaln(x, y)
    return jnp.where(jnp.maximum(x, y) < 1e3, lg(x) + lg(y) - lg(x + y), series)


_SPECIAL = {ops.lgamma: _real(jax.scipy.special.gammaln),
            ops.digamma: _real(jax.scipy.special.digamma), ops.i0e: _real(jax.scipy.special.i0e),
            ops.xlogy: _real(jax.scipy.special.xlogy),
            ops.xlog1py: _real(jax.scipy.special.xlog1py), ops.cos: _real(jnp.cos),
            ops.betaln: _betaln,
            ops.acos: _real(jnp.arccos)}

KERNELS = {
    ops.neg: jnp.negative, ops.abs: jnp.abs, ops.exp: jnp.exp, ops.log: jnp.log,
    ops.log1p: jnp.log1p, ops.expm1: jnp.expm1, ops.sqrt: jnp.sqrt, ops.sigmoid: jax.nn.sigmoid,
    ops.tanh: jnp.tanh, ops.atanh: jnp.arctanh, ops.reciprocal: jnp.reciprocal,
    ops.invert: jnp.invert,
    ops.isfinite: jnp.isfinite, ops.clamp: _clamp, ops.astype: _astype,
    ops.add: jnp.add, ops.sub: jnp.subtract, ops.mul: jnp.multiply, ops.truediv: jnp.true_divide,
    ops.floordiv: jnp.floor_divide, ops.mod: jnp.mod, ops.pow: _power,
    ops.lshift: jnp.left_shift, ops.rshift: jnp.right_shift,
    ops.min: jnp.minimum, ops.max: jnp.maximum, ops.logaddexp: jnp.logaddexp,
    ops.safesub: _safesub, ops.safediv: _safediv,
    ops.and_: jnp.bitwise_and, ops.or_: jnp.bitwise_or, ops.xor: jnp.bitwise_xor,
    ops.lt: jnp.less, ops.le: jnp.less_equal, ops.gt: jnp.greater, ops.ge: jnp.greater_equal,
    ops.eq: jnp.equal, ops.ne: jnp.not_equal,
    ops.matmul: _matmul, ops.cholesky: jnp.linalg.cholesky,
    ops.triangular_solve: _triangular_solve, ops.cholesky_solve: _cholesky_solve,
    ops.cholesky_inverse: _cholesky_inverse, ops.det: jnp.linalg.det, ops.logdet: _logdet,
    ops.inv: jnp.linalg.inv, ops.transpose: _transpose, ops.qr_r: _qr_r,
    ops.diagonal: _diagonal, ops.diag_embed: _diag_embed, ops.triu: _triu, ops.tril: _tril,
    ops.flip: _flip, ops.triangular_inv: _triangular_inv,
    ops.sum: _reduction(jnp.sum), ops.prod: _reduction(jnp.prod),
    ops.logsumexp: _logsumexp, ops.amax: _extremum(jnp.max, -jnp.inf),
    ops.amin: _extremum(jnp.min, jnp.inf), ops.argmax: _arg_reduction(jnp.argmax),
    ops.argmin: _arg_reduction(jnp.argmin), ops.all: _reduction(jnp.all),
    ops.any: _reduction(jnp.any), ops.mean: _reduction(jnp.mean), ops.std: _moment(jnp.std),
    ops.var: _moment(jnp.var),
    ops.einsum: _einsum, ops.cat: _cat, ops.stack: _stack,
    ops.permute: jnp.transpose, ops.reshape: _reshape, ops.expand: _expand,
    ops.getitem: _getitem, ops.where: jnp.where, ops.full_like: jnp.full_like,
    ops.new_zeros: _new_zeros, ops.new_full: _new_full, ops.new_arange: _new_arange,
    ops.new_eye: _new_eye, ops.new_array: _new_array, ops.scatter_add: _scatter_add,
    ops.scatter_set: _scatter_set,
    ops.to_numpy: _to_numpy, ops.is_floating: _is_floating,
    ops.is_concrete: lambda x: not isinstance(x, jax.core.Tracer),
    ops.detach: jax.lax.stop_gradient,
}
KERNELS.update(_SPECIAL)  # issue #17


# A bool array holds Bint[2] values, the integers 0 and 1 (comparisons make them): arithmetic on
# it is integer arithmetic, so True + True is 2 (in Bint[3]), as for Python bools. The array
# libraries would compute a logical or (add), refuse (sub, neg), or answer in int8 / float16.
# Logical ops (and_, or_, xor, invert) and comparisons keep bools.


for _op in ops.ARITHMETIC_OPS:
    KERNELS[_op] = cast_bool_args(KERNELS[_op], np.dtype(bool),
                                  lambda a: a.astype(_int_dtype()))
for _op in ops.LINALG_OPS:  # XLA's CPU factorizations refuse 16-bit floats: run in float32
    KERNELS[_op] = in_float32(KERNELS[_op], (np.dtype(jnp.float16), np.dtype(
        jnp.bfloat16)), as_float32, lambda a, dtype: a.astype(dtype))
del _op
KERNELS[ops.sample] = KERNELS[ops.logaddexp]  # a sampling reduction computes as logaddexp


def asarray(data, dtype=None):
    """Convert ``data`` to a jax array: "real" gives the default float dtype, "int" int.

    The defaults are 64-bit with x64 enabled, else 32-bit.

    Example:
        >>> asarray([1, 2], "real").dtype == jnp.zeros(()).dtype
        True
    """
    if on_host(data) and (dtype is not None or not isinstance(data, (int, float, bool))):
        # numpy arrays and lists through device_put (no compilation); a bare Python number
        # keeps jnp.asarray, whose weak type lets it take the dtype of what it meets
        if dtype == "real":
            return from_host(np.asarray(data, dtype=_float_dtype()))
        if dtype == "int":
            return from_host(np.asarray(data, dtype=_int_dtype()))
        return from_host(data)
    if dtype == "real":
        return jnp.asarray(data, dtype=_float_dtype())
    if dtype == "int":
        return jnp.asarray(data, dtype=_int_dtype())
    return jnp.asarray(data)


def new_rng_key(seed: int = 0):
    """A key ``jax.random.PRNGKey(seed)``.

    Example:
        >>> bool((randn((2,), new_rng_key(1)) == randn((2,), new_rng_key(1))).all())
        True
    """
    return jax.random.PRNGKey(seed)


def split_rng_key(key) -> tuple:
    """``(key, subkey)``: a fresh key to keep and one to use for a single draw.

    Example:
        >>> key, sub = split_rng_key(new_rng_key(0))
        >>> bool((randn((2,), sub) != randn((2,), key)).any())
        True
    """
    key, sub = jax.random.split(key)
    return key, sub


# Key for calls that pass none; split on each call. Made on first use, so that importing this
# module does not start a jax device.
_GLOBAL_KEY: list = [None]


def _key(rng_key):
    if rng_key is not None:
        return rng_key
    if _GLOBAL_KEY[0] is None:
        _GLOBAL_KEY[0] = jax.random.PRNGKey(0)
    _GLOBAL_KEY[0], key = jax.random.split(_GLOBAL_KEY[0])
    return key


def randn(shape, rng_key=None):
    """Standard normal samples of ``shape`` in the default float dtype."""
    return jax.random.normal(_key(rng_key), tuple(shape), dtype=_float_dtype())


def rand(shape, rng_key=None):
    """Uniform samples on [0, 1) of ``shape`` in the default float dtype."""
    return jax.random.uniform(_key(rng_key), tuple(shape), dtype=_float_dtype())


def randint(low, high, shape, rng_key=None):
    """Uniform integer samples from [low, high) of ``shape`` in the default int dtype."""
    return jax.random.randint(_key(rng_key), tuple(shape), low, high, dtype=_int_dtype())


# Samplers of the distribution families (issue #17): arrays of parameters in, draws of their
# broadcast shape out; jit-traceable, keys may be traced. Gamma draws are differentiable in
# alpha (jax's implicit reparameterization).
def standard_gamma(alpha, rng_key=None):
    """Gamma(alpha, 1) draws of alpha's shape, differentiable in alpha.

    Example:
        >>> float(jax.grad(lambda a: standard_gamma(a, new_rng_key(0)))(2.0)) > 0
        True
    """
    alpha = jnp.asarray(alpha)
    return jax.random.gamma(_key(rng_key), alpha, dtype=alpha.dtype)


def poisson(rate, rng_key=None):
    """Poisson(rate) draws of rate's shape, as floats (no gradient).

    Example:
        >>> poisson(jnp.zeros(2), new_rng_key(0)).tolist()
        [0.0, 0.0]
    """
    rate = jax.lax.stop_gradient(jnp.asarray(rate))
    return jax.random.poisson(_key(rng_key), rate).astype(rate.dtype)


def binomial(total_count, probs, rng_key=None):
    """Binomial(total_count, probs) draws of the broadcast shape, as floats (no gradient).

    Example:
        >>> binomial(jnp.array([3.0, 5.0]), jnp.array(1.0), new_rng_key(0)).tolist()
        [3.0, 5.0]
    """
    probs = jax.lax.stop_gradient(jnp.asarray(probs))
    n = jax.lax.stop_gradient(jnp.asarray(total_count, dtype=probs.dtype))
    shape = jnp.broadcast_shapes(n.shape, probs.shape)
    return jax.random.binomial(_key(rng_key), n, probs, shape=shape, dtype=probs.dtype)


def split_key(rng_key, n: int) -> list:
    """``n`` independent keys (a fresh split of the global key when ``rng_key`` is None).

    Example:
        >>> a, b = split_key(new_rng_key(0), 2)
        >>> bool((a != b).any())
        True
    """
    return list(jax.random.split(_key(rng_key), n))


# -- random keys and array facts (core asks, never names) --
from backends.jax_facts import *  # noqa: E402, F403


def install() -> None:
    """Register jax arrays and tracers as array types, and every kernel of ``KERNELS``."""
    for typ in ARRAY_TYPES:
        register_array_type(typ)
        for op, fn in KERNELS.items():
            op.register(typ, fn)


install()

# Every term class is a pytree (its own module: it is also loaded when jax is imported).
import backends.jax_pytrees  # noqa: E402, F401

# Compiled control flow lives in its own module; algorithms reach it as backend attributes.
from backends.jax_control import (  # noqa: E402, F401
    CALL_SECONDS,
    COMPILES,
    DIFFERENTIABLE,
    LOOP_FNS,
    checkpoint,
    cond,
    differentiate_as,
    guarded,
    is_traced,
    jit,
    platform,
    scan,
    value_and_vjp,
    value_known,
)

# SPMD over a device mesh (``funsor_core.algorithms.sharding`` asks for these by name).
from backends.jax_sharding import (  # noqa: E402, F401
    SHARDS,
    compiled_collectives,
    hlo_collectives,
    mesh_sizes,
    shard_all_gather,
    shard_all_reduce,
    shard_per_key,
)
