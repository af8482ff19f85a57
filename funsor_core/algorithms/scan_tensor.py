"""Array kernels of discrete Markov products: a chain of transition matrices in a semiring.

A discrete chain is pre-aligned once into one array ``mats`` of shape ``(T, *batch, P, C)``
(the prev names flattened into ``P`` states, the curr names into ``C = P``), and the kernels
below touch only arrays: no terms are built per step. ``chain_product`` multiplies the
``T`` matrices in the semiring ``(sum_op, prod_op)``, optionally with a boundary vector on
either side (``left`` over the first prev states, ``right`` over the last curr states) whose
states are summed out:

- neither boundary: the ``(*batch, P, C)`` product of the matrices;
- ``left``: the ``(*batch, C)`` forward message (an HMM filter);
- ``right``: the ``(*batch, P)`` backward message;
- both: the ``(*batch,)`` total (an HMM likelihood).

``"sequential"`` folds the steps one by one: with a boundary the carry is a vector
(``O(T K^2)``), ``lax.scan`` under jax. ``"parallel"`` contracts adjacent pairs in
``ceil(log2 T)`` batched rounds (``O(T K^3)``). A chain that is the same at every step
(``T`` given separately) is a matrix power, by repeated squaring either way.

Everything goes through ``funsor_core.ops`` (numpy, torch, jax; autograd and ``jax.jit``).
Eager jax runs the whole chain as one compiled kernel, cached by its static structure.

Example:
    >>> mats = np.ones((5, 2, 2))
    >>> chain_product(ops.add, ops.mul, mats, "parallel").tolist()
    [[16.0, 16.0], [16.0, 16.0]]
    >>> float(chain_product(ops.add, ops.mul, mats, "sequential", np.ones(2), np.ones(2)))
    64.0
"""

from __future__ import annotations

import functools

from funsor_core import ops
from funsor_core.algorithms.kernels import BROADCAST_LIMIT, pair
from funsor_core.engine.backend import backend_module, backend_name_of

__all__ = ["chain_product", "semiring_mm", "semiring_vm", "semiring_mv"]

_LETTERS = "abcdefghijklmnopqrstuvw"  # batch dims; x, y, z name the matrix dims


def _reduce(sum_op, x, axis: int):
    return ops.REDUCE_OPS[sum_op](x, axis=axis)


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
        size = max(a.shape[-2], 1) * max(a.shape[-1], 1) * max(b.shape[-1], 1)
        for d in (a.shape[:-2] if len(a.shape) >= len(b.shape) else b.shape[:-2]):
            size *= d
        if size > BROADCAST_LIMIT and ops.is_concrete(a) and ops.is_concrete(b):
            # A large product: the kernels' shifted matrix product, checked for lost digits
            # (recomputed exactly where the operands peak at different states).
            batch = _LETTERS[:len(a.shape) - 2]
            nb = _LETTERS[:len(b.shape) - 2]
            return pair(sum_op, prod_op, a, batch + "xy", b, nb + "yz",
                        (batch if len(batch) >= len(nb) else nb) + "xz")
    return _reduce(sum_op, prod_op(a[..., :, :, None], b[..., None, :, :]), -2)


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


# -- the two strategies ------------------------------------------------------------------------
def _tree(sum_op, prod_op, mats):
    # Parallel: contract steps (0, 1), (2, 3), ... at once, halving T each round. An odd
    # round sets its last step aside; set-aside steps follow everything still in ``mats``
    # and precede those set aside earlier, so they are multiplied back in reverse order.
    tails = []
    while mats.shape[0] > 1:
        n = mats.shape[0]
        if n % 2:
            tails.append(mats[n - 1])
            mats = mats[:n - 1]
        mats = semiring_mm(sum_op, prod_op, mats[0::2], mats[1::2])
    result = mats[0]
    for tail in reversed(tails):
        result = semiring_mm(sum_op, prod_op, result, tail)
    return result


