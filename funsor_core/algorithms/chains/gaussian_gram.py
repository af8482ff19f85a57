"""The log-depth tree of an eager Gaussian chain in information (Gram) form, where bounds show
it gives the QR path's numbers.

``gaussian_scan`` composes two steps by stacking their square roots and integrating the
shared state ``m`` out by one QR, with rank tests on its triangular factor. Here each factor
``(w, s)`` (rows ``[p, g, c]``) is carried as its Gram matrix ``H = M M'`` of ``M = [s; w']``
instead: composing two is adding their ``H`` embedded in the rows ``[m, p, g, c, w]``, and
integrating ``m`` out is one Cholesky factorization of the ``dm x dm`` block,

    L_mm L_mm' = G_mm,   X = G_am L_mm^{-T},   H_new = G_aa - X X',
    log ∫ = 0.5 dm log 2π - log|det L_mm|

(``H_new`` keeps the part of ``||w||^2`` that no state explains in its last diagonal entry;
it becomes the constant ``-0.5 (c^2 - 1)`` when the result goes back to square-root form by
one Cholesky factorization of ``H + e e'``, as ``normal_equations.marginal_gram`` reads it).
The arithmetic runs in float64 whatever the input's dtype, and the results are cast back.
For small states (``ENTRYWISE_MAX``) each entry of ``H`` is its own array over the batch and
time, so a merge skips the zero block (``p`` and ``c`` meet in no factor) and the symmetric
half, and runs on contiguous arrays; larger ones are merged as batches of matrices.

**When it is used.** Squaring the system squares its condition number, and the QR path
decides numerical rank; so every merge is checked, in array operations (one host read for
the whole chain), and the chain falls back to the QR path when any check fails:

- *Factorization.* Cholesky of a block that is not positive definite gives NaN, and every
  comparison below is False on NaN (``small_linalg``).
- *Rank.* The QR path's statistics (``rank``) for the integrated block and for each kept
  column ``j`` are ``F^2 ||R_bb^{-1}||_F^2`` and ``F^2 (||R_bb^{-1}||_F^2 + (||R_bb^{-1}
  r_bj||^2 + 1) / rho_j^2)`` with ``R_bb = L_mm'``, ``rho_j^2 = H_new,jj`` and ``F^2`` the
  largest diagonal entry of ``G`` over the states. With ``||R_bb^{-1} r_bj||^2 <=
  ||L_mm^{-1}||_F^2 G_jj`` each is bounded from the arrays at hand; the bound times
  ``(RANK_MARGIN tol)^2`` must stay below 1, with ``tol`` the QR path's tolerance for the
  input's dtype: no rank test of the QR path could fire, and no column would be zeroed.
- *Accuracy.* Cholesky is backward stable (``L L' = G + E``, ``|E_ij| <= gamma sqrt(G_ii
  G_jj)``, ``gamma = n eps64``), so with ``k = F^2 ||L_mm^{-1}||_F^2`` (a bound on the
  scaled ``||G_mm^{-1}||``) each entry of ``H_new`` moves by at most about ``gamma (1 + 2
  sqrt(dm k)) sqrt(G_ii G_jj)``; relative to the new diagonal (``1 + H_new,ww`` for the
  constant's entry, whose error is an absolute error in log units) that must stay below
  ``FAST_RTOL`` for float64 input and ``FAST_RTOL32`` (an order below float32's own
  rounding) for float32. The final Cholesky factorization gets ``normal_equations``' own
  check.

Under ``jax.jit`` nothing here runs (the compiled kernels of ``gaussian_scan`` do); eager
jax, numpy and torch arrays do, and torch's autograd flows through the same arithmetic.

Example:
    >>> from funsor_core.atoms.gaussian import sqrt_info as gm
    >>> w, s = gm.from_mean_covariance(np.zeros(2), np.eye(2))
    >>> w2, s2, k2 = gram_tree(w[None].repeat(3, 0), s[None].repeat(3, 0), np.zeros(3), 1, 0)
    >>> # three unit steps x0-x1-x2-x3: x1, x2 each appear twice (sqrt(pi) each)
    >>> bool(np.isclose(k2, np.log(np.pi)))
    True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian.normal_equations import FAST_RTOL
from funsor_core.atoms.gaussian.rank import RANK_RTOL
from funsor_core.atoms.gaussian.small_linalg import cholesky_inverse, matmul
from funsor_core.engine.backend import backend_of

__all__ = ["ENTRYWISE_MAX", "FAST_GRAM_TREE", "FAST_RTOL32", "GRAM_RANK_MARGIN", "gram_tree",
           "gram_tree_traced"]

Array = Any

# Switch: False sends every chain to the QR path (tests and benchmarks compare the two).
FAST_GRAM_TREE = [True]
# The error bound a merge of a float32 chain may have: ten times below float32's rounding.
FAST_RTOL32 = 1e-8
# The rank margin is this times ``1 + sqrt(dm + 1)``: a bound ``lam > M tol`` on the exact
# statistic leaves the QR path's computed one (a backward error below ``tol``, and ``lam``
# within ``sqrt(dm + 1)`` of ``sigma_min``) above ``tol`` for any ``M > 1 + sqrt(dm + 1)``;
# the factor covers the two paths' different roundoff on the way to the merge.
GRAM_RANK_MARGIN = 8.0
# Largest ``H`` (``2 dp + dg + 1`` rows) merged entry by entry (``_entry_rounds``); larger ones
# as batches of matrices, whose Python operations do not grow with the square of the size.
ENTRYWISE_MAX = 7

_EPS64 = 2.0 ** -52
_LOG_2PI = math.log(2 * math.pi)
_EPS_OF = {4: 2.0 ** -23, 8: 2.0 ** -52}


def gram_tree(w: Array, s: Array, k: Array, dp: int, dg: int):
    """The product ``(w, s, k)`` of the steps of a chain (leading time axis, rows ``[prev,
    glob, curr]``, every step of rank ``2 dp + dg``) by the log-depth tree in Gram form, or
    None where a check of the module docstring fails, the arrays are traced, the switch is
    off or the dtype is neither float32 nor float64: the caller runs the QR path.

    Returns:
        ``(w, s, k)`` as ``gaussian_scan``'s tree gives them, ``s`` lower triangular (another
        square root of the same precision), in the input's dtype.

    Example:
        >>> from funsor_core.atoms.gaussian import sqrt_info as gm
        >>> w, s = gm.from_mean_covariance(np.zeros(2), np.eye(2))
        >>> gram_tree(w[None], s[None], np.zeros(1), 1, 0)[1].shape
        (2, 2)
    """
    itemsize = np.dtype(str(s.dtype).replace("torch.", "")).itemsize
    if (not FAST_GRAM_TREE[0] or itemsize not in _EPS_OF or not ops.is_concrete(s)
            or not ops.is_concrete(w) or not ops.is_concrete(k)):
        return None
    # A failed factorization is NaN (numpy warns), and then a check fails: not an error.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        found = _tree(w, s, k, dp, dg, itemsize)
    return None if found is None or not bool(found[1]) else found[0]


def gram_tree_traced(w: Array, s: Array, k: Array, dp: int, dg: int, fallback):
    """``gram_tree`` under a compiling backend's trace (``jax.jit``): the Gram tree and its
    checks as array operations, then ``cond(ok, Gram tree, fallback())``, so the QR path
    (``fallback``, a function of no arguments) runs only where a check fails; the Gram tree's
    derivative is taken at safe inputs where one does (``backend.guarded``), so a failed
    factorization's NaN never reaches a gradient. None (the caller runs ``fallback`` itself)
    where the backend has no ``guarded``, the switch is off, or float64 is not available.

    Example:
        >>> from funsor_core.atoms.gaussian import sqrt_info as gm
        >>> w, s = gm.from_mean_covariance(np.zeros(2), np.eye(2))
        >>> gram_tree_traced(w[None], s[None], np.zeros(1), 1, 0, None) is None  # numpy
        True
    """
    backend = backend_of(s)
    itemsize = np.dtype(str(s.dtype).replace("torch.", "")).itemsize
    if (not FAST_GRAM_TREE[0] or itemsize not in _EPS_OF or not hasattr(backend, "guarded")
            or np.dtype((s * ops.new_array(s, np.ones(1))).dtype).itemsize != 8):
        return None

    def fast(w, s, k):  # jax's factorizations give NaN, never raise: found is not None
        return _tree(w, s, k, dp, dg, itemsize)

    # Safe inputs: unit steps, whose every merge passes.
    eye = ops.new_array(s, np.eye(s.shape[-1], dtype=np.dtype(s.dtype)))
    safe = (ops.full_like(w, 0.0), s * 0.0 + eye, ops.full_like(k, 0.0))
    out, ok = backend.guarded(fast, (w, s, k), safe)
    return backend.cond(ok, lambda _: out, lambda _: fallback(), None)


def _tree(w: Array, s: Array, k: Array, dp: int, dg: int, itemsize: int):
    """The rounds of merges and the checks: ``((w, s, k), ok)`` with ``ok`` a boolean
    array (no value is read); None where a factorization raised (numpy, torch)."""
    dim = 2 * dp + dg
    rtol = FAST_RTOL if itemsize == 8 else FAST_RTOL32
    # The QR path's tolerance for a merge: a system of 3 dp + dg states and 2 dim rows.
    tol = RANK_RTOL * max(3 * dp + dg, 2 * dim) * _EPS_OF[itemsize]
    one64 = ops.new_array(s, np.ones(1))  # float64 by promotion, on every backend
    m = ops.cat([s, w[..., None, :]], -2) * one64
    h, proto_k, k = matmul(m, m.swapaxes(-1, -2)), k, (k[..., None] * one64)[..., 0]
    plan = _plan(h, dp, dg, rtol, tol)
    rounds = _entry_rounds if dim + 1 <= ENTRYWISE_MAX else _matrix_rounds
    h, k, stat = rounds(h, k, plan)
    out = _square_root(h, dim, rtol)
    if out is None:
        return None
    w2, s2, shift, root_ok = out
    result = (_cast_like(w2, w), _cast_like(s2, s), _cast_like(k + shift, proto_k))
    return result, root_ok if stat is None else root_ok & _checks(stat, plan)


def _matrix_rounds(h: Array, k: Array, plan: tuple):
    """The rounds of merges on batches of matrices: ``(H, k, stat)`` of the whole chain."""
    stats = []
    while h.shape[0] > 1:
        n = h.shape[0]
        even = n - n % 2
        # An odd last step waits for the next round, appended after the merged pairs.
        h2, log_norm, stat = _merge(h[0:even:2], h[1:even:2], plan)
        k2 = k[0:even:2] + k[1:even:2] + log_norm
        h, k = (h2, k2) if n == even else (ops.cat([h2, h[even:]], 0), ops.cat([k2, k[even:]], 0))
        stats.append(stat)
    return h[0], k[0], ops.permute(ops.cat(stats, 0), (1, 0)) if stats else None


def _entry_rounds(h: Array, k: Array, plan: tuple):
    """The rounds of merges with each entry of ``H`` (``i <= j``) an array over ``(batch,
    time)``: ``(H, k, stat)`` of the whole chain. Entries that are zero or shared are never
    computed, and every operation runs over one contiguous array; for the small states where
    it is chosen (``ENTRYWISE_MAX``) that is several times less arithmetic than the batched
    5 x 5 products (``benchmarks/pyro_hmm.py``)."""
    steps, batch, n = h.shape[0], tuple(h.shape[1:-2]), h.shape[-1]
    size = math.prod(batch)
    flat = ops.reshape(ops.permute(ops.reshape(h, (steps, size, n * n)), (2, 1, 0)),
                       (n * n, size * steps))
    entries = {(i, j): ops.reshape(flat[i * n + j], (size, steps))
               for i in range(n) for j in range(i, n)}
    k = ops.permute(ops.reshape(k, (steps, size)), (1, 0))
    stats = []
    while steps > 1:
        even = steps - steps % 2
        left = {e: v[:, 0:even:2] for e, v in entries.items()}
        right = {e: v[:, 1:even:2] for e, v in entries.items()}
        merged, log_norm, stat = _merge_entries(left, right, plan)
        k2 = k[:, 0:even:2] + k[:, 1:even:2] + log_norm
        if steps != even:  # an odd last step waits for the next round
            merged = {e: ops.cat([v, entries[e][:, even:]], -1) for e, v in merged.items()}
            k2 = ops.cat([k2, k[:, even:]], -1)
        entries, k, steps = merged, k2, k2.shape[-1]
        stats.append(stat)
    rows = [ops.stack([_entry(entries, i, j)[:, 0] for j in range(n)], -1) for i in range(n)]
    h = ops.reshape(ops.stack(rows, -2), batch + (n, n))
    return h, ops.reshape(k[:, 0], batch), ops.cat(stats, -1) if stats else None


def _entry(h: dict, i: int, j: int) -> Array:
    return h[(i, j)] if i <= j else h[(j, i)]


def _merge_entries(a: dict, b: dict, plan: tuple):
    """``_merge`` entry by entry: the left factor ``a``'s ``c`` and the right one's ``p`` are
    ``m``; of the kept rows ``p`` is ``a``'s alone, ``c`` is ``b``'s, ``g`` and ``w`` both's."""
    dp, dg, n = plan[:3]
    c0 = dp + dg
    owner = ["a"] * dp + ["ab"] * dg + ["b"] * dp + ["ab"]
    # G_mm and its Cholesky factor's inverse, written out (NaN where a pivot is not positive).
    low, recip = [[None] * dp for _ in range(dp)], []
    for j in range(dp):
        pivot = _entry(a, c0 + j, c0 + j) + _entry(b, j, j)
        g_mm_diag = pivot
        for q in range(j):
            pivot = pivot - low[j][q] * low[j][q]
        r = 1.0 / ops.sqrt(pivot)
        recip.append((r, g_mm_diag))
        for i in range(j + 1, dp):
            acc = _entry(a, c0 + i, c0 + j) + _entry(b, i, j)
            for q in range(j):
                acc = acc - low[i][q] * low[j][q]
            low[i][j] = acc * r
    inv = [[None] * dp for _ in range(dp)]
    for j in range(dp):
        inv[j][j] = recip[j][0]
        for i in range(j + 1, dp):
            acc = low[i][j] * inv[j][j]
            for q in range(j + 1, i):
                acc = acc + low[i][q] * inv[q][j]
            inv[i][j] = -acc * recip[i][0]

    def g_am(row: int, col: int):
        if owner[row] == "a":
            return _entry(a, row, c0 + col)
        if owner[row] == "b":
            return _entry(b, row, col)
        return _entry(a, row, c0 + col) + _entry(b, row, col)

    def g_aa(i: int, j: int):
        pair = {owner[i], owner[j]}
        if pair == {"a", "b"}:
            return None  # p and c meet in no factor
        if "a" in pair:
            return _entry(a, i, j)
        if "b" in pair:
            return _entry(b, i, j)
        return _entry(a, i, j) + _entry(b, i, j)

    cols = [[g_am(row, q) for q in range(dp)] for row in range(n)]
    x = [[_sum_terms(cols[row][q] * inv[kk][q] for q in range(kk + 1)) for kk in range(dp)]
         for row in range(n)]
    out, diag_g = {}, []
    for i in range(n):
        for j in range(i, n):
            g = g_aa(i, j)
            xx = _sum_terms(x[i][q] * x[j][q] for q in range(dp))
            out[(i, j)] = -xx if g is None else g - xx
            if i == j:
                diag_g.append(g)
    log_norm = -ops.log(recip[0][0])
    for r, _ in recip[1:]:
        log_norm = log_norm - ops.log(r)
    log_norm = 0.5 * dp * _LOG_2PI - log_norm
    lin2 = _sum_terms(inv[i][j] * inv[i][j] for i in range(dp) for j in range(i + 1))
    stat = ops.stack([g for _, g in recip] + diag_g + [out[(i, i)] for i in range(n)] + [lin2],
                     0)
    return out, log_norm, ops.reshape(ops.detach(stat), (stat.shape[0], -1))


