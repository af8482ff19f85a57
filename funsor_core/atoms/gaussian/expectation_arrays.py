"""``E_q[f]`` on arrays, for the commonest closed form: an ELBO's ``log p - log q``.

``q`` is a Gaussian ``g`` normalized over all its real inputs ``x`` (mean ``m``, covariance
``Σ = P^-1`` with ``P = S S' = R'R``), and ``f`` a signed sum of Gaussians with ``g``'s inputs
in ``g``'s order and of terms free of ``x`` (Tensors, Numbers). For one Gaussian term
``f_i(x) = -0.5 ||x S_i - w_i||^2``:

    E_q[f_i] = -0.5 (||m S_i - w_i||^2 + ||R^-T S_i||_F^2)

since ``E||(x - m) S_i||^2 = tr(S_i' Σ S_i)``. All the Gaussian terms are stacked along their
rank columns (with one sign per column), so the whole expectation is a dozen array calls and
a small autograd graph, where the general path (``expectation._Moments``) builds funsors of
the moments and substitutes them. ``R`` is ``S'`` itself when ``S`` is known to be square
triangular (a ``Normal``'s diagonal), so a 1-d expectation is divisions only.

Example:
    >>> g = fc.Gaussian(mean=np.array([1.0]), covariance=np.array([[4.0]]), inputs={"x": fc.Real})
    >>> x = fc.Variable("x", fc.Real)
    >>> f = fc.Gaussian(mean=np.array([0.0]), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> float(signed_gaussian_expectation(g, f - 2.0).data)  # -0.5 (1 + 4) - 2
    -4.5
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian.atom import Gaussian, gaussian_layout
from funsor_core.atoms.tensor import Tensor, null_set_mul, null_set_product
from funsor_core.terms.base import Binary, Funsor, Number, Unary
from funsor_core.terms.contraction import Contraction

__all__ = ["check_mass", "signed_gaussian_expectation", "weigh_by_mass"]

# exp(log mass) overflowing: in float32 a log normalizer summed from terms of 1e12 (information
# vectors of 1e6) is only known to ~1e5, so a measure normalized by a rounded constant can
# integrate to exp(4e5) instead of 1; never returned as a silent inf. (``f - f.reduce(
# logaddexp, reals)`` itself is exact: ``atoms.gaussian.normalized``.)
_MASS_OVERFLOW = (
    "Integrate over {names}: the measure's total mass is exp({value:.6g}), beyond the "
    "largest {dtype} (exp({limit:.4g})), so the integral would be inf. The log mass of a "
    "Gaussian whose information vector or mean is large (~1e6) is a difference of terms of "
    "~1e12, which {dtype} holds to about {ulp:.2g} only: a measure normalized by such a "
    "rounded constant can integrate to such a mass (f - f.reduce(ops.logaddexp, reals) "
    "over all of its reals is exact). Build the Gaussian in float64, or center its "
    "variables (x - x0) so that its constants stay small."
)


def signed_gaussian_expectation(g: Gaussian, integrand: Funsor) -> Tensor | None:
    """``E_q[integrand]`` with ``q = g`` normalized over all its real inputs, a Tensor over
    ``g``'s batch inputs (plus any the constant terms add); None when ``integrand`` is not a
    signed sum of Gaussians with ``g``'s inputs and terms free of ``g``'s reals (the general
    path then decides). The caller has checked that ``g`` can be normalized.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> float(signed_gaussian_expectation(g, g - g).data)
        0.0
    """
    parts = []
    if not _signed_parts(integrand, 1.0, parts):
        return None
    gaussians = [(s, t) for s, t in parts if isinstance(t, Gaussian)]
    if not gaussians or any(t._ikey != g._ikey for _, t in gaussians):
        return None
    batch = gaussian_layout(g._ikey)[0]
    shift = 0.0
    if g.prec_sqrt.shape[-1] == g.prec_sqrt.shape[-2]:
        # The measure's own term (an ELBO's entropy): with S square and invertible, m S = w
        # and tr(S' Σ S) = dim, so E_q[g] = -0.5 dim, whatever the arrays (no array calls).
        own = sum(sign for sign, t in gaussians if t is g)
        gaussians = [(sign, t) for sign, t in gaussians if t is not g]
        shift = -0.5 * g.prec_sqrt.shape[-2] * own
    if gaussians:
        value = _gaussian_terms(g, gaussians)
    else:
        value = ops.new_full(g.white_vec, tuple(g.white_vec.shape[:-1]), 0.0)
    late = []
    for sign, t in parts:
        if isinstance(t, Gaussian):
            continue
        if type(t) is Number and t.output.dtype == "real" and not t.output.shape:
            shift += sign * float(t.data)
        elif (isinstance(t, Tensor) and not t.output.shape and t.dtype == "real"
              and (not t.inputs or tuple(t.inputs.items()) == batch)):
            value = ops.add(value, t.data) if sign > 0 else ops.sub(value, t.data)
        else:
            late.append((sign, t))  # other inputs or shapes: added by name below
    if shift:
        value = ops.add(value, shift)
    result = Tensor.make(value, dict(batch), ikey=batch)
    for sign, t in late:
        result = result + t if sign > 0 else result - t
    return result


def check_mass(log_mass: Funsor, names) -> None:
    """Raise ValueError naming ``names`` and the dtype where ``exp(log_mass)`` (a Tensor or
    Number of log masses) overflows a finite log mass to inf. A traced array (under
    ``jax.jit``) cannot be read: the result is then what the arithmetic gives.

    Example:
        >>> check_mass(fc.Tensor(np.array([1.0, 3e5], dtype=np.float32)), {"x"})
        Traceback (most recent call last):
        ...
        ValueError: Integrate over ['x']: the measure's total mass is exp(300000), beyond ...
    """
    data = getattr(log_mass, "data", None)
    if not isinstance(log_mass, Tensor) or not ops.is_concrete(data):
        return  # (a Number's mass is a Python float: it overflows in float64 by arithmetic)
    a = np.asarray(ops.to_numpy(data))
    if a.dtype.kind != "f" or not a.size:
        return
    info = np.finfo(a.dtype)
    limit = float(np.log(info.max))
    with np.errstate(invalid="ignore"):
        over = np.isfinite(a) & (a > limit)
    if over.any():
        value = float(a[over].max())
        raise ValueError(_MASS_OVERFLOW.format(
            names=sorted(names), value=value, dtype=a.dtype.name, limit=limit,
            ulp=1e12 * float(info.eps)))


def weigh_by_mass(log_mass: Funsor, t, value: Funsor) -> Funsor:
    """``exp(log_mass + t) * value``, 0 where the mass is 0 (``null_set_product``): on the
    arrays when ``log_mass`` is a Tensor and ``t`` (a Tensor, Number or None) and ``value``
    real scalars over its inputs (``t`` also over none), else by name.

    Example:
        >>> lm = fc.Tensor(np.array([np.log(2.0), -np.inf]), {"i": fc.Bint[2]})
        >>> f = fc.Tensor(np.array([3.0, np.inf]), {"i": fc.Bint[2]})
        >>> weigh_by_mass(lm, fc.Number(0.0), f).data
        array([6., 0.])
    """
    ikey = log_mass._ikey if isinstance(log_mass, Tensor) else None
    if (ikey is not None and isinstance(value, Tensor) and value._ikey == ikey
            and not value.output.shape
            and (t is None or type(t) is Number or (
                isinstance(t, Tensor) and not t.output.shape and t._ikey in (ikey, ())))):
        lm = log_mass.data if t is None else ops.add(log_mass.data, t.data)
        return Tensor.make(null_set_mul(ops.exp(lm), value.data), dict(ikey), ikey=ikey)
    if t is not None:
        log_mass = log_mass + t
    return null_set_product(ops.exp(log_mass), value)


def _signed_parts(f: Funsor, sign: float, out: list) -> bool:
    """Append ``(±1, term)`` for the summands of ``f`` through sums, differences and
    negations; False when a summand is neither a Gaussian nor a Tensor or Number (real
    inputs there are other variables, or lazy terms: the general path handles them)."""
    if isinstance(f, Contraction) and f.red_op is None and f.bin_op is ops.add:
        return all(_signed_parts(t, sign, out) for t in f.terms)
    if isinstance(f, Binary) and f.op is ops.sub:
        return _signed_parts(f.lhs, sign, out) and _signed_parts(f.rhs, -sign, out)
    if isinstance(f, Unary) and f.op is ops.neg:
        return _signed_parts(f.arg, -sign, out)
    if isinstance(f, (Gaussian, Tensor, Number)):
        out.append((sign, f))
        return True
    return False


def _gaussian_terms(g: Gaussian, gaussians: list):
    """``sum_i sign_i E_q[f_i]`` (batch-shaped array) for Gaussians ``f_i`` with ``g``'s
    inputs: the formula of the module docstring on the stacked columns of the ``S_i``."""
    s, w = g.prec_sqrt, g.white_vec
    dim = s.shape[-2]
    gaussians = sorted(gaussians, key=lambda st: -st[0])  # added first, then subtracted
    s_all = _cat([t.prec_sqrt for _, t in gaussians], -1)
    w_all = _cat([t.white_vec for _, t in gaussians], -1)
    if tuple(s.shape[-2:]) == (1, 1):
        # One coordinate, one row: R = S, so R^-T S_all = S_all / S and m S_all = w S_all / S.
        # (a reshape dropping the row dim: a view, where an index costs torch ~4 us more)
        spread = ops.reshape(ops.truediv(s_all, s), tuple(s_all.shape[:-2]) + s_all.shape[-1:])
        resid = ops.sub(ops.mul(w, spread), w_all)
        return _signed_sum(gaussians, ops.add(ops.mul(resid, resid), ops.mul(spread, spread)), s)
    if getattr(g, "_triangular", None) == "upper" and s.shape[-1] == dim:
        # S upper, R = S' (lower): R m = S' m = w, and R^-T X = S^-1 X.
        mean = _solve(s, ops.getitem(w, (Ellipsis, slice(None), None)), upper=True,
                      transpose=True)
        spread = _solve(s, s_all, upper=True)
    else:
        r = ops.getitem(ops.qr_r(ops.transpose(s, -1, -2)), (Ellipsis, slice(0, dim),
                                                             slice(None)))
        sw = ops.matmul(s, ops.getitem(w, (Ellipsis, slice(None), None)))
        mean = _solve(r, _solve(r, sw, upper=True, transpose=True), upper=True)
        spread = _solve(r, s_all, upper=True, transpose=True)
    # m S_all - w_all: batch + (rank_all,), with m as a row (batch + (1, dim)).
    resid = ops.sub(ops.getitem(ops.matmul(ops.transpose(mean, -1, -2), s_all),
                                (Ellipsis, 0, slice(None))), w_all)
    per_column = ops.add(ops.mul(resid, resid), ops.sum(ops.mul(spread, spread), -2))
    return _signed_sum(gaussians, per_column, s)


def _signed_sum(gaussians: list, per_column, proto):
    """``-0.5 sum_j sign_j per_column_j``, ``sign_j`` that of the Gaussian of column ``j``."""
    if all(sign > 0 for sign, _ in gaussians):
        return ops.mul(ops.sum(per_column, -1), -0.5)
    if all(sign < 0 for sign, _ in gaussians):
        return ops.mul(ops.sum(per_column, -1), 0.5)
    # Columns of added Gaussians first (see _gaussian_terms): -0.5 on those, 0.5 on the rest,
    # made in the arrays' dtype.
    k = sum(t.prec_sqrt.shape[-1] for sign, t in gaussians if sign > 0)
    signs = ops.cat([ops.new_full(proto, (k,), -0.5),
                     ops.new_full(proto, (per_column.shape[-1] - k,), 0.5)], -1)
    return ops.sum(ops.mul(per_column, signs), -1)


def _cat(arrays: list, axis: int):
    return arrays[0] if len(arrays) == 1 else ops.cat(arrays, axis)


def _solve(a, b, upper: bool, transpose: bool = False):
    """``a^-1 b`` (``a^-T b``) for triangular ``a``; a division when ``a`` is 1 x 1."""
    if a.shape[-1] == 1:
        return ops.truediv(b, a)
    return ops.triangular_solve(b, a, upper=upper, transpose=transpose)
