"""The parallel strategy of a discrete chain: the product of ``T`` step matrices in
``ceil(log2 T)`` rounds of batched pairwise products.

``log_tree`` multiplies in any semiring, each round one batched semiring product (for
``(logaddexp, add)`` a broadcast ``logsumexp``, about ten array calls' worth of kernels and
``K^3`` exps per pair). ``scaled_log_tree`` computes the log-space product in linear space
instead, eagerly (numpy, torch): every matrix is exponentiated once after subtracting its
maximum, a round is a batched matrix product and a rescaling by each product's maximum, and
the subtracted logs add up on the side. That is exact to rounding as long as no entry of a
product falls below ``tiny / eps`` of the dtype: a term lost to underflow is then below
``eps`` of the sum it belongs to. The smallest entry of every product is checked, after the
first round (where a chain with true zeros fails at once) and for the others at the end; a
true zero, a lost digit, a NaN or an infinity sends the chain back to ``log_tree``. That
reads values, so it is for eager arrays only (``jax.jit`` keeps ``log_tree``).
``scaled_log_chain`` does the same for a chain whose boundary states are summed (an HMM's
likelihood, a filter's last message): its rounds stop at ``SWEEP`` matrices, and the
boundary vector goes through those one by one, a vector-matrix product each instead of the
last rounds and a broadcast reduction (about 40% of the eager chain's array calls at K = 4,
T = 100).

Example:
    >>> mats = np.log(np.full((5, 2, 2), 0.5))
    >>> np.exp(log_tree(ops.logaddexp, ops.add, mats)[0]).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    >>> np.allclose(scaled_log_tree(mats)[0], log_tree(ops.logaddexp, ops.add, mats)[0])
    True
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_padding import passed, real_min, zero_padded
from funsor_core.algorithms.chains.discrete_precision import (
    linear_exp,
    single_precision,
)
from funsor_core.algorithms.chains.discrete_scaled import (
    UNIT,
    scaled_log_chain,
    scaled_log_tree,
)
from funsor_core.algorithms.contract.kernels import BROADCAST_LIMIT, log_sum, pair
from funsor_core.algorithms.contract.linear_space import log_limits

__all__ = ["UNIT", "checked_shifted_tree", "guarded_log_tree", "linear_exp", "log_tree",
           "normalized_log_tree", "parallel_chain", "scaled_log_chain", "scaled_log_tree",
           "semiring_mm", "semiring_mv", "semiring_vm", "shifted_log_tree", "with_units"]

# Where ``scaled_log_tree`` fails (steps whose entries span more than the dtype's range),
# ``checked_shifted_tree`` takes the chain from this many states: its rounds cost about
# twice the broadcast tree's at K = 4 and 0.6x at K = 16 (torch, T = 1,000, with gradient).
SHIFTED_FROM = 8

_LETTERS = "abcdefghijklmnopqrstuvw"  # batch dims; x, y, z name the matrix dims


def semiring_mm(sum_op, prod_op, a, b):
    """``(..., P, M) x (..., M, C) -> (..., P, C)``: a matrix product in the semiring.

    Example:
        >>> a = np.log(np.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> np.allclose(np.exp(semiring_mm(ops.logaddexp, ops.add, a, a)), [[7, 10], [15, 22]])
        True
    """
    if sum_op is ops.add and prod_op is ops.mul:
        return ops.matmul(a, b)
    if sum_op is ops.logaddexp and prod_op is ops.add:
        sa, sb = a.shape, b.shape
        size = max(math.prod(sa[:-2]), math.prod(sb[:-2])) * sa[-2] * sa[-1] * sb[-1]
        if size > BROADCAST_LIMIT and ops.is_concrete(a) and ops.is_concrete(b):
            # A large product: the kernels' shifted matrix product, checked for lost digits
            # (recomputed exactly where the operands peak at different states).
            na, nb = len(a.shape) - 2, len(b.shape) - 2
            batch = _LETTERS[:max(na, nb)]
            return pair(sum_op, prod_op, a, batch[len(batch) - na:] + "xy", b,
                        batch[len(batch) - nb:] + "yz", batch + "xz")
    return _reduce(sum_op, prod_op(a[..., :, :, None], b[..., None, :, :]), -2)


def _reduce(sum_op, x, axis):
    if sum_op is ops.logaddexp:
        return log_sum(x, axis)
    return ops.REDUCE_OPS[sum_op](x, axis=axis)


def semiring_vm(sum_op, prod_op, v, a):
    """``(..., M) x (..., M, C) -> (..., C)``: a vector times a matrix in the semiring.

    Example:
        >>> semiring_vm(ops.max, ops.add, np.array([0.0, 1.0]), np.zeros((2, 2))).tolist()
        [1.0, 1.0]
    """
    if sum_op is ops.add and prod_op is ops.mul:
        return ops.matmul(v[..., None, :], a)[..., 0, :]
    return _reduce(sum_op, prod_op(v[..., :, None], a), -2)


def semiring_mv(sum_op, prod_op, a, v):
    """``(..., P, M) x (..., M) -> (..., P)``: a matrix times a vector in the semiring.

    Example:
        >>> semiring_mv(ops.add, ops.mul, np.ones((2, 3)), np.ones(3)).tolist()
        [3.0, 3.0]
    """
    if sum_op is ops.add and prod_op is ops.mul:
        return ops.matmul(a, v[..., None])[..., 0]
    return _reduce(sum_op, prod_op(a, v[..., None, :]), -1)


def _dot(sum_op, prod_op, u, v):
    # (..., C) . (..., C) -> (...)
    return _reduce(sum_op, prod_op(u, v), -1)


def _mm(sum_op, prod_op, a, b):
    # semiring_mm, with the broadcast form inlined for the small log-space products of a
    # round (the size test and the dispatch are a fair part of a small round's time).
    if sum_op is ops.logaddexp and prod_op is ops.add and (
            a.shape[0] * a.shape[-1] ** 3 * math.prod(a.shape[1:-2]) <= BROADCAST_LIMIT):
        return log_sum(a[..., :, :, None] + b[..., None, :, :], -2, primitives=True)
    return semiring_mm(sum_op, prod_op, a, b)


def log_tree(sum_op, prod_op, mats, stop: int = 1, pad=None):
    """The product of the square matrices ``mats`` ``(T, *batch, K, K)`` in the semiring,
    contracting steps (0, 1), (2, 3), ... at once, halving ``T`` each round, until at most
    ``stop`` remain: ``(n, *batch, K, K)``, ``n <= stop``, whose product is the total.
    ``pad``: the padded steps of a power-of-two ``T`` (``discrete_padding``), passed over.

    Example:
        >>> log_tree(ops.add, ops.mul, np.ones((5, 2, 2)), stop=2).shape
        (2, 2, 2)
    """
    # An odd round passes its last step on to the next round unmultiplied (after the
    # products, so the order holds): one concatenation, where a step set aside would cost
    # a semiring product at the end.
    while mats.shape[0] > stop:
        n = mats.shape[0]
        if n % 2:
            mats = ops.cat([_mm(sum_op, prod_op, mats[0:n - 1:2], mats[1::2]),
                            mats[n - 1:]], 0)
        else:
            q = _mm(sum_op, prod_op, mats[0::2], mats[1::2])
            mats, pad = (q, None) if pad is None else passed(pad, mats[0::2], q)
    return mats


def with_units(prod_op, left, right, proto, shape: tuple):
    """``left`` and ``right`` with a ``UNIT`` boundary made an array of ``prod_op``'s unit, of
    ``shape`` ``(*batch, K)`` (and ``proto``'s backend and dtype).

    Example:
        >>> with_units(ops.add, UNIT, None, np.zeros(1), (2,))
        (array([0., 0.]), None)
    """
    if left is not UNIT and right is not UNIT:
        return left, right
    unit = ops.new_full(proto, shape, float(ops.UNITS[prod_op]))
    return (unit if left is UNIT else left), (unit if right is UNIT else right)


def guarded_log_tree(mats, cond, pad=None, checkpoint=None, scan=None):
    """``log_tree(ops.logaddexp, ops.add, mats)[0]`` on a compiling backend: the linear-space
    tree of ``scaled_log_tree`` (a matrix product per round, ``K^2`` exps per step instead
    of ``K^3``), its smallest entries checked on the device; where a product may have lost
    digits (or holds a zero, a NaN or an infinity), ``cond`` runs the exact log-space tree
    instead. Nothing is read on the host, so it runs under ``jax.jit``. ``pad``: as
    ``log_tree``'s (padded steps hold zeros: their shift is 0). ``checkpoint`` and ``scan``:
    the backend's, for the exact branch (see ``_exact_branch``).

    Example:
        >>> mats = np.log(np.full((5, 2, 2), 0.5))
        >>> cond = lambda ok, f, g, x: f(x) if ok else g(x)
        >>> np.exp(guarded_log_tree(mats, cond)).round(6).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    floor = math.exp(log_limits(mats.dtype)[0])  # tiny / eps

    def max2(x):
        return ops.amax(ops.detach(x), axis=(-2, -1), keepdims=True)

    # Differentiated as it runs (the exact tree's derivative materializes K^3 weights per
    # step). Where cond discards this branch (the check failed: a zero, an infinite shift),
    # its values are wrong but its derivative must stay finite, since under vmap cond becomes
    # a select and 0 * inf is NaN: shifts, divisors and logs are taken of safe stand-ins there.
    c, pad0 = _finite_or_zero(max2(mats)), pad  # (T, *batch, 1, 1)
    p = ops.exp(mats - c)
    shift, smallest = ops.sum(c, axis=0), None
    while p.shape[0] > 1:
        n = p.shape[0]
        q = ops.matmul(p[0:n - 1:2], p[1::2])
        s = _positive_or_one(max2(q))
        low = ops.amin(ops.detach(q)) if pad is None else real_min(pad, ops.detach(q))
        smallest = low if smallest is None else ops.min(smallest, low)
        log_s = ops.log(s) if pad is None else passed(pad, ops.full_like(s, 0.0), ops.log(s))[0]
        shift = shift + ops.sum(log_s, axis=0)
        q = q / s
        if pad is not None:
            q, pad = passed(pad, p[0::2], q)
        p = ops.cat([q, p[n - 1:]], 0) if n % 2 else q
    if smallest is None:
        return mats[0]
    fast = ops.log(_positive_or_one(p[0])) + shift
    return cond(smallest >= floor, lambda _: fast, _exact_branch(checkpoint, pad0, scan), mats)


def _exact_branch(checkpoint, pad, scan=None):
    # The exact log-space product as cond's other branch, of the step matrices. Under reverse
    # mode a cond keeps the residuals of both branches (the untaken one's filled with zeros):
    # the exact tree's are K^3 weights per step, 3x the whole fast derivative (K = 16), so
    # the branch is checkpointed: its residual is its input, recomputed only when taken.
    # With ``scan`` (and no padding), a chain whose first round would broadcast more than
    # ``STEPPED_FROM`` weights multiplies each round's pairs one pair at a time: the compiled
    # program reserves that broadcast as scratch on every call, taken or not (1.25 GB at
    # K = 32, T = 1,000, batch 16, against 0.47 GB; value and gradient 329 against 265 ms;
    # when taken 2.40 against 2.56 s). The same tree, so the same rounding: O(log T)
    # roundings deep.
    stepped = None
    if scan is not None and checkpoint is not None and pad is None:
        stepped = _scanned_exact(scan, checkpoint)

    def exact(m):
        if stepped is not None and m.shape[0] // 2 * math.prod(m.shape[1:]) * m.shape[-1] > (
                STEPPED_FROM):
            return stepped(m)
        return log_tree(ops.logaddexp, ops.add, m, pad=pad)[0]

    return exact if checkpoint is None else checkpoint(exact)


# Weights in the exact tree's first round from which ``_exact_branch`` multiplies pair by
# pair (K = 16, T = 200, batch 8 broadcasts 3.3 M: there the batched round is 25% faster when
# taken, and its scratch is 13 MB).
STEPPED_FROM = 1 << 23


def _scanned_exact(scan, checkpoint):
    # log_tree(logaddexp, add, mats)[0], each round's products by a scan over its pairs
    # (a (*batch, K, K, K) broadcast at a time, recomputed in the backward pass).
    def pair(carry, ab):
        a, b = ab
        return carry, log_sum(a[..., :, :, None] + b[..., None, :, :], -2)

    step = checkpoint(pair, prevent_cse=False)

    def exact(mats):
        none = ops.full_like(mats[0, ..., :1, :1], 0.0)  # a carry the scan needs
        while mats.shape[0] > 1:
            n = mats.shape[0]
            _, q = scan(step, none, (mats[0:n - 1:2], mats[1::2]))
            mats = ops.cat([q, mats[n - 1:]], 0) if n % 2 else q
        return mats[0]

    return exact


# The compiled chains that take their derivative from the exact log-space tree: at most this
# many states and this many step-matrix entries (T x batch x K^2), where the guarded tree's
# cond and checkpoint cost more than K^3 weights per step (jitted value and gradient,
# float32, one thread: K = 2, T = 100: 28 against 40 us; K = 3, T = 100: 36 against 47;
# K = 4, T = 10: 20 against 24). Larger chains differentiate the guarded tree as it runs,
# since its matrix products run as plain products (``backends/jax_matmul.py``): K = 4,
# T = 100, batch 16 0.13 against 0.84 ms, K = 8, T = 100, batch 16 0.86 against 4.2 ms,
# K = 2, T = 1,000 0.11 against 0.17 ms.
EXACT_DERIVATIVE_UP_TO = 4
EXACT_DERIVATIVE_ENTRIES = 2048


def _finite_or_zero(x):
    return ops.where(ops.isfinite(x), x, ops.full_like(x, 0.0))


def _positive_or_one(x):
    return ops.where(x > 0, x, ops.full_like(x, 1.0))


# The largest float32 chain (T x batch x K^2 numbers) rounded as funsor's: under jax.jit its
# value costs as guarded_log_tree's at T = 200, K = 8 (167 against 170 us) but 2.4x more at
# T = 1,000, K = 16 (3.5 against 1.5 ms), where NumPyro's scans and unrolled models differ
# by more than rounding anyway.
FUNSOR_ROUNDING = 1 << 14


def shifted_log_tree(mats, cond=None, pad=None, checkpoint=None, scan=None):
    """``log_tree(ops.logaddexp, ops.add, mats)[0]`` rounded as funsor 0.4.8 rounds its
    ``sequential_sum_product``: the same rounds (steps (0, 1), (2, 3), ..., an odd last step
    passed on), and each pair as funsor's log-space einsum computes it: both operands shifted
    by their maxima over the summed states, exponentiated, one matrix product, its log plus
    the shifts. In float32 that keeps NumPyro's scans equal to its unrolled models (what
    NumPyro's tests compare to 1e-7). A product whose smallest entry is below ``tiny / eps``
    (a digit lost to underflow, a true zero, a NaN) sends the chain to the exact broadcast
    tree: read eagerly, or by ``cond`` on a compiling backend (nothing read on the host).
    ``pad``: as ``log_tree``'s; ``checkpoint`` and ``scan``: as ``guarded_log_tree``'s.

    Example:
        >>> mats = np.log(np.full((5, 2, 2), 0.5, dtype=np.float32))
        >>> np.exp(shifted_log_tree(mats)).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    if mats.shape[0] == 1:
        return mats[0]
    if isinstance(mats, np.ndarray):  # -inf - -inf is found by the check, silently
        with np.errstate(all="ignore"):
            fast, smallest, _ = _shifted_rounds(mats)
    else:
        fast, smallest, _ = _shifted_rounds(mats, pad=pad, safe=cond is not None)
    fast = fast[0]
    floor = math.exp(log_limits(mats.dtype)[0])  # tiny / eps

    exact = _exact_branch(checkpoint, pad, scan)
    if cond is not None:
        return cond(smallest >= floor, lambda _: fast, exact, mats)
    return fast if bool(smallest >= floor) else exact(mats)


def checked_shifted_tree(mats, stop: int = 1) -> list | None:
    """``log_tree(ops.logaddexp, ops.add, mats, stop)`` as a list of the ``n <= stop`` log
    matrices left, each pair as ``shifted_log_tree`` computes it (each operand shifted by its
    maxima over the summed states: a matrix product per pair, ``K^2`` exps per step instead
    of ``K^3``); None where a product's smallest entry is below ``tiny / eps`` (a digit may
    be lost, or it holds a zero, a NaN or an infinity), for the caller to compute exactly.
    Unlike ``scaled_log_tree``'s one shift per matrix, the shifts per row and column keep
    the digits of steps whose entries span more than the dtype's range (an HMM's emissions
    far from the observation). Eager arrays only: it reads the values.

    Example:
        >>> mats = np.full((3, 2, 2), np.log(0.5)) + np.array([0.0, -800.0])  # exp(-800) == 0
        >>> scaled_log_tree(mats) is None, np.allclose(
        ...     checked_shifted_tree(mats)[0], log_tree(ops.logaddexp, ops.add, mats)[0])
        (True, True)
    """
    if mats.shape[0] <= stop:
        return None
    floor = math.exp(log_limits(mats.dtype)[0])  # tiny / eps
    if isinstance(mats, np.ndarray):  # -inf - -inf is found by the check, silently
        with np.errstate(all="ignore"):
            p, smallest, floor = _shifted_rounds(mats, stop, floor)
    else:
        p, smallest, floor = _shifted_rounds(mats, stop, floor)
    if not bool(smallest >= floor):
        return None
    return [p[i] for i in range(p.shape[0])]


def _shifted_rounds(mats, stop: int = 1, early: float | None = None, pad=None,
                    safe: bool = False):
    # ``early``: the floor, read after the first round (eagerly), where a chain with true
    # zeros fails at once; (p, its smallest entry, the floor) then. ``safe``: finite
    # derivatives where the check fails (as in ``guarded_log_tree``).
    p, smallest = mats, None
    while p.shape[0] > stop:
        n = p.shape[0]
        a, b = (p[0:n - 1:2], p[1::2]) if n % 2 else (p[0::2], p[1::2])
        # Detached shifts: the value is shift-invariant, so its derivative is the exp path's.
        sa = ops.amax(ops.detach(a), -1, keepdims=True)
        sb = ops.amax(ops.detach(b), -2, keepdims=True)
        if safe:
            sa, sb = _finite_or_zero(sa), _finite_or_zero(sb)
        if early is None:
            q = ops.matmul(ops.exp(a - sa), ops.exp(b - sb))
        else:
            (ea, floor), (eb, _) = linear_exp(a - sa), linear_exp(b - sb)
            early = max(early, floor)
            q = ops.matmul(ea, eb)
        low = ops.amin(ops.detach(q)) if pad is None else real_min(pad, ops.detach(q))
        if early is not None and smallest is None and not bool(low >= early):
            return p, low, early
        smallest = low if smallest is None else ops.min(smallest, low)
        q = (sa + sb) + ops.log(_positive_or_one(q) if safe else q)
        if pad is not None:
            q, pad = passed(pad, a, q)
        p = ops.cat([q, p[n - 1:]], 0) if n % 2 else q
    return p, smallest, early


def parallel_chain(sum_op, prod_op, mats, left, right, eager_log: bool, compiled=None,
                   pad=None):
    """The product of the step matrices ``mats`` ``(T, *batch, K, K)``, ``T > 1``, with the
    boundary vectors ``left`` / ``right`` (arrays, None, or ``UNIT`` where ``eager_log``)
    summed out, as ``discrete.chain_product`` returns it: by rounds of pairwise
    products. ``eager_log``: an eager ``(logaddexp, add)`` chain, computed in linear space
    (``scaled_log_chain``, ``scaled_log_tree``) where no digit can be lost. ``compiled``
    (a compiling backend): a ``(logaddexp, add)`` product without boundaries takes its
    value from ``guarded_log_tree`` and its derivative from the exact log-space tree; only
    that product takes ``pad`` (``discrete_padding``).

    Example:
        >>> parallel_chain(ops.add, ops.mul, np.ones((3, 2, 2)), np.ones(2), None, False).tolist()
        [8.0, 8.0]
    """
    funsor_rounding = (left is None and right is None and sum_op is ops.logaddexp
                       and prod_op is ops.add and math.prod(mats.shape) <= FUNSOR_ROUNDING
                       and single_precision(mats.dtype))
    if eager_log and funsor_rounding:
        return shifted_log_tree(mats)
    if eager_log:
        # Batch dims of size 1 go: a batch of matrix products is then one plain call (and
        # one node of torch's graph, not six).
        duration, states = mats.shape[0], mats.shape[-1]
        flat = mats.ndim > 3 and math.prod(mats.shape[1:-2]) == 1
        flat_mats = ops.reshape(mats, (duration, states, states)) if flat else mats
        if left is not None or right is not None:
            total = scaled_log_chain(flat_mats, left, right)
            if total is not None:
                return total
            left, right = with_units(prod_op, left, right, mats, tuple(mats.shape[1:-1]))
        return _tree_chain(sum_op, prod_op, mats, left, right, flat_mats)
    if (compiled is not None and left is None and right is None and sum_op is ops.logaddexp
            and prod_op is ops.add):
        # funsor's sequential_sum_product under jax.jit (benchmarks/idioms.py, K = 4 and
        # K = 32 batch 16 rows): the broadcast log-space tree pays K^3 exps per step.
        # In float32, funsor's rounding (``shifted_log_tree``) instead. Differentiated as it
        # runs (K^2 per step, where the exact tree's derivative materializes K^3 weights:
        # NumPyro's jitted gradients at K = 16 took 3.5x funsor's), but for the smallest
        # chains (``EXACT_DERIVATIVE_ENTRIES``), where the exact tree's derivative is cheaper.
        guarded = shifted_log_tree if funsor_rounding else guarded_log_tree
        if pad is not None:  # a factor shared by all steps filled the padded steps too
            mats = zero_padded(pad, mats)
        if (mats.shape[-1] > EXACT_DERIVATIVE_UP_TO
                or math.prod(mats.shape) > EXACT_DERIVATIVE_ENTRIES):
            return guarded(mats, compiled.cond, pad, compiled.checkpoint,
                           compiled.scan)
        # (``pad`` is an argument, not a closure: a derivative rule sees no outer tracers)
        return compiled.differentiate_as(
            lambda m, *pd: guarded(m, compiled.cond, *pd),
            lambda m, *pd: log_tree(ops.logaddexp, ops.add, m, 1, *pd)[0],
            (mats,) if pad is None else (mats, pad))
    assert pad is None, "padded steps (discrete_padding) reach only the tree above"
    return _tree_chain(sum_op, prod_op, mats, left, right, None)


def _tree_chain(sum_op, prod_op, mats, left, right, flat_mats):
    if sum_op is ops.add and prod_op is ops.mul:
        total = log_tree(sum_op, prod_op, mats)[0]
        if left is not None:
            total = semiring_vm(sum_op, prod_op, left, total)
            return total if right is None else _dot(sum_op, prod_op, total, right)
        return total if right is None else semiring_mv(sum_op, prod_op, total, right)
    # The boundaries are summed in one reduction with the total. Where the broadcast of the
    # last product, (*batch, P, M, C), is small, that product joins it too: one reduction (a
    # logsumexp) instead of three.
    fused = (left is not None or right is not None) and (
        math.prod(mats.shape[1:]) * mats.shape[-1] <= BROADCAST_LIMIT)
    stop = 2 if fused else 1  # T > 1 here: two steps remain when fused
    rest = None if flat_mats is None else scaled_log_tree(flat_mats, stop)
    if rest is not None and flat_mats is not mats and not fused:
        rest = [ops.reshape(rest[0], tuple(mats.shape[1:]))]
    if rest is None and flat_mats is not None and mats.shape[-1] >= SHIFTED_FROM:
        rest = checked_shifted_tree(mats, stop)
    shift = None
    if rest is None and prod_op is ops.add and sum_op in (ops.logaddexp, ops.max):
        rest, shift = normalized_log_tree(sum_op, mats, stop)
    elif rest is None:
        rest = log_tree(sum_op, prod_op, mats, stop)
    if fused:
        total, axes = prod_op(rest[0][..., :, :, None], rest[1][..., None, :, :]), (-2,)
        if left is not None:
            total, axes = prod_op(left[..., :, None, None], total), (-3, -2)
        if right is not None:
            total, axes = prod_op(total, right[..., None, None, :]), axes + (-1,)
        total = _reduce(sum_op, total, axes)
        return total if shift is None else total + _trailing(shift[0], len(axes) - 1)
    total, axes = rest[0], ()
    if left is not None:
        total, axes = prod_op(left[..., :, None], total), (-2,)
    if right is not None:
        total, axes = prod_op(total, right[..., None, :]), axes + (-1,)
    total = _reduce(sum_op, total, axes) if axes else total
    return total if shift is None else total + _trailing(shift[0], len(axes))


def _trailing(shift, boundaries: int):
    # A shift (*batch, 1, 1) against a total (*batch, [P], [C]): a summed boundary's dim goes.
    for _ in range(boundaries):
        shift = shift[..., 0]
    return shift


# The rounds between two shifts of ``normalized_log_tree``'s products. The steps are shifted
# first (each to a maximum of 0: exact in floating point, and it takes out a common offset,
# the usual cause of large magnitudes). A product's entries lie within its factors' ranges
# summed, so k rounds unshifted sum 2^k matrices, each within the range of what was last
# shifted: float32 rounds at most 2^k times coarser than in a tree shifted every round, far
# finer than in a plain tree, whose entries grow with T (measured on steps of -1e4 + N(0, 9),
# T = 4,096: 2.6e-6 for k = 3, 1e-6 every round, 5.4 plain). Each shift is a reduction and a
# subtraction more: compiled, shifting every round cost a small tree a quarter of its time.
SHIFT_ROUNDS = 3


def _shifted(x, shifts: list):
    s = ops.amax(ops.detach(x), axis=(-2, -1), keepdims=True)
    s = ops.where(ops.isfinite(s), s, ops.full_like(s, 0.0))  # an all -inf matrix stays
    shifts.append(s)
    return x - s


def normalized_log_tree(sum_op, mats, stop: int = 1) -> tuple:
    """``log_tree(sum_op, ops.add, mats, stop)`` for ``sum_op`` ``logaddexp`` or ``max``, as
    ``(rest, shift)``: the matrices left and the detached shift ``(1, *batch, 1, 1)`` to add
    back after the caller's last sum. The steps, and every ``SHIFT_ROUNDS`` rounds the
    products, are shifted to a maximum of 0 each, so no entry grows with ``T`` (plain
    log-space rounds reach ``T`` times a step's magnitude: near -1e8 after 10^4 steps of
    -1e4, where a float32 ulp is 8 and the differences that marginals and Viterbi read are
    gone).

    Example:
        >>> mats = np.full((4, 2, 2), -1e4)
        >>> rest, shift = normalized_log_tree(ops.max, mats)
        >>> rest[0].tolist(), float(shift[0, 0, 0])
        ([[0.0, 0.0], [0.0, 0.0]], -40000.0)
    """
    shifts, rounds = [], 0
    mats = _shifted(mats, shifts)
    while mats.shape[0] > stop:
        n = mats.shape[0]
        end = n - 1 if n % 2 else n
        q = _mm(sum_op, ops.add, mats[0:end:2], mats[1:end:2])
        rounds += 1
        if rounds % SHIFT_ROUNDS == 0:
            q = _shifted(q, shifts)
        mats = ops.cat([q, mats[n - 1:]], 0) if n % 2 else q
    shift = shifts[0] if len(shifts) == 1 else ops.cat(shifts, 0)
    return mats, ops.sum(shift, 0, keepdims=True)