def _sum_terms(terms):
    """The sum of a non-empty iterable of arrays, without ``sum``'s leading ``0 +``."""
    it = iter(terms)
    total = next(it)
    for t in it:
        total = total + t
    return total


def _plan(proto: Array, dp: int, dg: int, rtol: float, tol: float) -> tuple:
    """The merge's constants: 0/1 masks that drop a factor's ``c`` (left) or ``p`` (right)
    rows and columns, and the rank margin (see ``GRAM_RANK_MARGIN``)."""
    n = 2 * dp + dg + 1
    keep_left, keep_right = np.ones(n), np.ones(n)
    keep_left[dp + dg:n - 1] = keep_right[:dp] = 0.0
    masks = tuple(ops.new_array(proto, m) for m in (
        keep_left[:, None] * keep_left, keep_right[:, None] * keep_right,
        keep_left[:, None], keep_right[:, None]))
    margin = GRAM_RANK_MARGIN * (1.0 + math.sqrt(dp + 1))
    return dp, dg, n, masks, rtol, (margin * tol) ** 2


def _merge(ha: Array, hb: Array, plan: tuple):
    """``(H, log ∫, ok)`` of integrating ``m`` (the left factor's ``c``, the right one's
    ``p``) out of the sum of two factors in Gram form (rows ``[p, g, c, w]``); ok a boolean
    scalar array: every check of the module docstring passed."""
    dp, dg, n, (mask_aa, mask_bb, mask_a, mask_b), rtol, scaled_tol2 = plan
    c = slice(dp + dg, n - 1)
    # The rows [p, g, c, w] left after m: a's c and b's p are m, so they drop out.
    g_mm = ha[..., c, c] + hb[..., :dp, :dp]
    g_am = ha[..., :, c] * mask_a + hb[..., :, :dp] * mask_b
    g_aa = ha * mask_aa + hb * mask_bb
    diag, linv = cholesky_inverse(g_mm)
    x = matmul(g_am, linv.swapaxes(-1, -2))
    h = g_aa - matmul(x, x.swapaxes(-1, -2))
    log_norm = 0.5 * dp * _LOG_2PI - ops.log(diag).sum(-1)
    # What the checks read (detached: decisions, not values), one row per merge; the checks
    # run once for the whole tree (``_checks``).
    stat = ops.cat([g_mm.diagonal(0, -2, -1), g_aa.diagonal(0, -2, -1), h.diagonal(0, -2, -1),
                    (linv * linv).sum((-2, -1))[..., None]], -1)
    return h, log_norm, ops.reshape(ops.detach(stat), (-1, stat.shape[-1]))


