"""Integer arrays wide enough for their Bint domain (h60).

``Bint[256] + Bint[256]`` is ``Bint[511]``; a backend adds two uint8 arrays as uint8 and wraps
around (200 + 200 is 144). The result's domain bounds its values, so the check is the array
dtype's largest value against the domain's largest: structural (dtypes and sizes only), hence
the same for traced jax arrays. Only integer results narrower than needed are recomputed, on
the backend's default integer type. ``Bint[n] - Bint[n]`` stays ``Bint[n]`` (as funsor), so a
difference below 0 is out of the domain; it still must not wrap an unsigned dtype (100 - 200
of uint8 is 156): a difference of unsigned arrays is recomputed on the default (signed) int.

A Real result holds float data (``real_result``): a real Tensor of int or bool data, negated or
added to itself, would otherwise give an integer array labelled Real. Its reductions and
contractions cast it first (``real_data``, ``real_reduce``): an int8 sum wraps, numpy's
logaddexp of int8 is float16 and of bool raises, torch's int8 einsum refuses an int64
accumulator. Logical reductions (``and_``, ``or_``) keep a bool mask's bools.

Example:
    >>> u = np.array([200, 100], np.uint8)
    >>> widen_int_result(ops.add, u, u, u + u, 511)
    array([400, 200])
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops

__all__ = ["FLOAT_DTYPES", "INT_RANGE", "IntRangeError", "check_int_range", "is_float_dtype",
           "real_data", "real_reduce", "real_result", "widen_int_result"]

# A Bint bound past the widest integer array: 256**9 > 2**63 for a product of nine Bint[256].
INT_RANGE = (
    "cannot {what}: the result is {out} (values up to {top}), but its {dtype} array holds at "
    "most {fits}, so the numbers would wrap around. {operands}. Combine fewer values or "
    "smaller bounds, or make the data real first, e.g. "
    "fc.Tensor(ops.astype(t.data, 'real'), t.inputs)."
)

# Bounds up to this fit every backend's default integer (jax without x64: int32); the hot
# paths compare a bound with it and leave larger ones to the rules' check_int_range.
SAFE_BOUND = 2 ** 31


class IntRangeError(ValueError):
    """A Bint result whose bound passes the range of the integer array that would hold it.

    Example:
        >>> t = fc.Tensor(np.full(9, 255), {"i": fc.Bint[9]}, 256)
        >>> t.reduce(ops.mul, "i")  # 255**9 > 2**63
        Traceback (most recent call last):
        ...
        funsor_core.atoms.int_range.IntRangeError: cannot reduce input 'i': Bint[9] with ...
    """


# dtype -> its largest value, or None for a float or bool dtype (no wrap-around to fix: bool
# results come from comparisons and logical ops, whose Bint[2] always fits).
_INT_MAX: dict = {}
_UNSIGNED: set = set()  # integer dtypes with no sign bit (filled by _int_max)


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
            if dt.kind == "u":
                _UNSIGNED.add(dtype)
    elif not (dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool"):
        # a torch.dtype, read without importing torch: n bytes, one bit for a sign
        top = (1 << (8 * dtype.itemsize - dtype.is_signed)) - 1
        if not dtype.is_signed:
            _UNSIGNED.add(dtype)
    _INT_MAX[dtype] = top
    return top


def widen_int_result(op, lhs, rhs, data, size: int, signed: bool = False):
    """``data = op(lhs, rhs)`` of a ``Bint[size]`` output, recomputed on the backend's default
    integer type when ``data``'s integer dtype cannot hold ``size - 1``, or when ``signed`` (the
    op can go below 0: a difference) and the dtype is unsigned; else ``data`` itself.

    Example:
        >>> i8 = np.array([100], np.int8)
        >>> widen_int_result(ops.mul, i8, i8, i8 * i8, 10000)
        array([10000])
        >>> u8 = np.array([100], np.uint8)
        >>> widen_int_result(ops.sub, u8, 200, u8 - 200, 256, signed=True)
        array([-100])
    """
    top = _int_max(dtype := data.dtype)
    if top is None or (top >= size - 1 and not (signed and dtype in _UNSIGNED)):
        return data
    if not isinstance(lhs, (int, float)):
        lhs = ops.astype(lhs, "int")
    if not isinstance(rhs, (int, float)):
        rhs = ops.astype(rhs, "int")
    return op(lhs, rhs)


def check_int_range(data, out, what: str, operands) -> None:
    """Raise IntRangeError when the integer array ``data`` of a result of domain ``out``
    (a ``Bint``) cannot hold ``out``'s largest value. By the dtype and the bound alone, so the
    same for traced jax arrays. ``operands()`` describes the arguments (only called to raise).

    Example:
        >>> check_int_range(np.zeros(2, np.int64), fc.Bint[2 ** 62], "add", lambda: "")
        >>> check_int_range(np.zeros(2, np.int32), fc.Bint[2 ** 40], "add", lambda: "t")
        Traceback (most recent call last):
        ...
        funsor_core.atoms.int_range.IntRangeError: cannot add: the result is Bint[...
    """
    fits = _int_max(data.dtype)
    if fits is not None and fits < out.dtype - 1:
        raise IntRangeError(INT_RANGE.format(
            what=what, out=out, top=out.dtype - 1, dtype=data.dtype, fits=fits,
            operands=operands()))


# array dtype -> is it a float dtype (numpy, torch and jax dtypes alike; filled on first sight)
_FLOATING: dict = {}
FLOAT_DTYPES: set = set()  # its float keys: ``dtype not in FLOAT_DTYPES``, the hot paths' test

# Ops whose integer arguments are cast to float before the op (so that int8 100 + 100 labelled
# Real is 200., not -56 cast after); the others (max, <<, &) run on the integers, cast after.
_CAST_FIRST = frozenset(ops.ARITHMETIC_OPS)
# Bitwise ops keep their integer or bool data (as funsor's do): a float result could not be
# an operand of the next ``&`` (numpy and torch refuse bitwise ops on floats).
_KEEP_INTEGERS = frozenset(
    op for op in (getattr(ops, n, None) for n in ("and_", "or_", "xor", "invert", "lshift",
                                                   "rshift")) if op is not None)


def is_float_dtype(data) -> bool:
    """Whether the array ``data`` holds floats, by a dict lookup on its dtype (structural, so
    the same for traced arrays).

    Example:
        >>> is_float_dtype(np.ones(2)), is_float_dtype(np.arange(2))
        (True, False)
    """
    floating = _FLOATING.get(dtype := data.dtype)
    if floating is None:
        floating = _FLOATING[dtype] = bool(ops.is_floating(data))
        if floating:
            FLOAT_DTYPES.add(dtype)
    return floating


def real_result(op, args: tuple, data):
    """``data = op(*args)`` of a Real output as float data: ``data`` itself when it is float,
    else recomputed with the integer or bool array arguments cast to float first (arithmetic
    ops), or cast after (the others but the bitwise ops, whose integers are kept).

    Example:
        >>> b = np.array([True, False])
        >>> real_result(ops.add, (b, b), b + b)
        array([2., 0.])
    """
    if is_float_dtype(data) or op.base in _KEEP_INTEGERS:
        return data
    if op.base in _CAST_FIRST:
        args = tuple(a if isinstance(a, (int, float)) or is_float_dtype(a)
                     else ops.astype(a, "real") for a in args)
        data = op(*args)
    return data if is_float_dtype(data) else ops.astype(data, "real")


def real_data(data):
    """The array ``data`` of a Real Tensor as float data: ``data`` itself when its dtype is
    a float dtype (a set lookup), else cast to the backend's float type before a reduction
    or contraction (so that an int8 sum does not wrap, nor a logaddexp truncate).

    Example:
        >>> real_data(np.array([100, 100], np.int8)).sum()
        np.float64(200.0)
    """
    if data.dtype in FLOAT_DTYPES or is_float_dtype(data):
        return data
    return ops.astype(data, "real")


# Logical reductions keep a Real Tensor's bool data (a mask labelled Real, in an (and_, or_)
# lattice, stays bool: its product op, |, has no float kernel).
_LOGICAL = frozenset({ops.and_, ops.or_})


def real_reduce(op, data, axes: tuple):
    """``op``'s array reduction over ``axes`` of the int or bool ``data`` of a Real Tensor:
    in floats (cast first: an int8 sum does not wrap, logaddexp does not truncate), except
    the logical reductions ``and_``, ``or_``, which keep bools.

    Example:
        >>> real_reduce(ops.add, np.array([100, 100], np.int8), (0,))
        array(200.)
    """
    if op in _LOGICAL:
        return ops.REDUCE_OPS[op](data, axis=axes)
    return real_data(ops.REDUCE_OPS[op](real_data(data), axis=axes))
