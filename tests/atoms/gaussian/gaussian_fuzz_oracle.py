"""The Gaussian fuzzer's oracle: dense quadratic forms in float64 numpy, written apart from the
library (no square roots, no QR: precision, information vector, constant; Schur complements;
enumeration over Bint inputs by broadcasting).

A ``Quad`` is the log density ``c - 0.5 x'Jx + h'x`` over the real coordinates ``x`` (the real
variables of ``reals`` flattened in order), batched over the case's full batch shape (every
Bint name of the case, each its own axis, in the case's order); ``present`` lists the Bint
names the density depends on (along the others it is constant). ``mag`` bounds the magnitude
of what was added into ``c`` (so that a tolerance can follow cancellation: a constant of 1e12
built from terms of 1e12 carries roundoff of 1e-4 in float64), ``cond`` the largest condition
number of a precision block solved on the way.

Example:
    >>> q = Quad.of({"x": 1}, (), (), np.eye(1) * 2.0, np.ones(1), np.zeros(()))
    >>> float(integrate(q, ["x"]).c)  # log sqrt(2 pi / 2) + 1 / 4
    0.8224...
"""

from __future__ import annotations

import math

import numpy as np

LOG_2PI = math.log(2 * math.pi)
# Condition numbers of a precision block above this are singular for the oracle (the fuzzer
# builds near-singular blocks of condition <= 1e12 and exactly deficient ones, >= 1e15 in
# float64 roundoff); between the two the library may decide either way.
SINGULAR = 1e14


class Singular(Exception):
    """The oracle's integral diverges: a precision block is singular."""


class Rejected(Exception):
    """A parameter the API documents as invalid: the library must raise a ValueError whose
    message holds ``self.args[0]``."""


class Quad:
    """``c - 0.5 x'Jx + h'x`` batched over the case's batch shape (see the module)."""

    __slots__ = ("reals", "present", "J", "h", "c", "mag", "cond")

    @staticmethod
    def of(reals, batch_shape, present, J, h, c, mag=None, cond=1.0):
        q = Quad()
        q.reals, q.present = dict(reals), tuple(present)
        n = sum(reals.values())
        q.J = np.broadcast_to(J, tuple(batch_shape) + (n, n)).astype(np.float64)
        q.h = np.broadcast_to(h, tuple(batch_shape) + (n,)).astype(np.float64)
        q.c = np.broadcast_to(c, tuple(batch_shape)).astype(np.float64)
        q.mag = np.abs(q.c) if mag is None else np.broadcast_to(mag, q.c.shape)
        q.cond = float(cond)
        return q

    @property
    def dim(self) -> int:
        return sum(self.reals.values())

    def offsets(self) -> dict:
        out, k = {}, 0
        for name, size in self.reals.items():
            out[name] = list(range(k, k + size))
            k += size
        return out


def _vdot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _quad(J, x):
    return np.einsum("...i,...ij,...j->...", x, J, x)


def embed(q: Quad, reals: dict) -> Quad:
    """``q`` over a superset of its reals (zero rows and columns for the new ones)."""
    new = dict(reals)
    n = sum(new.values())
    pos = {k: i for k, i in zip(new, np.cumsum([0] + list(new.values()))[:-1])}
    idx = [pos[name] + k for name, size in q.reals.items() for k in range(size)]
    batch = q.c.shape
    J = np.zeros(batch + (n, n))
    h = np.zeros(batch + (n,))
    J[..., np.ix_(idx, idx)[0], np.ix_(idx, idx)[1]] = q.J
    h[..., idx] = q.h
    return Quad.of(new, batch, q.present, J, h, q.c, q.mag, q.cond)


def add(a: Quad, b: Quad) -> Quad:
    """The sum of two log densities (their product as densities)."""
    reals = dict(a.reals)
    reals.update((k, v) for k, v in b.reals.items() if k not in reals)
    a, b = embed(a, reals), embed(b, reals)
    present = tuple(n for n in _order(a, b) if n in a.present or n in b.present)
    return Quad.of(reals, a.c.shape, present, a.J + b.J, a.h + b.h, a.c + b.c, a.mag + b.mag,
                   max(a.cond, b.cond))


