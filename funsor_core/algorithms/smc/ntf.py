"""KL nonnegative tensor factorization by multiplicative updates, from an einsum spec
(Lee and Seung, 2001; Yilmaz, Cemgil and Simsekli, 2011): a pure-contraction example.

For a model ``X_hat = einsum(spec, Z_1, ..., Z_F)`` (``"ik,kj->ij"`` is NMF, ``"ir,jr,kr->ijk"``
CP/PARAFAC, ``"ia,jb,kc,abc->ijk"`` Tucker), the KL divergence

    D(X || X_hat) = sum X log(X / X_hat) - X + X_hat

never increases under ``Z_f <- Z_f * Delta_f(X / X_hat) / Delta_f(1)``, where ``Delta_f(A)``
contracts ``A`` with every other factor onto ``Z_f``'s indices: one einsum per factor and
per term, nothing else. These are the maximum-likelihood (Poisson) fixed points whose
Bayesian counterparts are ``vb.py`` and ``smc``.

Example:
    >>> X = np.array([[2.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 2.0], [0.0, 0.0, 1.0, 1.0]])
    >>> factors, trace = kl_ntf(X, "ik,kj->ij", {"k": 2}, num_iters=50, rng_key=0)
    >>> bool(np.all(np.diff(trace) <= 1e-12)), [f.shape for f in factors]
    (True, [(3, 2), (2, 4)])
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from funsor_core import ops

__all__ = ["kl_divergence", "kl_ntf"]

_TINY = 1e-300  # X / X_hat where X_hat underflows: those cells have X = 0 at a fixed point


def _parse(spec: str, ndim: int) -> tuple[list[str], str]:
    if "->" not in spec:
        raise ValueError(f"spec must name the output, e.g. 'ik,kj->ij'; got {spec!r}")
    lhs, out = spec.replace(" ", "").split("->")
    inputs = lhs.split(",")
    if len(out) != ndim:
        raise ValueError(f"spec {spec!r} has output indices {out!r} but X has {ndim} axes")
    return inputs, out


def kl_divergence(X, X_hat):
    """``sum X log(X / X_hat) - X + X_hat`` (0 log 0 = 0), on any backend.

    The divergence of nonnegative arrays of one shape. A negative or NaN entry in either
    raises ``ValueError`` naming the argument (concrete arrays); under ``jax.jit``, where the
    values cannot be read, the result is NaN instead.

    Example:
        >>> float(kl_divergence(np.array([1.0, 0.0]), np.array([1.0, 2.0])))
        2.0
    """
    if tuple(X.shape) != tuple(X_hat.shape):
        raise ValueError(f"kl_divergence: X has shape {tuple(X.shape)} but X_hat has shape "
                         f"{tuple(X_hat.shape)}; they must be the same")
    # X >= 0 and X_hat >= 0 (NaN fails both): the divergence is defined only there.
    valid = ops.and_(ops.all(ops.ge(X, 0.0)), ops.all(ops.ge(X_hat, 0.0)))
    if ops.is_concrete(valid) and not bool(valid):
        bad = "X" if not bool(ops.all(ops.ge(X, 0.0))) else "X_hat"
        raise ValueError(f"kl_divergence: {bad} must be nonnegative (KL of nonnegative "
                         f"arrays), but it has negative or NaN entries")
    ratio = ops.truediv(X, ops.clamp(X_hat, _TINY, None))
    safe = ops.where(ops.gt(X, 0.0), ratio, ops.full_like(ratio, 1.0))
    total = ops.sum(ops.sub(ops.add(ops.mul(X, ops.log(safe)), X_hat), X))
    return total if ops.is_concrete(valid) else ops.where(valid, total, math.nan)


def kl_ntf(X, spec: str, ranks: Mapping[str, int], num_iters: int = 100, rng_key=None,
           factors=None):
    """Fit the factors of ``spec`` to the nonnegative array ``X`` by multiplicative updates.

    Args:
        X: the data (numpy, torch or jax array).
        spec: an einsum spec whose output indices are ``X``'s axes.
        ranks: the sizes of the indices that ``X`` does not carry.
        num_iters: sweeps over the factors.
        rng_key: a seed for the uniform(0.5, 1.5) starting factors (numpy, then converted).
        factors: starting factors instead of random ones.

    Returns:
        ``(factors, trace)``: the factors and ``D(X || X_hat)`` after each sweep.

    Example:
        A rank-1 array is fitted exactly:

        >>> X = np.outer([1.0, 2.0, 3.0], [1.0, 0.5])
        >>> (w, h), trace = kl_ntf(X, "ik,jk->ij", {"k": 1}, num_iters=20, rng_key=0)
        >>> np.allclose(w @ h.T, X), bool(np.isclose(trace[-1], 0.0))
        (True, True)
    """
    inputs, out = _parse(spec, len(X.shape))
    sizes = dict(zip(out, X.shape))
    missing = {c for term in inputs for c in term if c not in sizes and c not in ranks}
    if missing:
        raise ValueError(f"spec {spec!r} has indices {sorted(missing)} with no size: pass "
                         f"them in ranks")
    bad = {c: r for c, r in ranks.items() if not (isinstance(r, (int, np.integer)) and r >= 1)}
    if bad:
        raise ValueError(f"ranks must be ints >= 1, got {bad}")
    if ops.is_concrete(X):  # multiplicative updates need X >= 0 (KL of nonnegative data)
        host = np.asarray(ops.to_numpy(X))
        if not np.all(host >= 0) or not np.all(np.isfinite(host)):
            raise ValueError("kl_ntf: X must be finite and nonnegative (KL-NTF fits "
                             "nonnegative data)")
    sizes.update(ranks)
    if factors is None:
        rng = np.random.default_rng(rng_key)
        factors = [ops.new_array(X, rng.uniform(0.5, 1.5, [sizes[c] for c in term]))
                   for term in inputs]
    factors = list(factors)
    ones = ops.full_like(X, 1.0)
    trace = []
    for _ in range(num_iters):
        for f, term in enumerate(inputs):
            others = [z for g, z in enumerate(factors) if g != f]
            other_terms = [t for g, t in enumerate(inputs) if g != f]
            x_hat = ops.einsum(spec, *factors)
            ratio = ops.truediv(X, ops.clamp(x_hat, _TINY, None))
            contract = ",".join([out] + other_terms) + "->" + term
            num = ops.einsum(contract, ratio, *others)
            den = ops.einsum(contract, ones, *others)
            factors[f] = ops.mul(factors[f], ops.truediv(num, den))
        trace.append(float(ops.to_numpy(kl_divergence(X, ops.einsum(spec, *factors)))))
    return factors, np.array(trace)