def _power(sum_op, prod_op, mat, n: int):
    # mat ** n by repeated squaring: ceil(log2 n) squarings and at most as many products.
    result = None
    while True:
        if n & 1:
            result = mat if result is None else semiring_mm(sum_op, prod_op, result, mat)
        n >>= 1
        if not n:
            return result
        mat = semiring_mm(sum_op, prod_op, mat, mat)


def _loop(fn, carry, xs, reverse: bool, scan):
    # carry <- fn(carry, x) over the leading axis of xs: a lax.scan under jax (one compiled
    # loop), a Python loop over views elsewhere.
    if scan is not None:
        return scan(lambda c, x: (fn(c, x), None), carry, xs, reverse=reverse)[0]
    n = xs.shape[0]
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        carry = fn(carry, xs[t])
    return carry


def _sequential(sum_op, prod_op, mats, left, right, scan):
    n = mats.shape[0]
    if left is not None:
        carry = _loop(lambda v, m: semiring_vm(sum_op, prod_op, v, m), left, mats, False, scan)
        return carry if right is None else _dot(sum_op, prod_op, carry, right)
    if right is not None:
        return _loop(lambda v, m: semiring_mv(sum_op, prod_op, m, v), right, mats, True, scan)
    if n == 1:
        return mats[0]
    return _loop(lambda acc, m: semiring_mm(sum_op, prod_op, acc, m), mats[0], mats[1:],
                 False, scan)


def _run(sum_op, prod_op, strategy, power, has_left, has_right, scan, mats, left, right):
    # The whole chain on arrays; ``power`` is T for a chain the same at every step (mats has
    # one step), else None. Pure in the arrays: jax.jit compiles it once per structure.
    left = left if has_left else None
    right = right if has_right else None
    if power is not None:
        mats = _power(sum_op, prod_op, mats[0], power)[None]
    if strategy == "sequential" or mats.shape[0] == 1:
        return _sequential(sum_op, prod_op, mats, left, right, scan)
    total = _tree(sum_op, prod_op, mats)
    if left is not None:
        total = semiring_vm(sum_op, prod_op, left, total)
        return total if right is None else _dot(sum_op, prod_op, total, right)
    if right is not None:
        return semiring_mv(sum_op, prod_op, total, right)
    return total


@functools.lru_cache(maxsize=256)
def _compiled(sum_op, prod_op, strategy, power, has_left, has_right):
    # One jax.jit per structure: jax caches the traces per shape and dtype beneath it.
    jax_backend = backend_module("jax")
    fn = functools.partial(_run, sum_op, prod_op, strategy, power, has_left, has_right,
                           jax_backend.scan)
    return jax_backend.jit(fn)


def chain_product(sum_op, prod_op, mats, strategy: str, left=None, right=None,
                  power: int | None = None):
    """The semiring product of the matrices ``mats`` (``(T, *batch, P, C)``) along ``T``,
    with optional boundary vectors summed out (see the module docstring).

    Args:
        sum_op, prod_op: the semiring.
        mats: ``(T, *batch, P, C)``; with ``power``, ``T == 1`` and the one matrix repeats.
        strategy: ``"parallel"`` or ``"sequential"``.
        left: ``(*batch, P)`` or None. right: ``(*batch, C)`` or None.
        power: the number of steps of a chain whose matrix is the same at every step.

    Example:
        >>> m = np.array([[[0.5, 0.5], [0.0, 1.0]]])
        >>> chain_product(ops.add, ops.mul, m, "parallel", power=3).tolist()
        [[0.125, 0.875], [0.0, 1.0]]
    """
    has_left, has_right = left is not None, right is not None
    if backend_name_of(mats) == "jax":
        fn = _compiled(sum_op, prod_op, strategy, power, has_left, has_right)
        return fn(mats, left, right)
    return _run(sum_op, prod_op, strategy, power, has_left, has_right, None, mats, left, right)
