"""Small array helpers of the square-root Gaussian algebra (``arrays``).

Batch dims are on the left, events of one or two dims on the right. Everything uses
``funsor_core.ops`` only, so it runs on every backend and under ``jax.jit``.

Example:
    >>> batch_shape(np.zeros((3, 2, 2)), 2)
    (3,)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.domains import broadcast_shape
from funsor_core.engine.backend import backend_module

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
    """Batched vector-matrix product ``v @ m``.

    One matrix for the whole batch (its batch dims all 1) is one matrix product of the
    stacked vectors, ``(..., n) @ (n, k)``: torch would otherwise expand the matrix to the
    vectors' batch and run a small product per vector (1,000 particles times a 10 x 10
    factor: 0.4 ms against 0.05 ms).

    Example:
        >>> vm(np.ones((3, 2)), np.eye(2)[None]).shape
        (3, 2)
    """
    m_batch = tuple(m.shape[:-2])
    if all(n == 1 for n in m_batch):
        out = ops.matmul(v, ops.reshape(m, tuple(m.shape[-2:])) if m_batch else m)
        missing = len(m_batch) - (len(v.shape) - 1)
        return out if missing <= 0 else ops.reshape(out, (1,) * missing + tuple(out.shape))
    return ops.getitem(ops.matmul(ops.getitem(v, (Ellipsis, None, slice(None))), m),
                       (Ellipsis, 0, slice(None)))


def vm_values(v: Array, m: Array) -> tuple[Array, bool]:
    """``v @ m`` for values ``v`` substituted into a density, with ``±inf * 0 = 0``.

    An infinite coordinate of ``v`` moves only the columns where ``m`` is nonzero (to ``±inf``,
    or NaN where both signs meet); a zero entry is a flat direction and adds nothing, where
    IEEE's ``inf * 0 = NaN`` would poison the whole column. NaN in ``v`` stays NaN. Returns
    the product and whether the extended path ran (always under ``jax.jit``, where the values
    cannot be read; eagerly only when the plain product has a NaN, so finite values pay one
    sum).

    Example:
        >>> with np.errstate(invalid="ignore"):  # numpy warns of the plain product's inf * 0
        ...     vm_values(np.array([np.inf, 1.0]), np.array([[0.0, 1.0], [2.0, 0.0]]))
        (array([ 2., inf]), True)
    """
    out = vm(v, m)
    if ops.is_concrete(out):
        total = float(ops.detach(out).sum())
        if total == total:  # no NaN (and no inf - inf): no inf * 0 happened
            return out, False
    up, down = ops.eq(v, np.inf), ops.eq(v, -np.inf)
    out = vm(ops.where(ops.or_(up, down), ops.new_zeros(v, ()), v), m)
    up, down = ops.astype(up, "real"), ops.astype(down, "real")
    pos, neg = ops.astype(ops.gt(m, 0.0), "real"), ops.astype(ops.lt(m, 0.0), "real")
    plus = ops.add(vm(up, pos), vm(down, neg))  # how many +inf terms each column receives
    minus = ops.add(vm(up, neg), vm(down, pos))
    out = ops.where(ops.gt(plus, 0.0), ops.add(out, np.inf), out)
    return ops.where(ops.gt(minus, 0.0), ops.sub(out, np.inf), out), True


def split_infinite(white_vec: Array, prec_sqrt: Array, split: bool) -> tuple:
    """A density ``-0.5 ||x S - w||^2`` with infinite entries of ``w`` made safe to rotate.

    Such a density is ``-inf`` for every finite ``x``. With ``split`` and concrete arrays
    that have such entries: those entries become 0 and the constant ``-inf`` is returned
    (batch-shaped), so later QR steps see finite numbers and keep the information of ``S``.
    Otherwise (traced arrays, or no ``split``) the columns hit get ``S = 0``, so the entry
    stays ``-0.5 (0 - inf)^2`` under rotations instead of spreading as ``inf * 0``; the
    constant is None. NaN entries are left to propagate.

    Example:
        >>> split_infinite(np.array([np.inf, 1.0]), np.array([[1.0, 1.0]]), True)[::2]
        (array([0., 1.]), array(-inf))
    """
    finite = ops.ne(ops.abs(white_vec), np.inf)  # NaN counts as finite here: it stays NaN
    if split and ops.is_concrete(finite):
        if bool(ops.all(finite)):
            return white_vec, prec_sqrt, None
        zero = ops.new_zeros(white_vec, ())
        const = ops.sum(ops.where(finite, zero, ops.new_full(white_vec, (), -np.inf)), -1)
        return ops.where(finite, white_vec, zero), prec_sqrt, const
    keep = ops.getitem(finite, (Ellipsis, None, slice(None)))
    return white_vec, ops.where(keep, prec_sqrt, ops.new_zeros(prec_sqrt, ())), None


def void_infinite(white_vec: Array) -> tuple[Array, Array | None]:
    """``white_vec`` with its ``±inf`` entries set to 0, and where the density is void.

    An infinite entry makes ``-0.5 ||x S - w||^2 = -inf`` for every ``x`` (``split_infinite``
    under ``jax.jit``), so any integral of it is ``log 0 = -inf``, whatever the rank of ``S``.
    Rotating it would spread ``inf * 0 = NaN``, and its zeroed column may leave too few rows
    to pass the rank test (``+inf``): the mask (batch-shaped, True where some entry is
    infinite and none is NaN) lets the caller set ``-inf`` there instead. ``None`` for
    concrete arrays with no infinite entry (one sum decides).

    Example:
        >>> void_infinite(np.array([[np.inf, 1.0], [2.0, 1.0]]))
        (array([[0., 1.],
               [2., 1.]]), array([ True, False]))
    """
    if ops.is_concrete(white_vec):
        total = float(ops.detach(ops.sum(white_vec)))
        if total == total and abs(total) != math.inf:
            return white_vec, None
    infinite = ops.eq(ops.abs(white_vec), math.inf)
    nan = ops.any(ops.ne(white_vec, white_vec), -1)
    void = ops.and_(ops.any(infinite, -1), ops.invert(nan))
    return ops.where(infinite, ops.new_zeros(white_vec, ()), white_vec), void


def mv(m: Array, v: Array) -> Array:
    """Batched matrix-vector product ``m @ v``."""
    return ops.getitem(ops.matmul(m, ops.getitem(v, (Ellipsis, None))), (Ellipsis, 0))


def sumsq(x: Array, event_ndim: int = 1) -> Array:
    return ops.sum(ops.mul(x, x), tuple(range(-event_ndim, 0)))


def solve_upper(r: Array, z: Array) -> Array:
    """``r^{-1} z`` for upper triangular ``r`` and a batch of vectors ``z``."""
    z = ops.getitem(z, (Ellipsis, None))
    return ops.getitem(ops.triangular_solve(z, r, upper=True), (Ellipsis, 0))


def split_system(system: Array, d_a: int) -> tuple[Array, Array]:
    """``[K | z]`` -> ``(K, z)``: a system's matrix (``d_a`` columns) and its last column."""
    return (ops.getitem(system, (Ellipsis, slice(None), slice(0, d_a))),
            ops.getitem(system, (Ellipsis, slice(None), d_a)))


