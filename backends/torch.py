"""PyTorch kernels for every op in ``funsor_core.ops.REQUIRED_OPS``, plus array creation and RNG.

Kernels keep numpy's calling conventions (``axis``/``keepdims``, ``axis=None`` for all axes,
``axis=()`` for none), so rules never ask which backend they run on. Every differentiable
kernel is differentiable in torch: no numpy round trips and no in-place writes to inputs.
Fresh arrays use torch's default dtype unless a prototype array gives one.

Example:
    >>> from funsor_core import ops
    >>> x = torch.zeros(2, 3, dtype=torch.float64)
    >>> y = ops.logsumexp(x, axis=(0, -1))  # log(6)
    >>> y.dtype, round(y.item(), 4)
    (torch.float64, 1.7918)
"""

from __future__ import annotations

import math
import operator

import numpy as np
import torch

from backends.torch_facts import as_float32, promoted_einsum, torch_scatter_add, torch_scatter_set
from backends.torch_special import SPECIAL as _SPECIAL
from backends.torch_special import binary as _binary
from backends.torch_special import logaddexp as _logaddexp
from funsor_core import ops
from funsor_core.ops.op import cast_bool_args, in_float32, register_array_type

NAME = "torch"
ARRAY_TYPES = (torch.Tensor,)
# No forced float dtype: fresh float arrays follow torch.get_default_dtype() at call time, and
# torch reads `dtype=None` as exactly that.
FLOAT_DTYPE = None


def _float_dtype() -> torch.dtype:
    return torch.get_default_dtype()


# ---------------------------------------------------------------------------------------------
# Binary ops: torch functions such as torch.logaddexp need tensors on both sides, but ops
# allow a Python scalar on either side. The scalar becomes a 0-d tensor of the promoted dtype,
# so precision and type promotion are those of ``tensor <op> scalar``.
def _float_result_type(x, y) -> torch.dtype:
    dtype = torch.result_type(x, y)
    return dtype if dtype.is_floating_point else _float_dtype()


def _safesub(x, y):
    # x - y with y = -inf (a log-space zero) clamped to minus the largest float, as funsor's
    # x + min(-y, max); integer y is subtracted in floats.
    dtype = _float_result_type(x, y)
    finfo = torch.finfo(dtype)
    if isinstance(y, torch.Tensor):
        return x - torch.clamp(y.to(dtype), min=-finfo.max)
    return x - max(y, -finfo.max)


def _safediv(x, y):
    # x / y, where y = 0 gives x times the largest float (so 0 / 0 = 0), as funsor's
    # x * min(1 / y, max); negative y divide as usual.
    dtype = _float_result_type(x, y)
    finfo = torch.finfo(dtype)
    if isinstance(y, torch.Tensor):
        y = y.to(dtype)
        zero = y == 0
        big = torch.full_like(y, finfo.max)  # a tensor: x * max may overflow to inf
        return torch.where(zero, x * big, x / torch.where(zero, torch.ones_like(y), y))
    return x * finfo.max if y == 0 else x / y


# ---------------------------------------------------------------------------------------------
# Reductions: numpy's `axis`/`keepdims`, where torch says `dim`/`keepdim`. torch reads an
# empty `dim` as "all dims", so `axis=()` must return before torch sees it.
def _axes(x, axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.dim()))
    return (axis,) if isinstance(axis, int) else tuple(axis)


def _reduction(fn):
    def kernel(x, axis=None, keepdims=False):
        if type(axis) is int:  # (torch parses one int, given by position, fastest: ~0.3 us
            return fn(x, axis, keepdims)  # less than dim=, keepdim= on a small tensor)
        if axis == ():
            return x
        if x.dim() == 0 and axis is None:
            # A 0-d tensor is its own reduction; torch.logsumexp has no all-dims form, so
            # reduce a one-element view instead of calling fn without a dim.
            return fn(x.reshape(1), dim=0, keepdim=False)
        return fn(x, dim=_axes(x, axis), keepdim=keepdims)

    kernel.__name__ = f"_{fn.__name__}"
    # ``kernel(x, k)`` of an int axis k is ``fn(x, k)``: a caller that resolves its steps once
    # per array type (``algorithms.contract.fused``) may call ``fn`` itself, one frame fewer.
    kernel.int_axis = fn
    return kernel


