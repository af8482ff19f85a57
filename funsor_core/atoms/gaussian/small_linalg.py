"""Products and Cholesky factors of small matrices, written as plain array arithmetic.

Compiled (``jax.jit``) on CPU, XLA hands every matrix product to a library kernel (YNNPACK,
or its own dot emitter) and every batched Cholesky factorization or triangular solve to a
LAPACK call per matrix. For the tiny matrices of a filter step these calls cost far more than
their arithmetic: about 1 us per product of 9 x 4 matrices against 0.05 us for the same
numbers as a fused broadcast-multiply-sum; about 4 us for a batch of nine 9 x 9 Cholesky
factorizations (LAPACK's recursive ``potrf`` splits each down to scalars, one BLAS call per
piece) and as much again for their triangular inverses. A step run a thousand times in a
``lax.scan`` pays that a thousand times. So:

- ``matmul`` is ``a @ b``, except on jax for small products, where it is the broadcast
  product summed over the shared axis (one fused loop).
- ``cholesky_inverse`` gives the Cholesky factor's diagonal and inverse. For ``n <= UNROLL``
  it writes the factorization out entry by entry (a few fused loops over the batch); up to
  ``BLOCK`` it splits the matrix in two halves by blocks,

      G = [[G11, G12], [G21, G22]]:  L11 = chol(G11),  L21 = G21 L11^{-T},
      L22 = chol(G22 - L21 L21'),    L^{-1} = [[L11^{-1}, 0], [-L22^{-1} L21 L11^{-1}, L22^{-1}]]

  (the blocked Cholesky LAPACK itself runs on larger matrices, with ``L11^{-T}`` applied as a
  product, which the caller's conditioning check covers: it accepts only well-conditioned
  matrices); beyond that it calls the library's ``cholesky`` and ``triangular_inv``.

The arithmetic is that of LAPACK's unblocked ``potf2`` (each column scaled by the reciprocal
of its pivot's square root) and of forward substitution, so the rounding error bounds are the
textbook ones. A pivot that is not positive gives NaN (or an infinite inverse), never an
exception: the caller's check must reject non-finite results, as it does for a failed LAPACK
factorization under ``jax.jit``.

Example:
    >>> g = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> diag, inv = cholesky_inverse(g)
    >>> diag.tolist(), (inv @ g @ inv.T).round(12).tolist()  # L = [[2, 0], [1, 2]]
    ([2.0, 2.0], [[1.0, 0.0], [0.0, 1.0]])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.engine.backend import backend_of

__all__ = ["BLOCK", "SMALL_PRODUCT", "UNROLL", "cholesky_inverse", "matmul"]

Array = Any

# Largest n written out entry by entry (a few hundred scalar operations at n = 6).
UNROLL = 6
# Largest n split into blocks; above it, one library call per factorization and inverse.
BLOCK = 16
# Largest number of products (batch size times m k n) of a matmul written as a broadcast
# product on jax: XLA:CPU hands a larger reduction to YNNPACK too, slower than its dot.
SMALL_PRODUCT = 2048


def matmul(a: Array, b: Array) -> Array:
    """``a @ b`` of batches of matrices; on a backend whose ``BROADCAST_SMALL_MATMUL`` says so
    (jax), where the batch size times ``m k n`` is at most ``SMALL_PRODUCT``, the broadcast
    product ``a[..., :, :, None] * b[..., None, :, :]`` summed over ``k``.

    Example:
        >>> matmul(np.ones((2, 3)), np.ones((3, 4))).tolist()[0]
        [3.0, 3.0, 3.0, 3.0]
    """
    if type(a) is np.ndarray or not backend_of(a).BROADCAST_SMALL_MATMUL:
        return a @ b
    m, k = a.shape[-2:]
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    if math.prod(batch) * m * k * b.shape[-1] > SMALL_PRODUCT:
        return a @ b
    return (a[..., :, :, None] * b[..., None, :, :]).sum(-2)


def cholesky_inverse(gram: Array) -> tuple[Array, Array]:
    """``(diag(L), L^{-1})`` for the lower Cholesky factor ``L`` of each symmetric positive
    definite ``n x n`` matrix of a batch (only the lower triangle of ``gram`` is read).

    Example:
        >>> diag, inv = cholesky_inverse(np.eye(3)[None] * 4.0)
        >>> diag.tolist(), inv[0, 0].tolist()
        ([[2.0, 2.0, 2.0]], [0.5, 0.0, 0.0])
    """
    n = gram.shape[-1]
    if n <= UNROLL:
        return _unrolled(gram)
    if n > BLOCK:
        chol = ops.cholesky(gram)
        return ops.diagonal(chol, -2, -1), ops.triangular_inv(chol, upper=False)
    return _blocked(gram)


def _blocked(gram: Array) -> tuple[Array, Array]:
    """``cholesky_inverse`` by the block formulas of the module docstring."""
    n = gram.shape[-1]
    k = n // 2
    diag1, inv11 = cholesky_inverse(gram[..., :k, :k])
    l21 = matmul(gram[..., k:, :k], inv11.swapaxes(-1, -2))
    diag2, inv22 = cholesky_inverse(gram[..., k:, k:] - matmul(l21, l21.swapaxes(-1, -2)))
    inv21 = -matmul(inv22, matmul(l21, inv11))
    zeros = ops.new_zeros(gram, tuple(gram.shape[:-2]) + (k, n - k))
    inv = ops.cat([ops.cat([inv11, zeros], -1), ops.cat([inv21, inv22], -1)], -2)
    return ops.cat([diag1, diag2], -1), inv


def _unrolled(gram: Array) -> tuple[Array, Array]:
    """``cholesky_inverse`` entry by entry: each entry a batch array, so the whole
    factorization is elementwise arithmetic on arrays of the batch's shape. The diagonal is
    read back from the inverse (``1 / (1 / l_jj)``, within an ulp of ``l_jj``): with only
    the inverse consumed, XLA fuses the factorization into fewer loops."""
    n = gram.shape[-1]
    low = [[None] * n for _ in range(n)]
    recip = []
    for j in range(n):  # column j of L: potf2's order
        pivot = gram[..., j, j]
        for k in range(j):
            pivot = pivot - low[j][k] * low[j][k]
        r = 1.0 / ops.sqrt(pivot)  # NaN where the pivot is negative
        recip.append(r)
        for i in range(j + 1, n):
            s = gram[..., i, j]
            for k in range(j):
                s = s - low[i][k] * low[j][k]
            low[i][j] = s * r
    # L^{-1} column by column: x_jj = 1 / l_jj, x_ij = -(sum_{j <= k < i} l_ik x_kj) / l_ii.
    inv = [[None] * n for _ in range(n)]
    for j in range(n):
        inv[j][j] = recip[j]
        for i in range(j + 1, n):
            s = low[i][j] * inv[j][j]
            for k in range(j + 1, i):
                s = s + low[i][k] * inv[k][j]
            inv[i][j] = -s * recip[i]
    zero = ops.new_zeros(gram, tuple(gram.shape[:-2]))
    rows = [ops.stack([inv[i][j] if j <= i else zero for j in range(n)], -1) for i in range(n)]
    inv = ops.stack(rows, -2)
    return 1.0 / ops.diagonal(inv, -2, -1), inv
