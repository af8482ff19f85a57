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
is squared and no matrix inverted. Nothing reads a value to decide what to do, so it runs
under ``jax.jit``; where every weight is zero (``-inf`` log weights) the mass is ``-inf`` and
the Gaussian an arbitrary finite one (unit covariance at the origin).

Example:
    >>> mu = np.array([[-1.0], [1.0]])
    >>> w, s = from_mean_covariance(mu, np.ones((2, 1, 1)))
    >>> log_mass, w2, s2 = collapse_arrays(np.log(np.array([0.5, 0.5])), w, s)
    >>> float(covariance(s2)[0, 0])  # 1 + 1 (the spread of the means)
    2.0
"""

from __future__ import annotations

import math
from typing import Any

from funsor_core import ops
from funsor_core.atoms.gaussian import arrays as gm
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian.algebra import CHECK_RANK, gaussian_sum
from funsor_core.atoms.gaussian.arrays import covariance, from_mean_covariance  # noqa: F401
from funsor_core.atoms.gaussian.gaussian import (
    Gaussian,
    align_gaussian,
    gaussian_batch_inputs,
    merge_gaussian_inputs,
    real_offsets,
)
from funsor_core.atoms.gaussian.rank import fix_constant, rank_tests, rank_tolerance
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Funsor, Number

__all__ = ["collapse_arrays", "collapse_mixture", "component_moments"]

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
    fix = rank_tests(r_upper, dim, rank_tolerance(prec_sqrt), kept=False)
    if CHECK_RANK[0] and fix.bad is not None and ops.is_concrete(fix.bad):
        if ops.to_numpy(fix.bad).any():
            gm.check_full_rank(prec_sqrt, range(dim), names)  # raises, naming coordinates
    log_z = ops.add(ops.sub(shift, la.log_abs_diag(r_upper)), 0.5 * dim * _LOG_2PI)
    log_z = fix_constant(log_z, fix)
    r_inv = ops.triangular_inv(r_upper, upper=True)
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
    log_mass_k = ops.add(log_weights, log_z)
    log_mass = ops.logsumexp(log_mass_k, -1)
    finite = ops.isfinite(log_mass)
    shift = ops.where(finite, log_mass, ops.full_like(log_mass, 0.0))
    # sqrt(p_k) = exp((log Z_k - log Z) / 2): exact zeros for -inf weights, and a gradient
    # that stays finite there (sqrt(p) would have an infinite one at p = 0).
    root_p = ops.exp(ops.mul(0.5, ops.sub(log_mass_k, ops.getitem(shift, (Ellipsis, None)))))
    p = ops.mul(root_p, root_p)
    mean = ops.sum(ops.mul(ops.getitem(p, (Ellipsis, None)), mean_k), -2)
    diff = ops.sub(mean_k, ops.getitem(mean, (Ellipsis, None, slice(None))))
    # cov = A A' with A = [sqrt(p_k) R_k^{-1} | sqrt(p_k) diff_k]_k; rows of A' stacked.
    scaled_inv = ops.mul(ops.getitem(root_p, (Ellipsis, None, None)), la.mT(r_inv))
    scaled_diff = ops.mul(ops.getitem(root_p, (Ellipsis, None)), diff)
    batch = tuple(log_mass.shape)
    n = log_weights.shape[-1]
    rows = [ops.reshape(scaled_inv, batch + (n * dim, dim)), scaled_diff]
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


def collapse_mixture(g: Gaussian | tuple, dense: Funsor | None, names: frozenset,
                     integrate: frozenset = frozenset()) -> Funsor | None:
    """``logaddexp`` of ``g + dense`` over the Bint inputs ``names`` of ``g``, as one Gaussian
    per assignment of the other Bint inputs, of the mixture's normalizer, mean and covariance.

    Args:
        g: a Gaussian with ``rank >= dim`` (otherwise None: a component that is flat along
            some direction has no moments to match), or a tuple of Gaussians standing for
            their sum: each is aligned straight to the layout of the collapse and their
            systems concatenated, as ``add_gaussians`` would concatenate them (the caller
            checks that their sum would not be compressed).
        dense: a Tensor, a Number or None: the log weights. Names of ``names`` that only
            ``dense`` has are summed first (exactly).
        names: Bint input names to collapse.
        integrate: real inputs of ``g`` to integrate out first, exactly (some must be left):
            one QR of each component's system does both, since the marginal comes out
            triangular (``arrays.marginalize``).

    Returns:
        ``Gaussian + Tensor`` over the remaining inputs, or None.

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
    g_inputs = merge_gaussian_inputs(*gs) if len(gs) > 1 else g.inputs
    reals = {k: d for k, d in g_inputs.items() if d.dtype == "real"}
    dim = sum(d.num_elements for d in reals.values())
    rank = sum(x.rank for x in gs)
    if rank < dim or not names & g_inputs.keys():
        return None
    if integrate and integrate >= reals.keys():
        return None  # nothing left to collapse: a Tensor mixture, exact's
    if dense is not None:
        only_dense = frozenset(n for n in names if n in dense.inputs and n not in g_inputs)
        if only_dense:
            dense = dense.reduce(ops.logaddexp, only_dense)
        if not isinstance(dense, (Tensor, Number)):
            return None
    names = names & g_inputs.keys()
    inputs = merge_gaussian_inputs(*gs, dense) if dense is not None else dict(g_inputs)
    batch = gaussian_batch_inputs(inputs)
    keep = {k: d for k, d in batch.items() if k not in names}
    red = {k: d for k, d in batch.items() if k in names}
    layout = {**keep, **red, **reals}
    parts = [align_gaussian(layout, x, expand=True) for x in gs]
    white_vec, prec_sqrt = parts[0] if len(parts) == 1 else (
        ops.cat([w for w, _ in parts], -1), ops.cat([s for _, s in parts], -1))
    kshape = tuple(d.size for d in keep.values())
    n = math.prod(d.size for d in red.values())
    white_vec = ops.reshape(white_vec, kshape + (n, rank))
    prec_sqrt = ops.reshape(prec_sqrt, kshape + (n, dim, rank))
    shift = None
    if integrate:
        offsets, _ = real_offsets(reals)
        index = [i for k in reals if k in integrate
                 for i in range(offsets[k], offsets[k] + reals[k].num_elements)]
        white_vec, prec_sqrt, shift = gm.marginalize(
            white_vec, prec_sqrt, index, check=CHECK_RANK[0],
            names=lambda: _labels({k: d for k, d in reals.items() if k in integrate}))
        reals = {k: d for k, d in reals.items() if k not in integrate}
    if isinstance(dense, Tensor):
        logits = align_tensor({**keep, **red}, dense, expand=True)
    else:
        value = 0.0 if dense is None else float(dense.data)
        logits = ops.new_full(white_vec, kshape + tuple(d.size for d in red.values()), value)
    logits = ops.reshape(logits, kshape + (n,))
    if shift is not None:
        logits = ops.add(logits, shift)
    log_const, new_white_vec, new_prec_sqrt = collapse_arrays(
        logits, white_vec, prec_sqrt, lambda: _labels(reals), triangular=shift is not None)
    new_inputs = {**keep, **reals}
    return gaussian_sum(Gaussian.make(new_white_vec, new_prec_sqrt, new_inputs),
                        Tensor.make(log_const, keep))


def _labels(reals: dict) -> list:
    """One label per coordinate of the real inputs, for error messages."""
    return [k if d.num_elements == 1 else f"{k}[{j}]"
            for k, d in reals.items() for j in range(d.num_elements)]
