"""Closed-form expectations under a Gaussian measure (optionally plus a Tensor).

The math behind the ``Integrate`` rules of ``interpretations/exact/gaussian_integrate.py``.

Write the measure over integrated reals ``x`` and kept reals ``y`` as
``g(x, y) = g_y(y) + log q(x | y)``, with ``g_y`` the marginal (``logaddexp`` over ``x``) and
``q`` the normalized conditional, Gaussian with mean ``m(y) = m0 + y B`` (affine in ``y``) and
a covariance ``Σ`` free of ``y``. Then

    Integrate(g, f, x) = exp(g_y(y)) * E_q[f](y)

and ``E_q[f]`` has a closed form for the integrands handled here:

- ``f`` affine in ``x``:                   ``f(m(y))``;
- ``f`` a scalar polynomial of total degree 2 in the real inputs (``x * x``, ``x ** 2``,
  ``x @ M @ x``, ``(x * x).sum()``, ``t_j * x * y``, decided from the structure):
  ``f(m(y)) + 0.5 <H, Σ>`` with ``H`` the (constant) Hessian of ``f`` in ``x``;
- ``f`` a Gaussian:                        ``f(m(y)) - 0.5 <Σ, P_f,xx>`` (``P_f``: its precision);
- sums, differences and negations of these, products of one of them with factors free of
  ``x``, and anything without ``x`` (by linearity).

An integrand may have Bint inputs the measure lacks (``t_j * x``): the result keeps them.

When every real input of the measure is integrated, ``g_y`` is a Tensor and so is the result.
Otherwise the result is the lazy product ``exp(g_y(y)) * E_q[f](y)``: no Gaussian form has an
exponential prefactor, but every array is computed, and substituting ``y`` gives numbers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.analysis.affine import polynomial_degree
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.algebra import CHECK_RANK, dense_sum, marginalize_gaussian
from funsor_core.atoms.gaussian.atom import Gaussian, gaussian_layout
from funsor_core.atoms.gaussian.expectation_arrays import (
    check_mass,
    signed_gaussian_expectation,
    weigh_by_mass,
)
from funsor_core.atoms.gaussian.host import host_copies, to_backend, widest
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Bint
from funsor_core.terms.base import Binary, Funsor, Number, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import fresh_name

Array = Any

__all__ = ["integrate_gaussian", "expectable"]


def integrate_gaussian(g: Gaussian, t, integrand: Funsor, reduced_vars: frozenset):
    """``Integrate(g + t, integrand, reduced_vars)`` in closed form, or None when the
    integrand is of no form handled here (see the module docstring). ``t`` is a Tensor, a
    Number or None.

    Example:
        >>> g = fc.Gaussian(mean=np.array([2.0]), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> x = fc.Variable("x", fc.Real)
        >>> lz = float(g.log_normalizer.data)
        >>> bool(np.isclose(integrate_gaussian(g, None, x, frozenset("x")).data, 2 * np.exp(lz)))
        True
    """
    reals = gaussian_layout(g._ikey)[1]  # the real inputs (cached per input key)
    names = frozenset(k for k in reals if k in reduced_vars)
    if not names:
        return None
    every = len(names) == len(reals)
    if every and t is not None and t is getattr(g, "_normalizer", None):
        # g + t integrates to 1 by construction (a Normal): E_q[f] is the result. The
        # signed sum's own structural check comes first (it implies ``expectable``, and an
        # ELBO step then walks its integrand once).
        result = signed_gaussian_expectation(g, integrand)
        if result is not None:
            bint = frozenset(v for v in reduced_vars - names if v in result.inputs)
            return result.reduce(ops.add, bint) if bint else result
    if not expectable(names, integrand):
        return None  # decided by structure, before any array work
    factored = _factor_every(g) if every else None
    # first: it raises if x is not identifiable
    log_mass = marginalize_gaussian(g, names) if factored is None else factored[0]
    value = signed_gaussian_expectation(g, integrand) if every else None  # an ELBO's p - q
    if value is None:
        moments = (_Moments.of(g, names) if factored is None
                   else _Moments.of_factor(g, *factored[1:]))
        if moments is None:
            return None
        value = _expectation(moments, integrand)
        if value is None:
            return None
    check_mass(log_mass if t is None else log_mass + t, names)
    # 0 where the mass is 0, whatever E_q[f] is there (0 log 0 = 0 in an ELBO).
    result = weigh_by_mass(log_mass, t, value)
    bint = frozenset(v for v in reduced_vars - names if v in result.inputs)
    return result.reduce(ops.add, bint) if bint else result


def _factor_every(g: Gaussian):
    """``(log_mass, R, z, proto)`` when every real of ``g`` is integrated, from the one QR
    that both need (``g = -0.5 ||R x - z||^2 + c``, ``R`` upper triangular: the log mass
    reads ``|det R|``, the moments ``R^{-1} z`` and ``(R'R)^{-1}``); ``R`` and ``z`` are
    host arrays for small eager jax and torch arrays (``atoms.gaussian.host``), whose
    results go back as arrays of ``proto`` (else None). None where
    ``marginalize_gaussian``'s own route is the cheaper or the only one: a triangular
    factor (no QR at all), fewer rows than coordinates, traced arrays, an infinite or NaN
    ``white_vec`` (a void density)."""
    w, s = g.white_vec, g.prec_sqrt
    if (getattr(g, "_triangular", None) == "upper" or s.shape[-1] < s.shape[-2]
            or not ops.is_concrete(s) or not ops.is_concrete(w)):
        return None
    host = host_copies(w, s)
    proto = None if host is None else widest(w, s)
    if host is not None:
        w, s = host
    total = float(ops.detach(ops.sum(w)))
    if total != total or abs(total) == math.inf:
        return None

    def labels():  # as marginalize_gaussian names the coordinates in its error
        return [k if d.num_elements == 1 else f"{k}[{i}]"
                for k, d in g._ikey if d.dtype == "real" for i in range(d.num_elements)]

    r, z, log_norm = gm.factor(w, s, check=CHECK_RANK[0], canonical=False, names=labels)
    if proto is not None:
        log_norm = to_backend(proto, (log_norm,))[0]
    batch_items = gaussian_layout(g._ikey)[0]
    return Tensor.make(log_norm, dict(batch_items), ikey=batch_items), r, z, proto


class _Moments:
    """Mean and covariance of the integrated reals ``x`` given the kept ones ``y``.

    ``mean[name]`` is a funsor of ``name``'s domain: a Tensor over the batch inputs when
    nothing is kept, else an affine expression in the kept reals. ``cov`` is an array
    ``batch + (d_x, d_x)`` over the integrated coordinates (computed when first read);
    ``offsets`` locates each name in it.
    """

    __slots__ = ("mean", "_cov", "_r", "_proto", "offsets", "domains", "batch")

    @property
    def cov(self) -> Array:
        if self._cov is None:  # Σ = (R'R)^{-1} = R^{-1} R^{-T}, R upper triangular
            r = self._r
            eye = ops.expand(ops.new_eye(r, r.shape[-1]), tuple(r.shape))
            r_inv = ops.triangular_solve(eye, r, upper=True)
            self._cov = ops.matmul(r_inv, ops.transpose(r_inv, -1, -2))
            if self._proto is not None:
                self._cov = to_backend(self._proto, (self._cov,))[0]
        return self._cov

    @classmethod
    def of_factor(cls, g: Gaussian, r: Array, z: Array, proto) -> _Moments:
        """Every real integrated, from ``_factor_every``'s ``R`` and ``z``: mean ``R^{-1} z``
        (the minimizer of ``||R x - z||``), the covariance from ``R`` when it is read."""
        batch_items, g_offsets, dim = gaussian_layout(g._ikey)
        self = object.__new__(cls)
        self.batch = dict(batch_items)
        self.domains = {k: d for k, d in g._ikey if d.dtype == "real"}
        self.offsets = {k: g_offsets[k] for k in self.domains}
        self._cov, self._r, self._proto = None, r, proto
        m0 = la.solve_upper(r, z)
        means = []  # each name's block of the mean, shaped as its domain (on the host if so)
        for k, d in self.domains.items():
            block = m0 if d.num_elements == dim else ops.getitem(m0, (Ellipsis, slice(
                self.offsets[k], self.offsets[k] + d.num_elements)))
            means.append(ops.reshape(block, tuple(block.shape[:-1]) + d.shape))
        if proto is not None:
            means = to_backend(proto, means)
        self.mean = {k: Tensor.make(a, self.batch, "real", output=d)
                     for (k, d), a in zip(self.domains.items(), means)}
        return self

    @classmethod
    def of(cls, g: Gaussian, names: frozenset) -> _Moments | None:
        batch_items, g_offsets, _ = gaussian_layout(g._ikey)
        xs = [(k, d) for k, d in g._ikey if k in names]
        ys = [(k, d) for k, d in g._ikey if d.dtype == "real" and k not in names]
        bx = [i for k, d in xs for i in range(g_offsets[k], g_offsets[k] + d.num_elements)]
        ay = [i for k, d in ys for i in range(g_offsets[k], g_offsets[k] + d.num_elements)]
        s_x = gm.rows(g.prec_sqrt, bx)
        d_x = len(bx)
        # A factor R with R'R = P = S_x S_x', triangular: S_x' itself where S_x is known to
        # be square upper triangular (then R is lower), else the R of a QR of S_x'.
        triangular = (not ay and getattr(g, "_triangular", None) == "upper"
                      and s_x.shape[-1] == d_x)
        upper = not triangular
        r_fac = (ops.transpose(s_x, -1, -2) if triangular else
                 ops.getitem(ops.qr_r(ops.transpose(s_x, -1, -2)),
                             (Ellipsis, slice(0, d_x), slice(None))))
        # M = P^{-1} S_x: two triangular solves, no inverse.
        m = ops.triangular_solve(ops.triangular_solve(s_x, r_fac, upper=upper, transpose=True),
                                 r_fac, upper=upper)
        m0 = ops.getitem(ops.matmul(m, ops.getitem(g.white_vec, (Ellipsis, None))),
                         (Ellipsis, 0))
        batch = dict(batch_items)
        self = object.__new__(cls)
        self.batch = batch
        self.domains = dict(xs)
        self.offsets, off = {}, 0
        for k, d in xs:
            self.offsets[k] = off
            off += d.num_elements
        eye = ops.expand(ops.new_eye(r_fac, d_x), tuple(r_fac.shape))
        r_inv = ops.triangular_solve(eye, r_fac, upper=upper)
        self._cov = ops.matmul(r_inv, ops.transpose(r_inv, -1, -2))
        self._r = self._proto = None
        # m(y) = m0 + y B with B = -S_y M' (d_y x d_x).
        b = (ops.neg(ops.matmul(gm.rows(g.prec_sqrt, ay), ops.transpose(m, -1, -2)))
             if ay else None)
        y_offsets, off = {}, 0
        for k, d in ys:
            y_offsets[k] = off
            off += d.num_elements
        self.mean = {}
        for k, d in xs:
            sx = slice(self.offsets[k], self.offsets[k] + d.num_elements)
            value = _shaped(Tensor.make(ops.getitem(m0, (Ellipsis, sx)), batch), d)
            for y, dy in ys:
                sy = slice(y_offsets[y], y_offsets[y] + dy.num_elements)
                block = Tensor.make(ops.getitem(b, (Ellipsis, sy, sx)), batch)
                # Coordinates are flat: a matrix-valued y enters as its flattened vector.
                term = (_flat(Variable(y, dy)) @ block if dy.shape
                        else Variable(y, dy) * block[0])
                value = value + _shaped(term, d)
            self.mean[k] = value
        return self

    def cov_block(self, a: str, b: str) -> Tensor:
        """``Σ_ab``: a Tensor over the batch inputs with output ``Reals[n_a, n_b]``."""
        sa = slice(self.offsets[a], self.offsets[a] + self.domains[a].num_elements)
        sb = slice(self.offsets[b], self.offsets[b] + self.domains[b].num_elements)
        return Tensor.make(ops.getitem(self.cov, (Ellipsis, sa, sb)), self.batch)


def _shaped(value: Funsor, domain) -> Funsor:
    """A ``Reals[n]`` funsor as ``domain``: ``Real`` takes entry 0, ``Reals[n]`` is kept as
    is, and ``Reals[n, m]`` is reshaped (row-major, the order of the flat coordinates)."""
    if not domain.shape:
        return value[0]
    return value if len(domain.shape) == 1 else value.reshape(domain.shape)


def _flat(value: Funsor) -> Funsor:
    """A ``Reals[...]`` funsor as ``Reals[n]`` (row-major), vectors as they are."""
    shape = value.output.shape
    return value if len(shape) == 1 else value.reshape((value.output.num_elements,))


def expectable(names: frozenset, f: Funsor) -> bool:
    """False when the expectation of ``f`` over the reals ``names`` of a Gaussian certainly
    has no closed form here (decided by structure alone, no array work): a Monte Carlo
    ELBO's ``log p - log q`` with a non-polynomial likelihood is declined before the moments
    are computed, and its closed-form parts are told from the sampled ones. True may still
    end in no closed form (a Hessian that does not evaluate).

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> expectable(frozenset("x"), x * x + 1), expectable(frozenset("x"), x.sigmoid())
        (True, False)
    """
    if not any(k in names for k in f.inputs):
        return True
    if isinstance(f, Contraction) and f.red_op is None and f.bin_op is ops.add:
        return all(expectable(names, t) for t in f.terms)
    if isinstance(f, Binary) and f.op is ops.sub:
        return expectable(names, f.lhs) and expectable(names, f.rhs)
    if isinstance(f, Unary) and f.op is ops.neg:
        return expectable(names, f.arg)
    if isinstance(f, Contraction) and f.red_op is None and f.bin_op is ops.mul:
        inside = [t for t in f.terms if any(k in names for k in t.inputs)]
        if (len(inside) == 1 and not isinstance(inside[0], (Tensor, Number))
                and expectable(names, inside[0])):
            return True
    if isinstance(f, Gaussian):
        return True
    degree = polynomial_degree(f)
    return degree is not None and degree <= 2


def _expectation(mom: _Moments, f: Funsor):
    """E_q[f] as a funsor (of the kept reals), or None when f is of no form handled here."""
    if not any(k in mom.domains for k in f.inputs):
        return f
    if isinstance(f, Contraction) and f.red_op is None and f.bin_op is ops.add:
        parts = [_expectation(mom, t) for t in f.terms]  # linearity
        return None if any(p is None for p in parts) else dense_sum(parts)
    if isinstance(f, Binary) and f.op is ops.sub:
        lhs, rhs = _expectation(mom, f.lhs), _expectation(mom, f.rhs)
        return None if lhs is None or rhs is None else lhs - rhs
    if isinstance(f, Unary) and f.op is ops.neg:  # E[-f] = -E[f] (an ELBO's -log q)
        inner = _expectation(mom, f.arg)
        return None if inner is None else -inner
    if isinstance(f, Contraction) and f.red_op is None and f.bin_op is ops.mul:
        # E[c f] = c E[f] for factors c free of the integrated reals.
        inside = [t for t in f.terms if any(k in mom.domains for k in t.inputs)]
        if len(inside) == 1 and not isinstance(inside[0], (Tensor, Number)):
            inner = _expectation(mom, inside[0])
            if inner is not None:
                for t in f.terms:
                    inner = inner if t is inside[0] else inner * t
                return inner
    if isinstance(f, Gaussian):
        return f(**_restrict(mom.mean, f)) - 0.5 * _trace_precision(mom, f)
    degree = polynomial_degree(f)
    if degree is None or degree > 2:
        return None
    value = f(**_restrict(mom.mean, f))  # E[f] for affine f; the rest comes from curvature
    if degree < 2 or not any(k in mom.domains for k in f.inputs):
        return value
    curvature = _half_trace_hessian(mom, f)
    return None if curvature is None else value + curvature


def _restrict(subs: dict, f: Funsor) -> dict:
    return {k: v for k, v in subs.items() if k in f.inputs}


def _half_trace_hessian(mom: _Moments, f: Funsor):
    """``0.5 <H, Σ>`` for a quadratic ``f`` (total degree 2 in its real inputs), ``H`` its
    Hessian in the integrated coordinates: ``E[f(m + e)] = f(m) + 0.5 E[e' H e]`` with
    ``Cov(e) = Σ``. ``H`` is constant (total degree 2), so it is read off ``f`` at fixed
    points, all at once along a fresh Bint input: ``H_ii = f(2 e_i) - 2 f(e_i) + f(0)`` and
    ``H_ij = f(e_i + e_j) - f(e_i) - f(e_j) + f(0)``, the other real inputs at zero. None when
    ``f`` does not evaluate to a Tensor there. A ``f`` of output shape ``s`` gets one
    Hessian per entry (``x ** 2`` for a vector ``x``)."""
    xs = [k for k in mom.domains if k in f.inputs]
    sizes = [mom.domains[k].num_elements for k in xs]
    d = sum(sizes)
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    points = np.zeros((1 + 2 * d + len(pairs), d))
    points[1 + np.arange(d), np.arange(d)] = 1.0
    points[1 + d + np.arange(d), np.arange(d)] = 2.0
    for k, (i, j) in enumerate(pairs):
        points[1 + 2 * d + k, [i, j]] = 1.0
    # H = points' values @ coef: the finite differences above, one column per (i, j).
    coef = np.zeros((len(points), d * d))
    for i in range(d):
        coef[[0, 1 + i, 1 + d + i], i * d + i] = (1.0, -2.0, 1.0)
    for k, (i, j) in enumerate(pairs):
        for col in (i * d + j, j * d + i):
            coef[[0, 1 + i, 1 + j, 1 + 2 * d + k], col] = (1.0, -1.0, -1.0, 1.0)
    proto = mom.cov
    probe = fresh_name("_probe", set(f.inputs))
    subs, off = {}, 0
    for k, n in zip(xs, sizes):
        block = _host_floats(proto, points[:, off:off + n].reshape(
            (len(points),) + mom.domains[k].shape))
        subs[k] = Tensor.make(block, {probe: Bint[len(points)]})
        off += n
    for k, dom in f.inputs.items():
        if dom.dtype == "real" and k not in subs:
            subs[k] = Tensor.make(ops.new_zeros(proto, dom.shape), {})
    values = f(**subs)
    if not isinstance(values, Tensor) or probe not in values.inputs:
        return None
    batch = {k: v for k, v in values.inputs.items() if k != probe}
    data = align_tensor({**batch, probe: Bint[len(points)]}, values, expand=True)
    nb, out = len(batch), f.output.shape
    # batch + (P,) + out -> batch + out + (P,), then the differences: batch + out + (d * d,).
    perm = tuple(range(nb)) + tuple(range(nb + 1, nb + 1 + len(out))) + (nb,)
    hessian = ops.matmul(ops.permute(data, perm), _host_floats(proto, coef))
    cov = ops.reshape(_cov_block(mom, xs), tuple(mom.cov.shape[:-2]) + (1,) * len(out)
                      + (d * d,))
    # <H, Σ> = sum over the last output dim of H * Σ, the batch inputs aligned by name.
    product = Tensor.make(hessian, batch) * Tensor.make(cov, mom.batch)
    return 0.5 * ops.sum(product, -1)


def _host_floats(proto, a: np.ndarray) -> Array:
    # In proto's float dtype: a float64 host constant would promote a float32 integral to
    # float64 on numpy and jax, and torch's matmul refuses to mix the two.
    return ops.new_array(proto, np.asarray(a, dtype=np.dtype(f"f{proto.dtype.itemsize}")))


def _cov_block(mom: _Moments, names) -> Array:
    """``Σ`` restricted to the coordinates of ``names`` (in that order)."""
    idx = [mom.offsets[k] + i for k in names for i in range(mom.domains[k].num_elements)]
    if idx == list(range(mom.cov.shape[-1])):
        return mom.cov
    index = ops.new_array(mom.cov, idx)
    return ops.getitem(ops.getitem(mom.cov, (Ellipsis, index, slice(None))),
                       (Ellipsis, slice(None), index))


def _trace_precision(mom: _Moments, f: Gaussian) -> Funsor:
    """``<Σ, P_f>`` over the integrated coordinates f has: ``E||(x - m) S_f||^2``."""
    batch_items, offsets, _ = gaussian_layout(f._ikey)
    batch = dict(batch_items)
    names = [k for k in mom.domains if k in f.inputs]
    rows = {k: ops.getitem(f.prec_sqrt, (Ellipsis, slice(
        offsets[k], offsets[k] + f.inputs[k].num_elements), slice(None))) for k in names}
    total = Number(0.0)
    for a in names:
        for b in names:
            p_ab = Tensor.make(ops.matmul(rows[a], ops.transpose(rows[b], -1, -2)), batch)
            total = total + (mom.cov_block(a, b) * p_ab).sum()
    return total
