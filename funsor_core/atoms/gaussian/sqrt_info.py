"""Gaussian algebra in square-root information form: pure functions of arrays.

A Gaussian log density over a real vector ``x`` of dimension ``dim`` is stored as two arrays,
``white_vec`` of shape ``batch + (rank,)`` and ``prec_sqrt`` of shape ``batch + (dim, rank)``::

    f(x) = -0.5 * || x @ prec_sqrt - white_vec ||^2

so ``precision = prec_sqrt @ prec_sqrt.T`` and ``info_vec = prec_sqrt @ white_vec``. The
constant ``-0.5 * ||white_vec||^2`` is part of ``f`` (funsor 0.4.8 uses the same convention),
so ``max_x f(x) = 0`` when the system is consistent. ``rank`` may be below ``dim`` (a
conditional density seen as a joint) or above it (after adding densities); ``compress`` and
``marginalize`` bring it back to at most ``dim``.

Every function uses ``funsor_core.ops`` only, so it runs on numpy, torch and jax, under
``jax.jit`` and under autograd. Leading batch dims broadcast. Coordinates are Python ints into
the last dim of ``x``. Nothing forms a precision matrix to factor it, or inverts one: densities
are combined by orthogonal (QR / Householder) transforms of ``[prec_sqrt.T | white_vec]``,
which keeps long chains (10^4 Kalman steps) as well conditioned as the model itself.

Example:
    >>> w, s = from_mean_covariance(np.array([1.0, 2.0]), np.diag([4.0, 9.0]))
    >>> float(log_density(w, s, np.array([1.0, 2.0])))
    0.0
    >>> round(float(log_normalizer(w, s)), 6)  # log(2 pi * 2 * 3)
    3.629637
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from funsor_core import ops
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian.host import host_copies, to_backend
from funsor_core.atoms.gaussian.linalg import rows  # noqa: F401 (public here too)
from funsor_core.atoms.gaussian.rank import (  # noqa: F401 (NOT_FULL_RANK: public here too)
    NOT_FULL_RANK,
    RankFix,
    apply_fix,
    decide,
    fix_constant,
    raise_rank,
    rank_tolerance,
    surely_full_rank,
)

__all__ = [
    "check_full_rank", "compress", "rows", "concat", "condition", "covariance", "embed",
    "expected_log_density", "factor", "from_info", "from_mean_covariance", "from_mean_precision",
    "from_mean_scale_tril", "kl_divergence", "log_density", "log_normalizer", "marginalize",
    "mean", "pad_dims", "sample", "to_info",
]

Array = Any  # an array of any registered backend
_LOG_2PI = math.log(2 * math.pi)

# The array helpers live in linalg; short private aliases keep the formulas readable.
_broadcast = la.broadcast
_mT = la.mT
_require_full_rank = la.require_full_rank
_triangularize = la.triangularize
_vm = la.vm

# ---------------------------------------------------------------------------------------------
# Constructors and conversions.
def from_info(info_vec: Array, precision: Array) -> tuple[Array, Array]:
    """Square-root form of the density ``-0.5 x'Px + i'x - 0.5 i'P^{-1}i``.

    ``prec_sqrt`` is the Cholesky factor ``L`` of ``P`` and ``white_vec`` solves
    ``L w = info_vec``. ``P`` must be positive definite.

    Args:
        info_vec: batch + (dim,).
        precision: batch + (dim, dim), symmetric positive definite.

    Returns:
        ``(white_vec, prec_sqrt)`` of shapes batch + (dim,) and batch + (dim, dim).

    Example:
        >>> w, s = from_info(np.array([2.0]), np.array([[4.0]]))
        >>> w, s
        (array([1.]), array([[2.]]))
    """
    batch, (info_vec, precision) = _broadcast((info_vec, 1), (precision, 2))
    prec_sqrt = ops.cholesky(precision)
    white_vec = ops.getitem(
        ops.triangular_solve(ops.getitem(info_vec, (Ellipsis, None)), prec_sqrt),
        (Ellipsis, 0))
    return white_vec, prec_sqrt


def from_mean_scale_tril(mean: Array, scale_tril: Array) -> tuple[Array, Array]:
    """Square-root form of the normalized-up-to-a-constant ``N(mean, L L')``, ``f(mean) = 0``.

    ``prec_sqrt = L^{-T}`` comes from a triangular solve against the identity; no inverse is
    formed. ``white_vec = mean @ prec_sqrt``.

    Args:
        mean: batch + (dim,).
        scale_tril: batch + (dim, dim), lower triangular with nonzero diagonal.

    Example:
        >>> w, s = from_mean_scale_tril(np.array([3.0]), np.array([[2.0]]))
        >>> w, s
        (array([1.5]), array([[0.5]]))
    """
    batch, (mean, scale_tril) = _broadcast((mean, 1), (scale_tril, 2))
    eye = la.expand(ops.new_eye(scale_tril, scale_tril.shape[-1]), batch, 2)
    prec_sqrt = ops.triangular_solve(eye, scale_tril, upper=False, transpose=True)
    return _vm(mean, prec_sqrt), prec_sqrt


def from_mean_covariance(mean: Array, covariance: Array) -> tuple[Array, Array]:
    """Square-root form of ``N(mean, covariance)`` up to its normalizer (``f(mean) = 0``).

    Args:
        mean: batch + (dim,).
        covariance: batch + (dim, dim), symmetric positive definite.

    Example:
        >>> w, s = from_mean_covariance(np.zeros(2), np.diag([4.0, 1.0]))
        >>> s
        array([[0.5, 0. ],
               [0. , 1. ]])
    """
    return from_mean_scale_tril(mean, ops.cholesky(covariance))


def from_mean_precision(mean: Array, precision: Array) -> tuple[Array, Array]:
    """Square-root form of ``N(mean, precision^{-1})`` up to its normalizer.

    Args:
        mean: batch + (dim,).
        precision: batch + (dim, dim), symmetric positive definite.

    Example:
        >>> w, s = from_mean_precision(np.array([1.0]), np.array([[9.0]]))
        >>> w, s
        (array([3.]), array([[3.]]))
    """
    batch, (mean, precision) = _broadcast((mean, 1), (precision, 2))
    prec_sqrt = ops.cholesky(precision)
    return _vm(mean, prec_sqrt), prec_sqrt


def to_info(white_vec: Array, prec_sqrt: Array) -> tuple[Array, Array]:
    """``(info_vec, precision) = (prec_sqrt @ white_vec, prec_sqrt @ prec_sqrt.T)``.

    Example:
        >>> to_info(np.array([1.0, 2.0]), np.array([[1.0, 1.0]]))
        (array([3.]), array([[2.]]))
    """
    return la.mv(prec_sqrt, white_vec), ops.matmul(prec_sqrt, _mT(prec_sqrt))


def log_density(white_vec: Array, prec_sqrt: Array, x: Array) -> Array:
    """``f(x) = -0.5 ||x @ prec_sqrt - white_vec||^2``; ``x`` is batch + (dim,).

    Example:
        >>> float(log_density(np.array([1.0]), np.array([[2.0]]), np.array([1.5])))
        -2.0
    """
    return ops.mul(-0.5, la.sumsq(ops.sub(_vm(x, prec_sqrt), white_vec)))


# ---------------------------------------------------------------------------------------------
# Sums of densities and changes of coordinates.
def concat(white_vec1: Array, prec_sqrt1: Array, white_vec2: Array,
           prec_sqrt2: Array) -> tuple[Array, Array]:
    """The sum ``f1 + f2`` of two densities over the same ``x``: ranks concatenate.

    Follow with ``compress`` (or ``marginalize``) to bring the rank back to at most ``dim``.

    Example:
        >>> w, s = concat(np.array([1.0]), np.array([[1.0]]), np.array([2.0]), np.array([[1.0]]))
        >>> w, s
        (array([1., 2.]), array([[1., 1.]]))
    """
    if prec_sqrt1.shape[-2] != prec_sqrt2.shape[-2]:
        raise ValueError(f"cannot concat densities over dims {prec_sqrt1.shape[-2]} and "
                         f"{prec_sqrt2.shape[-2]}; embed both into one x first")
    _, (w1, s1, w2, s2) = _broadcast((white_vec1, 1), (prec_sqrt1, 2),
                                     (white_vec2, 1), (prec_sqrt2, 2))
    return ops.cat([w1, w2], -1), ops.cat([s1, s2], -1)


def embed(white_vec: Array, prec_sqrt: Array, dim_index: Sequence[int],
          new_dim: int) -> tuple[Array, Array]:
    """Lift a density over ``dim`` coordinates into ``x`` of ``new_dim`` coordinates.

    Coordinate ``i`` of the old ``x`` becomes coordinate ``dim_index[i]`` of the new one; the
    others get zero rows (no information). With ``new_dim == dim`` this permutes coordinates.

    Example:
        >>> w, s = embed(np.array([1.0]), np.array([[2.0]]), [1], 3)
        >>> s
        array([[0.],
               [2.],
               [0.]])
    """
    dim, rank = prec_sqrt.shape[-2:]
    dim_index = la.check_index(new_dim, dim_index, "dim_index")
    if len(dim_index) != dim:
        raise ValueError(f"dim_index needs one entry per coordinate ({dim}), got {dim_index}")
    batch = la.batch_shape(prec_sqrt, 2)
    if new_dim > dim:
        zeros = ops.new_zeros(prec_sqrt, batch + (new_dim - dim, rank))
        prec_sqrt = ops.cat([prec_sqrt, zeros], -2)
    where = {j: i for i, j in enumerate(dim_index)}
    missing = iter(range(dim, new_dim))
    order = tuple(where[j] if j in where else next(missing) for j in range(new_dim))
    return white_vec, rows(prec_sqrt, order)


def pad_dims(white_vec: Array, prec_sqrt: Array, before: int = 0,
             after: int = 0) -> tuple[Array, Array]:
    """Add ``before`` and ``after`` coordinates without information around ``x``.

    Example:
        >>> pad_dims(np.array([1.0]), np.array([[2.0]]), after=1)[1]
        array([[2.],
               [0.]])
    """
    batch = la.batch_shape(prec_sqrt, 2)
    rank = prec_sqrt.shape[-1]
    parts = [ops.new_zeros(prec_sqrt, batch + (before, rank))] if before else []
    parts.append(prec_sqrt)
    if after:
        parts.append(ops.new_zeros(prec_sqrt, batch + (after, rank)))
    return white_vec, ops.cat(parts, -2) if len(parts) > 1 else prec_sqrt


def compress(white_vec: Array, prec_sqrt: Array) -> tuple[Array, Array, Array]:
    """Rotate a density of rank > dim to rank dim, splitting off a constant.

    Returns ``(white_vec, prec_sqrt, shift)`` with ``f_old(x) == f_new(x) + shift`` for all
    ``x``; ``shift = -0.5 ||part of white_vec orthogonal to the span of prec_sqrt.T||^2`` is
    batch-shaped. QR of ``[prec_sqrt.T | white_vec]`` gives the new ``prec_sqrt`` (lower
    triangular with a nonnegative diagonal: the Cholesky factor of the precision, computed
    without forming the precision) and ``white_vec``. A density of rank <= dim
    comes back unchanged with ``shift = 0``.

    Example:
        >>> w, s, shift = compress(np.array([1.0, 3.0]), np.array([[1.0, 1.0]]))
        >>> s.shape, float(shift)  # f = -0.5((x-1)^2 + (x-3)^2) = -(x-2)^2 - 1
        ((1, 1), -1.0)
    """
    dim, rank = prec_sqrt.shape[-2:]
    if rank <= dim:
        batch, (white_vec, prec_sqrt) = _broadcast((white_vec, 1), (prec_sqrt, 2))
        return white_vec, prec_sqrt, ops.new_zeros(prec_sqrt, batch)
    host = host_copies(white_vec, prec_sqrt)
    if host is not None:  # small eager arrays of a compiling backend: see atoms.gaussian.host
        return to_backend(white_vec, compress(*host))
    r_upper, z, shift = _triangularize(_mT(prec_sqrt), white_vec)
    return z, _mT(r_upper), shift


# ---------------------------------------------------------------------------------------------
# Conditioning and integration.
def condition(white_vec: Array, prec_sqrt: Array, b_index: Sequence[int], value_b: Array,
              *, with_constant: bool = False) -> tuple:
    """The density over the other coordinates ``a`` with ``x_b = value_b`` substituted.

    ``x @ S = x_a @ S_a + x_b @ S_b``, so ``white_vec`` becomes ``white_vec - value_b @ S_b``
    and ``prec_sqrt`` becomes ``S_a`` (``a`` in increasing order). Exact and unnormalized:
    ``f_new(x_a) == f(x_a, value_b)``. The rank is unchanged; ``compress`` if it exceeds the
    new dim.

    Args:
        b_index: the coordinates of ``x`` that are given, in the order of ``value_b``.
        value_b: batch + (len(b_index),); an infinite entry along an informative direction
            makes ``f_new = -inf`` for every ``x_a`` (``inf * 0 = 0`` on flat directions).
        with_constant: also return the batch-shaped constant of that case (``-inf``, NaN
            where a value is NaN) split off a finite ``white_vec`` (eager arrays with such
            entries), else None; otherwise, and under ``jax.jit``, the columns hit get
            ``prec_sqrt`` zero and ``white_vec`` infinite, which says the same.

    Example:
        >>> w, s = from_mean_covariance(np.zeros(2), np.array([[1.0, 0.5], [0.5, 1.0]]))
        >>> w_a, s_a = condition(w, s, [1], np.array([1.0]))
        >>> float(mean(w_a, s_a)[0]), float(covariance(s_a)[0, 0])  # Schur complement
        (0.5, 0.75)
    """
    dim = prec_sqrt.shape[-2]
    b, a = la.split_index(dim, b_index)
    if value_b.shape[-1:] != (len(b),):
        raise ValueError(f"value_b must end in ({len(b)},) for b_index {list(b)}, "
                         f"got shape {tuple(value_b.shape)}")
    shift, extended = la.vm_values(value_b, rows(prec_sqrt, b))
    white_vec = ops.sub(white_vec, shift)
    _, (white_vec, prec_sqrt_a) = _broadcast((white_vec, 1), (rows(prec_sqrt, a), 2))
    const = None
    if extended:
        white_vec, prec_sqrt_a, const = la.split_infinite(white_vec, prec_sqrt_a, with_constant)
    return (white_vec, prec_sqrt_a, const) if with_constant else (white_vec, prec_sqrt_a)


def marginalize(white_vec: Array, prec_sqrt: Array, b_index: Sequence[int], *, check: bool = False,
                names: str | Sequence[str] | None = None, optimistic: bool = False,
                triangular: bool = False) -> tuple[Array, Array, Array]:
    """Integrate the coordinates ``b_index`` out: ``log ∫ exp f(x_a, x_b) dx_b = f_a(x_a) + c``.

    Rotating ``[S_b.T | S_a.T | w]`` by an orthogonal ``Q = [Q1 Q2]`` whose ``Q1`` spans the
    columns of ``S_b.T`` splits ``f`` into a part in ``x_b`` (integrated exactly:
    ``0.5 d_b log 2π - log|det R_b|``) and the complement ``Q2.T [S_a.T | w]``, which is the
    remaining density. When ``rank >= dim`` one QR does it and also compresses the result
    (the constant part becomes part of ``c``); when ``rank < dim`` the complement is built by
    ``d_b`` Householder reflections of ``S_b``'s columns.

    The result has rank ``min(rank - d_b, d_a)`` (funsor keeps ``rank - d_b``: the same density).

    Numerical rank (``funsor_core.atoms.gaussian.rank``): the block ``b`` counts as
    informative when the smallest singular value of ``R_bb``, relative to the largest column
    norm of the system, exceeds ``rank_tolerance`` (a few ``eps`` of the dtype). Otherwise
    the integral diverges: ``c`` is ``+inf`` there, or with ``check`` a ``ValueError`` names
    the coordinates (concrete arrays; ``rank < d_b`` is decided from shapes). A kept
    coordinate numerically in the span of ``b`` (on its own scale) has only roundoff left:
    its row of the result is set to exactly zero, so that integrating it out later diverges
    as integrating ``b`` and it together does. Under ``jax.jit`` the same tests are array
    operations: a deficient block gives ``c = +inf`` (never a finite number) and no error.

    Args:
        b_index: coordinates of ``x`` to integrate out.
        check: raise ``ValueError`` when ``S_b`` is numerically rank deficient (concrete
            arrays; under jax tracing ``c = +inf`` there instead).
        names: labels for the error message, as in ``check_full_rank``, or a function
            returning them (called only to build the message).
        optimistic: traced, ``rank >= dim``: no rank tests, and a NaN constant where the
            bound ``rank.surely_full_rank`` cannot show they change nothing (the caller reruns).
        triangular: ``S`` is square and triangular (either way): when every coordinate is
            integrated, only its diagonal is read, and no QR runs.

    Returns:
        ``(white_vec_a, prec_sqrt_a, log_normalizer_b)``, over the other coordinates in
        increasing order, and a batch-shaped constant ``c``.

    Example:
        >>> cov = np.array([[2.0, 1.0], [1.0, 3.0]])
        >>> w, s = from_mean_covariance(np.array([1.0, -1.0]), cov)
        >>> w_a, s_a, c = marginalize(w, s, [1])
        >>> float(mean(w_a, s_a)[0]), float(covariance(s_a)[0, 0])
        (1.0, 2.0)
        >>> s = np.array([[1.0], [2.0]])  # x[1] = 2 x[0] is all we know: one direction
        >>> float(marginalize(np.ones(1), s, [0, 1])[2])
        inf
    """
    host = host_copies(white_vec, prec_sqrt)
    if host is not None:  # small eager arrays of a compiling backend: see atoms.gaussian.host
        return to_backend(white_vec, marginalize(*host, b_index, check=check, names=names,
                                                 optimistic=optimistic, triangular=triangular))
    white_vec, void = la.void_infinite(white_vec)
    w_a, s_a, log_norm = _marginalize(white_vec, prec_sqrt, b_index, check, names,
                                      optimistic, triangular)
    if void is not None:  # the integral of 0 is log 0; a NaN value (read by no QR) stays NaN
        nan = ops.mul(0.0, ops.sum(white_vec, -1))
        log_norm = ops.where(void, ops.new_full(log_norm, (), -math.inf), ops.add(log_norm, nan))
    return w_a, s_a, log_norm


def _marginalize(white_vec, prec_sqrt, b_index, check, names, optimistic, triangular):
    dim, rank = prec_sqrt.shape[-2:]
    b, a = la.split_index(dim, b_index)
    d_b, d_a = len(b), len(a)
    batch, (white_vec, prec_sqrt) = _broadcast((white_vec, 1), (prec_sqrt, 2))
    const = 0.5 * d_b * _LOG_2PI
    if rank < d_b:  # too few rows to pin x_b down: the integral is +inf whatever the values
        if check:
            raise_rank(prec_sqrt, b, names, None)
        return (ops.new_zeros(white_vec, batch + (0,)),
                ops.new_zeros(prec_sqrt, batch + (d_a, 0)),
                ops.new_full(white_vec, batch, math.inf))
    s = prec_sqrt if b + a == tuple(range(dim)) else rows(prec_sqrt, b + a)
    tol = rank_tolerance(prec_sqrt)
    if rank >= dim:
        # Square S integrated whole: the shift is 0 (S'x = w is solvable), |det S| is R's of S'
        # alone; a NaN or inf w is the caller's void mask. Traced: the one system as before.
        r_upper, z, shift = ((_mT(s) if triangular else ops.qr_r(_mT(s)), white_vec,
                              ops.new_zeros(white_vec, batch))
                             if rank == dim and d_a == 0 and (triangular or ops.is_concrete(s))
                             else _triangularize(_mT(s), white_vec, canonical=False))
        abs_diag_b = ops.abs(ops.diagonal(r_upper if d_a == 0 else ops.getitem(
            r_upper, (Ellipsis, slice(0, d_b), slice(0, d_b)))))
        if optimistic and not check and not ops.is_concrete(r_upper):
            fix, log_norm = RankFix(), ops.sub(shift, ops.sum(ops.log(abs_diag_b), -1)) + const
            log_norm = ops.where(surely_full_rank(ops.detach(r_upper), tol), log_norm, math.nan)
        else:
            fix = decide(r_upper, prec_sqrt, b, names, check, tol)
            log_norm = fix_constant(
                ops.add(ops.sub(shift, ops.sum(ops.log(abs_diag_b), -1)), const), fix)
        if d_a == 0:
            return (ops.new_zeros(white_vec, batch + (0,)),
                    ops.new_zeros(prec_sqrt, batch + (0, 0)), log_norm)
        r_aa = ops.getitem(r_upper, (Ellipsis, slice(d_b, None), slice(d_b, None)))
        z_a = ops.getitem(z, (Ellipsis, slice(d_b, None)))
        if fix.zero_cols is not None:
            kept = apply_fix(ops.cat([r_aa, ops.getitem(z_a, (Ellipsis, None))], -1), fix)
            r_aa, z_a = la.split_system(kept, d_a)
        return z_a, _mT(r_aa), log_norm
    system = ops.cat([_mT(s), ops.getitem(white_vec, (Ellipsis, None))], -1)
    rest, norms, r_top = la.householder(system, d_b, with_r=True)
    s_a = ops.getitem(rest, (Ellipsis, slice(None), slice(0, d_a)))
    # R of S.T alone, rows b then the remaining ones: the same column norms as S.T.
    r_like = ops.cat([ops.getitem(r_top, (Ellipsis, slice(None), slice(0, dim))),
                      ops.cat([ops.new_zeros(s_a, batch + (rank - d_b, d_b)), s_a], -1)], -2)
    fix = decide(r_like, prec_sqrt, b, names, check, tol)
    log_norm = fix_constant(ops.sub(const, ops.sum(ops.log(norms), -1)), fix)
    if fix.zero_cols is not None:
        rest = apply_fix(rest, fix)
    s_a, w_a = la.split_system(rest, d_a)
    return w_a, _mT(s_a), log_norm


def log_normalizer(white_vec: Array, prec_sqrt: Array, triangular: str | None = None) -> Array:
    """``log ∫ exp f(x) dx`` over all of ``x`` (``+inf`` where the precision is singular).

    Args:
        triangular: ``"upper"`` when the caller knows, from how it was built, that
            ``prec_sqrt`` is square upper triangular (``from_mean_scale_tril``): then it is
            its own triangular factor, coordinates and rows reversed, and no QR is run.

    Example:
        >>> w, s = from_mean_covariance(np.zeros(1), np.array([[1.0]]))
        >>> round(float(log_normalizer(w, s)), 6)  # 0.5 log(2 pi)
        0.918939
        >>> w, s = from_mean_scale_tril(np.ones(2), np.array([[2.0, 0.0], [1.0, 3.0]]))
        >>> bool(np.isclose(log_normalizer(w, s, "upper"), log_normalizer(w, s)))
        True
    """
    dim, rank = prec_sqrt.shape[-2:]
    if triangular == "upper" and rank == dim:
        # J S.T J (J reverses the order) is upper triangular: its own R, with Q = I.
        return marginalize(ops.flip(white_vec, -1), ops.flip(prec_sqrt, (-2, -1)), range(dim),
                           triangular=True)[2]
    return marginalize(white_vec, prec_sqrt, range(dim))[2]


def factor(white_vec: Array, prec_sqrt: Array, *, check: bool = False, canonical: bool = True,
           names: str | Sequence[str] | None = None) -> tuple[Array, Array, Array]:
    """``(r_upper, z, log_normalizer)`` of a full-rank density, from one QR of ``[S.T | w]``.

    ``f(x) = -0.5 ||x R' - z||^2 + shift`` with ``R`` upper triangular and a nonnegative
    diagonal (canonical, as ``sample`` uses it: ``x = R^{-1} (z + noise)``; without
    ``canonical`` the QR kernel's row signs), and the log normalizer as ``log_normalizer``
    computes it: the same number, since the row signs change neither ``|det R|``, ``shift``
    nor the rank tests. ``check`` and ``names`` as in ``marginalize``.

    Example:
        >>> r, z, c = factor(np.array([2.0]), np.array([[-2.0]]))
        >>> r, z, bool(np.isclose(c, log_normalizer(np.array([2.0]), np.array([[-2.0]]))))
        (array([[2.]]), array([-2.]), True)
    """
    _require_full_rank(prec_sqrt, "a sample")
    dim = prec_sqrt.shape[-2]
    r_upper, z, shift = _triangularize(_mT(prec_sqrt), white_vec, canonical=canonical)
    fix = decide(r_upper, prec_sqrt, tuple(range(dim)), names, check,
                  rank_tolerance(prec_sqrt))
    abs_diag = ops.abs(ops.diagonal(r_upper))
    log_norm = fix_constant(ops.add(ops.sub(shift, ops.sum(ops.log(abs_diag), -1)),
                                    0.5 * dim * _LOG_2PI), fix)
    return r_upper, z, log_norm


def check_full_rank(prec_sqrt: Array, b_index: Sequence[int],
                    names: str | Sequence[str] | None = None) -> None:
    """Raise ``ValueError`` if integrating out ``b_index`` diverges (``S_b`` lacks full rank).

    Reads values, so it needs concrete arrays (not jax tracers). The test ``marginalize``
    makes (``funsor_core.atoms.gaussian.rank``), on ``R`` of ``S_b.T = Q R``.

    Args:
        b_index: the coordinates to integrate out.
        names: a label for the block (``"x"`` gives ``x[0]``, ``x[1]``, ...), or one label per
            coordinate of ``b_index``. Default: ``"x"`` with the indices into ``x``.

    Example:
        >>> s = np.array([[1.0], [0.0]])  # only x[0] is observed
        >>> check_full_rank(s, [0])
        >>> check_full_rank(s, [0, 1], names=["x", "y"])
        Traceback (most recent call last):
        ...
        ValueError: cannot marginalize x, y: its precision block has rank 1 < 2; ...
    """
    dim, rank = prec_sqrt.shape[-2:]
    b = la.check_index(dim, b_index, "b_index")
    if not b:
        return
    if rank < len(b):  # no QR needed: R would have fewer rows than columns
        raise_rank(prec_sqrt, b, names, None)
    if not ops.is_concrete(prec_sqrt):
        raise TypeError("check_full_rank reads values: call it on concrete arrays, outside "
                        "jit/vmap tracing")
    r_bb = ops.qr_r(_mT(rows(prec_sqrt, b)))
    decide(r_bb, prec_sqrt, b, names, True, rank_tolerance(prec_sqrt))


# ---------------------------------------------------------------------------------------------
# Moments, samples and expectations (full-rank densities).
def mean(white_vec: Array, prec_sqrt: Array) -> Array:
    """The mode (= mean) ``argmax_x f(x)``: the least-squares solution of ``x @ S ≈ w``.

    Solved by QR of ``[S.T | w]`` and one triangular solve. Raises ``ValueError`` when
    ``rank < dim`` (no unique maximizer).

    Example:
        >>> mean(np.array([1.0, 3.0]), np.array([[1.0, 1.0]]))
        array([2.])
    """
    _require_full_rank(prec_sqrt, "a mean")
    r_upper, z, _ = _triangularize(_mT(prec_sqrt), white_vec)
    return la.solve_upper(r_upper, z)


def covariance(prec_sqrt: Array) -> Array:
    """``precision^{-1} = R^{-1} R^{-T}`` with ``prec_sqrt.T = Q R``; needs ``rank >= dim``.

    Example:
        >>> covariance(np.array([[2.0, 0.0], [0.0, 0.5]]))
        array([[0.25, 0.  ],
               [0.  , 4.  ]])
    """
    _require_full_rank(prec_sqrt, "a covariance")
    r_upper = ops.qr_r(_mT(prec_sqrt))
    eye = la.expand(ops.new_eye(r_upper, r_upper.shape[-1]), la.batch_shape(r_upper, 2), 2)
    r_inv = ops.triangular_solve(eye, r_upper, upper=True)
    return ops.matmul(r_inv, _mT(r_inv))


def sample(white_vec: Array, prec_sqrt: Array, noise: Array) -> Array:
    """A reparameterized sample ``x = R^{-1} (z + noise) ~ N(mean, precision^{-1})``.

    ``[S.T | w]`` is rotated to ``[R | z]`` (``R`` upper triangular, ``R'R = precision``), so
    ``R^{-1} z`` is the mean and ``R^{-1} noise`` has covariance ``R^{-1} R^{-T}``.

    Args:
        noise: standard normal, sample_batch + batch + (dim,).

    Example:
        >>> sample(np.array([2.0]), np.array([[2.0]]), np.array([0.5]))  # mean 1, std 0.5
        array([1.25])
    """
    _require_full_rank(prec_sqrt, "a sample")
    r_upper, z, _ = _triangularize(_mT(prec_sqrt), white_vec)
    return la.solve_upper(r_upper, ops.add(z, noise))


def _moments_q(white_vec: Array, prec_sqrt: Array) -> tuple[Array, Array]:
    r_upper, z, _ = _triangularize(_mT(prec_sqrt), white_vec)
    return r_upper, la.solve_upper(r_upper, z)


def _expected(r_q: Array, m_q: Array, white_vec_p: Array, prec_sqrt_p: Array) -> Array:
    # E||x S - w||^2 = ||m S - w||^2 + tr(S' Σ S) and tr(S' R^{-1} R^{-T} S) = ||R^{-T} S||_F^2.
    resid = ops.sub(_vm(m_q, prec_sqrt_p), white_vec_p)
    z = ops.triangular_solve(prec_sqrt_p, r_q, upper=True, transpose=True)
    return ops.mul(-0.5, ops.add(la.sumsq(resid), la.sumsq(z, 2)))


def expected_log_density(white_vec_q: Array, prec_sqrt_q: Array, white_vec_p: Array,
                         prec_sqrt_p: Array) -> Array:
    """``E_{x ~ q}[f_p(x)]`` in closed form, ``q`` normalized (full rank), ``f_p`` as stored.

    ``f_p`` may be of any rank; its constant ``-0.5||w_p||^2`` is included.

    Example:
        >>> w, s = from_mean_covariance(np.zeros(1), np.array([[1.0]]))
        >>> float(expected_log_density(w, s, w, s))  # E[-x^2 / 2]
        -0.5
    """
    _require_full_rank(prec_sqrt_q, "an expectation under q")
    if prec_sqrt_q.shape[-2] != prec_sqrt_p.shape[-2]:
        raise ValueError("q and p must be densities over the same x")
    r_q, m_q = _moments_q(white_vec_q, prec_sqrt_q)
    return _expected(r_q, m_q, white_vec_p, prec_sqrt_p)


def kl_divergence(white_vec_q: Array, prec_sqrt_q: Array, white_vec_p: Array,
                  prec_sqrt_p: Array) -> Array:
    """``KL(q || p)`` between the normalized densities ``q`` and ``p``.

    ``-H(q) - E_q[f_p] + log Z_p``, with the entropy ``H(q) = 0.5 dim (1 + log 2π) -
    log|det R_q|``. ``+inf`` where ``p`` cannot be normalized.

    Example:
        >>> wq, sq = from_mean_covariance(np.zeros(1), np.array([[1.0]]))
        >>> wp, sp = from_mean_covariance(np.ones(1), np.array([[1.0]]))
        >>> float(kl_divergence(wq, sq, wp, sp))  # (0 - 1)^2 / 2
        0.5
    """
    _require_full_rank(prec_sqrt_q, "a KL divergence from q")
    dim = prec_sqrt_q.shape[-2]
    if dim != prec_sqrt_p.shape[-2]:
        raise ValueError("q and p must be densities over the same x")
    r_q, m_q = _moments_q(white_vec_q, prec_sqrt_q)
    neg_entropy = ops.sub(la.log_abs_diag(r_q), 0.5 * dim * (1.0 + _LOG_2PI))
    cross = ops.sub(_expected(r_q, m_q, white_vec_p, prec_sqrt_p),
                    log_normalizer(white_vec_p, prec_sqrt_p))
    return ops.sub(neg_entropy, cross)
