"""The precision facts of the linear-space chain kernels: which dtypes are single precision,
and ``linear_exp``, the ``exp`` of shifted logs with the floor below which a product entry
may have lost digits (``discrete_tree``'s scaled and shifted trees check against it).

Example:
    >>> single_precision(np.float32), linear_exp(np.zeros(2))[0].tolist()
    (True, [1.0, 1.0])
"""

from __future__ import annotations

import functools
import math

from funsor_core import ops
from funsor_core.engine.backend import backend_of
from funsor_core.engine.floats import float_info

__all__ = ["float_max", "linear_exp", "linear_exp_floor", "preshifted", "renormalized",
           "shift_period", "shifted_loop", "single_precision", "split_shift",
           "with_shift_column"]


def linear_exp(x) -> tuple:
    """``(exp(x), floor)`` for the shifted logs ``x <= 0`` of a linear-space product that
    checks its smallest entry against ``floor``. In double precision, entries below
    ``sqrt(tiny)`` are made exact zeros: an ``exp`` that underflows takes the slow path of
    numpy's and torch's vectorized ``exp`` (torch, (499, 16, 16) at -720: 11 ms against 0.1
    at -10), and a product of two subnormal-bound terms the slow path of the matrix product
    and its derivative (4 against 0.1 ms). A dropped term is below ``sqrt(tiny)``, so
    ``floor`` is ``K sqrt(tiny) / eps`` (about 1e-137 for ``K = 16``): a product entry at
    least that keeps its digits, and a product of true zeros fails the check as before.
    Single precision, whose ``sqrt(tiny)`` is too close to 1, keeps the plain ``exp`` and
    the floor ``tiny / eps``.

    Example:
        >>> p, floor = linear_exp(np.array([[-800.0, 0.0], [0.0, -1.0]]))
        >>> p.tolist(), floor > 1e-300
        ([[0.0, 1.0], [1.0, 0.36787944117144233]], True)
    """
    low, floor = _cut(x.dtype, x.shape[-1])
    if low is None:
        return ops.exp(x), floor
    if ops.is_concrete(x) and bool(ops.amin(ops.detach(x)) >= low):
        # Nothing to cut (the usual case, read once): the same values and derivatives as
        # below, without the four passes of the cut and the two of its derivative.
        return ops.exp(x), floor
    kept = ops.ge(x, low)
    p = ops.where(kept, ops.exp(ops.clamp(x, low, None)), ops.full_like(x, 0.0))
    return p, floor


def _cut(dtype, k: int) -> tuple:
    # (the log below which linear_exp makes exact zeros, or None; its floor) for k states
    cut = _CUTS.get(dtype)
    if cut is None:
        info = float_info(dtype)
        cut = _CUTS[dtype] = (None if info.bits <= 32 else math.log(info.tiny) / 2,
                              info.eps, info.tiny / info.eps)
    low, eps, floor = cut
    return low, floor if low is None else max(floor, float(k * math.exp(low) / eps))


_CUTS: dict = {}


def linear_exp_floor(dtype, k: int) -> float:
    """The floor of ``linear_exp`` for ``k`` states of ``dtype``: a product entry at least this
    keeps its digits.

    Example:
        >>> info = np.finfo(np.float32)
        >>> linear_exp_floor(np.dtype(np.float32), 2) == float(info.tiny / info.eps)
        True
    """
    return _cut(dtype, k)[1]


def single_precision(dtype) -> bool:
    """Whether ``dtype`` is a float of at most 32 bits (numpy's, jax's or torch's dtype).

    Example:
        >>> single_precision(np.float32), single_precision(np.float64)
        (True, False)
    """
    return float_info(dtype).bits <= 32


def float_max(dtype) -> float:
    """The largest finite number of a float ``dtype`` (numpy's, jax's or torch's).

    Example:
        >>> float_max(np.dtype(np.float16))
        65504.0
    """
    return float_info(dtype).max