def _checks(stat: Array, plan: tuple) -> Array:
    """The checks of the module docstring on the columns of the merges' statistics (rows:
    ``diag G_mm``, ``diag G_aa``, ``diag H``, ``||L_mm^{-1}||_F^2``). With ``G_jj <= F^2``
    for every state ``j``, ``F^2 / min_j rho_j^2`` bounds each state's term of the rank
    statistic and its growth ``G_jj / rho_j^2``."""
    dp, _, n, _, rtol, scaled_tol2 = plan
    gd, hd = stat[dp:dp + n], stat[dp + n:dp + 2 * n]
    smin = ops.amin(hd[:-1], 0)
    f2 = ops.max(ops.amax(stat[:dp], 0), ops.amax(gd[:-1], 0))
    fk = f2 * stat[-1]
    ratio = f2 / smin
    corner = 1.0 + hd[-1]
    amp = (1.0 + 2.0 * ops.sqrt(dp * fk)) * ops.max(ratio, gd[-1] / corner)
    # Every comparison is False on NaN (a failed factorization).
    ok = ((ops.amin(smin, None) > 0.0) & (ops.amin(corner, None) > 0.5)
          & (ops.amax(fk + (fk + 1.0) * ratio, None) * scaled_tol2 < 1.0)
          & (ops.amax(amp, None) * ((n + dp) * _EPS64) <= rtol))
    return ok


