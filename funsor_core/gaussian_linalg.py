"""Small array helpers of the square-root Gaussian algebra (``gaussian_math``).

Batch dims are on the left, events of one or two dims on the right. Everything uses
``funsor_core.ops`` only, so it runs on every backend and under ``jax.jit``.

Example:
    >>> batch_shape(np.zeros((3, 2, 2)), 2)
    (3,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from funsor_core import ops
from funsor_core.domains import broadcast_shape

Array = Any  # an array of any registered backend

NEEDS_FULL_RANK = (
    "{what} needs a full-rank precision, but prec_sqrt has shape {shape}: rank {rank} < dim "
    "{dim}, so the density is flat along some direction and has no {what}. Add a prior or an "
    "observation (concat another density) first."
)


def batch_shape(x: Array, event_ndim: int) -> tuple[int, ...]:
    return tuple(x.shape[: len(x.shape) - event_ndim])


def expand(x: Array, batch: tuple[int, ...], event_ndim: int) -> Array:
    event = tuple(x.shape[len(x.shape) - event_ndim:])
    if tuple(x.shape) == batch + event:
        return x
    return ops.expand(x, batch + event)


def broadcast(*pairs: tuple[Array, int]) -> tuple[tuple[int, ...], list[Array]]:
    """Expand arrays (each given with its event ndim) to their common batch shape."""
    shapes = [batch_shape(x, n) for x, n in pairs]
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case: nothing to expand
        return first, [x for x, _ in pairs]
    batch = broadcast_shape(*shapes)
    return batch, [expand(x, batch, n) for x, n in pairs]


def mT(x: Array) -> Array:  # noqa: N802 (the matrix-transpose name used by torch and jax)
    return ops.transpose(x, -1, -2)


def vm(v: Array, m: Array) -> Array:
    """Batched vector-matrix product ``v @ m``."""
    return ops.getitem(ops.matmul(ops.getitem(v, (Ellipsis, None, slice(None))), m),
                       (Ellipsis, 0, slice(None)))


def mv(m: Array, v: Array) -> Array:
    """Batched matrix-vector product ``m @ v``."""
    return ops.getitem(ops.matmul(m, ops.getitem(v, (Ellipsis, None))), (Ellipsis, 0))


def sumsq(x: Array, event_ndim: int = 1) -> Array:
    return ops.sum(ops.mul(x, x), tuple(range(-event_ndim, 0)))


def solve_upper(r: Array, z: Array) -> Array:
    """``r^{-1} z`` for upper triangular ``r`` and a batch of vectors ``z``."""
    z = ops.getitem(z, (Ellipsis, None))
    return ops.getitem(ops.triangular_solve(z, r, upper=True), (Ellipsis, 0))


def log_abs_diag(r: Array) -> Array:
    return ops.sum(ops.log(ops.abs(ops.diagonal(r))), -1)


def check_index(dim: int, index: Sequence[int], what: str) -> tuple[int, ...]:
    index = tuple(int(i) for i in index)
    if len(set(index)) != len(index) or not all(0 <= i < dim for i in index):
        raise ValueError(f"{what} must be distinct ints in [0, {dim}), got {list(index)}")
    return index


def split_index(dim: int, b_index: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    b = check_index(dim, b_index, "b_index")
    a = tuple(i for i in range(dim) if i not in set(b))
    return b, a


def rows(x: Array, index: Sequence[int]) -> Array:
    """``x[..., index, :]``, with a slice where the index is a contiguous run.

    Example:
        >>> rows(np.arange(6.0).reshape(3, 2), [2, 0])
        array([[4., 5.],
               [0., 1.]])
    """
    index = tuple(index)
    if not index:
        return ops.getitem(x, (Ellipsis, slice(0, 0), slice(None)))
    if index == tuple(range(index[0], index[-1] + 1)):
        return ops.getitem(x, (Ellipsis, slice(index[0], index[-1] + 1), slice(None)))
    idx = ops.new_array(x, list(index))
    return ops.getitem(x, (Ellipsis, idx, slice(None)))


def triangularize(a: Array, w: Array, canonical: bool = True) -> tuple[Array, Array, Array]:
    """Rotate the system ``||a @ v - w||`` (``a``: r x n with r >= n) to triangular form.

    Returns ``(r_upper, z, shift)`` with ``-0.5 ||a v - w||^2 == -0.5 ||r_upper v - z||^2 +
    shift`` for every ``v``. One QR of ``[[a, w], [0, 1]]`` gives all three: the extra row
    keeps the last column independent of the others, so the QR stays differentiable when
    ``w`` lies in the span of ``a`` (a consistent system, e.g. every mean zero); its last
    diagonal entry is ``sqrt(1 + ||residual||^2)``. With ``canonical`` the rows are signed so
    the diagonal is nonnegative (``R`` is then unique: ``R.T`` is the Cholesky factor of the
    precision, the same on every backend, and so are samples drawn from it); without, row
    signs are the QR kernel's, which describes the same density (a row of ``R`` and its entry
    of ``z`` flip together) at 7 fewer array calls.
    """
    n = a.shape[-1]
    batch, (a, w) = broadcast((a, 2), (w, 1))
    top = ops.cat([a, ops.getitem(w, (Ellipsis, None))], -1)
    bottom = ops.cat([ops.new_zeros(a, batch + (1, n)), ops.new_full(a, batch + (1, 1), 1.0)], -1)
    rr = ops.qr_r(ops.cat([top, bottom], -2))
    if canonical:
        diag = ops.diagonal(rr)
        one = ops.full_like(diag, 1.0)
        rr = ops.mul(rr, ops.getitem(ops.where(ops.ge(diag, 0.0), one, ops.neg(one)),
                                     (Ellipsis, slice(None), None)))
    r_upper = ops.getitem(rr, (Ellipsis, slice(0, n), slice(0, n)))
    z = ops.getitem(rr, (Ellipsis, slice(0, n), n))
    c = ops.getitem(rr, (Ellipsis, n, n))
    shift = ops.mul(-0.5, ops.sub(ops.mul(c, c), 1.0))
    return r_upper, z, shift


def householder(m: Array, k: int) -> tuple[Array, Array]:
    """Reflect the rows of ``m`` (batch + (r, n), r >= k) to zero its first k columns below
    the diagonal; return the trailing block ``(r - k, n - k)`` and ``|R_jj|`` (batch + (k,)).

    The trailing block is ``Q2.T @ m[:, k:]`` for an orthonormal basis ``Q2`` of the complement
    of the span of the first k columns. Only those k columns build the reflectors, so the
    result is differentiable whenever they have full rank (``ops.qr_r`` of a wide matrix is
    not differentiable in jax, and QR of a rank-deficient tall matrix nowhere).
    """
    norms = []
    for _ in range(k):
        col = ops.getitem(m, (Ellipsis, slice(None), 0))
        rest = ops.getitem(m, (Ellipsis, slice(None), slice(1, None)))
        x0 = ops.getitem(col, (Ellipsis, 0))
        norm = ops.sqrt(sumsq(col))
        one = ops.full_like(x0, 1.0)
        sign = ops.where(ops.ge(x0, 0.0), one, ops.neg(one))
        # v = col - alpha e1 with alpha = -sign(x0) |col|: the first entry adds, never cancels.
        v0 = ops.add(x0, ops.mul(sign, norm))
        v = ops.cat([ops.getitem(v0, (Ellipsis, None)),
                     ops.getitem(col, (Ellipsis, slice(1, None)))], -1)
        beta = ops.safediv(2.0, sumsq(v))  # v = 0 only for a zero column: then no reflection
        vt_rest = vm(v, rest)
        rest = ops.sub(rest, ops.mul(ops.getitem(beta, (Ellipsis, None, None)),
                                     ops.mul(ops.getitem(v, (Ellipsis, slice(None), None)),
                                             ops.getitem(vt_rest, (Ellipsis, None, slice(None))))))
        m = ops.getitem(rest, (Ellipsis, slice(1, None), slice(None)))  # row 0 is R's row
        norms.append(norm)
    if not norms:
        return m, ops.new_zeros(m, batch_shape(m, 2) + (0,))
    return m, ops.stack(norms, -1)


def require_full_rank(prec_sqrt: Array, what: str) -> None:
    dim, rank = prec_sqrt.shape[-2:]
    if rank < dim:
        raise ValueError(NEEDS_FULL_RANK.format(
            what=what, shape=tuple(prec_sqrt.shape), rank=rank, dim=dim))