# A float32 log-space carry keeps its maximum apart: after T steps of log weights near -1e4
# the carry is near -1e8, where a float32 ulp is 8, so the differences between states (what
# the marginals and Viterbi's choices read) would be lost; shifted to a maximum of 0 they
# keep their digits, and the shift (detached: the value is shift-invariant, so the
# derivative is the shifted carry's) is added back once, after the last sum.
def split_shift(v, axes: tuple, big: float) -> tuple:
    """``(v - s, s)``, ``s`` the detached maximum of the log-space ``v`` over ``axes`` (the
    last one, or the last two), clamped to ``[-big, big]``: any finite shift is exact, and
    an all -inf ``v`` stays -inf (not NaN).

    Example:
        >>> v, s = split_shift(np.array([-1e4, -1e4 - 1.0]), (-1,), 1e30)
        >>> v.tolist(), s.tolist()
        ([0.0, -1.0], [-10000.0])
    """
    fns = backend_of(v).LOOP_FNS
    s = fns.max1(v) if len(axes) == 1 else fns.max2(v)  # detached
    s = s.clip(-big, big)  # the array's own (numpy, torch, jax): a fifth of ops.clamp's time
    return v - s, s


# Compiled, a vector carry and its shift travel as one array, the shift one more column.
# XLA:CPU runs a loop body of at most 8 thunks in line and a longer one through its dataflow
# executor, at a fixed cost per step: a ``(values, shift)`` pair took 9 thunks (the shift's
# own add and copy), the one array takes 8 (the jitted value and gradient of ``mpsp K=4 T=50
# P=8``: 67 -> 50 us). A matrix carry's body takes more than 8 either way (11 for ``mixed
# K=8``), and the column would cost its backward pass a pad a step: it keeps the pair
# (``renormalized``). The arithmetic is the pair's, and so are the values.
def renormalized(fn, axes: tuple, big: float):
    """A scan body ``(carry, x) -> carry`` of log-space values made one of ``(values, shift)``
    pairs: ``fn``'s result is shifted by ``split_shift`` and the shift accumulated apart.

    Example:
        >>> body = renormalized(lambda v, x: v + x, (-1,), 1e30)
        >>> body((np.zeros(2), np.zeros(1)), np.array([-5.0, -6.0]))
        (array([ 0., -1.]), array([-5.]))
    """
    def body(carry, g):
        v, shift = split_shift(fn(carry[0], g), axes, big)
        return v, carry[1] + shift
    return body


def with_shift_column(fn, k: int, axes: tuple, big: float):
    """A scan body ``(carry, x) -> carry`` on arrays ``(..., k + 1)``: ``fn`` of the first
    ``k`` columns (log-space values) is shifted by ``split_shift``, and the shift added to
    the last column (detached, as the shift is).

    Example:
        >>> body = with_shift_column(lambda v, x: v + x, 2, (-1,), 1e30)
        >>> body(np.zeros(3), np.array([-5.0, -6.0])).tolist()
        [0.0, -1.0, -5.0]
    """
    def body(carry, x):
        v, shift = split_shift(fn(carry[..., :k], x), axes, big)
        return ops.cat([v, ops.detach(carry[..., k:] + shift)], -1)
    return body


def shifted_loop(loop, fn, start, axes: tuple, big: float, every: int, compiled: bool):
    """``(values, shift)`` of a loop of the log-space ``fn`` from ``start``, its carry kept
    apart from its maximum (``split_shift``): compiled, shifted every step (a vector's shift
    one more column of it, ``with_shift_column``; a matrix's a second carry); eagerly every
    ``every`` steps, the shifts collected apart. ``loop(fn, carry, every, renorm)`` runs
    the steps (``renorm`` None: none between them).

    Example:
        >>> def loop(fn, carry, every, renorm):
        ...     for x in np.full((3, 2), -5.0):
        ...         carry = fn(carry, x)
        ...     return carry if renorm is None else renorm(carry)
        >>> v, s = shifted_loop(loop, lambda v, x: v + x, np.zeros(2), (-1,), 1e30, 3, False)
        >>> v.tolist(), s.tolist()
        ([0.0, 0.0], [-15.0])
        >>> v, s = shifted_loop(loop, lambda v, x: v + x, np.zeros(2), (-1,), 1e30, 1, True)
        >>> v.tolist(), s.tolist()
        ([0.0, 0.0], [-15.0])
    """
    start, shift = split_shift(start, axes, big)
    if compiled and len(axes) == 1:
        k = start.shape[-1]
        carry = loop(with_shift_column(fn, k, axes, big), ops.cat([start, shift], -1), 1, None)
        return carry[..., :k], carry[..., k:]
    if compiled:  # a matrix carry
        return loop(renormalized(fn, axes, big), (start, shift), 1, None)
    shifts = [shift]

    def renorm(v):
        v, s = split_shift(v, axes, big)
        shifts.append(s)
        return v

    return loop(fn, start, every, renorm), functools.reduce(ops.add, shifts)