def log_abs_diag(r: Array) -> Array:
    return ops.sum(ops.log(ops.abs(ops.diagonal(r))), -1)


def check_index(dim: int, index: Sequence[int], what: str) -> tuple[int, ...]:
    index = tuple(map(int, index))
    if index and (len(set(index)) != len(index) or min(index) < 0 or max(index) >= dim):
        raise ValueError(f"{what} must be distinct ints in [0, {dim}), got {list(index)}")
    return index


def split_index(dim: int, b_index: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    b = check_index(dim, b_index, "b_index")
    taken = set(b)
    return b, tuple(i for i in range(dim) if i not in taken)


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


def householder(m: Array, k: int, with_r: bool = False):
    """Reflect the rows of ``m`` (batch + (r, n), r >= k) to zero its first k columns below
    the diagonal; return the trailing block ``(r - k, n - k)`` and ``|R_jj|`` (batch + (k,)),
    and with ``with_r`` also the first k rows of ``R`` (batch + (k, n)).

    The trailing block is ``Q2.T @ m[:, k:]`` for an orthonormal basis ``Q2`` of the complement
    of the span of the first k columns. Only those k columns build the reflectors, so the
    result is differentiable whenever they have full rank (``ops.qr_r`` of a wide matrix is
    not differentiable in jax, and QR of a rank-deficient tall matrix nowhere).
    """
    # Finite inputs cannot make a NaN here (a zero column gets beta = 0), but OpenBLAS kernels
    # may leave a stale FE_INVALID flag that numpy reports as "invalid value in matmul"
    # (numpy #13173, #24067), depending on what its buffers held before: one test of the
    # suite failed so in a long run only. A NaN or inf that is there propagates all the same.
    with np.errstate(invalid="ignore"):
        return _householder(m, k, with_r)


def _householder(m: Array, k: int, with_r: bool):
    n = m.shape[-1]
    norms, r_rows = [], []
    for i in range(k):
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
        # beta = 2 / |v|^2; v = 0 only for a zero column, where 1 / 0 is the largest float
        # (safediv) and beta v v' = 0: no reflection (2 / 0 would be inf, and inf * 0 NaN)
        half = ops.mul(sumsq(v), 0.5)
        beta = ops.safediv(ops.full_like(half, 1.0), half)
        vt_rest = vm(v, rest)
        rest = ops.sub(rest, ops.mul(ops.getitem(beta, (Ellipsis, None, None)),
                                     ops.mul(ops.getitem(v, (Ellipsis, slice(None), None)),
                                             ops.getitem(vt_rest, (Ellipsis, None, slice(None))))))
        if with_r:  # row i of R: zeros, R_ii = alpha, then row 0 of the reflected rest
            alpha = ops.neg(ops.mul(sign, norm))
            head = [ops.new_zeros(rest, batch_shape(rest, 2) + (i,))] if i else []
            r_rows.append(ops.cat(head + [ops.getitem(alpha, (Ellipsis, None)),
                                          ops.getitem(rest, (Ellipsis, 0, slice(None)))], -1))
        m = ops.getitem(rest, (Ellipsis, slice(1, None), slice(None)))  # row 0 is R's row
        norms.append(norm)
    if not norms:
        norms = ops.new_zeros(m, batch_shape(m, 2) + (0,))
        r_top = ops.new_zeros(m, batch_shape(m, 2) + (0, n))
    else:
        norms = ops.stack(norms, -1)
        r_top = ops.stack(r_rows, -2) if with_r else None
    return (m, norms, r_top) if with_r else (m, norms)


def require_full_rank(prec_sqrt: Array, what: str) -> None:
    dim, rank = prec_sqrt.shape[-2:]
    if rank < dim:
        raise ValueError(NEEDS_FULL_RANK.format(
            what=what, shape=tuple(prec_sqrt.shape), rank=rank, dim=dim))




# ---------------------------------------------------------------------------------------------
# Square-root form from a location and a scale that funsor accepts in any pairing.
def from_loc_prec_sqrt(loc: str, value: Array, prec_sqrt: Array) -> tuple[Array, Array]:
    """``(white_vec, prec_sqrt)`` from ``mean=`` or ``info_vec=`` and a given factor ``S``.

    With a mean ``m``, ``f(x) = -0.5 ||(x - m) S||^2`` gives ``white_vec = m S``. With an
    info vector ``i`` we need ``S w = i``; the least-norm solution ``w = S' (S S')^{-1} i``
    keeps ``S`` as given (so ``prec_sqrt`` round-trips) and needs ``rank >= dim``.

    Example:
        >>> from_loc_prec_sqrt("info_vec", np.array([2.0]), np.array([[1.0, 1.0]]))[0]
        array([1., 1.])
    """
    _, (value, prec_sqrt) = broadcast((value, 1), (prec_sqrt, 2))
    if loc == "mean":
        return vm(value, prec_sqrt), prec_sqrt
    require_full_rank(prec_sqrt, "info_vec= with prec_sqrt=")
    chol = ops.cholesky(ops.matmul(prec_sqrt, mT(prec_sqrt)))
    y = ops.getitem(ops.cholesky_solve(ops.getitem(value, (Ellipsis, None)), chol),
                    (Ellipsis, 0))
    return vm(y, prec_sqrt), prec_sqrt


def from_info_scale(info_vec: Array, scale: str, value: Array) -> tuple[Array, Array]:
    """``(white_vec, prec_sqrt)`` from ``info_vec=`` and ``precision=``, ``covariance=`` or
    ``scale_tril=``.

    For a covariance ``C = L L'`` the factor is ``S = L^{-T}`` (a triangular solve, no
    inverse), so ``S w = i`` is solved by ``w = L' i``. For a precision ``P = L L'``,
    ``S = L`` and ``w = L^{-1} i``.

    Example:
        >>> w, s = from_info_scale(np.array([2.0]), "covariance", np.array([[4.0]]))
        >>> w, s  # mean = C i = 8, white_vec = mean @ s = 4
        (array([4.]), array([[0.5]]))
    """
    _, (info_vec, value) = broadcast((info_vec, 1), (value, 2))
    if scale == "precision":
        prec_sqrt = ops.cholesky(value)
        white_vec = ops.getitem(
            ops.triangular_solve(ops.getitem(info_vec, (Ellipsis, None)), prec_sqrt),
            (Ellipsis, 0))
        return white_vec, prec_sqrt
    scale_tril = ops.cholesky(value) if scale == "covariance" else value
    eye = expand(ops.new_eye(scale_tril, scale_tril.shape[-1]), batch_shape(scale_tril, 2), 2)
    prec_sqrt = ops.triangular_solve(eye, scale_tril, upper=False, transpose=True)
    return vm(info_vec, scale_tril), prec_sqrt


# ---------------------------------------------------------------------------------------------
# Arrays assembled from blocks (funsor's ``funsor.gaussian.BlockVector`` / ``BlockMatrix``).
def inverse_cholesky(precision: Array) -> Array:
    """The lower Cholesky factor ``L`` of ``precision^{-1}`` (``L @ L.T == precision^{-1}``).

    One Cholesky and one triangular solve, no explicit inverse. With ``J`` the reversal
    permutation, factor ``J P J = U U'`` (``U`` lower); then ``V = J U J`` is upper triangular
    with ``P = V V'``, so ``P^{-1} = V^{-T} V^{-1}`` and ``L = V^{-T} = J U^{-T} J`` is lower
    triangular with a positive diagonal, which is the Cholesky factor of the covariance.

    Example:
        >>> p = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> l = inverse_cholesky(p)
        >>> np.allclose(l @ l.T, np.linalg.inv(p)), float(l[0, 1])
        (True, 0.0)
    """
    n = precision.shape[-1]
    rev = ops.new_array(precision, list(range(n - 1, -1, -1)))

    def flip(x):  # J x J: reverse the rows and the columns
        x = ops.getitem(x, (Ellipsis, rev, slice(None)))
        return ops.getitem(x, (Ellipsis, slice(None), rev))

    u = ops.cholesky(flip(precision))
    eye = expand(ops.new_eye(u, n), batch_shape(u, 2), 2)
    u_inv_t = ops.triangular_solve(eye, u, upper=False, transpose=True)  # U' X = I
    return flip(u_inv_t)


def _event_interval(item, size: int, axis_name: str) -> tuple[tuple[int, int], bool]:
    """``((start, stop), squeezed)`` of one event index: an int (one entry, a dim the value
    lacks) or a slice of step 1."""
    if isinstance(item, int) and not isinstance(item, bool):
        i = item + size if item < 0 else item
        if not 0 <= i < size:
            raise IndexError(f"block index {item} is out of range for {axis_name} of size {size}")
        return (i, i + 1), True
    if isinstance(item, slice) and item.step in (None, 1):
        start, stop, _ = item.indices(size)
        if stop <= start:
            raise IndexError(f"block slice {item} of {axis_name} (size {size}) is empty")
        return (start, stop), False
    raise IndexError(f"a block index of {axis_name} is an int or a slice of step 1, got {item!r}")


def _parse_block(index, value, shape: tuple, event_ndim: int):
    """The event intervals of ``x[index] = value`` and ``value`` shaped batch + block."""
    index = index if isinstance(index, tuple) else (index,)
    if index and index[0] is Ellipsis:
        index = index[1:]
    elif len(index) == len(shape):
        if any(i != slice(None) for i in index[: len(shape) - event_ndim]):
            raise IndexError(f"blocks span the whole batch: index it with '...' or ':', got "
                             f"{index!r} for shape {shape}")
        index = index[len(shape) - event_ndim:]
    if len(index) != event_ndim:
        raise IndexError(f"a block of an array of shape {shape} is set by {event_ndim} event "
                         f"index(es) after '...', got {index!r}")
    names = ("rows", "columns") if event_ndim == 2 else ("the last dim",)
    event = shape[len(shape) - event_ndim:]
    parsed = [_event_interval(i, n, a) for i, n, a in zip(index, event, names)]
    if not hasattr(value, "shape"):
        value = backend_module().asarray(value, "real")
    for pos in reversed(range(event_ndim)):  # right to left: the dims after pos are present
        if parsed[pos][1]:  # x[..., 1] = v: v lacks that dim
            k = len(value.shape) - (event_ndim - pos - 1)
            value = ops.reshape(value, tuple(value.shape[:k]) + (1,) + tuple(value.shape[k:]))
    target = tuple(shape[: len(shape) - event_ndim]) + tuple(b - a for (a, b), _ in parsed)
    if tuple(value.shape) != target:
        try:
            ok = broadcast_shape(tuple(value.shape), target) == target
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"block {index!r} of an array of shape {shape} needs a value of "
                             f"shape {target}, got {tuple(value.shape)}")
        value = ops.expand(value, target)
    return tuple(i for i, _ in parsed), value


