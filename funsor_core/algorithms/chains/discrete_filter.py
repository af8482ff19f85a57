"""A compiled HMM filter with ``K`` exps per step, for a transition matrix shared by all steps.

The exact log-space forward step ``v'_j = logsumexp_i(v_i + a_ij) + w_j`` costs ``K^2`` exps.
With the column shift ``c_j = max_i a_ij`` and ``e = exp(a - c)`` (once, before the loop), the
message is kept as ``v = log p + z`` with ``max p = 1``, and a step is

    s = p @ e,  q = s * exp(w + c - m),  p' = q / max q,  z' = z + log max q + m

(``m`` the max of ``w + c`` over the states): ``K`` exps, a vector-matrix product and one log,
as dynamax's filter. The last step is taken in log form, ``v_j = log s_j + z + c_j + w_j``.

No digit that matters is lost when every entry of ``e`` is at least twice ``tiny / eps``:
since ``max p = 1``, every ``s_j >= min e``, so each ``s_j`` (a sum of nonnegative terms) has
full relative precision, and the entries of ``p`` that underflow (each below ``tiny``)
change it by less than ``K eps / 2`` relatively, as a logsumexp's own rounding. States of
tiny ``p`` lose digits in ``p`` itself, but ``p`` only ever enters through such sums, and the
result is read from the last step's ``s`` in log form. That condition is one reduction over
the ``K^2`` entries of ``e``, before the loop; where it fails, ``e`` is made NaN. A weight of
``+inf`` (``inf / inf``) or NaN makes NaN too; ``-inf`` weights give exact zeros (a step of
weight zero everywhere: ``max q = 0``, ``z = -inf``, and ``-inf`` at the end, as in log
space). So any doubt shows as a NaN in the result, and then the whole chain is recomputed
by the exact log-space recursion (one ``lax.cond``).

The filter is used for values only (``backends.jax.differentiate_as``); derivatives come
from a recursion that is leaner to differentiate. XLA:CPU runs a program on the calling
thread only while its estimated cost is under 1,000 flops (a loop body counted once), and
otherwise hands it to a worker thread (tens of microseconds on a loaded machine): so nothing
here reads all ``T`` steps outside the loop, and there is one conditional, not two.

Example:
    >>> import jax.numpy as jnp
    >>> from funsor_core.algorithms.chains.discrete import chain_product
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
from funsor_core.algorithms.contract.linear_space import log_limits

__all__ = ["scaled_log_filter", "applies"]


def applies(step, left) -> bool:
    """Whether ``scaled_log_filter`` takes this chain: one matrix factor, shared by all steps,
    vectors over the curr states and constants beside it, a left boundary.

    Example:
        >>> from funsor_core.algorithms.chains.discrete import _Step
        >>> f = (np.zeros((1, 2, 2)), np.zeros((5, 1, 2)))
        >>> applies(_Step(ops.logaddexp, ops.add, f, 2), np.zeros(2))
        True
    """
    kinds = step.kinds
    if left is None or kinds.count("m") != 1 or "p" in kinds:
        return False
    return not step.timed[kinds.index("m")] and any(step.timed)


def scaled_log_filter(step, factors, left, right, scan, cond, exact, mask=None):
    """The log-space message ``left`` through the steps of ``factors`` (then
    summed against ``right`` if given), ``K`` exps per step (see the module docstring);
    ``exact(factors, left, right)`` computes the same wherever this loop has a doubt (it
    then shows a NaN). ``step`` is ``discrete._Step`` of a log-space chain (``applies``).
    ``mask`` ``(T, *batch)``: False on a prefix of steps (eager jax's padding,
    ``discrete_padding.masked_padding``) that keep the carry bit for bit; the last counts.

    Example:
        >>> import jax.numpy as jnp
        >>> from funsor_core.algorithms.chains.discrete import _Step
        >>> from backends import jax as jb
        >>> f = (jnp.log(jnp.full((1, 2, 2), 0.5)), jnp.zeros((4, 1, 2)))  # matrix, weights
        >>> step = _Step(ops.logaddexp, ops.add, f, 2)
        >>> def exact(f, lt, rt):
        ...     return jnp.full(lt.shape[:-1], jnp.nan)  # not taken: every entry is 1/2
        >>> v = scaled_log_filter(step, f, jnp.zeros(2), jnp.zeros(2), jb.scan, jb.cond, exact)
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
    e = ops.where(safe, e, ops.full_like(e, math.nan))

    vectors = [(f, t) for f, kind, t in zip(factors, step.kinds, step.timed)
               if kind in ("c", "s")]
    fixed = step.fold([shift] + [f[0] for f, t in vectors if not t])
    timed = tuple(f for f, t in vectors if t)
    batch = np.broadcast_shapes(tuple(left.shape[:-1]),
                                *(tuple(f.shape[1:-2]) for f in factors))

    def weights(ws):  # the step's vector w + c, (*batch, K)
        w = step.fold([fixed] + list(ws))[..., 0, :]
        return w if w.shape[-1] == k else ops.expand(w, tuple(w.shape[:-1]) + (k,))

    def vecmat(p):
        if k * k <= 256:  # a broadcast product and a sum fuse with the work around them
            return ops.sum(p[..., :, None] * e, axis=-2)
        return ops.matmul(p[..., None, :], e)[..., 0, :]

    def body(carry, xs):
        (p, z), (ws, keep) = carry, xs
        w = weights(ws)
        m = ops.amax(w, axis=-1, keepdims=True)
        m = ops.where(ops.isfinite(m), m, ops.full_like(m, 0.0))
        q = vecmat(p) * ops.exp(w - m)
        n = ops.amax(q, axis=-1, keepdims=True)
        new = (q / ops.where(n > 0, n, ops.full_like(n, 1.0)), z + ops.log(n) + m)
        if keep is not None:
            keep = ops.reshape(keep, tuple(keep.shape) + (1,))
            new = (ops.where(keep, new[0], p), ops.where(keep, new[1], z))
        return new, None

    m0 = ops.amax(left, axis=-1, keepdims=True)
    m0 = ops.where(ops.isfinite(m0), m0, ops.full_like(m0, 0.0))
    p0 = ops.exp(left - m0)
    if tuple(left.shape[:-1]) != batch:
        p0, m0 = ops.expand(p0, batch + (k,)), ops.expand(m0, batch + (1,))
    # With the matrix shared, a chain of several steps has a vector varying with time.
    p, z = scan(body, (p0, m0), (tuple(f[:-1] for f in timed),
                                  None if mask is None else mask[:-1]))[0]
    v = ops.log(vecmat(p)) + z + weights(tuple(f[-1] for f in timed))
    result = v if right is None else ops.REDUCE_OPS[ops.logaddexp](v + right, axis=-1)
    return cond(ops.any(result != result), lambda _: exact(factors, left, right),
                lambda _: result, None)
