"""Numerical rank decisions of the square-root Gaussian algebra (``arrays.marginalize``).

Integrating coordinates ``b`` out of ``f(x) = -0.5 ||x S - w||^2`` is finite only when the
rows ``S_b`` are linearly independent. In floating point that needs a tolerance: roundoff
makes an exactly dependent block look independent by a few units of ``eps``, and reading
that as information gives a large finite number where the integral diverges.

The decisions are made on the triangular factor ``R`` of the system ``S.T[:, b + a]`` that
the marginalization computes anyway (``S.T = Q R``, integrated columns first). Householder
QR is columnwise backward stable: it factors ``S.T + E`` with each column of ``E`` at most a
small multiple of ``max(rank, dim) * eps`` times its column's norm, so the tolerance is
``tol = RANK_RTOL * max(rank, dim) * eps(dtype)`` (``rank_tolerance``), applied to ``R`` with
its columns rescaled, ``T = R D^{-1}``, and to the statistic

    lam(T_bb) = 1 / ||T_bb^{-1}||_F,   sigma_min / sqrt(d_b) <= lam <= sigma_min,

which one triangular solve gives. It does not depend on the order of the coordinates or of
the rows (the term order) beyond roundoff. The diagonal of ``R`` alone would: in an
unpivoted QR, a leading pair of nearly parallel rows amplifies the roundoff left in a later,
exactly dependent one far above ``eps``. By Weyl's inequality an exactly dependent block has
``sigma_min <= ||E D^{-1}||``, below the tolerance, and a block whose smallest singular value
exceeds ``sqrt(d_b) tol`` always passes.

- **Integrated block: ``bad``.** ``D`` is the largest column norm of the whole system
  (every column on one scale): information on ``b`` below ``tol`` times the largest
  information in the Gaussian counts as none, and the integral is ``+inf`` (or the caller
  raises). One scale for all, rather than each column's own, because a reduction shrinks
  the columns it leaves while its roundoff stays at the old scale: after integrating ``y``
  out, what is left of a ``z`` that ``y`` nearly determined is small, and its roundoff is
  large relative to it. Measured against the system's scale, it still reads as roundoff
  when ``z`` is integrated next.
- **Kept columns: ``zero_cols``.** A kept column ``j`` with ``lam(T_{b+j}) <= tol`` is
  numerically in the span of ``b`` (tested with each column on its own scale, and with all
  on the system's scale as above): what is left of it after the elimination is roundoff.
  It is set to zero, so that a later integral over ``j`` diverges as the joint one over
  ``b + j`` does, whatever the order of the reductions. (``||T_{b+j}^{-1}||_F^2 =
  ||T_bb^{-1}||_F^2 + (||T_bb^{-1} t_bj||^2 + 1) / rho_j^2``, with ``rho_j`` the norm left
  of column ``j`` over its scale: the same solve, the kept columns as extra right-hand
  sides.)

What counts as information thus depends on the dtype and on the spread of scales within one
Gaussian: in float32 (``eps = 1.2e-7``) a coordinate whose square-root precision given the
others (what is left of its column) is below about ``1e-5`` of the largest column norm in
the Gaussian is treated as having none: it cannot be integrated out, and a reduction that
keeps it drops that remainder. In float64 the ratio is about ``1e-13``. A precision ratio of
``1e-8`` (square root ``1e-4``) is information in both. Rescale variables to comparable
units, or use float64, when one Gaussian mixes scales beyond that (e.g. a float32 prior
whose standard deviation is ``1e6`` times the observation noise).

Decisions are made per call, on the arrays the call sees, so a deficiency is found at the
first reduction where it shows; randomized tests
(tests/atoms/gaussian/test_gaussian_rank.py) check that reducing one variable at a time
and all together agree.

On concrete arrays the tests run on the host, and bounds decide almost every call without a
solve: for a triangular ``T`` with columns of norm at most 1, ``prod_j |T_jj| / e^{1/2} <=
sigma_min <= min_j |T_jj|`` (``|det T|`` over the product of the other singular values,
at most ``e^{1/2}`` since ``||T||_F^2 <= d``), and a bound on the whole triangular system
covers every block (``sigma_min`` of a subset of the columns is at least that of all).
Under ``jax.jit`` values cannot be read: the same statistics are array operations, and the
caller applies them with ``where`` (``+inf``, zeroed columns); no error is raised.

Example:
    >>> r = np.array([[1.0, 2.0], [0.0, 1e-17]])  # column 1 is 2x column 0, up to roundoff
    >>> fix = rank_tests(r, 1, rank_tolerance(r))
    >>> fix.bad is None, fix.zero_cols
    (True, array([ True]))
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from funsor_core import ops

__all__ = ["NOT_FULL_RANK", "RANK_RTOL", "RankFix", "apply_fix", "decide", "fix_constant",
           "numerical_rank", "raise_rank", "rank_tests", "rank_tolerance", "surely_full_rank"]

Array = Any

# The tolerance of the rank decisions, in units of max(rank, dim) * eps (see rank_tolerance).
RANK_RTOL = 8.0

_EPS = {2: 2.0 ** -10, 4: 2.0 ** -23}  # float16, float32; float64 otherwise
_TINY = np.finfo(np.float64).tiny  # keeps 0 / ||R||_F defined for an all-zero R


class RankFix(NamedTuple):
    """What a marginalization must change; a None field changes nothing.

    ``bad``: batch booleans, the integrated block is deficient (the constant is ``+inf``).
    ``zero_cols``: batch + (d_a,) booleans, kept columns to set to zero.

    Example:
        Coordinates ``x`` and ``y = 2 x`` (the rows of ``S``): integrating ``x`` leaves
        nothing of ``y`` but roundoff, so its column is zeroed.

        >>> s = np.array([[1.0, 1.0], [2.0, 2.0]])
        >>> r = np.linalg.qr(s.T, mode="r")
        >>> rank_tests(r, 1, rank_tolerance(s))
        RankFix(bad=None, zero_cols=array([ True]))
    """

    bad: Any = None
    zero_cols: Any = None


_NOTHING = RankFix()


def rank_tolerance(prec_sqrt: Array) -> float:
    """The tolerance of the rank decisions on a factor of this shape and dtype.

    ``RANK_RTOL * max(rank, dim) * eps(dtype)``, compared with singular values of the
    system with rescaled columns (see the module docstring).

    Example:
        >>> rank_tolerance(np.zeros((2, 3))) == RANK_RTOL * 3 * 2.0 ** -52
        True
    """
    eps = _EPS.get(prec_sqrt.dtype.itemsize, 2.0 ** -52)
    return RANK_RTOL * max(prec_sqrt.shape[-2:]) * eps


def rank_tests(r: Array, d_b: int, tol: float, kept: bool = True, inv: Array = None) -> RankFix:
    """The rank decisions for integrating out the first ``d_b`` columns of the system ``r``.

    Args:
        r: batch + (m, d), the triangular factor of the system, integrated columns first:
            its first ``d_b`` rows are ``R_b`` (upper triangular in the first ``d_b``
            columns), and rows ``d_b:`` hold, in columns ``d_b:``, what is left of the kept
            columns. Its column norms are those of the original system.
        d_b: number of integrated columns.
        tol: the tolerance (``rank_tolerance``).
        kept: whether to test the kept columns.
        inv: ``R_bb^{-1}`` where the caller computes it anyway (``kept`` False): traced
            tests then reuse it instead of solving again (the same statistic).

    Returns:
        A ``RankFix``; on concrete arrays a field is None where nothing needs doing.

    Example:
        >>> r = np.array([[1.0, 0.5], [0.0, 1.0]])
        >>> rank_tests(r, 2, rank_tolerance(r)) == RankFix()
        True
    """
    if d_b == 0:  # nothing integrated: nothing can diverge or be used up
        return _NOTHING
    kept = kept and r.shape[-1] > d_b and r.shape[-2] > d_b
    if type(r) is np.ndarray or ops.is_concrete(r):
        h = r if type(r) is np.ndarray else ops.to_numpy(r)  # a host copy, no autograd
        if h.shape[-2] == h.shape[-1] and _well_conditioned(h, tol):
            return _NOTHING
        return _host_tests(h, d_b, tol, kept, r)
    return _traced_tests(ops.detach(r), d_b, tol, kept,
                         None if inv is None or kept else ops.detach(inv))


def _well_conditioned(h: np.ndarray, tol: float) -> bool:
    """Whether a square triangular ``R`` certainly passes every test: the common case, in
    a few array calls. With ``T = R / ||R||_F`` (columns of norm at most 1, so at most the
    system-scaled and the own-scaled ``T``), ``sigma_min(T) >= |det T| (d - 1)^((d-1)/2)``
    (the other singular values have squares summing to at most 1), and ``sigma_min`` of any
    block of columns of a triangular matrix is at least that of the whole."""
    d = h.shape[-1]
    # |det T| with T = R / ||R||_F: each factor |R_jj| / ||R||_F <= 1, so nothing overflows
    # (an underflow, which numpy ignores, only sends the call to the full test; so does NaN).
    fro2 = np.einsum("...ij,...ij->...", h, h)
    fro2 += _TINY
    det = np.multiply.reduce(h.diagonal(0, -2, -1) / np.sqrt(fro2)[..., None], -1)
    return float(abs(det).min()) * _growth(d) > tol


def surely_full_rank(r: Array, tol: float) -> Array:
    """The bound of ``_well_conditioned`` as array operations (traceable): true where the
    square triangular ``r`` certainly passes every rank test, so that the tests would change
    nothing; false where they must run (or on NaN). Used by callers that run a whole chain
    optimistically under ``jax.jit`` and redo it with the tests when any step is undecided.

    Example:
        >>> bool(surely_full_rank(np.array([[1.0, 0.5], [0.0, 1.0]]), 1e-13))
        True
    """
    d = r.shape[-1]
    fro2 = ops.sum(r * r, axis=(-2, -1)) + _TINY
    diag = ops.diagonal(r) / ops.sqrt(fro2)[..., None]
    det = ops.abs(ops.prod(diag, axis=-1))
    return ops.all(det * _growth(d) > tol)


def _growth(d: int) -> float:
    """``(d - 1)^((d - 1) / 2)``, capped below float overflow."""
    return math.exp(min(0.5 * (d - 1) * math.log(max(d - 1, 1)), 700.0))

def apply_fix(k_sys: Array, fix: RankFix) -> Array:
    """The kept system ``[K | z]`` (batch + (m, d_a + 1)) with ``fix.zero_cols`` of ``K``
    set to zero.

    Example:
        >>> apply_fix(np.array([[1e-17, 2.0, 3.0]]), RankFix(zero_cols=np.array([True, False])))
        array([[0., 2., 3.]])
    """
    if fix.zero_cols is None:
        return k_sys
    last = ops.new_zeros(fix.zero_cols, tuple(fix.zero_cols.shape[:-1]) + (1,))
    mask = ops.cat([fix.zero_cols, ops.ne(last, last)], -1)  # never the z column
    return ops.where(ops.getitem(mask, (Ellipsis, None, slice(None))),
                     ops.new_zeros(k_sys, ()), k_sys)


def fix_constant(log_norm: Array, fix: RankFix) -> Array:
    """``log_norm`` with ``+inf`` where ``fix.bad``; NaN stays NaN (a NaN parameter, made
    so under jit by the Gaussian's own checks, tells more than a divergence).

    Example:
        >>> fix_constant(np.array([1.0, 2.0, np.nan]), RankFix(bad=np.array([False, True, True])))
        array([ 1., inf, nan])
    """
    if fix.bad is None:
        return log_norm
    bad = ops.and_(fix.bad, ops.eq(log_norm, log_norm))  # x != x only for NaN
    return ops.where(bad, ops.full_like(log_norm, math.inf), log_norm)


# -- concrete arrays: bounds first, a solve only in between -------------------------------------
def _host_tests(h: np.ndarray, d_b: int, tol: float, kept: bool, proto) -> RankFix:
    batch, (m, d) = h.shape[:-2], h.shape[-2:]
    h = h.reshape((-1, m, d)).astype(np.float64, copy=False)
    hh = h * h
    col = hh.sum(-2)  # squared column norms of the system
    top = col.max(-1)  # the system's scale, squared
    tol2 = tol * tol
    bound2 = math.e * tol2  # prod |T_jj|^2 above this: sigma_min > tol
    with np.errstate(divide="ignore", invalid="ignore"):
        diag2 = np.diagonal(hh[:, :d_b, :d_b], 0, -2, -1)
        rho2_b = diag2 / top[:, None]
        rho2_b = np.where(np.isnan(rho2_b), 0.0, rho2_b)  # an all-zero system
    bad = (rho2_b <= tol2).any(-1)
    todo = ~bad & ~(np.prod(rho2_b, -1) > bound2)
    solved = None
    if todo.any() or kept:
        solved = _solve(h, col, d_b, kept)
    if todo.any():
        inv_b = solved[0] * top  # ||(R_bb / F)^{-1}||_F^2 = F^2 ||R_bb^{-1}||_F^2
        bad[todo] = ~(inv_b[todo] * tol2 < 1)
    weak = None
    if kept:
        weak = _host_weak(hh, col, top, d_b, solved, ~bad, tol2)
    if not bad.any() and weak is None:
        return _NOTHING

    def out(x):
        return None if x is None else ops.new_array(proto, x.reshape(batch + x.shape[1:]))

    return RankFix(bad=out(bad) if bad.any() else None, zero_cols=out(weak))


def _solve(h: np.ndarray, col: np.ndarray, d_b: int, kept: bool):
    """From ``X = R_bb^{-1} [I | R_ba]``: ``||R_bb^{-1}||_F^2``, and with ``kept`` the
    per-column-scaled ``||T_bb^{-1}||_F^2`` and ``||T_bb^{-1} t_bj||^2`` (``T = R D^{-1}``,
    ``D`` the column norms). ``inf`` where ``R_bb`` is singular or the solve overflows."""
    r_bb = np.triu(h[:, :d_b, :d_b])
    rhs = np.broadcast_to(np.eye(d_b), r_bb.shape)
    if kept:
        rhs = np.concatenate([rhs, h[:, :d_b, d_b:]], -1)
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(r_bb, rhs)
        except np.linalg.LinAlgError:  # an exactly zero pivot: solve one entry at a time
            x = np.stack([_solve_one(a, b) for a, b in zip(r_bb, rhs)])
        x2 = x * x
        inv_b = np.nan_to_num(x2[:, :, :d_b].sum((-2, -1)), nan=np.inf)
        if not kept:
            return inv_b, None, None, None
        cross_b = np.nan_to_num(x2[:, :, d_b:].sum(-2), nan=np.inf)  # ||R_bb^{-1} r_bj||^2
        y2 = x2 * col[:, :d_b, None]  # rows scaled by D_b: T_bb^{-1} = D_b R_bb^{-1}
        inv_t = np.nan_to_num(y2[:, :, :d_b].sum((-2, -1)), nan=np.inf)
        cross = np.nan_to_num(y2[:, :, d_b:].sum(-2), nan=np.inf)  # times col_j = ||...||^2
    return inv_b, inv_t, cross, cross_b


def _solve_one(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return np.full(b.shape, np.inf)


def _host_weak(hh, col, top, d_b: int, solved, ok, tol2: float):
    """Kept columns numerically in the span of ``b``: on their own scale, or on the
    system's (``top``), whichever finds less left of them."""
    inv_b, inv_t, cross, cross_b = solved
    col_a = col[:, d_b:]
    empty = col_a <= 0  # an all-zero column: nothing to zero
    with np.errstate(all="ignore"):
        left = hh[:, d_b:, d_b:].sum(-2)
        own = inv_t[:, None] + (cross / col_a + 1.0) / (left / col_a)
        system = (inv_b[:, None] + (cross_b + 1.0) / left) * top[:, None]
    weak = (~(own * tol2 < 1) | ~(system * tol2 < 1)) & ~empty & ok[:, None]
    return weak if weak.any() else None


# -- traced arrays (jax.jit): the same statistics as array operations ---------------------------
def _traced_tests(r: Array, d_b: int, tol: float, kept: bool, inv=None) -> RankFix:
    col = ops.sum(ops.mul(r, r), -2)
    top = ops.amax(col, -1)
    if inv is None:
        batch = tuple(r.shape[:-2])
        r_bb = ops.getitem(r, (Ellipsis, slice(0, d_b), slice(0, d_b)))
        rhs = ops.expand(ops.new_eye(r, d_b), batch + (d_b, d_b))
        if kept:
            rhs = ops.cat([rhs, ops.getitem(r, (Ellipsis, slice(0, d_b), slice(d_b, None)))],
                          -1)
        x = ops.triangular_solve(rhs, r_bb, upper=True)
    else:
        x = inv
    x2 = ops.mul(x, x)
    inv_b = ops.sum(ops.getitem(x2, (Ellipsis, slice(None), slice(0, d_b))), (-2, -1))
    tol2 = tol * tol
    # ||(R_bb / F)^{-1}||_F^2 = F^2 ||R_bb^{-1}||_F^2; NaN (a zero pivot, an overflow) counts
    # as deficient.
    bad = _not_small(ops.mul(inv_b, top), tol2)
    if not kept:
        return RankFix(bad=bad)
    y2 = ops.mul(x2, ops.getitem(ops.getitem(col, (Ellipsis, slice(0, d_b))),
                                 (Ellipsis, slice(None), None)))
    inv_t = ops.sum(ops.getitem(y2, (Ellipsis, slice(None), slice(0, d_b))), (-2, -1))
    cross = ops.sum(ops.getitem(y2, (Ellipsis, slice(None), slice(d_b, None))), -2)
    cross_b = ops.sum(ops.getitem(x2, (Ellipsis, slice(None), slice(d_b, None))), -2)
    col_a = ops.getitem(col, (Ellipsis, slice(d_b, None)))
    k = ops.getitem(r, (Ellipsis, slice(d_b, None), slice(d_b, None)))
    left = ops.sum(ops.mul(k, k), -2)
    own = ops.add(ops.getitem(inv_t, (Ellipsis, None)),
                  ops.truediv(ops.add(ops.truediv(cross, col_a), 1.0), ops.truediv(left, col_a)))
    system = ops.mul(ops.add(ops.getitem(inv_b, (Ellipsis, None)),
                             ops.truediv(ops.add(cross_b, 1.0), left)),
                     ops.getitem(top, (Ellipsis, None)))
    empty = ops.le(col_a, 0.0)  # nothing to zero in an all-zero column
    small = ops.or_(_not_small(own, tol2), _not_small(system, tol2))
    weak = ops.and_(ops.and_(small, ops.invert(empty)),
                    ops.getitem(ops.invert(bad), (Ellipsis, None)))
    return RankFix(bad=bad, zero_cols=weak)


def _not_small(inv_norm2: Array, tol2: float) -> Array:
    """``not (1 / inv_norm2 > tol^2)``, so that NaN answers True."""
    return ops.invert(ops.lt(ops.mul(inv_norm2, tol2), 1.0))


def numerical_rank(r_bb: np.ndarray, tol: float) -> tuple[int, list[int]]:
    """For an error message: the numerical rank of one (host) ``R_bb`` on the scale of its
    largest column, and the coordinates with the least independent information (smallest
    ``|R_jj|``), as many as the rank falls short (at least one).

    Example:
        >>> numerical_rank(np.array([[1.0, 2.0], [0.0, 0.0]]), 1e-12)
        (1, [1])
    """
    r_bb = np.asarray(r_bb, dtype=np.float64)
    d_b = r_bb.shape[-1]
    top = np.sqrt((r_bb * r_bb).sum(-2).max())
    t = r_bb / (top if top > 0 else 1.0)
    sv = np.linalg.svd(t, compute_uv=False) if np.isfinite(t).all() else np.zeros(d_b)
    rank = max(0, min(d_b - 1, int((sv > tol).sum())))
    rho = np.abs(np.diagonal(t))
    # Smallest pivot first; among equals, the later coordinate (it came after its peers).
    order = sorted(range(d_b), key=lambda k: (rho[k], -k))
    return rank, sorted(order[: d_b - rank])


# ---------------------------------------------------------------------------------------------
# Errors: a block without full rank, named by its coordinates.
NOT_FULL_RANK = (
    "cannot marginalize {label}: its precision block has rank {rank} < {dim}; the integral "
    "diverges, because the density is flat along a direction of {label}{where}. Coordinates "
    "without independent information: {coords}. Add a prior or an observation on them before "
    "integrating them out, or keep them as free inputs."
)

HOLDS_NAN = (
    "cannot marginalize {label}: its Gaussian holds NaN{where} (NaN or infinite data, "
    "observations or weights in the factors it came from); NaN is not information, so "
    "the integral has no value. Check the inputs for NaN or inf before building the model."
)


def _where(prec_sqrt: Array, flat: int) -> str:
    # " at batch index (i, j)" of a flat batch index, or "" without batch dims.
    batch = tuple(prec_sqrt.shape[:-2])
    if not batch:
        return ""
    return f" at batch index {tuple(int(i) for i in np.unravel_index(flat, batch))}"


def decide(r: Array, prec_sqrt: Array, b: tuple[int, ...], names, check: bool, tol: float):
    """``rank_tests`` on the factor ``r`` (of ``arrays.marginalize``); with ``check``, raise
    NOT_FULL_RANK where a concrete block is deficient (naming the coordinates of the first
    such batch entry).

    Example:
        ``y = 2 x``: integrating both diverges.

        >>> s = np.array([[1.0, 1.0], [2.0, 2.0]])
        >>> r = np.linalg.qr(s.T, mode="r")
        >>> decide(r, s, (0, 1), ["x", "y"], True, rank_tolerance(s))
        Traceback (most recent call last):
        ...
        ValueError: cannot marginalize x, y: its precision block has rank 1 < 2; ...
    """
    fix = rank_tests(r, len(b), tol)
    if check and fix.bad is not None and ops.is_concrete(fix.bad):
        flags = ops.to_numpy(fix.bad).reshape(-1)
        if not flags.any():  # computed as arrays (autodiff tracers), and all full rank
            return fix
        flat = int(flags.argmax())
        d_b = len(b)
        host = ops.to_numpy(r).reshape((-1,) + tuple(r.shape[-2:]))
        if np.isnan(host[flat, :d_b, :d_b]).any():  # not flat: NaN came in with the data
            label, _ = _labels(b, names)
            raise ValueError(HOLDS_NAN.format(label=label, where=_where(prec_sqrt, flat)))
        _, ks = numerical_rank(host[flat, :d_b, :d_b], tol)
        raise_rank(prec_sqrt, b, names, (flat, ks))
    return fix


def _labels(b: tuple[int, ...], names) -> tuple[str, list[str]]:
    """The block's label and one label per coordinate, for error messages."""
    if names is None:
        return "x", [f"x[{i}]" for i in b]
    if isinstance(names, str):
        return names, [f"{names}[{k}]" for k in range(len(b))]
    if callable(names):  # labels built only when an error needs them
        names = names()
    coords = [str(n) for n in names]
    if len(coords) != len(b):
        raise ValueError(f"names needs one label per coordinate of b_index ({len(b)})")
    return ", ".join(dict.fromkeys(c.split("[")[0] for c in coords)), coords


def raise_rank(prec_sqrt: Array, b: tuple[int, ...], names, weak) -> None:
    """Raise the NOT_FULL_RANK error for the coordinates ``b`` of ``prec_sqrt``; ``weak`` is
    ``(flat batch index, coordinates)``, or None when the rank is too low by shapes alone.

    Example:
        One column of information cannot determine two coordinates:

        >>> raise_rank(np.zeros((2, 1)), (0, 1), ["x", "y"], None)
        Traceback (most recent call last):
        ...
        ValueError: cannot marginalize x, y: its precision block has rank 1 < 2; ... y. ...
    """
    label, coords = _labels(b, names)
    rank = prec_sqrt.shape[-1]
    if weak is None:  # too few rows: decided by shapes
        raise ValueError(NOT_FULL_RANK.format(label=label, rank=rank, dim=len(b), where="",
                                              coords=", ".join(coords[rank:])))
    flat, ks = weak
    where = _where(prec_sqrt, flat)
    raise ValueError(NOT_FULL_RANK.format(label=label, rank=len(b) - len(ks), dim=len(b),
                                          where=where, coords=", ".join(coords[k] for k in ks)))
