"""A whole log-semiring contraction plan run in linear space, with scales tracked on the side.

``log sum_s exp(x1 + x2 + ...)`` along a plan of pairwise steps costs, per step, a broadcast
``logsumexp`` (about ten array calls) when computed exactly. Here every operand is
exponentiated once after subtracting its maximum, the steps are plain einsums (one array call
each), and the log is taken once at the end; the subtracted maxima (and the maxima of
rescaled intermediates) add up on the side. That is the classic scaled forward algorithm, and
it is exact to rounding as long as nothing underflows or overflows, which this module proves
step by step from bounds, without reading the arrays:

* every operand and intermediate carries ``hi``, an upper bound of the log of its entries,
  and ``lo``, a lower bound of the log of its nonzero entries. Exponentiating
  ``x - max(x)`` gives ``hi = 0`` and ``lo = min(x) - max(x)`` (over finite entries; ``-inf``
  entries become exact zeros, true zeros);
* a step multiplies entries and sums ``n`` of them, so its result has
  ``hi <= hi_x + hi_y + log(n)`` and ``lo >= lo_x + lo_y`` (a nonzero sum of nonnegative
  terms is at least one nonzero product);
* while ``lo_x + lo_y >= log(tiny / eps)`` no product of nonzero entries underflows, so
  every zero of the result is a true zero and every nonzero entry has full relative
  precision; while ``hi_x + hi_y + log(n)`` is well below ``log(max)`` nothing overflows.

When a bound is about to leave its range, the two operands of the step are rescaled by their
actual maxima and their actual smallest nonzero entries are measured (two reductions), which
resets the bounds; if the measured range is still too wide for the dtype, the plan gives up
(``None``) and the caller contracts exactly, step by step (``kernels.pair``).

Under ``jax.jit`` nothing can be read, so ``run_log_plan_traced`` proves the same bounds once
for the whole plan, without rescaling: every intermediate's ``lo`` is at least the sum of all
operands' ``lo`` (each is at most 0), and its ``hi`` at most the sum of all steps' ``log(n)``,
a structural number. The first is a traced scalar, so ``backend.cond`` picks the linear-space
run where it is at least the floor, and the exact step-by-step kernels otherwise.

Example:
    >>> from funsor_core.algorithms.contract.plan import plan_contraction
    >>> plan = plan_contraction((("a",), ("a", "b"), ("b",)), {"a": 2, "b": 3}, ())
    >>> x, y, z = np.zeros(2), np.zeros((2, 3)), np.zeros(3)
    >>> float(run_log_plan(plan, [x, y, z]))  # log(2 * 3)
    1.791759469228055
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.contract.kernels import linear_pair, reduce_dims
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import FastCache
from funsor_core.engine.floats import float_info

__all__ = ["run_log_plan", "run_log_plan_traced", "log_limits"]

_LIMITS: dict = {}
_CANONICAL = FastCache("linear_space.canonical_equation", 4096)
# Stacks padded for shape stability stay small: past this many entries the padding's work
# and memory would outweigh a compile, which costs the same at any size.
_PAD_ENTRIES = 1 << 20


def log_limits(dtype) -> tuple:
    """``(floor, ceiling)`` for a float dtype: ``log(tiny / eps)``, below which a product may
    lose digits, and ``log(max)`` less a margin of 16 (a sum of up to ``e**16`` terms).

    Example:
        >>> [round(v) for v in log_limits(np.float64)]
        [-672, 694]
    """
    limits = _LIMITS.get(dtype)
    if limits is None:
        info = float_info(dtype)
        limits = _LIMITS[dtype] = (math.log(info.tiny) - math.log(info.eps),
                                   math.log(info.max) - 16.0)
    return limits


def _canonical(equation: str) -> str:
    # The equation re-lettered in order of first appearance ("f,gfhd->ghd" -> "a,bacd->bcd"):
    # a compiling backend caches its einsum by equation and shapes, and a plan's letters
    # follow its variables, so the same step of a longer chain would otherwise compile anew.
    canonical = _CANONICAL.data.get(equation)
    if canonical is None:
        letters = "".join(dict.fromkeys(c for c in equation if c.isalpha()))
        canonical = _CANONICAL.put(equation, equation.translate(
            str.maketrans(letters, string.ascii_letters[:len(letters)])))
    return canonical


def _bucket(n: int) -> int:
    # The next power of two: stacks padded to it keep their shape as a model grows.
    return 1 << (n - 1).bit_length()


def _prepare(arrays: Sequence, pad: bool = False) -> tuple | None:
    # exp(x - max x) of every operand, with its bounds (hi, lo) and max; None when an operand
    # has no finite maximum (+inf, NaN, all -inf) or no entries: the exact kernels handle
    # those. Operands of one shape are stacked, so that a graph of many small factors costs a
    # few array calls per shape instead of four per factor. With ``pad`` (a backend that
    # compiles per shape) a small stack is padded, by repeating its first operand, to a power
    # of two, so a chain one step longer reuses the compiled stack, reductions and exp.
    by_shape: dict = {}
    for k, x in enumerate(arrays):
        by_shape.setdefault(tuple(x.shape), []).append(k)
    out: list = [None] * len(arrays)
    for shape, ks in by_shape.items():
        if not math.prod(shape):
            return None
        members = [arrays[k] for k in ks]
        if pad and _bucket(len(ks)) * math.prod(shape) <= _PAD_ENTRIES:
            members += members[:1] * (_bucket(len(ks)) - len(ks))
        stacked = members[0][None] if len(members) == 1 else ops.stack(members)
        axes = tuple(range(1, len(shape) + 1))
        tops = ops.amax(stacked, axis=axes)
        bottoms = ops.amin(stacked, axis=axes)
        host_tops, host_bottoms = ops.to_numpy(tops), ops.to_numpy(bottoms)
        if not np.isfinite(host_tops).all():
            return None
        if (host_bottoms == -math.inf).any():  # -inf entries are exact zeros: bound the rest
            finite = ops.where(ops.isfinite(stacked), stacked, ops.full_like(stacked, math.inf))
            host_bottoms = ops.to_numpy(ops.amin(finite, axis=axes))
        # The shift is a constant (detached): it is added back as a float, so gradients flow
        # through exp() and log() only, as for log(sum(exp(x))) itself.
        shift = ops.reshape(ops.detach(tops), (len(members),) + (1,) * len(shape))
        scaled = ops.exp(stacked - shift)
        for n, k in enumerate(ks):
            top = float(host_tops[n])
            out[k] = (scaled[n], 0.0, float(host_bottoms[n]) - top, top)
    return out


def _host(x) -> float:
    # A 0-d array's value as a float, read without autograd (a torch tensor may need grad).
    return float(ops.to_numpy(x))


def _rescale(x) -> tuple:
    # x / max(x) and its measured bounds (log of the smallest nonzero entry), and log max.
    top = _host(ops.amax(x))
    if top == 0.0:  # all exact zeros: every product with it is zero, bounds are vacuous
        return x, 0.0, 0.0, 0.0
    x = x / top
    small = _host(ops.amin(ops.where(x > 0, x, ops.full_like(x, 1.0))))
    return x, 0.0, math.log(small), math.log(top)


def run_log_plan(plan, arrays: Sequence):
    """``log sum exp`` of the sum of ``arrays`` along ``plan`` (a ``ContractionPlan``), in
    linear space with tracked scales; None when the dtype's range cannot hold it exactly.

    Example:
        >>> from funsor_core.algorithms.contract.plan import plan_contraction
        >>> plan = plan_contraction((("a",), ("a",), ("a",)), {"a": 2}, ())
        >>> x = np.array([0.0, -2000.0])  # e**-2000 underflows: measured, then refused
        >>> run_log_plan(plan, [x, x, x]) is None
        True
    """
    operand_letters, steps, output = plan._letters
    equations = plan._equations
    floor, ceiling = log_limits(arrays[0].dtype)
    compiles = backend_of(arrays[0]).COMPILES
    prepared = _prepare(arrays, compiles)
    if prepared is None:
        return None
    # One [array, letters, hi, lo] record per live operand.
    work = []
    shift = 0.0
    for (e, hi, lo, top), letters in zip(prepared, operand_letters):
        if lo < floor:
            return None
        work.append([e, letters, hi, lo])
        shift += top
    einsum = ops.einsum
    for (i, j, keep), (equation, log_n) in zip(steps, equations):
        if j is None:
            x, lx, hi, lo = work.pop(i)
            work.append([reduce_dims(x, lx, keep, ops.add), keep, hi + log_n, lo])
            continue
        a, b = work[i], work[j]
        if a[3] + b[3] < floor or a[2] + b[2] + log_n > ceiling:
            for r in (a, b):
                r[0], r[2], r[3], top = _rescale(r[0])
                shift += top
            if a[3] + b[3] < floor:
                return None
        if i > j:
            del work[i], work[j]
        else:
            del work[j], work[i]
        if equation is None:
            z = linear_pair(a[0], a[1], b[0], b[1], keep)
        else:
            z = einsum(_canonical(equation) if compiles else equation, a[0], b[0])
        work.append([z, keep, a[2] + b[2] + log_n, a[3] + b[3]])
    last, lx, hi, _ = work[0]
    summed = math.prod(max(n, 1) for c, n in zip(lx, last.shape) if c not in output)
    if hi + math.log(summed) > ceiling:
        last, _, _, top = _rescale(last)
        shift += top
    result = reduce_dims(last, lx, output, ops.add)
    if _host(ops.amin(result)) > 0.0:  # the common case: no exact zero, no -inf
        return ops.log(result) + shift
    zero = result == 0
    logs = ops.log(ops.where(zero, ops.full_like(result, 1.0), result))
    return ops.where(zero, ops.full_like(result, -math.inf), logs + shift)


def run_log_plan_traced(plan, arrays: Sequence, exact):
    """``log sum exp`` of the sum of traced ``arrays`` along ``plan``: in linear space where
    the operands' ranges prove it exact (a traced check, ``backend.cond``), else by
    ``exact(arrays)``; None where the plan's structure alone rules linear space out (its
    sums could overflow the dtype), and the caller runs ``exact`` itself.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from funsor_core.algorithms.contract.plan import plan_contraction
        >>> plan = plan_contraction((("a",), ("a", "b"), ("b",)), {"a": 2, "b": 3}, ())
        >>> f = jax.jit(lambda *xs: run_log_plan_traced(plan, xs, None))
        >>> round(float(f(jnp.zeros(2), jnp.zeros((2, 3)), jnp.zeros(3))), 6)  # log(2 * 3)
        1.791759
    """
    operand_letters, steps, output = plan._letters
    floor, ceiling = log_limits(arrays[0].dtype)
    if sum(log_n for _, log_n in plan._equations) > ceiling:
        return None
    tops, lows = [], []
    for x in arrays:
        top = ops.detach(ops.amax(x))
        finite = ops.where(ops.isfinite(x), x, ops.full_like(x, math.inf))
        tops.append(top)
        lows.append(ops.amin(finite) - top)
    tops, lows = ops.stack(tops), ops.stack(lows)
    # Linear space is exact when every maximum is finite and the widest product of nonzero
    # entries, exp(sum of the lows), stays above tiny / eps.
    ok = ops.all(ops.isfinite(tops)) & (ops.sum(lows) >= floor)

    def linear(xs):
        return _run_scaled(plan, xs, ops.where(ops.isfinite(tops), tops,
                                                ops.full_like(tops, 0.0)))

    if exact is None:  # the linear run alone (the doctest above)
        return linear(arrays)
    return backend_of(arrays[0]).cond(ok, linear, exact, list(arrays))


def _run_scaled(plan, arrays, tops):
    # The plan's steps on exp(x - max x), with no check: run_log_plan_traced proved them.
    operand_letters, steps, output = plan._letters
    work = [[ops.exp(x - tops[k]), letters]
            for k, (x, letters) in enumerate(zip(arrays, operand_letters))]
    for (i, j, keep), (equation, _) in zip(steps, plan._equations):
        if j is None:
            x, lx = work.pop(i)
            work.append([reduce_dims(x, lx, keep, ops.add), keep])
            continue
        a, b = work[i], work[j]
        for k in sorted((i, j), reverse=True):
            del work[k]
        z = (ops.einsum(equation, a[0], b[0]) if equation is not None
             else linear_pair(a[0], a[1], b[0], b[1], keep))
        work.append([z, keep])
    result = reduce_dims(work[0][0], work[0][1], output, ops.add)
    zero = result == 0
    logs = ops.log(ops.where(zero, ops.full_like(result, 1.0), result))
    return ops.where(zero, ops.full_like(result, -math.inf), logs + ops.sum(tops))