def _order(a, b):
    return tuple(dict.fromkeys(a.present + b.present))


def substitute(q: Quad, name: str, lin: dict, shift, new_sizes: dict, present=()) -> Quad:
    """``q`` with ``x_name = sum_v A_v @ v + shift`` (``lin``: var -> A of shape (size, size_v),
    ``shift`` batch + (size,)); variables of ``lin`` not in ``q`` are appended (sizes in
    ``new_sizes``). ``present``: the Bint names ``shift`` depends on. An empty ``lin`` is a
    constant; ``{u: I}`` renames; a selection matrix is a slice."""
    reals = {k: v for k, v in q.reals.items() if k != name}
    for v in lin:
        if v not in reals:
            reals[v] = new_sizes[v]
    off_old, n_new = q.offsets(), sum(reals.values())
    off_new, k = {}, 0
    for v, size in reals.items():
        off_new[v] = list(range(k, k + size))
        k += size
    M = np.zeros((q.dim, n_new))
    for v, rows in off_old.items():
        if v != name:
            M[np.ix_(rows, off_new[v])] = np.eye(len(rows))
    for v, A in lin.items():
        M[np.ix_(off_old[name], off_new[v])] += A
    m = np.zeros(q.c.shape + (q.dim,))
    m[..., off_old[name]] = shift
    Jm = np.einsum("...ij,...j->...i", q.J, m)
    J = np.einsum("ji,...jk,kl->...il", M, q.J, M)
    h = np.einsum("ji,...j->...i", M, q.h - Jm)
    hm, mJm = _vdot(q.h, m), _vdot(m, Jm)
    pres = tuple(dict.fromkeys(q.present + tuple(present)))
    return Quad.of(reals, q.c.shape, pres, J, h, q.c + hm - 0.5 * mJm,
                   q.mag + np.abs(hm) + 0.5 * np.abs(mJm), q.cond)


def value(q: Quad, point: dict, present=()) -> tuple[np.ndarray, np.ndarray]:
    """``q`` at ``point`` (name -> batch + (size,)): the values and their magnitude."""
    for name in list(q.reals):
        q = substitute(q, name, {}, point[name], {}, present)
    return q.c, q.mag


def integrate(q: Quad, names) -> Quad:
    """``log ∫ exp q`` over the real variables ``names`` (a Schur complement); raises
    ``Singular`` where a present batch entry's block is singular."""
    off = q.offsets()
    r = [i for n in names for i in off[n]]
    k = [i for n, rows in off.items() if n not in names for i in rows]
    if not r:
        return q
    Jrr = q.J[..., np.ix_(r, r)[0], np.ix_(r, r)[1]]
    cond = float(np.max(np.linalg.cond(Jrr))) if r else 1.0
    eig = np.linalg.eigvalsh(Jrr)
    if not np.isfinite(cond) or cond > SINGULAR or (eig[..., 0] <= 0).any():
        e = Singular(f"block {list(names)} has condition {cond:.3g}")
        # positive definite, but beyond what float64 resolves: the library may decide
        # either way (a finite answer has no checkable value)
        e.ambiguous = bool(np.isfinite(cond) and cond <= 1e16 and (eig[..., 0] > 0).all())
        e.cond = cond
        raise e
    Jrk = q.J[..., np.ix_(r, k)[0], np.ix_(r, k)[1]]
    Jkk = q.J[..., np.ix_(k, k)[0], np.ix_(k, k)[1]]
    hr, hk = q.h[..., r], q.h[..., k]
    sol_h = np.linalg.solve(Jrr, hr[..., None])[..., 0]
    sol_J = np.linalg.solve(Jrr, Jrk)
    quad = 0.5 * _vdot(hr, sol_h)
    logdet = np.linalg.slogdet(Jrr)[1]
    c = q.c + quad + 0.5 * len(r) * LOG_2PI - 0.5 * logdet
    mag = q.mag + np.abs(quad) + 0.5 * np.abs(logdet) + len(r)
    J = Jkk - np.einsum("...ri,...rj->...ij", Jrk, sol_J)
    h = hk - np.einsum("...ri,...r->...i", Jrk, sol_h)
    reals = {n: s for n, s in q.reals.items() if n not in names}
    return Quad.of(reals, q.c.shape, q.present, J, h, c, mag, max(q.cond, cond))


