"""The eager probability-space filter of a discrete log-space chain, the Python loop of the
eager sequential kernel, and the selection of a ragged chain's carry: helpers of
``chains.discrete`` (its module docstring has the math).

``_eager_log_filter`` is the filter as a Python loop (numpy, torch) of four array calls per
step, taken where the values show no digit can be lost; ``kept`` and ``full_batch`` select a
carry past a masked step (``where``, no Python branch: traced masks work under ``jax.jit``).

Example:
    >>> kept(np.array([True, False]), np.ones((2, 3)), np.zeros((2, 3))).tolist()
    [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import VECMAT_BROADCAST
from funsor_core.algorithms.chains.discrete_tree import _dot
from funsor_core.algorithms.contract.linear_space import log_limits
from funsor_core.engine.backend import backend_of
from funsor_core.engine.floats import float_info

__all__ = ["kept", "full_batch", "python_loop", "rounded_away", "eager_log_filter", "vecmat"]


def python_loop(fn, carry, kinds: tuple, timed: tuple, factors, duration: int, reverse: bool,
                mask=None, every: int = 1, renorm=None):
    """``carry <- fn(carry, groups)`` for the steps in order (reversed with ``reverse``), each
    step's factors ``(T or 1, *batch, P or 1, C or 1)`` grouped by kind (``"m"`` matrices,
    ``"p"``/``"c"`` vectors over the prev/curr states squeezed to ``(..., K)``, ``"s"``
    constants to ``(..., 1)``), with ``groups["keep"] = mask[t]`` given a ``mask``; given a
    ``renorm``, ``carry <- renorm(carry)`` after every ``every`` steps.

    Example:
        >>> f = np.arange(3.0).reshape(3, 1, 1)
        >>> float(python_loop(lambda c, g: c + g["s"][0], np.zeros(1), ("s",), (True,), (f,), 3,
        ...                   False)[0])
        3.0
    """
    # Each factor squeezed and, where timed, split into its steps' views at once: two calls
    # per factor, not two per factor and step (a fifth of a small max-plus step's time).
    unbind = backend_of(factors[0]).LOOP_FNS.unbind
    parts = []
    for f, kind, t in zip(factors, kinds, timed):
        f = f[..., :, 0] if kind == "p" else f[..., 0, :] if kind in ("c", "s") else f
        parts.append((kind, unbind(f) if t else None, None if t else f[0]))
    keeps = None if mask is None else unbind(mask)
    due = every
    for t in (range(duration - 1, -1, -1) if reverse else range(duration)):
        g: dict = {"m": [], "p": [], "c": [], "s": []}
        for kind, views, f in parts:
            g[kind].append(f if views is None else views[t])
        if keeps is not None:
            g["keep"] = keeps[t]
        carry = fn(carry, g)
        if renorm is not None:
            due -= 1
            if not due:
                carry, due = renorm(carry), every
    return carry


def kept(keep, new, old):
    """``new`` where the step counts, else the carried ``old``: ``keep`` (*batch) against a
    carry (*batch, K) or (*batch, P, C), or a tuple of them (a carry and its shift).

    Example:
        >>> kept(np.array([False]), np.ones((1, 2, 2)), np.zeros((1, 2, 2))).sum()
        np.float64(0.0)
    """
    if isinstance(new, tuple):
        return tuple(kept(keep, n, o) for n, o in zip(new, old))
    keep = ops.reshape(keep, tuple(keep.shape) + (1,) * (len(new.shape) - len(keep.shape)))
    return ops.where(keep, new, old)


def full_batch(v, mask):
    """The boundary ``v`` (*batch, K) expanded to every batch dim of ``mask`` (T, *batch),
    so that a scan's carry keeps its shape.

    Example:
        >>> full_batch(np.zeros((1, 3)), np.ones((5, 4), bool)).shape
        (4, 3)
    """
    if mask is None:
        return v
    shape = np.broadcast_shapes(tuple(v.shape[:-1]), tuple(mask.shape[1:]))
    return v if tuple(v.shape[:-1]) == shape else ops.expand(v, shape + tuple(v.shape[-1:]))


def rounded_away(p, right, floor: float):
    """Whether a state that the probability-space filter left below ``floor`` (its digits
    lost, or rounded to zero) could show in the result, which log space would get exactly:
    in the returned message itself (``right`` None), or in its total against ``right`` when
    those states' weights there could outweigh the rounding of the total (one ``eps``, the
    floor being ``tiny / eps``). An array boolean; never true for a peaked posterior summed
    against a flat boundary, where the lost states cannot change a digit of the total.

    Example:
        A state at 1e-300, below the floor: it shows in the message itself, and in a total
        against a boundary that weights it by e^800, not in one against a flat boundary.

        >>> p, floor = np.array([0.5, 0.5, 1e-300]), 1e-290
        >>> bool(rounded_away(p, None, floor)), bool(rounded_away(p, np.zeros(3), floor))
        (True, False)
        >>> bool(rounded_away(p, np.array([0.0, 0.0, 800.0]), floor))
        True
    """
    low = p < floor
    if right is None:
        return ops.any(low)
    r_max = ops.amax(right, axis=-1, keepdims=True)
    r_max = ops.where(ops.isfinite(r_max), r_max, ops.full_like(r_max, 0.0))
    er = ops.exp(right - r_max)
    total = ops.sum(p * er, axis=-1)
    lost = ops.sum(ops.where(low, er, ops.full_like(er, 0.0)), axis=-1) * floor
    eps = float_info(p.dtype).eps
    return ops.any(lost > eps * total)


def eager_log_filter(step, factors, duration, left, right, mask=None):
    """The probability-space filter of ``discrete._fast_log_filter`` as a Python loop
    (numpy, torch), or None where the exact log-space loop must run: a step is a matrix
    product, a product and a sum over the states and a division, four array calls against
    the six or so of a log-space step (max, shift, exp, sum, log, add). Here the values can
    be read: any doubt (a shifted matrix entry below twice the floor, a step of weight zero,
    a NaN) gives None. ``mask`` (T, *batch): past a masked step the carry stays.

    Example:
        An HMM's forward pass: ``step`` is ``discrete._Step`` of a matrix ``log A`` shared
        by the steps and one emission vector ``log B[:, y_t]`` per step; a transition of
        probability below the floor is a doubt (None: the log-space loop runs).

        >>> from funsor_core.algorithms.chains.discrete import _Step
        >>> A, B = np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([[0.7, 0.3], [0.1, 0.9]])
        >>> ys = [0, 1, 1]
        >>> factors = (np.log(A)[None], np.log(B[:, ys].T)[:, None, :])
        >>> step = _Step(ops.logaddexp, ops.add, factors, 2)
        >>> v = eager_log_filter(step, factors, 3, np.log([0.5, 0.5]), None)
        >>> alpha = np.array([0.5, 0.5])
        >>> for y in ys:
        ...     alpha = (alpha @ A) * B[:, y]
        >>> np.allclose(np.exp(v), alpha)
        True
        >>> tiny = (np.log([[[1.0, 1e-300], [0.2, 0.8]]]), factors[1])
        >>> eager_log_filter(_Step(ops.logaddexp, ops.add, tiny, 2), tiny, 3, v, None) is None
        True
    """
    (mi,) = [i for i, k in enumerate(step.kinds) if k == "m"]
    a = factors[mi]
    a_max = ops.amax(a, axis=-2, keepdims=True)
    if not bool(ops.all(ops.isfinite(a_max))):
        return None
    e = ops.exp(a - a_max)
    floor = math.exp(log_limits(left.dtype)[0])  # tiny / eps
    if not bool(ops.all(e >= 2 * floor)):  # s_j >= min_i e_ij: no step can lose digits
        return None
    w = step.fold([a_max] + [f for f, k in zip(factors, step.kinds) if k in ("c", "s")])
    w = w[..., 0, :]
    w_max = ops.amax(w, axis=-1, keepdims=True)
    lmax = ops.amax(left, axis=-1, keepdims=True)
    if not (bool(ops.all(ops.isfinite(w_max))) and bool(ops.all(ops.isfinite(lmax)))):
        return None
    ew = ops.exp(w - w_max)
    if ew.shape[-1] != step.states:
        ew = ops.expand(ew, tuple(ew.shape[:-1]) + (step.states,))
    p = ops.exp(left - lmax)
    z0 = ops.sum(p, axis=-1, keepdims=True)
    p = p / z0
    timed_e, timed_w = e.shape[0] > 1, ew.shape[0] > 1
    if mask is None:
        shifts = ops.sum(w_max, axis=0) if timed_w else w_max[0] * duration
    else:  # the shifts of the steps that count
        counted = kept(mask, w_max, ops.full_like(w_max, 0.0))
        shifts = ops.sum(counted, axis=0)
        p = full_batch(p, mask)
    lz = lmax + ops.log(z0) + shifts
    # Per step: p @ e_t (a plain matrix product when e_t has no batch dims of its own),
    # times exp(w_t - m_t), normalized. Iterating an array yields its steps as views.
    k = step.states
    shared = not timed_e and all(d == 1 for d in e.shape[1:-2])
    if shared:
        e = ops.reshape(e, (k, k))
    mats = (e for _ in range(duration)) if shared else (
        iter(e) if timed_e else (e[0] for _ in range(duration)))
    vecs = iter(ew) if timed_w else (ew[0] for _ in range(duration))
    keeps = (None for _ in range(duration)) if mask is None else iter(mask[..., None])
    zs = []
    for t, et, ewt, keep in zip(range(duration), mats, vecs, keeps):
        q = (ops.matmul(p, et) if shared else ops.matmul(p[..., None, :], et)[..., 0, :]) * ewt
        z = ops.sum(q, axis=-1, keepdims=True)
        if keep is None:
            p = q / z
        else:  # past a sequence's length: the carry stays, its normalizer counts as 1
            p = ops.where(keep, q / z, p)
            z = ops.where(keep, z, ops.full_like(z, 1.0))
        zs.append(z)
        if len(zs) == 256 or t == duration - 1:  # memory bounded by a block of normalizers
            zs = ops.stack(zs)
            if not bool(ops.all(zs > 0)):  # a step of weight zero, or NaN: the exact loop
                return None
            lz = lz + ops.sum(ops.log(zs), axis=0)
            zs = []
    if bool(rounded_away(p, right, floor)):
        return None
    positive = p > 0  # a state of weight zero at the last step: log 0 = -inf, no NaN gradient
    v = ops.where(positive, ops.log(ops.where(positive, p, ops.full_like(p, 1.0))),
                  ops.full_like(p, -math.inf))
    batch = np.broadcast_shapes(tuple(left.shape[:-1]), *(tuple(f.shape[1:-2]) for f in factors))
    if tuple(v.shape[:-1]) != batch:  # as the log-space loop's: every batch dim broadcast
        v = ops.expand(v, batch + (k,))
    # lz joins after the last sum (float32 near -1e7 would round log p to units first)
    return v + lz if right is None else _dot(step.sum_op, step.prod_op, v, right) + lz[..., 0]


def vecmat(p, m):
    """The vector-matrix product of ``p`` ``(..., P)`` and ``m`` ``(..., P, C)``.

    A small product is a broadcast multiply and a sum, which XLA fuses with the elementwise
    work around it; a matrix product is a separate kernel call that costs more than its
    arithmetic below a few hundred elements.

    Example:
        >>> vecmat(np.ones(2), np.eye(2) * 3).tolist()
        [3.0, 3.0]
    """
    size = math.prod(max(a, b) for a, b in zip(p.shape[:-1], m.shape[:-2])) * m.shape[-1] ** 2
    if size <= VECMAT_BROADCAST:
        return ops.sum(p[..., :, None] * m, axis=-2)
    return ops.matmul(p[..., None, :], m)[..., 0, :]