def _fill_gaps(blocks: dict, size: int, zeros_of, where: str) -> list:
    """Blocks ``{(start, stop): array}`` along ``axis``, with zero arrays in the gaps, in order."""
    out, end = [], 0
    for (start, stop), part in sorted(blocks.items()):
        if start < end:
            raise ValueError(f"blocks overlap in {where}: one ends at {end}, the next starts at "
                             f"{start}")
        if start > end:
            out.append(zeros_of(end, start))
        out.append(part)
        end = stop
    if end < size:
        out.append(zeros_of(end, size))
    return out


class BlockVector:
    """An array of ``shape`` built from blocks of its last dim, zero elsewhere.

    ``x[..., 2:4] = v`` sets a block (``x[..., 1] = v`` one entry); ``x.as_tensor()`` returns
    the array. It is assembled by concatenation, never by writing into an array, so it works
    on every backend, under ``jax.jit``, and keeps gradients of the blocks.

    Example:
        >>> x = BlockVector((2, 5))
        >>> x[..., 1:3] = np.ones((2, 2))
        >>> x[..., 4] = np.array([7.0, 8.0])
        >>> x.as_tensor()
        array([[0., 1., 1., 0., 7.],
               [0., 1., 1., 0., 8.]])
    """

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.parts: dict = {}

    def __setitem__(self, index, value):
        (i,), value = _parse_block(index, value, self.shape, 1)
        self.parts[i] = value

    def as_tensor(self):
        """The assembled array of ``self.shape``."""
        if not self.parts:
            return _zeros(self.shape)
        proto = next(iter(self.parts.values()))
        batch = self.shape[:-1]
        parts = _fill_gaps(self.parts, self.shape[-1],
                           lambda a, b: ops.new_zeros(proto, batch + (b - a,)), "the last dim")
        return parts[0] if len(parts) == 1 else ops.cat(parts, -1)