def _square_root(h: Array, dim: int, rtol: float):
    """``(w, s, -0.5 (c^2 - 1), ok)`` from ``H + e e' = L L'``, ``ok`` the check of
    ``normal_equations`` (``n eps kappa_F^2 <= rtol``); None where the factorization raised."""
    n = dim + 1
    unit = np.zeros((n, n))
    unit[-1, -1] = 1.0
    gram = h + ops.new_array(h, unit)
    try:
        chol = ops.cholesky(gram)
    except (ValueError, RuntimeError):  # numpy's LinAlgError, torch's
        return None
    linv = ops.triangular_inv(ops.detach(chol), upper=False)
    d2 = ops.detach(gram).diagonal(0, -2, -1)
    stat = ((linv * linv) * d2[..., None, :]).sum((-2, -1))
    ok = ops.amax(stat, None) <= rtol / (n * n * _EPS64)  # False on NaN
    c = chol[..., dim, dim]
    return chol[..., dim, :dim], chol[..., :dim, :dim], -0.5 * (c * c - 1.0), ok


def _cast_like(x: Array, proto: Array) -> Array:
    # Array methods of the backend's own arrays: numpy and jax spell it astype, torch to.
    if x.dtype == proto.dtype:
        return x
    return x.astype(proto.dtype) if hasattr(x, "astype") else x.to(proto.dtype)
