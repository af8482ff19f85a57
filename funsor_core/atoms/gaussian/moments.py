"""Moment matching: a mixture of Gaussians collapsed to one Gaussian of the same moments.

A weighted mixture over the assignments ``k`` of some Bint inputs,

    m(x) = log sum_k exp(t_k + g_k(x)),

with ``g_k`` a full-rank Gaussian log density (``funsor_core.atoms.gaussian``), is replaced by
one Gaussian ``g(x) + c`` whose normalizer, mean and covariance are those of the mixture:

    Z = sum_k Z_k,       Z_k = exp(t_k) ∫ exp g_k,       p_k = Z_k / Z,
    mean = sum_k p_k mu_k,
    cov  = sum_k p_k (Sigma_k + (mu_k - mean)(mu_k - mean)').

This is the collapsing step of interacting-multiple-model and generalized pseudo-Bayes filters
(section 4.4 of "Functional Tensors for Probabilistic Programming"). The mass ``Z`` is kept
exactly, so a log likelihood computed through collapsed messages differs from the exact one
only through the shapes of later steps' messages.

Square-root form throughout: each component's system ``[S_k' | w_k]`` is rotated once (QR) to
``[R_k | z_k]``, giving ``mu_k = R_k^{-1} z_k``, ``Sigma_k = R_k^{-1} R_k^{-T}`` and its log
normalizer; the mixture covariance is ``A A'`` for ``A = [sqrt(p_k) R_k^{-1}, sqrt(p_k)
(mu_k - mean)]_k``, whose triangular factor comes from one more QR of ``A'``, so no covariance
is squared and no matrix inverted (``collapse_system`` squares them where a bound keeps the
error below ``normal_equations.FAST_RTOL``). Nothing reads a value to decide what to do, so
it runs under ``jax.jit``; where every weight is zero (``-inf`` log weights) the mass is
``-inf`` and the Gaussian an arbitrary finite one (unit covariance at the origin).

Example:
    >>> mu = np.array([[-1.0], [1.0]])
    >>> w, s = from_mean_covariance(mu, np.ones((2, 1, 1)))
    >>> log_mass, w2, s2 = collapse_arrays(np.log(np.array([0.5, 0.5])), w, s)
    >>> float(covariance(s2)[0, 0])  # 1 + 1 (the spread of the means)
    2.0
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.algebra import CHECK_RANK
from funsor_core.atoms.gaussian.atom import (
    Gaussian,
    gaussian_batch_inputs,
    merge_gaussian_inputs,
    real_offsets,
)
from funsor_core.atoms.gaussian.normal_equations import (
    FAST_NORMAL_EQUATIONS,
    collapse_gram,
    collapse_normal,
    mixture_rows,
    system_rows,
)
from funsor_core.atoms.gaussian.rank import fix_constant, rank_tests, rank_tolerance
from funsor_core.atoms.gaussian.small_linalg import matmul
from funsor_core.atoms.gaussian.sqrt_info import covariance, from_mean_covariance  # noqa: F401
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.cache import cached
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.contraction import Contraction

__all__ = ["align_system", "align_weights", "collapse_arrays", "collapse_layout",
           "collapse_mixture", "collapse_planned", "collapse_planned_gram", "collapse_result",
           "collapse_system", "component_moments", "place_system"]

Array = Any
_LOG_2PI = math.log(2 * math.pi)


def component_moments(white_vec: Array, prec_sqrt: Array, names=None,
                      triangular: bool = False):
    """``(log_normalizer, mean, r_inv)`` of each full-rank Gaussian of a batch.

    ``r_inv`` is the inverse of the triangular factor ``R`` (``precision = R'R``), so the
    covariance is ``r_inv @ r_inv.T``. A component whose precision is numerically singular
    (``funsor_core.atoms.gaussian.rank``) raises ``ValueError`` naming the coordinates
    (``names``, as in ``arrays.check_full_rank``) when the arrays are concrete; under
    ``jax.jit`` its log normalizer is ``+inf``.

    Args:
        white_vec: batch + (rank,); prec_sqrt: batch + (dim, rank), ``rank >= dim``.
        triangular: the system is already triangular and consistent: ``prec_sqrt`` is
            square and lower triangular (``R'``), as ``arrays.marginalize`` returns it, so
            no factorization is needed.

    Example:
        >>> w, s = from_mean_covariance(np.array([2.0]), np.array([[4.0]]))
        >>> log_z, mean, r_inv = component_moments(w, s)
        >>> float(mean[0]), float(r_inv[0, 0] ** 2), bool(np.isclose(log_z, np.log(8 * np.pi) / 2))
        (2.0, 4.0, True)
    """
    dim = prec_sqrt.shape[-2]
    la.require_full_rank(prec_sqrt, "moment matching")
    if triangular:
        r_upper, z, shift = la.mT(prec_sqrt), white_vec, 0.0
    else:
        r_upper, z, shift = la.triangularize(la.mT(prec_sqrt), white_vec, canonical=False)
    # Traced, the rank test reuses R^{-1} (the statistic is its norm); concrete, it runs
    # first, so that a singular R raises naming the coordinates before an inverse fails.
    r_inv = None if ops.is_concrete(r_upper) else ops.triangular_inv(r_upper, upper=True)
    fix = rank_tests(r_upper, dim, rank_tolerance(prec_sqrt), kept=False, inv=r_inv)
    if CHECK_RANK[0] and fix.bad is not None and ops.is_concrete(fix.bad):
        if ops.to_numpy(fix.bad).any():
            gm.check_full_rank(prec_sqrt, range(dim), names)  # raises, naming coordinates
    if r_inv is None:
        r_inv = ops.triangular_inv(r_upper, upper=True)
    log_z = ops.add(ops.sub(shift, la.log_abs_diag(r_upper)), 0.5 * dim * _LOG_2PI)
    log_z = fix_constant(log_z, fix)
    return log_z, la.mv(r_inv, z), r_inv


def collapse_arrays(log_weights: Array, white_vec: Array, prec_sqrt: Array, names=None,
                    triangular: bool = False):
    """Collapse the mixture over the last batch dim of the arrays (see the module docstring).

    Args:
        log_weights: batch + (n,), the log weights ``t_k`` (``-inf`` allowed).
        white_vec: batch + (n, rank); prec_sqrt: batch + (n, dim, rank), ``rank >= dim``.
        names: labels of the coordinates for error messages (see ``component_moments``).
        triangular: the components are square triangular systems (``component_moments``).

    Returns:
        ``(log_const, white_vec, prec_sqrt)`` of shapes batch, batch + (dim,) and batch +
        (dim, dim): the mixture is ``log_const - 0.5 ||x @ prec_sqrt - white_vec||^2``.

    Example:
        >>> w, s = from_mean_covariance(np.zeros((3, 2)), np.broadcast_to(np.eye(2), (3, 2, 2)))
        >>> c, w2, s2 = collapse_arrays(np.zeros(3), w, s)  # three equal components
        >>> bool(np.isclose(c, np.log(3))), bool(np.allclose(s2 @ s2.T, np.eye(2)))
        (True, True)
    """
    dim = prec_sqrt.shape[-2]
    log_z, mean_k, r_inv = component_moments(white_vec, prec_sqrt, names, triangular)
    # cov = A A' with A = [sqrt(p_k) [R_k^{-1} | diff_k]]_k; rows of A' stacked.
    log_mass, finite, mean, stacked = mixture_rows(log_weights, log_z, mean_k, la.mT(r_inv))
    batch = tuple(log_mass.shape)
    n = log_weights.shape[-1]
    rows = [ops.reshape(stacked, batch + (n * (dim + 1), dim))]
    # A mixture of no mass (every weight zero) gets a unit covariance, so that it stays a
    # finite Gaussian (its mass, -inf, is what matters).
    empty = ops.where(finite, ops.full_like(log_mass, 0.0), ops.full_like(log_mass, 1.0))
    eye = la.expand(ops.new_eye(prec_sqrt, dim), batch, 2)
    rows.append(ops.mul(ops.getitem(empty, (Ellipsis, None, None)), eye))
    u = ops.qr_r(ops.cat(rows, -2))  # cov = u' u
    new_prec_sqrt = ops.triangular_inv(u, upper=True)  # S S' = u^{-1} u^{-T} = cov^{-1}
    new_white_vec = la.vm(mean, new_prec_sqrt)
    # The normalizer of the new Gaussian is 0.5 dim log 2π + log|det u|.
    log_const = ops.sub(log_mass, ops.add(la.log_abs_diag(u), 0.5 * dim * _LOG_2PI))
    return log_const, new_white_vec, new_prec_sqrt


def collapse_system(log_weights: Array, white_vec: Array, prec_sqrt: Array,
                    index: tuple | None = None, integrated_names=None, names=None):
    """Integrate the coordinates ``index`` out of each component, then collapse the mixture
    over the last batch dim (``collapse_arrays``): the array work of ``collapse_mixture``.

    Args:
        log_weights: batch + (n,); white_vec: batch + (n, rank); prec_sqrt: batch + (n, dim,
            rank), the components' systems over all their real coordinates.
        index: coordinates to integrate first (exactly), or None.
        integrated_names, names: labels (or functions returning them) of the integrated and
            of the remaining coordinates, for error messages.

    Returns:
        ``(log_const, white_vec, prec_sqrt)`` as ``collapse_arrays``, over the coordinates
        not in ``index``.

    Example:
        >>> w, s = from_mean_covariance(np.zeros((2, 2)), np.broadcast_to(np.eye(2), (2, 2, 2)))
        >>> c, w2, s2 = collapse_system(np.zeros(2), w, s, (0,))  # x[0] integrated
        >>> s2.shape, bool(np.isclose(c, np.log(2) + 0.5 * np.log(2 * np.pi)))
        ((1, 1), True)
    """
    def by_qr():
        return _collapse_system_qr(log_weights, white_vec, prec_sqrt, index, integrated_names,
                                   names)

    # Well-conditioned systems (most): the Gram matrices and Cholesky, for less; elsewhere
    # (and for every rank decision) the QR path (see ``normal_equations``).
    fast = collapse_normal(log_weights, white_vec, prec_sqrt, index, by_qr)
    return by_qr() if fast is None else fast


def _collapse_system_qr(log_weights, white_vec, prec_sqrt, index, integrated_names, names):
    """``collapse_system`` by two QR factorizations (never squaring a condition number)."""
    if index is None:
        return collapse_arrays(log_weights, white_vec, prec_sqrt, names)
    white_vec, prec_sqrt, shift = gm.marginalize(white_vec, prec_sqrt, index,
                                                 check=CHECK_RANK[0], names=integrated_names)
    return collapse_arrays(ops.add(log_weights, shift), white_vec, prec_sqrt, names,
                           triangular=True)


def collapse_mixture(g: Gaussian | tuple, dense: Funsor | tuple | None, names: frozenset,
                     integrate: frozenset = frozenset()) -> Funsor | None:
    """``logaddexp`` of ``g + dense`` over the Bint inputs ``names`` of ``g``, as one Gaussian
    per assignment of the other Bint inputs, of the mixture's normalizer, mean and covariance.

    Args:
        g: a Gaussian with ``rank >= dim`` (otherwise None: a component that is flat along
            some direction has no moments to match), or a tuple of Gaussians standing for
            their sum: each is aligned straight to the layout of the collapse and their
            systems concatenated, as ``add_gaussians`` would concatenate them (the caller
            checks that their sum would not be compressed).
        dense: a Tensor, a Number, a tuple of them standing for their sum, or None: the log
            weights. Names of ``names`` that only ``dense`` has are summed first (exactly).
        names: Bint input names to collapse.
        integrate: real inputs of ``g`` to integrate out first, exactly (some must be left):
            one QR of each component's system does both, since the marginal comes out
            triangular (``arrays.marginalize``).

    Returns:
        ``Gaussian + Tensor`` over the remaining inputs, or None.

    The layout (which array axes go where) depends only on the input names and domains, so
    it is planned once per structure (``_collapse_plan``, cached) and each call only moves
    arrays: a filter that collapses the same structure at every step pays it once.

    Example:
        >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> r = collapse_mixture(g, None, frozenset({"i"}))
        >>> gg, t = r.terms
        >>> float(gg.covariance[0, 0]), bool(np.isclose(t.data + gg.log_normalizer.data,
        ...                                              np.log(2 * np.sqrt(2 * np.pi))))
        (2.0, True)
    """
    gs = g if isinstance(g, tuple) else (g,)
    ds = () if dense is None else dense if isinstance(dense, tuple) else (dense,)
    plan = collapse_layout(gs, ds, names, integrate)
    if plan is None:
        return None
    logits = _logits(ds, plan, gs[0].white_vec)
    if len(gs) > 1 and plan.rank >= plan.dim and FAST_NORMAL_EQUATIONS[0] and all(
            x.prec_sqrt.dtype.itemsize == 8 for x in gs):
        # The Gram matrix of the joint system is the sum of the summands' own, each formed
        # at its own batch shape (broadcast, never expanded over the other's inputs): the
        # joint system is built only where the QR path runs.
        out = collapse_planned_gram(plan, logits, _block_gram(gs, plan),
                                    lambda: _joint_system(gs, plan))
    else:
        out = collapse_planned(plan, logits, *_joint_system(gs, plan))
    return collapse_result(plan, *out)


def _joint_system(gs: tuple, plan: _Plan):
    """The Gaussians' systems in the plan's layout, side by side (their sum's system)."""
    parts = [_aligned_system(x, p, plan) for x, p in zip(gs, plan.gaussians)]
    if len(parts) == 1:
        return parts[0]
    return ops.cat([w for w, _ in parts], -1), ops.cat([s for _, s in parts], -1)


def _block_gram(gs: tuple, plan: _Plan) -> Array:
    """``M M'`` of the joint system (``normal_equations.system_rows``), batch kept + (n,):
    the sum of each Gaussian's ``M_k M_k'`` over its own batch inputs."""
    if all(type(x.prec_sqrt) is np.ndarray and type(x.white_vec) is np.ndarray for x in gs):
        return _block_gram_host(gs, plan)
    total = None
    for x, p in zip(gs, plan.gaussians):
        _, m = system_rows(*place_system(x.white_vec, x.prec_sqrt, p, plan), plan.index)
        mm = matmul(m, m.swapaxes(-1, -2))
        total = mm if total is None else total + mm
    full = plan.gaussians[0][2]
    if tuple(total.shape[:-2]) != full:  # an input that no Gaussian has broadcasts
        total = ops.expand(total, full + tuple(total.shape[-2:]))
    return ops.reshape(total, plan.kshape + (plan.n,) + tuple(total.shape[-2:]))


def _block_gram_host(gs: tuple, plan: _Plan) -> np.ndarray:
    """``_block_gram`` of numpy arrays: the joint system ``M`` (``system_rows``' rows, each
    Gaussian's columns side by side, zeros where it has no coordinate) written in place at the
    full batch shape (each Gaussian broadcast over the inputs it lacks), then ``M M'`` in one
    batched product; numpy called directly (a handful of calls, whatever the summands)."""
    size = plan.dim + 1
    m = np.zeros(plan.gaussians[0][2] + (size, plan.rank))
    for x, p, (rows, cols) in zip(gs, plan.gaussians, _joint_positions(plan.gaussians,
                                                                          plan.dim, plan.index,
                                                                          _ranks(gs))):
        perm, shape = p[0], p[1]
        s, w = x.prec_sqrt, x.white_vec
        if perm is not None:
            nb = len(perm)
            s, w = s.transpose(perm + (nb, nb + 1)), w.transpose(perm + (nb,))
        m[..., rows, cols] = s.reshape(shape + s.shape[-2:])
        m[..., plan.dim, cols] = w.reshape(shape + w.shape[-1:])
    return (m @ m.swapaxes(-1, -2)).reshape(plan.kshape + (plan.n, size, size))


def _ranks(gs: tuple) -> tuple:
    return tuple(x.prec_sqrt.shape[-1] for x in gs)


@cached("gaussian.moments.joint_positions", maxsize=1024, fast=True)
def _joint_positions(entries: tuple, dim: int, index: tuple | None, ranks: tuple) -> tuple:
    """Per Gaussian (its entry of ``plan.gaussians``), where its ``S`` goes in the joint
    system of ``system_rows``' row order: ``(rows, cols)``, a slice for a run of rows (a basic
    index: cheaper), else an index array; its columns are a run after the previous ones'."""
    order = la.split_index(dim, () if index is None else tuple(index))
    where = {j: i for i, j in enumerate(order[0] + order[1])}
    out, start = [], 0
    for (_, _, _, before, after, rows), rank in zip(entries, ranks):
        coords = range(before, dim - after) if rows is None else rows
        pos = [where[j] for j in coords]
        run = bool(pos) and pos == list(range(pos[0], pos[0] + len(pos)))
        out.append((slice(pos[0], pos[0] + len(pos)) if run else np.array(pos, dtype=np.intp),
                    slice(start, start + rank)))
        start += rank
    return tuple(out)


def collapse_planned(plan: _Plan, log_weights: Array, white_vec: Array, prec_sqrt: Array):
    """``collapse_system`` of arrays in the layout of ``plan`` (``collapse_layout``), with
    the plan's names in its error messages: ``(log_const, white_vec, prec_sqrt)``.

    Example:
        >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> plan, lw = collapse_layout((g,), (), frozenset({"i"})), np.log([0.25, 0.75])
        >>> wv, ps = align_system(g.white_vec, g.prec_sqrt, plan.gaussians[0], plan)
        >>> gg, _ = collapse_result(plan, *collapse_planned(plan, lw, wv, ps)).terms
        >>> float(gg.mean[0]), float(gg.covariance[0, 0])  # .25 * -1 + .75 * 1; 1 + 0.75
        (0.5, 1.75)
    """
    return collapse_system(log_weights, white_vec, prec_sqrt, plan.index,
                           lambda: _labels(plan.integrated), lambda: _labels(plan.reals))


def collapse_planned_gram(plan: _Plan, log_weights: Array, mm: Array, system):
    """``collapse_planned`` where the caller has ``M M'`` of the system
    (``normal_equations.system_rows``; float64, ``plan.rank >= plan.dim``) and builds the
    system, ``system() -> (white_vec, prec_sqrt)``, only where the QR path runs.

    Example:
        >>> from funsor_core.atoms.gaussian.normal_equations import system_rows
        >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> plan, lw = collapse_layout((g,), (), frozenset({"i"})), np.log([0.25, 0.75])
        >>> wv, ps = align_system(g.white_vec, g.prec_sqrt, plan.gaussians[0], plan)
        >>> _, m = system_rows(wv, ps, plan.index)
        >>> c, w2, s2 = collapse_planned_gram(plan, lw, m @ m.swapaxes(-1, -2), lambda: (wv, ps))
        >>> np.allclose(s2, collapse_planned(plan, lw, wv, ps)[2])
        True
    """
    def by_qr():
        return _collapse_system_qr(log_weights, *system(), plan.index,
                                   lambda: _labels(plan.integrated), lambda: _labels(plan.reals))

    d_b = 0 if plan.index is None else len(plan.index)
    fast = collapse_gram(log_weights, mm, d_b, plan.rank, by_qr)
    return by_qr() if fast is None else fast


def collapse_layout(gs: tuple, ds: tuple, names: frozenset,
                    integrate: frozenset = frozenset()) -> _Plan | None:
    """The layout of ``collapse_mixture(gs, ds, names, integrate)`` (Gaussians ``gs``, log
    weights ``ds``: Tensors and Numbers), or None where it declines. It depends only on the
    terms' inputs and ranks, and is cached: code that collapses the same structure many times
    (a filter) plans once and moves arrays with ``align_system`` and ``align_weights``.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> plan = collapse_layout((g,), (), frozenset({"i"}))
        >>> plan.n, plan.dim, plan.g_ikey
        (2, 1, (('x', Real),))
    """
    if not all(isinstance(d, Number) or isinstance(d, Tensor) and d.dtype == "real"
               and not d.output.shape for d in ds):
        return None  # log weights are real scalars
    return _collapse_plan(tuple(x._ikey for x in gs), tuple(x.rank for x in gs),
                          tuple(d._ikey if isinstance(d, Tensor) else None for d in ds),
                          names, integrate)


def collapse_result(plan: _Plan, log_const: Array, white_vec: Array, prec_sqrt: Array) -> Funsor:
    """The term ``collapse_mixture`` returns for the arrays ``collapse_system`` computed.

    Example:
        >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> plan, lw = collapse_layout((g,), (), frozenset({"i"})), np.log([0.25, 0.75])
        >>> wv, ps = align_system(g.white_vec, g.prec_sqrt, plan.gaussians[0], plan)
        >>> gg, t = collapse_result(plan, *collapse_planned(plan, lw, wv, ps)).terms
        >>> float(gg.mean[0]), float(gg.covariance[0, 0])  # .25 * -1 + .75 * 1; 1 + 0.75
        (0.5, 1.75)
    """
    # Fresh terms whose inputs the plan merged: the normal form g + t, built as it is.
    return Contraction.make(ops.add, (Gaussian.make(white_vec, prec_sqrt, ikey=plan.g_ikey),
                                      Tensor.make(log_const, plan.keep, ikey=plan.t_ikey)))


class _Plan(NamedTuple):
    gaussians: tuple  # per Gaussian: (perm, shape, full, pad_before, pad_after, rows)
    kshape: tuple  # sizes of the kept Bint inputs
    n: int  # number of mixture components (assignments of the collapsed names)
    rank: int
    dim: int
    index: tuple | None  # coordinates to integrate first, or None
    integrated: dict  # the real inputs integrated (for error messages)
    reals: dict  # the real inputs left
    dense: tuple  # per dense Tensor: (perm, shape) into the dense layout; None for a Number
    dense_axes: tuple  # axes of the dense layout summed exactly (names only dense has)
    dense_full: tuple  # the dense layout's shape after that sum (kept + collapsed sizes)
    keep: dict
    g_ikey: tuple
    t_ikey: tuple


@cached("gaussian.collapse_plan", maxsize=1024, fast=True)
def _collapse_plan(g_ikeys: tuple, ranks: tuple, d_ikeys: tuple, names: frozenset,
                   integrate: frozenset) -> _Plan | None:
    """Where each array axis goes in a collapse of Gaussians and dense terms of these input
    items (None for a Number), or None where ``collapse_mixture`` declines."""
    g_items = [dict(k) for k in g_ikeys]
    g_inputs = merge_gaussian_inputs(*(_Inputs(i) for i in g_items))
    reals = {k: d for k, d in g_inputs.items() if d.dtype == "real"}
    dim = sum(d.num_elements for d in reals.values())
    rank = sum(ranks)
    if rank < dim or not names & g_inputs.keys():
        return None
    if integrate and integrate >= reals.keys():
        return None  # nothing left to collapse: a Tensor mixture, exact's
    d_items = [dict(k) for k in d_ikeys if k is not None]
    only_dense = {k: d for i in d_items for k, d in i.items()
                  if k in names and k not in g_inputs}
    names = names & g_inputs.keys()
    inputs = merge_gaussian_inputs(*(_Inputs(i) for i in g_items + d_items))
    batch = {k: d for k, d in gaussian_batch_inputs(inputs).items() if k not in only_dense}
    keep = {k: d for k, d in batch.items() if k not in names}
    red = {k: d for k, d in batch.items() if k in names}
    batch = {**keep, **red}
    full = tuple(d.size for d in batch.values())
    offsets, _ = real_offsets(reals)
    gaussians = []
    for items in g_items:
        own = [k for k, d in items.items() if d.dtype != "real"]
        order = [k for k in batch if k in items]
        perm = tuple(own.index(k) for k in order) if order != own else None
        shape = tuple(d.size if k in items else 1 for k, d in batch.items())
        rows = [i for k, d in items.items() if d.dtype == "real"
                for i in range(offsets[k], offsets[k] + d.num_elements)]
        lo, hi = (rows[0], rows[-1] + 1) if rows else (0, 0)
        contiguous = rows == list(range(lo, hi))
        gaussians.append((perm, shape, full, lo if contiguous else None,
                          dim - hi if contiguous else None, None if contiguous else tuple(rows)))
    index = None
    integrated = {}
    left = reals
    if integrate:
        index = tuple(i for k in reals if k in integrate
                      for i in range(offsets[k], offsets[k] + reals[k].num_elements))
        integrated = {k: d for k, d in reals.items() if k in integrate}
        left = {k: d for k, d in reals.items() if k not in integrate}
    layout = {**keep, **red, **only_dense}
    dense = []
    for key in d_ikeys:
        if key is None:
            dense.append(None)
            continue
        own = [k for k, _ in key]
        order = [k for k in layout if k in own]
        dense.append((tuple(own.index(k) for k in order) if order != own else None,
                      tuple(layout[k].size if k in own else 1 for k in layout)))
    dense_axes = tuple(range(len(keep) + len(red), len(layout)))
    n = math.prod(d.size for d in red.values())
    return _Plan(tuple(gaussians), tuple(d.size for d in keep.values()), n, rank, dim, index,
                 integrated, left, tuple(dense), dense_axes, full, keep,
                 tuple({**keep, **left}.items()), tuple(keep.items()))


class _Inputs:
    """Stands for a term in ``merge_gaussian_inputs``, which reads only ``.inputs``."""

    __slots__ = ("inputs",)

    def __init__(self, inputs: dict):
        self.inputs = inputs


def _aligned_system(g: Gaussian, p: tuple, plan: _Plan):
    return align_system(g.white_vec, g.prec_sqrt, p, plan)


def align_system(white_vec: Array, prec_sqrt: Array, p: tuple, plan: _Plan, lead: int = 0):
    """A Gaussian's arrays in the plan's layout: ``lead`` leading axes (e.g. time) kept, then
    batch kept + (n,), then the coordinates of all the reals; ``p`` is its entry of
    ``plan.gaussians`` (below, ``g2`` lacks ``i``: it is expanded over the components).

    Example:
        >>> g1 = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                  inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> g2 = fc.Gaussian(mean=np.zeros((3, 1)), covariance=np.ones((3, 1, 1)),
        ...                  inputs={"j": fc.Bint[3], "x": fc.Real})
        >>> plan = collapse_layout((g1, g2), (), frozenset({"i"}))  # keep j, collapse i
        >>> [a.shape for a in align_system(g2.white_vec, g2.prec_sqrt, plan.gaussians[1], plan)]
        [(3, 2, 1), (3, 2, 1, 1)]
    """
    _, shape, full, _, _, _ = p
    front = tuple(white_vec.shape[:lead])
    white_vec, prec_sqrt = place_system(white_vec, prec_sqrt, p, plan, lead)
    rank = prec_sqrt.shape[-1]
    if shape != full:
        white_vec = ops.expand(white_vec, front + full + (rank,))
        prec_sqrt = ops.expand(prec_sqrt, front + full + (plan.dim, rank))
    return (ops.reshape(white_vec, front + plan.kshape + (plan.n, rank)),
            ops.reshape(prec_sqrt, front + plan.kshape + (plan.n, plan.dim, rank)))


def place_system(white_vec: Array, prec_sqrt: Array, p: tuple, plan: _Plan, lead: int = 0):
    """``align_system`` before its batch is expanded and flattened: ``lead`` axes, then one
    axis per batch input of the plan (kept, then collapsed; size 1 where the Gaussian lacks
    it), then all the plan's coordinates.

    Example:
        >>> g1 = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                  inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> g2 = fc.Gaussian(mean=np.zeros((3, 1)), covariance=np.ones((3, 1, 1)),
        ...                  inputs={"j": fc.Bint[3], "x": fc.Real})
        >>> plan = collapse_layout((g1, g2), (), frozenset({"i"}))  # keep j, collapse i
        >>> [a.shape for a in place_system(g2.white_vec, g2.prec_sqrt, plan.gaussians[1], plan)]
        [(3, 1, 1), (3, 1, 1, 1)]
    """
    perm, shape, _, before, after, rows = p
    front = tuple(white_vec.shape[:lead])
    if perm is not None:
        nb = len(perm)
        order = tuple(range(lead)) + tuple(lead + i for i in perm)
        white_vec = ops.permute(white_vec, order + (lead + nb,))
        prec_sqrt = ops.permute(prec_sqrt, order + (lead + nb, lead + nb + 1))
    dim, rank = prec_sqrt.shape[-2:]
    white_vec = ops.reshape(white_vec, front + shape + (rank,))
    prec_sqrt = ops.reshape(prec_sqrt, front + shape + (dim, rank))
    if rows is None and (before or after):
        white_vec, prec_sqrt = gm.pad_dims(white_vec, prec_sqrt, before, after)
    elif rows is not None:
        white_vec, prec_sqrt = gm.embed(white_vec, prec_sqrt, rows, plan.dim)
    return white_vec, prec_sqrt


def align_weights(data: Array, p: tuple, lead: int = 0) -> Array:
    """A dense term's array in the plan's dense layout (``lead`` leading axes kept); ``p`` is
    its entry of ``plan.dense`` (not None: Numbers have no array).

    Example:
        The kept name ``j`` goes first, the collapsed ``i`` last:

        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> w = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> plan = collapse_layout((g,), (w,), frozenset({"i"}))
        >>> align_weights(w.data, plan.dense[0]).tolist()
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    perm, shape = p
    if perm is not None:
        data = ops.permute(data, tuple(range(lead)) + tuple(lead + i for i in perm))
    return ops.reshape(data, tuple(data.shape[:lead]) + shape)


def _logits(ds: tuple, plan: _Plan, proto) -> Array:
    """The log weights, batch kept + (n,): the dense terms aligned, added, and summed over
    the names only they have."""
    total, const = None, 0.0
    host = type(proto) is np.ndarray  # numpy called directly: the same arithmetic, less dispatch
    for d, p in zip(ds, plan.dense):
        if p is None:
            const += float(d.data)
            continue
        data = d.data
        if host and type(data) is np.ndarray:
            perm, shape = p
            data = (data if perm is None else data.transpose(perm)).reshape(shape)
            total = data if total is None else total + data
            continue
        data = align_weights(data, p)
        total = data if total is None else ops.add(total, data)
    if total is None:
        return ops.new_full(proto, plan.kshape + (plan.n,), const)
    if const:
        total = total + const if host and type(total) is np.ndarray else ops.add(total, const)
    if plan.dense_axes:
        total = ops.logsumexp(total, plan.dense_axes)
    if host and type(total) is np.ndarray:
        if total.shape != plan.dense_full:  # (np.broadcast_to costs microseconds when a no-op)
            total = np.broadcast_to(total, plan.dense_full)
        return total.reshape(plan.kshape + (plan.n,))
    return ops.reshape(ops.expand(total, plan.dense_full), plan.kshape + (plan.n,))


def _labels(reals: dict) -> list:
    """One label per coordinate of the real inputs, for error messages."""
    return [k if d.num_elements == 1 else f"{k}[{j}]"
            for k, d in reals.items() for j in range(d.num_elements)]