# An eager float32 chain shifts each step's factors to a maximum of 0 once, before its loop
# (one vectorized pass), and its carry only every ``shift_period`` steps. With every entry of
# a step at most 0, a max-plus carry's maximum never rises and a log-sum-exp one rises by at
# most log K a step; it falls by at most the range r of the steps' finite entries while its
# best state has a finite way on (r read once per call; where it has none, the carry falls
# to its next state, whose digits it held already). So k steps keep the carry within
# k (r + log K) of 0, and k is the largest (at most 16) that keeps this within 256, where
# float32 rounds to 1.5e-5; past r = 256 the carry is shifted every step. Against a carry
# shifted every step, whose sums reach the unshifted entries' magnitude (at least r / 2),
# this rounds at most 2k + 1 times coarser (5 bits); with steps of a common offset (-1e4 a
# step) far finer, since only the shifted entries are summed. A narrower float (16 bits) has
# no bits to spare: its carry is shifted every step.
_BUDGETS = {32: 256.0}
MAX_PERIOD = 16


def shift_period(dtype, spread: float) -> int:
    """The number of steps between the carry shifts of an eager single-precision chain
    whose steps are ``preshifted`` and whose carry moves by at most ``spread`` a step (1
    for floats narrower than 32 bits).

    Example:
        >>> f32 = np.dtype(np.float32)
        >>> shift_period(f32, 10.0), shift_period(f32, 100.0), shift_period(f32, 1e4)
        (16, 2, 1)
    """
    budget = _BUDGETS.get(float_info(dtype).bits)
    if budget is None or not spread * MAX_PERIOD > budget:  # (or a small spread)
        return 1 if budget is None else MAX_PERIOD
    return max(1, int(budget // spread))


def preshifted(factors: tuple, timed: tuple, mask, duration: int, big: float) -> tuple:
    """``(shifted, offset, spread)``: each log-space factor ``(T or 1, *batch, P or 1, C or
    1)`` less its detached maximum over its states (per step where ``timed``, 0 where not
    finite, clamped to ``[-big, big]``); ``offset`` ``(*batch, 1, 1)``, those maxima summed
    over the steps that count (``mask`` ``(T, *batch)`` or None; ``duration`` steps): the
    chain of the shifted factors plus ``offset`` is the chain of ``factors``; ``spread``,
    the sum of the shifted factors' largest finite ranges (a Python float).

    Example:
        >>> (f,), off, r = preshifted((np.array([[[-3.0, -4.0]], [[-1.0, -2.0]]]),), (True,),
        ...                           None, 2, 1e30)
        >>> f.tolist(), off.tolist(), r
        ([[[0.0, -1.0]], [[0.0, -1.0]]], [[-4.0]], 1.0)
    """
    shifted, offset, spread = [], None, 0.0
    for f, is_timed in zip(factors, timed):
        fns = backend_of(f).LOOP_FNS
        s = fns.max2(f)  # (T or 1, *batch, 1, 1), detached
        s = ops.clamp(ops.where(ops.isfinite(s), s, ops.full_like(s, 0.0)), -big, big)
        f = f - s
        shifted.append(f)
        if math.prod(f.shape):  # (an empty batch has no range)
            spread -= fns.smallest(ops.where(ops.isfinite(f), f, ops.full_like(f, 0.0)))
        if mask is not None:
            keep = ops.reshape(mask, tuple(mask.shape) + (1, 1))
            total = ops.sum(ops.where(keep, s, ops.full_like(s, 0.0)), axis=0)
        elif is_timed:
            total = ops.sum(s, axis=0)
        else:
            total = s[0] * duration
        offset = total if offset is None else offset + total
    return tuple(shifted), offset, spread