class BlockMatrix:
    """An array of ``shape`` built from blocks of its last two dims, zero elsewhere.

    ``x[..., 0:2, 3:5] = m`` sets a block (an int index sets one row or column). Blocks must
    not overlap; blocks in the same rows must share their row slice (a grid of row bands).
    ``x.as_tensor()`` assembles the array by concatenation (backend-agnostic, jit-safe).

    Example:
        >>> x = BlockMatrix((3, 3))
        >>> x[0:2, 0:2] = np.eye(2)
        >>> x[2, 2] = np.array(5.0)
        >>> x.as_tensor()
        array([[1., 0., 0.],
               [0., 1., 0.],
               [0., 0., 5.]])
    """

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.parts: dict = {}  # row interval -> {column interval -> block}

    def __setitem__(self, index, value):
        (i, j), value = _parse_block(index, value, self.shape, 2)
        self.parts.setdefault(i, {})[j] = value

    def as_tensor(self):
        """The assembled array of ``self.shape``."""
        if not self.parts:
            return _zeros(self.shape)
        proto = next(iter(next(iter(self.parts.values())).values()))
        batch, (n_rows, n_cols) = self.shape[:-2], self.shape[-2:]
        bands = {}
        for (r0, r1), row in self.parts.items():
            cols = _fill_gaps(row, n_cols, lambda a, b, h=r1 - r0: ops.new_zeros(
                proto, batch + (h, b - a)), f"rows {r0}:{r1}")
            bands[(r0, r1)] = cols[0] if len(cols) == 1 else ops.cat(cols, -1)
        rows = _fill_gaps(bands, n_rows, lambda a, b: ops.new_zeros(
            proto, batch + (b - a, n_cols)), "the rows (row bands must not overlap)")
        return rows[0] if len(rows) == 1 else ops.cat(rows, -2)


def _zeros(shape: tuple):
    return backend_module().asarray(np.zeros(shape), "real")