def _extremum(fn, unit):
    # The max (min) of no values is the unit -inf (+inf), as sum gives 0 and prod 1; torch
    # raises on an empty reduction dim instead. Integer and bool tensors take the smallest
    # (largest) value of their own dtype.
    reduce = _reduction(fn)

    def kernel(x, axis=None, keepdims=False):
        if axis == () or x.numel():
            return reduce(x, axis, keepdims)
        shape = _reduction(torch.sum)(x, axis, keepdims).shape
        if x.dtype is torch.bool:
            value = unit > 0
        elif x.is_floating_point():
            value = unit
        else:
            info = torch.iinfo(x.dtype)
            value = info.min if unit < 0 else info.max
        return torch.full(shape, value, dtype=x.dtype, device=x.device)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _prod(x, axis=None, keepdims=False):
    # torch.prod reduces one dim at a time. Reduced dims that are adjacent are merged into one
    # dim first, so that the product over them is one torch.prod in memory order: the same
    # rounding as torch.prod(x) over everything and as a product of x.reshape(..., -1), the
    # way funsor's reference computes a Tensor's .prod(). Other dims go highest first, so
    # the remaining (nonnegative) axis numbers stay valid.
    if axis == ():
        return x
    if x.dim() == 0:
        return torch.prod(x)
    shape = tuple(x.shape)
    axes = sorted({a % x.dim() for a in _axes(x, axis)})
    if axes == list(range(axes[0], axes[-1] + 1)):
        lo, hi = axes[0], axes[-1] + 1
        merged = x.reshape(shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])
        out = torch.prod(merged, dim=lo)
        if keepdims:
            out = out.reshape(shape[:lo] + (1,) * (hi - lo) + shape[hi:])
        return out
    for a in reversed(axes):
        x = torch.prod(x, dim=a, keepdim=keepdims)
    return x


def _mean(x, axis=None, keepdims=False):
    # torch.mean refuses integer and bool tensors; numpy averages them as floats.
    if axis == ():
        return x
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_float_dtype())
    if axis is None and x.dim() == 0:
        return x
    return torch.mean(x, dim=_axes(x, axis), keepdim=keepdims)


def _moment(fn):
    # std/var over axes with numpy's meaning: integers average as floats, ddof is the
    # correction, and axis=() (no axes) gives 0 where torch would read "all dims".
    def kernel(x, axis=None, ddof=0, keepdims=False):
        if not (x.is_floating_point() or x.is_complex()):
            x = x.to(_float_dtype())
        if axis == () or axis is None and x.dim() == 0:
            return torch.zeros_like(x)
        return fn(x, dim=_axes(x, axis), correction=ddof, keepdim=keepdims)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _arg_reduction(fn):
    def kernel(x, axis=None, keepdims=False):
        return fn(x, dim=axis, keepdim=keepdims)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


# ---------------------------------------------------------------------------------------------
# Elementwise adapters.
def _clamp(x, min=None, max=None):  # noqa: A002
    if min is None and max is None:  # torch.clamp needs one bound
        return x
    return torch.clamp(x, min=min, max=max)


def _pow(x, y):
    # A power is Real (ops.infer_domain), so integers are raised in floats: a negative integer
    # exponent gives 1 / x^k rather than torch's "Integers to negative integer powers" error.
    if _is_integer(x) and _is_integer(y):
        x = x.to(_float_dtype()) if isinstance(x, torch.Tensor) else float(x)
    return x ** y


def _is_integer(x) -> bool:
    if isinstance(x, torch.Tensor):
        return not (x.is_floating_point() or x.is_complex())
    return type(x) in (int, bool)


def _astype(x, dtype):
    # as numpy's: the kinds by "real"/"float", "int", "bool"; any other name or dtype exactly
    if dtype == "real" or dtype == "float":
        return x if x.is_floating_point() else x.to(_float_dtype())
    if dtype == "bool":
        return x.to(torch.bool)
    if dtype == "int":
        return x.to(torch.int64)
    if not isinstance(dtype, torch.dtype):
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"ops.astype: torch has no dtype {name!r}; use 'real', 'int', "
                            "'bool' or a dtype name such as 'float32' or 'uint8'")
    return x.to(dtype)


# ---------------------------------------------------------------------------------------------
# Linear algebra.
def _triangular_solve(x, y, upper=False, transpose=False):
    # Solves y @ z = x (or y.T @ z = x); batch dims broadcast.
    if transpose:
        y, upper = y.mT, not upper
    return torch.linalg.solve_triangular(y, x, upper=upper, left=True)


def _cholesky_solve(x, y):
    return torch.cholesky_solve(x, y, upper=False)


def _logdet(x):
    return torch.linalg.slogdet(x).logabsdet


