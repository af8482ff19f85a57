"""The moment-matching collapse by normal equations, where a bound shows it loses nothing.

``moments.collapse_system`` integrates coordinates ``b`` out of each mixture component and
collapses the mixture (see ``moments``) by two QR factorizations, which never square a
condition number. For a full-rank, well-conditioned system the same numbers come from the
Gram matrices instead, for less (a Cholesky of a small symmetric matrix is cheaper than a QR
of a tall one, and the rank tests and one triangular inverse are not needed):

- **Components.** With ``M = [S_{b+a}; w']`` (rows ``b`` first, then ``a``, then ``w``), the
  augmented Gram matrix ``G = M M' + e e'`` (``e`` the last unit vector, the ``+1`` of
  ``linalg.triangularize``) has the Cholesky factor ``L = [[L11, 0], [z', c]]`` with
  ``L11 L11' = S S'`` and ``c^2 = 1 + ||w||^2 - ||z||^2``: ``L'`` is the ``R`` of the QR
  path up to row signs. So the log integral over all coordinates is ``-0.5 (c^2 - 1) -
  log|det L11| + 0.5 dim log 2π``, the marginal over ``a`` has the factor ``L_aa``, and the
  rows ``d_b:`` of ``L^{-1}``, columns ``a``, are ``[L_aa^{-1}; -mu'/c]``: the square root of
  the component covariance and the component mean at once.
- **Mixture.** The covariance ``C = A'A`` for the stacked ``A`` of ``moments.collapse_arrays``
  is formed and factored ``C = U U'``; the new square-root precision is ``U^{-T}``.

**The check.** Cholesky of ``G = M M'`` is backward stable for ``G`` (Demmel): the computed
factor is exact for ``G + E`` with ``|E_ij| <= gamma sqrt(G_ii G_jj)``, the same form as the
rounding of ``M M'`` itself, so the error is set by the condition number of the column-scaled
factor ``T = D^{-1} L`` (``D^2 = diag G``; Cholesky is invariant under that scaling), and
squared: a relative error of about ``n eps kappa(T)^2`` against QR's ``n eps kappa(T)``. The
fast path is taken only where ``n eps kappa_F(T)^2 <= FAST_RTOL`` (``1e-10`` in float64),
with ``kappa_F(T)^2 = ||T||_F^2 ||T^{-1}||_F^2 = n ||L^{-1} D||_F^2``, which the inverse
computed anyway gives; ``kappa_2 <= kappa_F``, so this is an upper bound, not an estimate.
Because ``w`` is a column of ``M``, it also bounds the cancellation in ``||w||^2 - ||z||^2``:
``(1 + ||w||^2) / c^2`` is an entry of ``||T^{-1}||_F^2``. The mixture's ``C`` gets the same
test. A failed Cholesky (NaN under ``jax.jit``, an exception eagerly) fails it.

**Rank decisions stay the QR path's.** The rank tests (``rank``) compare ``1 / ||(R /
F)^{-1}||_F`` of blocks of the system's ``R`` with ``tol`` (``F`` the largest column norm).
Every block they test is a set of columns of ``R``, and ``sigma_min`` of a set of columns is
at least that of all, so ``F ||L11^{-1}||_F <= 1 / (RANK_MARGIN tol)`` (with ``RANK_MARGIN``
far above the ``sqrt(dim)`` between the statistics and far above either path's roundoff)
means no test can fire; elsewhere the QR path runs and decides, raising or giving ``+inf``
as before. float32 always takes the QR path.

Eagerly (numpy, torch, concrete jax) the check reads values and the QR path runs only when
it fails. Under ``jax.jit`` (or ``jax.grad``) it is a ``lax.cond``; the fast path's
derivative is taken at safe inputs where the check fails (``backends.jax.guarded``), so NaN
of a failed Cholesky never reaches a gradient.

Example:
    >>> from funsor_core.atoms.gaussian.sqrt_info import from_mean_covariance
    >>> w, s = from_mean_covariance(np.array([[-1.0], [1.0]]), np.ones((2, 1, 1)))
    >>> c, w2, s2 = collapse_normal(np.log(np.full(2, 0.5)), w, s, None, None)
    >>> float(1 / s2[0, 0] ** 2)  # 1 + 1 (the spread of the means)
    2.0
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian.rank import rank_tolerance
from funsor_core.atoms.gaussian.small_linalg import cholesky_inverse, matmul
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import cached

__all__ = ["FAST_NORMAL_EQUATIONS", "FAST_RTOL", "RANK_MARGIN", "collapse_gram",
           "collapse_normal", "marginal_gram", "mixture_rows", "system_rows"]

Array = Any

# Switch: False sends every collapse to the QR path (tests and benchmarks compare the two).
FAST_NORMAL_EQUATIONS = [True]
# The largest first-order relative error bound, n eps kappa_F(T)^2, the fast path may have.
FAST_RTOL = 1e-10
# How far above the rank tolerance the smallest scaled singular value must certainly be.
RANK_MARGIN = 1e3

_EPS64 = 2.0 ** -52
_LOG_2PI = math.log(2 * math.pi)
_SUM, _MAX, _MIN = np.add.reduce, np.maximum.reduce, np.minimum.reduce


def _nan_on_error(fn: Callable) -> Callable:
    """``fn`` giving NaN where it raises ``LinAlgError``, as the LAPACK ufunc does."""
    def call(x: np.ndarray, signature: str) -> np.ndarray:
        try:
            return fn(x)
        except np.linalg.LinAlgError:
            return np.full_like(x, np.nan)
    return call


# numpy's LAPACK ufunc, without ``np.linalg.cholesky``'s wrapper (its checks and error-state
# context cost more than the factorization of a 5 x 5 batch); the wrapper where absent.
_CHOLESKY = (getattr(getattr(np.linalg, "_umath_linalg", None), "cholesky_lo", None)
             or _nan_on_error(np.linalg.cholesky))


def collapse_normal(log_weights: Array, white_vec: Array, prec_sqrt: Array,
                    index: tuple | None, fallback: Callable | None):
    """``moments.collapse_system`` by normal equations, or None where it declines.

    Args:
        log_weights, white_vec, prec_sqrt, index: as ``moments.collapse_system``.
        fallback: a function of no arguments returning the QR path's result: under jax
            tracing the result is a ``lax.cond`` between the two (None: no tracing support).

    Returns:
        ``(log_const, white_vec, prec_sqrt)`` as ``collapse_system``; None (eagerly) where
        the system is not float64 and full-rank by shape, the check fails, or the switch is
        off, and the caller runs the QR path.

    Example:
        >>> from funsor_core.atoms.gaussian.sqrt_info import from_mean_covariance
        >>> w, s = from_mean_covariance(np.zeros((1, 2)), np.eye(2)[None])
        >>> c, w2, s2 = collapse_normal(np.zeros(1), w, s, (1,), None)
        >>> bool(np.isclose(c, 0.5 * np.log(2 * np.pi))), s2.shape  # x[1] integrated
        (True, (1, 1))
    """
    dim, rank = prec_sqrt.shape[-2:]
    if not FAST_NORMAL_EQUATIONS[0] or rank < dim or prec_sqrt.dtype.itemsize != 8:
        return None
    d_b, m = system_rows(white_vec, prec_sqrt, index)
    return collapse_gram(log_weights, matmul(m, m.swapaxes(-1, -2)), d_b, rank, fallback)


def system_rows(white_vec: Array, prec_sqrt: Array, index: tuple | None):
    """``(d_b, M)``: the number of coordinates to integrate and ``M = [S_{b+a}; w']``, the
    system's rows in the order of the module docstring (``dim + 1`` rows). The Gram matrix
    of a system made of column blocks (a sum of Gaussians) is the sum of theirs.

    Example:
        >>> d_b, m = system_rows(np.array([1.0, 2.0]), np.array([[3.0, 4.0], [5.0, 6.0]]), (1,))
        >>> d_b, m.tolist()  # row 1 first, then row 0, then w
        (1, [[5.0, 6.0], [3.0, 4.0], [1.0, 2.0]])
    """
    d_b, order = _order(prec_sqrt.shape[-2], () if index is None else tuple(index))
    s = prec_sqrt if order is None else la.rows(prec_sqrt, order)
    return d_b, ops.cat([s, white_vec[..., None, :]], -2)


def collapse_gram(log_weights: Array, mm: Array, d_b: int, rank: int,
                  fallback: Callable | None):
    """``collapse_normal`` from ``M M'`` (``system_rows``) of a float64 system of ``rank``
    columns, ``rank >= dim``, or None where it declines.

    Example:
        >>> d_b, m = system_rows(np.zeros((2, 1)), np.ones((2, 1, 1)), None)
        >>> c, w, s = collapse_gram(np.zeros(2), m @ m.swapaxes(-1, -2), d_b, 1, None)
        >>> float(s[0, 0])  # two unit Gaussians at 0: the precision stays 1
        1.0
    """
    if not FAST_NORMAL_EQUATIONS[0]:
        return None
    dim = mm.shape[-1] - 1
    # Array operators and methods here and below, not ops: the arguments are arrays of one
    # backend (numpy, torch or jax, traced or not), and the step is small enough that
    # dispatch shows.
    if type(mm) is np.ndarray and type(log_weights) is np.ndarray:
        return _eager_host(log_weights, mm + _last_unit(dim + 1), (d_b, dim, _tolerance(dim, rank)))
    gram = mm + ops.new_array(mm, _last_unit(dim + 1))
    plan = (d_b, dim, _tolerance(dim, rank))
    if ops.is_concrete(gram) and ops.is_concrete(log_weights):
        return _eager(log_weights, gram, plan)
    # Traced: a backend that compiles control flow exports ``guarded`` (and ``cond``).
    backend = backend_of(gram)
    if fallback is None or not hasattr(backend, "guarded"):
        return None
    safe = (ops.full_like(log_weights, 0.0),
            la.expand(ops.new_eye(gram, dim + 1), tuple(gram.shape[:-2]), 2))
    out, ok = backend.guarded(lambda lw, g: _traced(lw, g, plan), (log_weights, gram), safe)
    return backend.cond(ok, lambda _: out, lambda _: fallback(), None)


def marginal_gram(mm: Array, d_b: int, rank: int):
    """``sqrt_info.marginalize`` of the first ``d_b`` coordinates from ``M M'`` of a float64
    system (``system_rows`` with ``index=None``: rows ``b``, then ``a``, then ``w``) of
    ``rank >= dim`` columns, by the Cholesky factor ``L = [[L_bb, 0, 0], [L_ab, L_aa, 0],
    [z_b', z_a', c]]`` of ``M M' + e e'``: the marginal is ``-0.5 ||x_a L_aa - z_a'||^2`` plus
    ``-0.5 (c^2 - 1) + 0.5 d_b log 2π - log|det L_bb|``. Eager arrays only, and only where the
    check of the module docstring passes (its rank margin over every coordinate, so no rank
    test of the QR path could fire); None otherwise, and the caller runs the QR path.

    Returns:
        ``(white_vec, prec_sqrt, norm)`` as ``sqrt_info.marginalize`` returns them (a lower
        triangular ``prec_sqrt``: another square root of the same precision).

    Example:
        >>> d_b, m = system_rows(np.zeros(2), np.eye(2), None)
        >>> w, s, norm = marginal_gram(m @ m.T, 1, 2)
        >>> s.tolist(), bool(np.isclose(norm, 0.5 * np.log(2 * np.pi)))
        ([[1.0]], True)
    """
    dim = mm.shape[-1] - 1
    if (not FAST_NORMAL_EQUATIONS[0] or rank < dim or mm.dtype.itemsize != 8
            or not ops.is_concrete(mm)):
        return None
    gram = mm + ops.new_array(mm, _last_unit(dim + 1))
    chol = _cholesky(gram)
    if chol is None:
        return None
    chol_inv = ops.triangular_inv(chol, upper=False)
    if not _well_conditioned(_host(gram), _host(chol_inv), dim, _tolerance(dim, rank)):
        return None
    diag = _diagonal(chol)
    c = diag[..., dim]
    norm = (0.5 * d_b * _LOG_2PI - 0.5 * (c * c - 1.0)) - ops.log(diag[..., :d_b]).sum(-1)
    return chol[..., dim, d_b:dim], chol[..., d_b:dim, d_b:dim], norm


@cached("gaussian.normal_equations.tolerance", maxsize=256, fast=True)
def _tolerance(dim: int, rank: int) -> float:
    """``rank_tolerance`` of a float64 system of this shape (the fast path is float64 only)."""
    return rank_tolerance(np.empty((dim, rank)))


@cached("gaussian.normal_equations.order", maxsize=256, fast=True)
def _order(dim: int, index: tuple) -> tuple:
    """``(d_b, order)``: the rows ``b + a`` of the system (None where that is every row in
    order)."""
    b, a = la.split_index(dim, index)
    order = b + a
    return len(b), None if order == tuple(range(dim)) else order


@cached("gaussian.normal_equations.last_unit", maxsize=64, fast=True)
def _last_unit(n: int) -> np.ndarray:
    """``e e'`` for the last unit vector ``e`` of size ``n`` (cached: never write to it)."""
    out = np.zeros((n, n))
    out[-1, -1] = 1.0
    return out


# -- the array work, shared by the eager and the traced path ------------------------------------
def _components(diag: Array, chol_inv: Array, d_b: int, dim: int):
    """``(log Z_k, mu_k, L_aa^{-1})``: each component's log integral over all coordinates,
    the mean of ``a`` and the square root of its covariance (``Sigma_k = L_aa^{-T} L_aa^{-1}``),
    from the diagonal of ``L`` (positive: a Cholesky factor) and ``L^{-1}``."""
    c = diag[..., dim]
    log_z = (0.5 * dim * _LOG_2PI - 0.5 * (c * c - 1.0)) - ops.log(diag[..., :dim]).sum(-1)
    # Rows a and the last of L^{-1}, columns a: [L_aa^{-1}; -mu' / c].
    block = chol_inv[..., d_b:, d_b:dim]
    return log_z, -c[..., None] * block[..., -1, :], block[..., :-1, :]


def mixture_rows(log_weights: Array, log_z: Array, mean_k: Array, roots: Array):
    """``(log Z, finite, mean, A)`` of a mixture over the last batch dim: its log mass, where
    that is finite, its mean, and the stacked rows ``A = [sqrt(p_k) [roots_k; (mu_k -
    mean)']]_k`` whose ``A'A`` is its covariance (``roots_k' roots_k = Sigma_k``).

    ``sqrt(p_k) = exp((log Z_k - log Z) / 2)``: exact zeros for -inf weights, and a gradient
    that stays finite there (``sqrt(p)`` would have an infinite one at ``p = 0``).

    Example:
        >>> lz, ok, m, a = mixture_rows(np.zeros(2), np.zeros(2), np.array([[-1.0], [1.0]]),
        ...                             np.ones((2, 1, 1)))
        >>> a = a.reshape(-1, 1)  # the rows of both components
        >>> float(m[0]), (a.T @ a).item()  # 1 + 1: the spread of the means
        (0.0, 2.0)
    """
    log_mass_k = log_weights + log_z
    log_mass = ops.logsumexp(log_mass_k, -1)
    finite = ops.isfinite(log_mass)
    shift = ops.where(finite, log_mass, 0.0)
    root_p = ops.exp(0.5 * (log_mass_k - shift[..., None]))
    # mean = sum_k p_k mu_k, as a product of (1, n) and (n, d) matrices.
    mean = matmul((root_p * root_p)[..., None, :], mean_k)[..., 0, :]
    diff = mean_k - mean[..., None, :]
    stacked = ops.cat([roots, diff[..., None, :]], -2) * root_p[..., None, None]
    return log_mass, finite, mean, stacked


def _mixture(log_weights: Array, log_z: Array, mean_k: Array, linv_aa: Array):
    """``(log Z, mean, C)`` of the mixture: ``mixture_rows``, with ``C = A'A`` formed instead
    of factored (as ``moments.collapse_arrays`` does)."""
    d_a = mean_k.shape[-1]
    log_mass, finite, mean, stacked = mixture_rows(log_weights, log_z, mean_k, linv_aa)
    stacked = stacked.reshape(tuple(log_mass.shape) + (log_weights.shape[-1] * (d_a + 1), d_a))
    cov = matmul(stacked.swapaxes(-1, -2), stacked)
    # No mass at all (every root_p zero, so cov = 0): a unit covariance, as collapse_arrays.
    cov = ops.where(finite[..., None, None], cov, ops.new_eye(cov, d_a))
    return log_mass, mean, cov


def _result(log_mass: Array, mean: Array, diag: Array, chol_inv: Array):
    """``(log_const, white_vec, prec_sqrt)`` from ``C = U U'`` (``diag`` that of ``U``):
    ``prec_sqrt = U^{-T}``."""
    d_a = mean.shape[-1]
    log_det = ops.log(diag).sum(-1)
    log_const = log_mass - (log_det + 0.5 * d_a * _LOG_2PI)
    return log_const, matmul(chol_inv, mean[..., None])[..., 0], chol_inv.swapaxes(-1, -2)


def _well_conditioned(gram, chol_inv, dim: int | None = None, tol: float = 0.0):
    """The check of the module docstring on ``G`` and ``L^{-1}`` (numpy arrays eagerly, jax
    arrays traced: array methods only); with ``dim``, also the rank margin on the leading
    ``dim`` columns. False on NaN (every comparison with NaN is, and the maxima keep it)."""
    n = gram.shape[-1]
    if not math.prod(gram.shape[:-2]):
        return True  # an empty batch
    d2 = gram.diagonal(0, -2, -1)
    inv2 = chol_inv * chol_inv
    # The largest ||L^{-1} D||_F^2 = sum_ij (L^{-1})_ij^2 G_jj of the batch.
    ok = (inv2 * d2[..., None, :]).sum((-2, -1)).max() <= FAST_RTOL / (n * n * _EPS64)
    if dim is None:
        return ok
    # The largest F^2 ||L11^{-1}||_F^2, with F^2 the largest G_jj of the system's columns.
    scaled = d2[..., :dim].max(-1) * inv2[..., :dim, :dim].sum((-2, -1))
    return ok & (scaled.max() * (RANK_MARGIN * tol) ** 2 < 1.0)


def _eager(log_weights: Array, gram: Array, plan: tuple):
    d_b, dim, tol = plan
    chol = _cholesky(gram)
    if chol is None:
        return None
    chol_inv = ops.triangular_inv(chol, upper=False)
    if not _well_conditioned(_host(gram), _host(chol_inv), dim, tol):
        return None
    parts = _components(_diagonal(chol), chol_inv, d_b, dim)
    log_mass, mean, cov = _mixture(log_weights, *parts)
    u = _cholesky(cov)
    if u is None:
        return None
    u_inv = ops.triangular_inv(u, upper=False)
    if not _well_conditioned(_host(cov), _host(u_inv)):
        return None
    return _result(log_mass, mean, _diagonal(u), u_inv)


def _eager_host(log_weights: np.ndarray, gram: np.ndarray, plan: tuple):
    """``_eager`` on numpy arrays, numpy called directly: the same quantities and checks
    (values equal to rounding) in fewer calls, because on the tiny matrices of a filter step
    each call's wrapper costs more than its arithmetic. ``_eager``'s four factorizations
    (two Cholesky, two triangular inverses) are two (``_cholesky_inverse_host``); a failed
    one is NaN, not an exception, and fails the check, so the decision is the
    factorization's own and the QR path runs as before. The check's sums are products with
    the diagonal, and the mixture's weights enter the product that forms ``C`` (``A'A =
    sum_k p_k rows_k' rows_k``, no square roots)."""
    d_b, dim, tol = plan
    n = dim + 1
    if not gram.size or log_weights.shape != gram.shape[:-2]:
        return _eager(log_weights, gram, plan)  # an empty batch, or one that broadcasts
    d2 = gram.diagonal(0, -2, -1)
    chol, chol_inv = _cholesky_inverse_host(gram)  # NaN where it fails: fails the check
    inv2 = chol_inv * chol_inv
    # ||L^{-1} D||_F^2 = sum_i (inv2 @ diag G)_i per entry; then the rank margin of the
    # leading block, F^2 ||L11^{-1}||_F^2 (``_host_check``, in fewer calls).
    if not _MAX(_SUM((inv2 @ d2[..., None]).reshape(-1, n), 1), None) <= \
            FAST_RTOL / (n * n * _EPS64):
        return None
    lead = inv2[..., :dim, :dim].reshape(tuple(inv2.shape[:-2]) + (dim * dim,))
    if not _MAX(_MAX(d2[..., :dim], -1) * _SUM(lead, -1), None) * (RANK_MARGIN * tol) ** 2 < 1.0:
        return None
    c = chol[..., dim, dim]
    log_z = (0.5 * dim * _LOG_2PI + 0.5 - 0.5 * c * c) - _SUM(
        np.log(chol.diagonal(0, -2, -1)[..., :dim]), -1)
    # The mixture (``mixture_rows``): p_k = exp(log Z_k - log Z), cov = A'A.
    log_mass_k = log_weights + log_z
    top = _MAX(log_mass_k, -1)
    if not np.isfinite(top).all():
        return None  # a mixture of no mass: the general path gives its unit covariance
    scaled = np.exp(log_mass_k - top[..., None])
    total = _SUM(scaled, -1)
    p = scaled / total[..., None]
    rows = chol_inv[..., d_b:, d_b:dim]  # [L_aa^{-1}; -mu' / c], a view of our own array
    last = rows[..., -1, :]
    last *= -c[..., None]  # mu_k
    mean = (p[..., None, :] @ last)[..., 0, :]
    last -= mean[..., None, :]  # mu_k - mean
    k, d_a = log_weights.shape[-1], dim - d_b
    rows = rows.reshape(tuple(top.shape) + (k * (d_a + 1), d_a))
    cov = (rows.swapaxes(-1, -2) * np.repeat(p, d_a + 1, -1)[..., None, :]) @ rows
    u, u_inv = _cholesky_inverse_host(cov)
    stat = _MAX(_SUM(((u_inv * u_inv) @ cov.diagonal(0, -2, -1)[..., None]).reshape(-1, d_a), 1),
                None)
    if not stat <= FAST_RTOL / (d_a * d_a * _EPS64):
        return None
    log_det = _SUM(np.log(u.diagonal(0, -2, -1)), -1)
    log_const = (top + np.log(total)) - (log_det + 0.5 * d_a * _LOG_2PI)
    return log_const, (u_inv @ mean[..., None])[..., 0], u_inv.swapaxes(-1, -2)


def _cholesky_inverse_host(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L, L^{-1})`` for ``G = L L'`` (a batch), from one Cholesky factorization of
    ``[[G, 0], [I, t I]]``: its factor is ``[[L, 0], [L^{-T}, chol(t I - G^{-1})]]`` (the
    lower-left block ``Y`` solves ``Y L' = I``, by LAPACK's triangular solve). A
    factorization per call instead of two: on these sizes the call, not the arithmetic, costs.

    ``t = 2 K / min_j G_jj``, with ``K = FAST_RTOL / (n^2 eps)`` the check's bound on
    ``||L^{-1} D||_F^2``: where the check can pass, ``||G^{-1}||_2 <= ||L^{-1}||_F^2 <= K /
    min_j G_jj = t / 2``, so ``t I - G^{-1}`` is positive definite with room to spare, and a
    factorization that fails (NaN, which fails the check) is one the check would have refused
    or a ``G`` that is not positive definite: the decision stays the factorization's and the
    check's."""
    n = gram.shape[-1]
    template = _augmented_template(n)
    aug = np.empty(tuple(gram.shape[:-2]) + (2 * n, 2 * n))
    aug[...] = template
    aug[..., :n, :n] = gram
    # NaN of a failed factorization (or of t where some G_jj <= 0) is a value here. (t I is
    # written whole, broadcast: cheaper than scaling the batch's strided blocks in place.)
    with np.errstate(all="ignore"):
        aug[..., n:, n:] = template[n:, :n] * (2.0 * FAST_RTOL / (n * n * _EPS64)
                                               / _MIN(gram.diagonal(0, -2, -1), None))
        out = _CHOLESKY(aug, signature="d->d")
    return out[..., :n, :n], out[..., n:, :n].swapaxes(-1, -2)


@cached("gaussian.normal_equations.augmented_template", maxsize=64, fast=True)
def _augmented_template(n: int) -> np.ndarray:
    """``[[0, 0], [I, I]]`` of size ``2n`` (cached: never write to it)."""
    out = np.zeros((2 * n, 2 * n))
    out[n:, :n] = out[n:, n:] = np.eye(n)
    return out


def _host_check(gram: np.ndarray, chol_inv: np.ndarray, dim: int | None, tol: float) -> bool:
    """``_well_conditioned`` of numpy arrays, the reductions called directly. False on NaN."""
    n = gram.shape[-1]
    if not gram.size:
        return True  # an empty batch
    d2 = gram.diagonal(0, -2, -1)
    inv2 = chol_inv * chol_inv
    # The largest ||L^{-1} D||_F^2 = sum_ij (L^{-1})_ij^2 G_jj of the batch.
    stat = _MAX(_SUM((inv2 * d2[..., None, :]).reshape(-1, n * n), 1), None)
    if not stat <= FAST_RTOL / (n * n * _EPS64):
        return False
    if dim is None:
        return True
    # The largest F^2 ||L11^{-1}||_F^2, with F^2 the largest G_jj of the system's columns.
    scaled = _MAX(d2[..., :dim], -1) * _SUM(inv2[..., :dim, :dim], (-2, -1))
    return bool(_MAX(scaled, None) * (RANK_MARGIN * tol) ** 2 < 1.0)


def _traced(log_weights: Array, gram: Array, plan: tuple):
    """The fast path and its check as array operations: ``(result, ok)``. The
    factorizations are written out (``small_linalg``: compiled, a LAPACK call per small
    matrix costs more than the arithmetic); NaN where one fails, and the check then fails."""
    d_b, dim, tol = plan
    diag, chol_inv = cholesky_inverse(gram)
    log_mass, mean, cov = _mixture(log_weights, *_components(diag, chol_inv, d_b, dim))
    u_diag, u_inv = cholesky_inverse(cov)
    ok = (_well_conditioned(ops.detach(gram), ops.detach(chol_inv), dim, tol)
          & _well_conditioned(ops.detach(cov), ops.detach(u_inv)))
    return _result(log_mass, mean, u_diag, u_inv), ok


def _cholesky(x: Array):
    """``ops.cholesky``, or None where numpy or torch find ``x`` not positive definite (jax
    gives NaN instead, which the check rejects)."""
    try:
        return ops.cholesky(x)
    except (ValueError, RuntimeError):  # numpy's LinAlgError, torch's _LinAlgError
        return None


def _diagonal(x: Array) -> Array:
    return x.diagonal(0, -2, -1)


def _host(x: Array) -> np.ndarray:
    return x if type(x) is np.ndarray else ops.to_numpy(x)
