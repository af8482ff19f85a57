"""Facts about a Tensor's array that its builder knows and a later rule can use without reading
the values: "normalized along axis a" (``logaddexp`` over it is zero: a Categorical's log
table over its value) and "all zeros" (such a ``logaddexp``'s result, which subtracts as
nothing).

Pyro renormalizes every enumerated site's table, ``t - t.reduce(logaddexp, v)``; for a table
built as ``log(p / sum p)`` that is ``t`` again, in value and in derivative with respect to
everything the table was computed from: ``normalize(normalize(p)) = normalize(p)`` as
functions, and the ``logaddexp`` is identically zero, so its derivative is zero too. (Only a
derivative taken with respect to the table's own array, which is not a leaf, would differ.)
So the rules skip a logsumexp and a subtraction over ``K^2 T`` numbers, forward and backward.

A fact is keyed by the array's identity, held by a weak reference (an id is reused once its
array is gone), and checked against torch's in-place version counter (a numpy array is taken
as unchanging once in a Tensor, as the cons cache, keyed by the array too, takes it). Only
concrete arrays get facts (a value traced under ``jax.jit`` may be NaN for an invalid
parameter, and then the ``logaddexp`` is NaN too, not zero).

Example:
    >>> t = np.log(np.array([[0.25, 0.75], [0.5, 0.5]]))
    >>> mark_normalized(t, 1)
    >>> normalized_axis(t), normalized_axis(t.copy())
    (1, None)
"""

from __future__ import annotations

import weakref

from funsor_core import ops

__all__ = ["mark_normalized", "normalized_axis", "mark_zero", "is_zero",
           "logaddexp_of_normalized"]

# id(array) -> (weak reference, axis, in-place version); the entry goes with its array.
_NORMALIZED: dict = {}
# id(array) -> (weak reference, in-place version)
_ZERO: dict = {}


def _forget(table: dict, key: int):
    return lambda ref: table.get(key, (None,))[0] is ref and table.pop(key, None)


def _ref(table: dict, data):
    try:
        return weakref.ref(data, _forget(table, id(data)))
    except TypeError:  # an array type without weak references: no fact recorded
        return None


def mark_normalized(data, axis: int) -> None:
    """Record that ``logsumexp(data, axis)`` is zero everywhere (up to rounding), and that
    ``data`` is a normalized log table as a function of what it was computed from.

    Example:
        >>> t = np.log(np.full((3, 4), 0.25))
        >>> mark_normalized(t, 1); normalized_axis(t)
        1
    """
    ref = _ref(_NORMALIZED, data)
    if ref is not None:
        _NORMALIZED[id(data)] = (ref, axis, getattr(data, "_version", None))


def normalized_axis(data) -> int | None:
    """The axis ``data`` was recorded normalized along, or None.

    Example:
        >>> normalized_axis(np.zeros(2)) is None
        True
    """
    hit = _NORMALIZED.get(id(data))
    if hit is None or hit[0]() is not data or hit[2] != getattr(data, "_version", None):
        return None
    return hit[1]


def mark_zero(data) -> None:
    """Record that every entry of ``data`` is zero (an array made by ``new_zeros``).

    Example:
        >>> z = np.zeros(3)
        >>> mark_zero(z); is_zero(z), is_zero(np.zeros(3))
        (True, False)
    """
    ref = _ref(_ZERO, data)
    if ref is not None:
        _ZERO[id(data)] = (ref, getattr(data, "_version", None))


def is_zero(data) -> bool:
    """Whether ``data`` was recorded as all zeros (and not changed in place since).

    Example:
        >>> is_zero(np.zeros(2))
        False
    """
    hit = _ZERO.get(id(data)) if _ZERO else None
    return hit is not None and hit[0]() is data and hit[1] == getattr(data, "_version", None)


def logaddexp_of_normalized(data, axis: int):
    """Zeros of ``data``'s shape without ``axis`` (recorded as zeros) where ``data`` was
    recorded normalized along ``axis``: its ``logsumexp`` there, with no pass over the
    numbers; None otherwise.

    Example:
        >>> t = np.log(np.full((2, 4), 0.25))
        >>> mark_normalized(t, 1)
        >>> logaddexp_of_normalized(t, 1), logaddexp_of_normalized(t, 0)
        (array([0., 0.]), None)
    """
    if normalized_axis(data) != axis:
        return None
    shape = tuple(data.shape)
    zeros = ops.new_zeros(data, shape[:axis] + shape[axis + 1:])
    mark_zero(zeros)
    return zeros