def _qr_r(x):
    # mode="r" has no backward; the reduced factorization does.
    return torch.linalg.qr(x, mode="reduced").R


def _transpose(x, dim0=-2, dim1=-1):
    return torch.transpose(x, dim0, dim1)


def _diagonal(x, dim1=-2, dim2=-1):
    return torch.diagonal(x, dim1=dim1, dim2=dim2)


def _flip(x, axis=None):
    # numpy's axis=None flips every dim; torch.flip needs the dims listed.
    if axis is None:
        axis = tuple(range(x.dim()))
    return torch.flip(x, (axis,) if isinstance(axis, int) else tuple(axis))


def _triangular_inv(x, upper=False):
    eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device).expand(x.shape)
    return torch.linalg.solve_triangular(x, eye, upper=upper)


def _triu(x, k=0):
    return torch.triu(x, k)


def _tril(x, k=0):
    return torch.tril(x, k)


# ---------------------------------------------------------------------------------------------
# Structural ops and array creation.
def _matmul(a, b):
    # torch.matmul runs a batch of products of one batch size as bmm behind an expand and
    # two reshapes of each side: three more autograd nodes a side, and a third of the time of
    # a small product, forward and backward.
    try:
        if a.dim() == 3 and getattr(b, "dim", None) is not None and b.dim() == 3 and (
                a.shape[0] == b.shape[0]):
            return torch.bmm(a, b)
        return torch.matmul(a, b)
    except RuntimeError:
        if a.dtype == b.dtype:
            raise
    # numpy and jax promote float32 @ float64 to float64, torch raises (issue #27 item 18);
    # only a failed product pays for the check.
    dtype = torch.promote_types(a.dtype, b.dtype)
    return _matmul(a.to(dtype), b.to(dtype))


def _cat(parts, axis=0):
    return torch.cat(parts, dim=axis)


def _stack(parts, axis=0):
    return torch.stack(parts, dim=axis)


def _permute(x, axes=None):
    if axes is None:
        axes = tuple(reversed(range(x.dim())))
    return torch.permute(x, tuple(axes))


def _reshape(x, shape, ndim=None):
    # ndim=k reshapes only the rightmost k dims (a funsor's output), keeping batch dims.
    if ndim is not None:
        shape = tuple(x.shape[: x.dim() - ndim]) + tuple(shape)
    shape = tuple(shape)
    if x.shape == shape:  # a view would cost a dispatch and an autograd node, and change nothing
        return x
    return torch.reshape(x, shape)


def _expand(x, shape):
    return torch.broadcast_to(x, tuple(shape))


def _where(mask, x, y):
    return torch.where(mask, x, y)


def _full_like(x, fill_value):
    return torch.full_like(x, fill_value)


def _new_zeros(proto, shape):
    return proto.new_zeros(tuple(shape))


def _new_full(proto, shape, value):
    return proto.new_full(tuple(shape), value)


