"""A replayed collapse (``collapse_replay``) as one numpy program of few calls.

On the small batches of a filter step (a 3 x 3 batch of 5 x 5 systems) a numpy call costs a
microsecond whatever its arithmetic, so the collapse's time is its number of calls. The
general path places each summand with its own calls (``moments._logits``,
``moments._block_gram_host``) and runs ``normal_equations._eager_host``; this program does
the same algebra with the layout decided once per structure:

- **Gather.** Every array of the summands goes into one flat vector (``np.concatenate``);
  one ``take`` by an index array built once from the plan with the general path's own
  layout fills ``M`` (the joint system of ``system_rows`` with a last column ``e``, so that
  ``M M'`` is the augmented Gram matrix ``G = M M' + e e'``), ``M'`` and the log weights.
- **Workspace.** The buffers a call writes (the gather, the factorizations' templates and
  factors, the softmax's columns) and every view the program reads through are made once,
  in a workspace popped from the program's pool for one call and put back after (a thread
  that finds the pool empty makes its own): a call makes no view. The arrays it returns are
  fresh.
- **Components.** ``G`` is written by one ``matmul`` into the top-left block of ``[[G, 0],
  [-I, t I]]``, whose one Cholesky factorization holds ``L`` and ``-L^{-T}`` (the lower-left
  block solves ``Y L' = -I``; the first columns of a Cholesky factor do not depend on later
  ones, so ``L`` and ``Y`` are those of ``G`` whatever ``t``). ``t = 2^400``, far above any
  ``||G^{-1}||_2`` that the check below lets through (the check bounds it by ``K / min_j
  G_jj`` with ``K ~ 1.8e4``): a factorization that fails is NaN and fails the check, and the
  general path decides.
- **The check** is ``normal_equations``' (its module docstring): ``n eps ||L^{-1} D||_F^2 n
  <= FAST_RTOL`` for every entry of the batch, and the mixture's ``C`` gets the same test;
  the rank margin ``F^2 ||L11^{-1}||_F^2 (RANK_MARGIN tol)^2 < 1`` by a bound at least as
  strict (the batch's range of ``G_jj`` times the first test's bound), where the general
  path, if it runs, decides by the margin itself.
- **Mixture.** ``log Z_k`` by one ``matmul`` of the rows ``[log w_k..., 1, log L11_jj...,
  c^2]`` (the log weights gathered, the rest written in place) with fixed coefficients (the
  constants included); ``p_k`` by one softmax over the components; ``C = sum_k p_k A_k'
  A_k`` for ``A_k = [-L_aa^{-1}; (mu_k - mean)']`` (rows of ``-L^{-1}``: the first template's
  lower-left block is ``-I``; changed in place), summed by one reduction written into the second
  factorization's block; ``log_const`` by one ``matmul`` of ``[top, log total, log U_jj...]``.

The values equal the general path's to rounding (the sums run in another order). Anything
that does not match the recorded structure exactly (a type, dtype or shape) declines, and so
does a failed check or a mixture of no mass: the caller then runs the general path.

Example:
    >>> from funsor_core.atoms.gaussian.mixture import gram_collapse_plan
    >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
    ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
    >>> h = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> plan, gs = gram_collapse_plan(frozenset("i"), (g, h))
    >>> log_const, white_vec, prec_sqrt = fused_program(plan, (g, h))((g, h))
    >>> float(1 / prec_sqrt[0, 0] ** 2)  # N(+-0.5, 0.5) collapsed: 0.5 + 0.25
    0.75
"""

from __future__ import annotations

import math
from operator import attrgetter

import numpy as np

from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.moments import _joint_positions
from funsor_core.atoms.gaussian.normal_equations import (
    _CHOLESKY,
    _EPS64,
    FAST_RTOL,
    RANK_MARGIN,
    _tolerance,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Number

__all__ = ["fused_program"]

_ndarray = np.ndarray
_SUM, _MAX, _MIN = np.add.reduce, np.maximum.reduce, np.minimum.reduce
_LOG_2PI = math.log(2 * math.pi)
_HEAD = np.array([0.0, 1.0])  # src[0] fills the zeros of M, src[1] its unit column
_T = 2.0 ** 400
_PREC_SQRT, _WHITE_VEC, _DATA = (attrgetter(a) for a in ("prec_sqrt", "white_vec", "data"))
# numpy's C einsum without the Python wrapper's argument parsing, where this numpy has it
_EINSUM = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "c_einsum", np.einsum)
# np.concatenate without its dispatcher's Python frame, where this numpy has it
_CONCATENATE = getattr(np.concatenate, "_implementation", np.concatenate)
_MATMUL, _LOG, _SQUARE, _EXP = np.matmul, np.log, np.square, np.exp


