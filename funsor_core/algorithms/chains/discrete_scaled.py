"""The linear-space forms of the log-space discrete chain (eager arrays only): ``scaled_log_tree``
(the parallel tree's rounds as matrix products with one rescaling each) and ``scaled_log_chain``
(rounds down to ``SWEEP`` matrices, then the boundary vector through them). Each returns None
where a product may have lost digits, for ``discrete_tree``'s exact log-space tree to run; the
reasoning is in ``discrete_tree``'s docstring.

Example:
    >>> mats = np.log(np.full((5, 2, 2), 0.5))
    >>> float(np.exp(scaled_log_chain(mats, np.zeros(2), np.zeros(2))))
    2.0
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_precision import linear_exp, linear_exp_floor
from funsor_core.engine.backend import backend_of

__all__ = ["SWEEP", "UNIT", "scaled_log_chain", "scaled_log_tree"]

# ``scaled_log_chain`` stops its rounds at this many matrices and takes the rest one by one
# with the boundary vector: a vector-matrix product costs a few microseconds, a round (pair
# views, a batch of products, a rescaling) about four times that.
SWEEP = 8

# A boundary of ``scaled_log_chain`` with no factor: its states are summed with unit weights.
UNIT = "unit"


def _first_round_fails(mats, c, floor: float) -> bool:
    # Shifted by its maximum, a step is at most 1, so an entry of a first-round product
    # (P_a P_b)_ij = sum_k P_a[i, k] P_b[k, j] is at most K max_k P_a[i, k] and at most
    # K max_k P_b[k, j]: a row of a left operand, or a column of a right one, whose largest
    # entry is below floor / K (e below, for rounding) puts an entry below the floor (an HMM
    # step whose emissions span more than the dtype's range). Known before the exps and the
    # products; read on the host; it never decides success, and a NaN decides nothing.
    n, k = mats.shape[0], mats.shape[-1]
    left, right = slice(0, n - 1 if n % 2 else n, 2), slice(1, n, 2)
    bound = math.log(floor / k) - 1.0
    rows = ops.amax(ops.detach(mats[left]), -1, keepdims=True) - c[left]
    if bool(ops.amin(rows) < bound):
        return True
    cols = ops.amax(ops.detach(mats[right]), -2, keepdims=True) - c[right]
    return bool(ops.amin(cols) < bound)


def scaled_log_tree(mats, stop: int = 1) -> list | None:
    """``log_tree(ops.logaddexp, ops.add, mats, stop)`` computed in linear space (see the
    module docstring), as a list of the ``n <= stop`` log matrices left; None where a
    product may have lost digits (or holds a zero, a NaN or an infinity), for the caller to
    compute exactly, and where no product is left to take. Eager arrays only: it reads the
    values.

    Example:
        >>> mats = np.array([[[0.0, -np.inf], [-np.inf, 0.0]]] * 3)  # true zeros
        >>> scaled_log_tree(mats) is None
        True
    """
    if mats.shape[0] <= stop:
        return None
    if isinstance(mats, np.ndarray):  # NaN and infinities are found by the check, silently
        with np.errstate(all="ignore"):
            return _scaled_log_tree(mats, stop)
    return _scaled_log_tree(mats, stop)


def _scaled_log_tree(mats, stop: int):
    xp = backend_of(mats).LOOP_FNS
    c = xp.max2(mats)  # (T, *batch, 1, 1)
    if _first_round_fails(mats, c, linear_exp_floor(mats.dtype, mats.shape[-1])):
        return None
    p, floor = linear_exp(mats - c)  # NaN where c is not finite: the check below fails then
    # Each product is divided by its (detached) maximum; the final product is the product
    # of all steps, so every divisor multiplies into it once, whatever its round. The later
    # products (for their smallest entry) and the divisors are gathered and read at the
    # end: a round is a matrix product, a maximum and a division.
    products, scales = [], []
    # With stop > 1 the last step may pass every round unmultiplied: its entries are then
    # returned alone, so a zero (an -inf step entry, or one linear_exp cut) would be a -inf
    # log where a sum would have absorbed it, and log(0)'s derivative NaN. Checked at the end.
    raw_last = True
    while p.shape[0] > stop:
        n = p.shape[0]
        raw_last = raw_last and n % 2 == 1
        q = xp.matmul(p[0:n - 1:2], p[1::2]) if n % 2 else xp.matmul(p[0::2], p[1::2])
        s = xp.max2(q)
        if not products and not xp.smallest(q) >= floor:
            # Read once early too: a chain with true zeros (a left-to-right HMM) fails at
            # its first round, and goes to the exact tree without running the others.
            return None
        products.append(q)
        scales.append(s)
        q = q / s
        p = xp.cat([q, p[n - 1:]]) if n % 2 else q
    if len(products) > 1 and not xp.smallest(xp.cat(products[1:])) >= floor:
        return None
    if raw_last and not xp.smallest(p[-1:]) >= floor:
        return None
    logs = xp.log(p)
    shift = xp.total(xp.cat([c, xp.log(xp.cat(scales))]))
    return [logs[0] + shift] + [logs[i] for i in range(1, logs.shape[0])]


def scaled_log_chain(mats, left, right, sweep: int = SWEEP):
    """The log-space chain product of ``mats`` ``(T, *batch, K, K)`` with its boundaries
    summed out (``left`` ``(*batch, P)`` over the first prev states, ``right`` ``(*batch, C)``
    over the last curr states; either may be None, not both, or ``UNIT``: summed with unit
    weights), in linear space as
    ``scaled_log_tree``: rounds of pairwise products until at most ``sweep`` matrices are
    left, then the boundary vector through them one by one. Returns ``(*batch,)`` with both
    boundaries, the ``(*batch, C)`` forward message with ``left`` only, the ``(*batch, P)``
    backward message with ``right`` only; None where a product or a message may have lost
    digits (or holds a zero, a NaN or an infinity), for the caller to compute exactly.
    Eager arrays only: it reads the values.

    Example:
        >>> mats = np.log(np.full((5, 2, 2), 0.5))
        >>> float(np.exp(scaled_log_chain(mats, np.zeros(2), np.zeros(2))))
        2.0
        >>> np.exp(scaled_log_chain(mats, UNIT, None)).tolist()  # column sums
        [1.0, 1.0]
    """
    if mats.shape[0] < 1 or (left is None and right is None):
        return None
    if isinstance(mats, np.ndarray):
        with np.errstate(all="ignore"):
            return _scaled_log_chain(mats, left, right, sweep)
    return _scaled_log_chain(mats, left, right, sweep)


def _scaled_log_chain(mats, left, right, sweep: int):
    xp = backend_of(mats).LOOP_FNS
    c = xp.max2(mats)
    p, floor = linear_exp(mats - c)
    # Rounds as in _scaled_log_tree, except that an odd round sets its last matrix aside
    # (the sweep takes it, after the later rounds' matrices) instead of concatenating it,
    # and that in double precision every other round skips the rescaling: products of
    # matrices whose maximum is 1 stay below K^3, and a product that a skipped rescaling
    # leaves below the floor fails the check like any other (then the exact tree runs).
    wide = floor < 1e-200
    checked, scales, tails = [], [], []
    while p.shape[0] > sweep:
        n = p.shape[0]
        if n % 2:
            tails.append(p[n - 1])
            q = xp.matmul(p[0:n - 1:2], p[1::2])
        else:
            q = xp.matmul(p[0::2], p[1::2])
        if not checked and not xp.smallest(q) >= floor:
            return None  # true zeros (a left-to-right chain) fail here, before more rounds
        checked.append(q)
        if wide and len(checked) % 2:
            p = q  # its maximum is at most K: the next round's at most K^3
            continue
        s = xp.max2(q)
        scales.append(s)
        p = q / s
    seq = xp.unbind(p) + tails[::-1]
    # The messages: a zero of a boundary is exact (no digit to lose); every computed
    # message entry is checked against the floor as the products are. A UNIT boundary
    # starts as the sum of the first matrix's rows (the last one's columns).
    vectors, maxima, last = [], [], None
    if left is not None:
        if left is UNIT:
            v, seq, row = xp.sum(seq[0], -2, True), seq[1:], True
            vectors.append(v)
        else:
            maxima.append(xp.max1(left))
            v = xp.exp(left - maxima[-1])
            row = v.ndim != 2 or p.ndim != 3  # else (R, K) times (K, K): plain products
            v = v[..., None, :] if row else v
        for m in seq:
            v = xp.matmul(v, m)
            vectors.append(v)
        v = v[..., 0, :] if row else v
        if right is UNIT:
            v = xp.sum(v, -1, False)  # entries at least the floor: so is their sum
        elif right is not None:
            maxima.append(xp.max1(right))
            v = last = xp.sum(v * xp.exp(right - maxima[-1]), -1, False)
    else:
        if right is UNIT:
            v, seq = xp.sum(seq[-1], -1, True), seq[:-1]
            vectors.append(v)
        else:
            maxima.append(xp.max1(right))
            v = xp.exp(right - maxima[-1])[..., :, None]
        for m in reversed(seq):
            v = xp.matmul(m, v)
            vectors.append(v)
        v = v[..., 0]
    if len(checked) > 1 and not xp.smallest(xp.cat(checked[1:])) >= floor:
        return None
    if vectors and not xp.smallest(xp.cat(vectors)) >= floor:
        return None
    if last is not None and not xp.smallest(last) >= floor:
        return None
    # The subtracted logs: every step's maximum, every divisor, the boundaries' maxima.
    shift = xp.total(xp.cat([c, xp.log(xp.cat(scales))]) if scales else c)[..., 0]
    for m in maxima:
        shift = shift + m
    result = xp.log(v)
    return result + (shift if left is None or right is None else shift[..., 0])