def _new_arange(proto, start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    if step and (stop - start) * step <= 0:
        # numpy's empty range; torch.arange raises when the bounds run against the step.
        return torch.zeros((0,), dtype=torch.int64, device=proto.device)
    return torch.arange(start, stop, step, dtype=torch.int64, device=proto.device)


def _new_eye(proto, n):
    if isinstance(n, tuple):  # funsor's new_eye(x, shape): identities of shape + (shape[-1],)
        return torch.eye(n[-1], dtype=proto.dtype, device=proto.device).expand(n + n[-1:])
    return torch.eye(n, dtype=proto.dtype, device=proto.device)


def _new_array(proto, data):
    # Arrays keep their dtype; Python floats take the prototype's float dtype if it has one.
    result = torch.as_tensor(data, device=proto.device)
    if (result.is_floating_point() and proto.is_floating_point()
            and not isinstance(data, (torch.Tensor, np.ndarray))):
        # Read the Python floats again in the prototype's dtype: converting ``result`` (made
        # in torch's default dtype, float32) would keep only float32's digits of a float64.
        result = torch.as_tensor(data, dtype=proto.dtype, device=proto.device)
    return result


def _to_numpy(x):
    # numpy has no bfloat16 (without ml_dtypes): its values are float32's, exactly.
    x = x.detach().cpu()
    return (x.float() if x.dtype == torch.bfloat16 else x).numpy()


def _is_floating(x):
    return x.is_floating_point()


def _is_concrete(x):  # torch.jit.trace (Pyro's JitTrace*_ELBO) traces values, as jax.jit
    return torch._C._get_tracing_state() is None


def _detach(x):
    return x.detach()


def _getitem(x, index):
    return x[index]  # as numpy, except that torch refuses slices with a negative step



KERNELS = {
    ops.neg: torch.neg, ops.abs: torch.abs, ops.exp: torch.exp, ops.log: torch.log,
    ops.log1p: torch.log1p, ops.expm1: torch.expm1, ops.sqrt: torch.sqrt,
    ops.sigmoid: torch.sigmoid, ops.tanh: torch.tanh, ops.atanh: torch.atanh,
    ops.reciprocal: torch.reciprocal,
    ops.invert: torch.bitwise_not, ops.isfinite: torch.isfinite, ops.clamp: _clamp,
    ops.astype: _astype,
    # Python operators take a scalar on either side and dispatch to torch.floor_divide,
    # torch.remainder (sign of the divisor, as np.mod), torch.pow, torch.bitwise_*, ...
    ops.add: operator.add, ops.sub: operator.sub, ops.mul: operator.mul,
    ops.truediv: operator.truediv, ops.floordiv: operator.floordiv, ops.mod: operator.mod,
    ops.pow: _pow, ops.lshift: operator.lshift, ops.rshift: operator.rshift,
    ops.min: _binary(torch.minimum), ops.max: _binary(torch.maximum),
    ops.logaddexp: _logaddexp, ops.safesub: _safesub, ops.safediv: _safediv,
    ops.and_: operator.and_, ops.or_: operator.or_, ops.xor: operator.xor,
    ops.lt: operator.lt, ops.le: operator.le, ops.gt: operator.gt, ops.ge: operator.ge,
    ops.eq: operator.eq, ops.ne: operator.ne,
    ops.matmul: _matmul, ops.cholesky: torch.linalg.cholesky,
    ops.triangular_solve: _triangular_solve, ops.cholesky_solve: _cholesky_solve,
    ops.cholesky_inverse: torch.cholesky_inverse, ops.det: torch.linalg.det,
    ops.logdet: _logdet, ops.inv: torch.linalg.inv, ops.transpose: _transpose,
    ops.qr_r: _qr_r, ops.diagonal: _diagonal, ops.diag_embed: torch.diag_embed,
    ops.triu: _triu, ops.tril: _tril, ops.flip: _flip, ops.triangular_inv: _triangular_inv,
    ops.sum: _reduction(torch.sum), ops.prod: _prod, ops.logsumexp: _reduction(torch.logsumexp),
    ops.amax: _extremum(torch.amax, -float("inf")), ops.amin: _extremum(torch.amin, float("inf")),
    ops.argmax: _arg_reduction(torch.argmax), ops.argmin: _arg_reduction(torch.argmin),
    ops.all: _reduction(torch.all), ops.any: _reduction(torch.any), ops.mean: _mean,
    ops.std: _moment(torch.std), ops.var: _moment(torch.var),
    ops.einsum: promoted_einsum, ops.cat: _cat, ops.stack: _stack,
    ops.permute: _permute, ops.reshape: _reshape, ops.expand: _expand,
    ops.getitem: _getitem, ops.where: _where, ops.full_like: _full_like,
    ops.new_zeros: _new_zeros, ops.new_full: _new_full, ops.new_arange: _new_arange,
    ops.new_eye: _new_eye, ops.new_array: _new_array, ops.scatter_add: torch_scatter_add,
    ops.scatter_set: torch_scatter_set,
    ops.to_numpy: _to_numpy, ops.is_floating: _is_floating, ops.is_concrete: _is_concrete,
    ops.detach: _detach,
}
KERNELS.update(_SPECIAL)  # issue #17


# A bool array holds Bint[2] values, the integers 0 and 1 (comparisons make them): arithmetic on
# it is integer arithmetic, so True + True is 2 (in Bint[3]), as for Python bools; torch would
# compute a logical or (add) or refuse (sub, neg). Real-valued ops see the default float dtype
# (torch.logaddexp has no integer kernel). Logical ops and comparisons keep bools.
_INTEGER_ARITHMETIC = (ops.neg, ops.add, ops.sub, ops.mul, ops.floordiv, ops.mod, ops.pow)
_REAL_ARITHMETIC = (
    ops.exp, ops.log, ops.log1p, ops.expm1, ops.sqrt, ops.sigmoid, ops.tanh, ops.atanh,
    ops.reciprocal, ops.truediv, ops.logaddexp, ops.safesub, ops.safediv,
) + ops.SPECIAL_OPS


for _op in _INTEGER_ARITHMETIC:
    KERNELS[_op] = cast_bool_args(KERNELS[_op], torch.bool, lambda a: a.long())
for _op in _REAL_ARITHMETIC:
    KERNELS[_op] = cast_bool_args(KERNELS[_op], torch.bool, lambda a: a.to(_float_dtype()))
for _op in ops.LINALG_OPS:  # no Half or BFloat16 kernels: computed in float32
    KERNELS[_op] = in_float32(KERNELS[_op], (torch.float16, torch.bfloat16),
                              as_float32, lambda a, dtype: a.to(dtype))
del _op
KERNELS[ops.sample] = KERNELS[ops.logaddexp]  # a sampling reduction computes as logaddexp


def asarray(data, dtype=None):
    """Convert ``data`` to a tensor: "real" gives torch's default float dtype, "int" int64.

    Example:
        >>> asarray([1, 2], "real").dtype == torch.get_default_dtype()
        True
    """
    if dtype == "real":
        return torch.as_tensor(data, dtype=_float_dtype())
    if dtype == "int":
        return torch.as_tensor(data, dtype=torch.int64)
    return torch.as_tensor(data)


def new_rng_key(seed: int = 0) -> torch.Generator:
    """A seeded ``torch.Generator``, used where other backends take a key.

    Example:
        >>> bool((randn((2,), new_rng_key(1)) == randn((2,), new_rng_key(1))).all())
        True
    """
    return torch.Generator().manual_seed(seed)


def split_rng_key(key) -> tuple:
    """``(key, subkey)`` as jax splits keys: a generator advances itself, so both are it."""
    return key, key


def randn(shape, rng_key=None):
    """Standard normal samples of ``shape`` in the default float dtype."""
    return torch.randn(tuple(shape), generator=rng_key, dtype=_float_dtype())


def rand(shape, rng_key=None):
    """Uniform samples on [0, 1) of ``shape`` in the default float dtype."""
    return torch.rand(tuple(shape), generator=rng_key, dtype=_float_dtype())


def randint(low, high, shape, rng_key=None):
    """Uniform int64 samples from [low, high) of ``shape``."""
    return torch.randint(low, high, tuple(shape), generator=rng_key, dtype=torch.int64)


# Samplers of the distribution families (issue #17): tensors of parameters in, draws of their
# broadcast shape out. ``rng_key`` is a torch.Generator or None (the global generator). Gamma
# draws are reparameterized (torch's implicit gradient with respect to alpha).
def standard_gamma(alpha, rng_key=None):
    """Gamma(alpha, 1) draws of alpha's shape, differentiable in alpha.

    Example:
        >>> alpha = torch.ones(3, requires_grad=True)
        >>> standard_gamma(alpha, new_rng_key(0)).requires_grad
        True
    """
    return torch._standard_gamma(alpha, generator=rng_key)


def poisson(rate, rng_key=None):
    """Poisson(rate) draws of rate's shape, as floats (no gradient).

    Example:
        >>> poisson(torch.zeros(2), new_rng_key(0)).tolist()
        [0.0, 0.0]
    """
    return torch.poisson(rate.detach(), generator=rng_key)


def binomial(total_count, probs, rng_key=None):
    """Binomial(total_count, probs) draws of the broadcast shape, as floats (no gradient).

    Example:
        >>> binomial(torch.tensor([3.0, 5.0]), torch.tensor(1.0), new_rng_key(0)).tolist()
        [3.0, 5.0]
    """
    total_count, probs = torch.broadcast_tensors(torch.as_tensor(total_count, dtype=probs.dtype),
                                                 probs.detach())
    return torch.binomial(total_count.detach(), probs, generator=rng_key)


def split_key(rng_key, n: int) -> list:
    """``n`` keys for ``n`` independent draws: a Generator advances its own state.

    Example:
        >>> len(split_key(None, 3))
        3
    """
    return [rng_key] * n


# -- random keys and array facts (core asks, never names) --
from backends.torch_facts import *  # noqa: E402, F403


def install() -> None:
    """Register ``torch.Tensor`` as an array type and every kernel of ``KERNELS`` for it."""
    for typ in ARRAY_TYPES:
        register_array_type(typ)
        for op, fn in KERNELS.items():
            op.register(typ, fn)


install()


# -- control flow and platform facts --
from backends.eager_control import (  # noqa: E402, F401
    checkpoint,
    cond,
    is_traced,
    jit,
)
from backends.torch_control import (  # noqa: E402, F401
    CALL_SECONDS,
    COMPILES,
    DIFFERENTIABLE,
    LOOP_FNS,
    differentiate_as,
    platform,
    scan,
    value_and_vjp,
)