def _rows_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # pragma: no cover - numpy < 2
    return np.einsum("...i,...i->...", a, b)


# sum_i a_i b_i over the last axis (a gufunc: no subscripts parsed)
_VECDOT = getattr(np, "vecdot", _rows_dot)
_TYPES = frozenset((_ndarray, float, int))  # the arrays, and the Numbers' values

try:  # numpy's error state as one context variable: set and reset without ``np.errstate``
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
    _IGNORE = _make_extobj(all="ignore")
except ImportError:  # pragma: no cover - numpy < 2
    _extobj_contextvar = None


def _augmented(batch: tuple, n: int, sign: float = 1.0) -> np.ndarray:
    """``[[0, 0], [sign I, t I]]`` of size ``2n`` at a batch shape: the template of a
    factorization (``G`` is written into its top-left block; its lower-left block is then
    ``sign L^{-T}``)."""
    out = np.zeros(batch + (2 * n, 2 * n))
    out[..., n:, :n] = np.eye(n) * sign
    out[..., n:, n:] = np.eye(n) * _T
    return out


def fused_program(plan, terms: tuple) -> _Fused | None:
    """The fused collapse of the structure of ``terms`` (Gaussians, Tensors and Numbers, in
    the order the caller will pass them) under ``plan`` (``mixture.gram_collapse_plan``'s),
    or None where it does not apply: log weights summed over names only they have, or an
    array that is not float64 numpy at its full batch shape.

    Example:
        >>> from funsor_core.atoms.gaussian.mixture import gram_collapse_plan
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> plan, gs = gram_collapse_plan(frozenset("i"), (g, g))
        >>> fused_program(plan, (g, g)) is not None
        True
    """
    if plan.dense_axes or plan.dense_full != plan.kshape + (plan.n,):
        return None
    ng = sum(type(t) is Gaussian for t in terms)
    if any(type(t) is not Gaussian for t in terms[:ng]):
        return None  # (summands in canonical order hold their Gaussians first)
    for t in terms[:ng]:
        w, s = t.white_vec, t.prec_sqrt
        batch = tuple(d.size for _, d in t._ikey if d.dtype != "real")
        if type(w) is not _ndarray or type(s) is not _ndarray or w.dtype.char != "d" \
                or s.dtype.char != "d" or s.shape[:-2] != batch or w.shape[:-1] != batch:
            return None
    for t in terms[ng:]:
        if type(t) is Tensor:
            if type(t.data) is not _ndarray or t.data.dtype.char != "d" or t.output.shape:
                return None
        elif type(t) is not Number:
            return None
    return _Fused(plan, terms, ng)


