"""A compiled HMM filter in log space with ``K`` exps per step, for a shared transition matrix.

The exact log-space forward step ``v'_j = logsumexp_i(v_i + a_ij) + w_j`` costs ``K^2`` exps.
With the column shift ``c_j = max_i a_ij`` and ``e = exp(a - c)`` (once, before the loop), and
``m = max_i v_i``, it is

    v'_j = log(sum_i exp(v_i - m) e_ij) + m + c_j + w_j,

``K`` exps, a vector-matrix product and ``K`` logs per step (dynamax's filter does the same
work in probability space). The carry stays in log space, so no state loses digits between
steps. The sum is exact to rounding when no term that matters underflows: ``exp(v - m)`` has
a 1 at the maximal state, so ``s_j >= e_mj``; when every entry of ``e`` is at least twice
``tiny / eps`` every ``s_j`` is that large, and the terms that underflow (each below
``tiny``) change it by less than ``K eps / 2`` relatively, as a logsumexp's own rounding.

That condition is one reduction over the ``K^2`` entries of ``e``, read before the loop;
where it fails (a transition of probability zero or nearly so, an infinite or NaN weight)
the whole chain goes to the exact log-space recursion (``lax.cond``). Infinite or NaN
observation weights need no test: they propagate through both recursions alike (``+inf``
stays ``+inf``, ``-inf`` gives a zero sum, ``-inf`` again, NaN stays NaN).

The filter is used for values only (``backends.jax.differentiate_as``); derivatives come
from a recursion that is leaner to differentiate. XLA:CPU runs a program on the calling
thread only while its estimated cost is small (a loop body counted once), and a pass over
all ``T`` steps before the loop, such as a test of every observation, costs ~50 us there:
so nothing here reads all steps outside the loop.

Example:
    >>> import jax.numpy as jnp
    >>> from funsor_core.algorithms.scan_tensor import chain_product
    >>> a = jnp.log(jnp.full((1, 1, 2, 2), 0.5))  # a shared transition matrix
    >>> w = jnp.zeros((3, 1, 1, 2))  # an observation weight per step
    >>> v = chain_product(ops.logaddexp, ops.add, (a, w), "sequential", jnp.zeros((1, 2)),
    ...                   jnp.zeros((1, 2)))
    >>> round(float(v[0]), 6)  # log 2: each step keeps the total mass
    0.693147
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.scaled import log_limits

__all__ = ["scaled_log_filter", "applies"]


def applies(step, left) -> bool:
    """Whether ``scaled_log_filter`` takes this chain: one matrix factor, shared by all steps,
    vectors over the curr states and constants beside it, a left boundary.

    Example:
        >>> from funsor_core.algorithms.scan_tensor import _Step
        >>> f = (np.zeros((1, 2, 2)), np.zeros((5, 1, 2)))
        >>> applies(_Step(ops.logaddexp, ops.add, f, 2), np.zeros(2))
        True
    """
    kinds = step.kinds
    if left is None or kinds.count("m") != 1 or "p" in kinds:
        return False
    return not step.timed[kinds.index("m")]


def scaled_log_filter(step, factors, duration: int, left, right, scan, cond, exact):
    """The log-space filter ``left`` through the ``duration`` steps of ``factors`` (then
    summed against ``right`` if given), ``K`` exps per step (see the module docstring);
    ``exact(factors, left, right)`` computes the same where the shifted matrix could lose
    digits. ``step`` is ``scan_tensor._Step`` of a log-space chain (``applies``).

    Example:
        >>> import jax.numpy as jnp
        >>> from funsor_core.algorithms.scan_tensor import _Step
        >>> from backends import jax as jb
        >>> f = (jnp.log(jnp.array([[[0.5, 0.5], [0.5, 0.5]]])),)
        >>> step = _Step(ops.logaddexp, ops.add, f, 2)
        >>> def exact(f, lt, rt):
        ...     return jnp.full(lt.shape[:-1], jnp.nan)  # not taken: every entry is 1/2
        >>> v = scaled_log_filter(step, f, 4, jnp.zeros(2), jnp.zeros(2), jb.scan, jb.cond,
        ...                       exact)
        >>> round(float(v), 6)  # log 2
        0.693147
    """
    k = step.states
    mi = step.kinds.index("m")
    a = factors[mi][0]
    shift = ops.amax(a, axis=-2, keepdims=True)  # (*batch, 1, K)
    shift = ops.where(ops.isfinite(shift), shift, ops.full_like(shift, 0.0))
    e = ops.exp(a - shift)
    floor = math.exp(log_limits(left.dtype)[0])  # tiny / eps
    # e <= 1 also fails on NaN; e >= 2 floor on the zeros of a transition of weight zero.
    safe = ops.all((e >= 2 * floor) & (e <= 1.0))

    vectors = [(f, t) for f, kind, t in zip(factors, step.kinds, step.timed)
               if kind in ("c", "s")]
    fixed = step.fold([shift] + [f[0] for f, t in vectors if not t])
    timed = tuple(f for f, t in vectors if t)
    batch = np.broadcast_shapes(tuple(left.shape[:-1]),
                                *(tuple(f.shape[1:-2]) for f in factors))
    v0 = left if tuple(left.shape[:-1]) == batch else ops.expand(left, batch + (k,))

    def body(v, ws):
        m = ops.amax(v, axis=-1, keepdims=True)
        m = ops.where(ops.isfinite(m), m, ops.full_like(m, 0.0))
        p = ops.exp(v - m)
        s = ops.sum(p[..., :, None] * e, axis=-2) if k * k <= 256 else \
            ops.matmul(p[..., None, :], e)[..., 0, :]
        w = step.fold([fixed] + list(ws))[..., 0, :]
        return ops.log(s) + m + w, None

    def fast(_):
        if timed:
            v = scan(body, v0, timed)[0]
        else:  # nothing varies with time: the same step ``duration`` times
            v = scan(lambda c, _: body(c, ()), v0, ops.new_zeros(left, (duration,)))[0]
        if right is None:
            return v
        return ops.REDUCE_OPS[ops.logaddexp](v + right, axis=-1)

    return cond(safe, fast, lambda _: exact(factors, left, right), None)
