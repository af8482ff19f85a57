"""Integer arrays wide enough for their Bint domain (h60).

``Bint[256] + Bint[256]`` is ``Bint[511]``; a backend adds two uint8 arrays as uint8 and wraps
around (200 + 200 is 144). The result's domain bounds its values, so the check is the array
dtype's largest value against the domain's largest: structural (dtypes and sizes only), hence
the same for traced jax arrays. Only integer results narrower than needed are recomputed, on
the backend's default integer type.

Example:
    >>> u = np.array([200, 100], np.uint8)
    >>> widen_int_result(ops.add, u, u, u + u, 511)
    array([400, 200])
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops

__all__ = ["widen_int_result"]

# dtype -> its largest value, or None for a float or bool dtype (no wrap-around to fix: bool
# results come from comparisons and logical ops, whose Bint[2] always fits).
_INT_MAX: dict = {}


def _int_max(dtype):
    try:
        return _INT_MAX[dtype]
    except KeyError:
        pass
    top = None
    if isinstance(dtype, np.dtype) or isinstance(dtype, type):
        dt = np.dtype(dtype)
        if dt.kind in "iu":
            top = int(np.iinfo(dt).max)
    elif not (dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool"):
        # a torch.dtype, read without importing torch: n bytes, one bit for a sign
        top = (1 << (8 * dtype.itemsize - dtype.is_signed)) - 1
    _INT_MAX[dtype] = top
    return top


def widen_int_result(op, lhs, rhs, data, size: int):
    """``data = op(lhs, rhs)`` of a ``Bint[size]`` output, recomputed on the backend's default
    integer type when ``data``'s integer dtype cannot hold ``size - 1``; else ``data`` itself.

    Example:
        >>> i8 = np.array([100], np.int8)
        >>> widen_int_result(ops.mul, i8, i8, i8 * i8, 10000)
        array([10000])
    """
    top = _int_max(data.dtype)
    if top is None or top >= size - 1:
        return data
    if not isinstance(lhs, (int, float)):
        lhs = ops.astype(lhs, "int")
    if not isinstance(rhs, (int, float)):
        rhs = ops.astype(rhs, "int")
    return op(lhs, rhs)
