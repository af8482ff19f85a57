"""Helpers for the kernels backends register: bool arguments cast before arithmetic, and the
target shape of ``expand`` with ``-1`` entries (``funsor_core.ops.op`` re-exports both).

Example:
    >>> expand_shape((2,), (3, -1))
    (3, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["cast_bool_args", "expand_shape", "in_float32"]

_NO_ARG = object()  # cast_bool_args' kernels: no second argument was given


def cast_bool_args(fn: Callable, bool_dtype: Any, cast: Callable) -> Callable:
    """Wrap an array kernel so that arguments of dtype ``bool_dtype`` are ``cast(a)`` first.

    Backends use it for arithmetic: a bool array holds Bint[2] values 0 and 1, and the array
    libraries would compute a logical or (add), refuse (sub, neg), or answer in int8. The
    common case (no bool argument among one or two) pays two identity checks.

    Example:
        >>> import numpy as np
        >>> add = cast_bool_args(np.add, np.dtype(bool), lambda a: a.astype(int))
        >>> add(np.array([True]), np.array([True]))
        array([2])
    """

    def kernel(x, y=_NO_ARG, *rest):
        if getattr(x, "dtype", None) is not bool_dtype and not rest:
            if y is _NO_ARG:
                return fn(x)
            if getattr(y, "dtype", None) is not bool_dtype:
                return fn(x, y)
        args = (x,) if y is _NO_ARG else (x, y, *rest)
        return fn(*(cast(a) if getattr(a, "dtype", None) is bool_dtype else a for a in args))

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    kernel.unless_bool = (fn, bool_dtype)  # atoms/tensor_fast_ops.py calls fn on other arrays
    return kernel


def in_float32(fn: Callable, low: tuple, widen: Callable, narrow: Callable) -> Callable:
    """Wrap a linear-algebra kernel so that arrays of a dtype in ``low`` (one or two dtypes,
    float16 and bfloat16, which numpy's, torch's and jax's factorizations refuse) are
    ``widen(a)``-ed to float32, and the result ``narrow(out, dtype)``-ed back when the array
    arguments (the first two; flags follow) have that one dtype (as the array libraries
    promote: a float16 and a float32 argument give float32). The values are float32's
    rounded once to the low dtype, eagerly and under ``jax.jit`` alike (dtypes are static).
    The common case costs two to four identity tests (dtypes are singletons).

    Example:
        >>> import numpy as np
        >>> inv = in_float32(np.linalg.inv, (np.dtype(np.float16),),
        ...                  lambda a: a.astype(np.float32), lambda a, d: a.astype(d))
        >>> inv(np.eye(2, dtype=np.float16) * 4)
        array([[0.25, 0.  ],
               [0.  , 0.25]], dtype=float16)
    """

    lo, hi = (*low, *low)[:2]

    def kernel(x, *rest, **kwargs):
        # (the linear-algebra ops take at most two arrays, then flags)
        dtype = getattr(x, "dtype", None)
        if dtype is not lo and dtype is not hi and (not rest or (
                dtype := getattr(rest[0], "dtype", None)) is not lo and dtype is not hi):
            return fn(x, *rest, **kwargs)
        dtypes = {a.dtype for a in (x, *rest[:1]) if hasattr(a, "dtype")}
        out = fn(*(widen(a) if getattr(a, "dtype", None) in low else a for a in (x, *rest[:1])),
                 *rest[1:], **kwargs)
        return narrow(out, dtypes.pop()) if len(dtypes) == 1 else out

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def expand_shape(x_shape: tuple, shape) -> tuple:
    """The target shape of ``expand(x, shape)``, where a ``-1`` keeps the size that ``x``
    already has in that dim (dims matched from the right, as in broadcasting), as torch's
    ``expand`` and funsor's ``ops.expand`` read it; numpy and jax need it spelled out.

    Example:
        >>> expand_shape((3, 2), (4, -1, 2))
        (4, 3, 2)
    """
    shape = tuple(shape)
    if -1 not in shape:
        return shape
    offset = len(shape) - len(x_shape)
    out = []
    for i, n in enumerate(shape):
        if n == -1:
            if i < offset:
                raise ValueError(f"expand to {shape}: -1 in a new leading dim {i} has no size "
                                 f"to keep (the array's shape is {tuple(x_shape)})")
            n = x_shape[i - offset]
        out.append(n)
    return tuple(out)