class _Fused:
    """The program of one structure: one gather index into the flat vector of the summands'
    arrays, the checks' constants, and a pool of workspaces (buffers with their views made
    once, so that a call makes no view; a workspace is popped for one call and put back,
    so threads never share one)."""

    __slots__ = ("ng", "size", "index", "shapes", "coef", "coef2", "n", "dim", "d_b",
                 "d_a", "stat1", "margin", "stat2", "pool")

    def __init__(self, plan, terms: tuple, ng: int):
        # The flat vector: _HEAD, the Gaussians' prec_sqrt, their white_vec, the dense data.
        gaussians, dense = terms[:ng], terms[ng:]
        arrays = ([g.prec_sqrt for g in gaussians] + [g.white_vec for g in gaussians]
                  + [np.asarray(t.data) for t in dense])
        offsets = np.cumsum([len(_HEAD)] + [a.size for a in arrays]).tolist()
        self.ng, self.size = ng, offsets[-1]
        dim, rank, batch = plan.dim, plan.rank, plan.kshape + (plan.n,)
        n = dim + 1
        # The layout of ``moments._block_gram_host``, with positions in place of values.
        m = np.zeros(plan.gaussians[0][2] + (n, rank + 1), dtype=np.intp)
        m[..., dim, rank] = 1
        positions = _joint_positions(plan.gaussians, dim, plan.index,
                                     tuple(g.prec_sqrt.shape[-1] for g in gaussians))
        for k, (p, (rows, cols)) in enumerate(zip(plan.gaussians, positions)):
            perm, bshape = p[0], p[1]
            s = np.arange(offsets[k], offsets[k + 1]).reshape(arrays[k].shape)
            w = np.arange(offsets[ng + k], offsets[ng + k + 1]).reshape(arrays[ng + k].shape)
            if perm is not None:
                nb = len(perm)
                s, w = s.transpose(perm + (nb, nb + 1)), w.transpose(perm + (nb,))
            m[..., rows, cols] = s.reshape(bshape + s.shape[-2:])
            m[..., dim, cols] = w.reshape(bshape + w.shape[-1:])
        m = m.reshape(batch + (n, rank + 1))
        # The log weights (``moments._logits``): each dense term's positions, aligned.
        index = []
        for start, p, a in zip(offsets[2 * ng:], plan.dense, arrays[2 * ng:]):
            if p is None:  # a Number: its value everywhere
                index.append(np.full(batch, start, dtype=np.intp))
                continue
            perm, dshape = p
            data = np.arange(start, start + a.size).reshape(a.shape)
            data = (data if perm is None else data.transpose(perm)).reshape(dshape)
            index.append(np.broadcast_to(data, batch))
        d_b = 0 if plan.index is None else len(plan.index)
        d_a = dim - d_b
        # The rows of Z: the log weights, 1 (times the constants), log diag L11 and c^2 (the
        # last two written per call); log Z_k = Z @ coef, the constants included.
        nw = len(index)
        z = np.zeros(batch + (nw + 2 + dim,), dtype=np.intp)
        for k, i in enumerate(index):
            z[..., k] = i
        z[..., nw] = 1
        const = 0.5 * dim * _LOG_2PI + 0.5 - 0.5 * d_a * _LOG_2PI
        self.coef = np.array([1.0] * nw + [const] + [-1.0] * dim + [-0.5])
        self.coef2 = np.array([1.0, 1.0] + [-1.0] * d_a)  # top + log total - log det U
        self.index = np.concatenate([m, np.ascontiguousarray(m.swapaxes(-1, -2)), z],
                                    axis=None)
        self.shapes = (batch, plan.kshape, m.size, z.shape)
        self.n, self.dim, self.d_b, self.d_a = n, dim, d_b, d_a
        self.stat1 = FAST_RTOL / (n * n * _EPS64)
        self.margin = self.stat1 * (RANK_MARGIN * _tolerance(dim, rank)) ** 2
        self.stat2 = FAST_RTOL / (d_a * d_a * _EPS64)
        self.pool = [self._workspace()]

    def _workspace(self) -> tuple:
        """Buffers for one call and the views the program reads and writes through."""
        batch, kshape, size_m, zshape = self.shapes
        n, dim, d_b, d_a = self.n, self.dim, self.d_b, self.d_a
        gathered = np.empty(self.index.size)
        m = gathered[:size_m].reshape(batch + (n, size_m // (math.prod(batch) * n)))
        mt = gathered[size_m:2 * size_m].reshape(m.shape[:-2] + m.shape[:-3:-1])
        z = gathered[2 * size_m:].reshape(zshape)
        aug, out = _augmented(batch, n, -1.0), np.empty(batch + (2 * n, 2 * n))
        diag_g, diag = aug.diagonal(0, -2, -1)[..., :n], out.diagonal(0, -2, -1)
        rows = out[..., n + d_b:n + dim, d_b:n]
        aug2, out2 = _augmented(kshape, d_a), np.empty(kshape + (2 * d_a, 2 * d_a))
        tail = np.empty(kshape + (2 + d_a,))
        return (gathered, m, mt, aug, aug[..., :n, :n], out, out[..., n:, :n], diag_g,
                diag_g[..., :dim], diag[..., :dim], z[..., -dim - 1:-1], diag[..., dim], z[..., -1],
                z.reshape(kshape + (1,) + zshape[-2:]), tail[..., 0, None, None],
                tail[..., 1, None, None], rows, rows[..., -1], out[..., dim, dim, None],
                aug2, aug2[..., :d_a, :d_a], out2, out2[..., d_a:, :d_a],
                aug2.diagonal(0, -2, -1)[..., :d_a], out2.diagonal(0, -2, -1)[..., :d_a],
                tail[..., 2:], tail)

    def __call__(self, terms: tuple):
        """``(log_const, white_vec, prec_sqrt)`` of the collapse of ``terms`` (the recorded
        structure), or None: an array of another type, dtype or shape, a failed check, or a
        mixture of no mass."""
        ng = self.ng
        gaussians = terms[:ng]
        arrays = (_HEAD, *map(_PREC_SQRT, gaussians), *map(_WHITE_VEC, gaussians),
                  *map(_DATA, terms[ng:]))
        if not _TYPES.issuperset(map(type, arrays)):
            return None  # another backend's arrays, numpy scalars
        try:  # float64 only (a float32 or integer array raises), at the recorded shapes
            src = _CONCATENATE(arrays, axis=None, dtype=np.float64, casting="no")
        except TypeError:
            return None
        if src.size != self.size:
            return None
        pool = self.pool
        try:
            ws = pool.pop()
        except IndexError:  # another thread holds it
            ws = self._workspace()
        if _extobj_contextvar is None:  # pragma: no cover - numpy < 2
            with np.errstate(all="ignore"):
                out = self._run(src, ws)
            pool.append(ws)
            return out
        # NaN of a failed factorization fails a check: no warning (numpy's error state set
        # by its context variable, without ``np.errstate``'s frames).
        token = _extobj_contextvar.set(_IGNORE)
        try:
            return self._run(src, ws)
        finally:
            _extobj_contextvar.reset(token)
            pool.append(ws)

    def _run(self, src: np.ndarray, ws: tuple):
        """The program on the flat vector ``src`` in the workspace ``ws``."""
        (gathered, m, mt, aug, gram, out, inv, diag_g, lead, log_diag_src, log_diag, c, c2, z,
         top, log_total, rows, last, c_col, aug2, gram2, out2, prec, diag_c, diag2, log_det,
         tail) = ws
        # One gather fills M, M' and Z's log weights and ones (indices checked above).
        src.take(self.index, out=gathered, mode="wrap")
        # The components: G = M M' in the template, one factorization, the check.
        _MATMUL(m, mt, gram)
        _CHOLESKY(aug, out, signature="d->d")
        # ||L^{-1} D||_F^2 = sum_ij (L^{-1})_ij^2 G_jj per entry, its largest in the batch.
        if not _MAX(_VECDOT(_VECDOT(inv, inv), diag_g), None) <= self.stat1:
            return None
        # The rank margin F^2 ||L11^{-1}||_F^2 (RANK_MARGIN tol)^2 < 1 by a bound: with the
        # check above, ||L11^{-1}||_F^2 <= ||L^{-1} D||_F^2 / min_{j < dim} G_jj, so the
        # margin holds where (max / min of the batch's G_jj, j < dim) times that does.
        if not _MAX(lead, None) * self.margin < _MIN(lead, None):
            return None
        # log Z_k = log w_k - log|det L11| - 0.5 c^2 (+ the constants): Z's last columns.
        _LOG(log_diag_src, log_diag)
        _SQUARE(c, c2)
        log_mass = z @ self.coef  # kshape + (1, n)
        _MAX(log_mass, -1, None, top, True)
        # A kept entry of no mass (top -inf) or of an infinite one has p NaN (inf - inf): its
        # C, factor and check are NaN, and the check below declines (the general path gives
        # a mixture of no mass its unit covariance).
        p = _EXP(log_mass - top)
        total = _SUM(p, -1, None, None, True)
        p /= total
        # A_k' (a view of -L^{-T}: the first template's sign): rows a, columns a and the
        # last, which holds mu_k / c and is made mu_k - mean in place (the sign of the other
        # columns C = sum_k p_k A_k' A_k does not see, column by column).
        last *= c_col
        mean = p @ last  # kshape + (1, d_a)
        last -= mean
        _EINSUM("...xk,...kai,...kbi->...ab", p, rows, rows, out=gram2)
        _CHOLESKY(aug2, out2, signature="d->d")
        if not _MAX(_VECDOT(_VECDOT(prec, prec), diag_c), None) <= self.stat2:
            return None
        _LOG(total, log_total)
        _LOG(diag2, log_det)
        prec_sqrt = prec.copy()  # U^{-T} for C = U U'
        white_vec = (mean @ prec_sqrt)[..., 0, :]
        log_const = tail @ self.coef2
        return log_const, white_vec, prec_sqrt