def reduce_add(q: Quad, name: str, axis: int) -> Quad:
    """The sum over a Bint input (the product of the densities)."""
    def s(a):
        return np.broadcast_to(a.sum(axis, keepdims=True), a.shape)
    return Quad.of(q.reals, q.c.shape, tuple(n for n in q.present if n != name), s(q.J), s(q.h),
                   s(q.c), s(q.mag), q.cond)


def reduce_logaddexp(c: np.ndarray, mag: np.ndarray, axis: int):
    """log-sum-exp of values over a Bint axis (kept, broadcast), and a magnitude."""
    top = c.max(axis, keepdims=True)
    out = top + np.log(np.exp(c - top).sum(axis, keepdims=True))
    return np.broadcast_to(out, c.shape), np.broadcast_to(mag.max(axis, keepdims=True), c.shape)


def moments(q: Quad) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log mass, mean (batch + (dim,)) and covariance of ``q`` over all its reals."""
    lz = integrate(q, list(q.reals)).c
    cov = np.linalg.inv(q.J)
    return lz, np.einsum("...ij,...j->...i", cov, q.h), cov


def mixture_moments(q: Quad, axis: int):
    """The moments of the mixture over a Bint axis: components weighted by their masses."""
    lz, mean, cov = moments(q)
    total = np.log(np.exp(lz - lz.max(axis, keepdims=True)).sum(axis, keepdims=True)) \
        + lz.max(axis, keepdims=True)
    p = np.exp(lz - total)
    mu = (p[..., None] * mean).sum(axis, keepdims=True)
    d = mean - mu
    c = (p[..., None, None] * (cov + d[..., :, None] * d[..., None, :])).sum(axis, keepdims=True)
    return (np.broadcast_to(total, lz.shape), np.broadcast_to(mu, mean.shape),
            np.broadcast_to(c, cov.shape))


def normal_quad(reals, batch_shape, present, u, a, v, b, s) -> Quad:
    """``log N(v; a u + b, s^2)`` for coordinates ``u`` (index or None) and ``v`` of a Quad
    over ``reals``; ``b``, ``s`` batch arrays."""
    n = sum(reals.values())
    e = np.zeros(n)
    e[v] = 1.0
    if u is not None:
        e[u] -= a
    p = 1.0 / np.asarray(s, dtype=np.float64) ** 2
    J = p[..., None, None] * np.outer(e, e)
    h = (p * b)[..., None] * e
    c = -0.5 * p * b * b - np.log(s) - 0.5 * LOG_2PI
    return Quad.of(reals, batch_shape, present, J, h, c, np.abs(c) + 2 * np.abs(np.log(s)) + 1)


def mvn_quad(reals, batch_shape, present, u_rows, A, v_rows, b, L) -> Quad:
    """``log N(v; A u + b, L L')`` (``u_rows`` None for a constant mean)."""
    n, m = sum(reals.values()), len(v_rows)
    U = np.zeros((m, n))
    U[:, v_rows] = np.eye(m)
    if u_rows is not None:
        U[:, u_rows] -= A
    P = np.linalg.inv(np.einsum("...ij,...kj->...ik", L, L))
    J = np.einsum("ai,...ab,bj->...ij", U, P, U)
    Pb = np.einsum("...ab,...b->...a", P, b)
    h = np.einsum("ai,...a->...i", U, Pb)
    logdet = 2 * np.log(np.abs(np.diagonal(L, axis1=-2, axis2=-1))).sum(-1)
    c = -0.5 * _vdot(b, Pb) - 0.5 * logdet - 0.5 * m * LOG_2PI
    return Quad.of(reals, batch_shape, present, J, h, c, np.abs(c) + np.abs(logdet) + m,
                   float(np.max(np.linalg.cond(L))) ** 2)
