"""Smoothing a Gaussian chain: the message that each step receives from the rest of the chain.

For a chain of steps ``f_t(x_t, x_{t+1})`` (rows ``[prev, glob, curr]``, as
``gaussian_scan.GaussianChain``) between a left boundary ``a(x_0)`` and a right boundary
``b(x_T)``, step ``t`` receives ``M_t(p, c) = alpha_t(p) + beta_t(c)``, where

    alpha_0 = a,        alpha_{t+1}(c) = log int exp(alpha_t(p) + f_t(p, c)) dp
    beta_{T-1} = b,     beta_{t-1}(p)  = log int exp(f_t(p, c) + beta_t(c)) dc

(the forward filter's carries and the backward information filter's carries, each a Gaussian
over ``[glob, state]`` in square-root form). ``M_t + f_t`` is the joint posterior of the pair
``(x_t, x_{t+1})`` up to the evidence: the Rauch-Tung-Striebel smoother, which the adjoint of
a ``MarkovProduct`` is (``adjoint/backward.py``).

The sequential strategy runs both filters as one ``scan`` each (a ``lax.scan`` under jax,
compiled once per structure). The parallel strategy composes the steps' prefix and suffix
products by a log-depth scan (``ceil(log2 T)`` rounds of batched QRs, as the parallel Kalman
smoother of Sarkka and Garcia-Fernandez) and closes each with its boundary in one batched
step: on numpy and torch a Python loop of T small QRs costs far more than a few batched ones.

Example:
    >>> from funsor_core.algorithms.chains.gaussian_scan import gaussian_chain_parts
    >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
    ...                 inputs={"t": fc.Bint[3], "x": fc.Real, "y": fc.Real})
    >>> chain = gaussian_chain_parts(ops.logaddexp, ops.add, g, fc.Variable("t", fc.Bint[3]),
    ...                              (("x", "y"),))
    >>> flat = (np.zeros(0), np.zeros((1, 0)), np.zeros(()))  # no information at the ends
    >>> w, s, k = smooth_gaussian_chain(chain, flat, flat, "parallel")
    >>> s.shape  # T, rows [x, y], rank 1 + 1
    (3, 2, 2)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import chain_problem, resolve_strategy
from funsor_core.algorithms.chains.gaussian_scan import (
    GaussianChain,
    _mm,
    canonical_rank,
    compose,
    diverged,
)
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import cached

__all__ = ["smooth_gaussian_chain"]


def _index(f, t):
    return tuple(x[t] for x in f)


def _scan_all(fn, carry, xs, reverse: bool, scan):
    # carry, y = fn(carry, x) over the time axis, the y of each step stacked per array.
    if scan is not None:
        return scan(fn, carry, xs, reverse=reverse)[1]
    n = xs[0].shape[0]
    ys = []
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        carry, y = fn(carry, _index(xs, t))
        ys.append(y)
    if reverse:
        ys.reverse()
    return tuple(ops.stack([y[i] for y in ys], 0) for i in range(3))


def _prepend(first, rest, at_end: bool):
    # One carry joined to the stacked others along the time axis.
    if rest is None:
        return tuple(x[None] for x in first)
    parts = [(r, x[None]) if at_end else (x[None], r) for x, r in zip(first, rest)]
    return tuple(ops.cat(list(p), 0) for p in parts)


def _prefix(f, sizes, check, suffix: bool, maximize: bool):
    # Hillis-Steele scan: after the round of offset d, element i composes the steps
    # i - 2d + 1 .. i (prefix) or i .. i + 2d - 1 (suffix); every result of rank D.
    n, d = f[0].shape[0], 1
    dim = sizes["p"] + sizes["g"] + sizes["c"]
    while d < n:
        a, b = tuple(x[:n - d] for x in f), tuple(x[d:] for x in f)
        comp = canonical_rank(*_mm(a, b, sizes, check, maximize), dim, dim)
        keep = tuple(x[n - d:] for x in f) if suffix else tuple(x[:d] for x in f)
        f = tuple(ops.cat([c, k] if suffix else [k, c], 0) for c, k in zip(comp, keep))
        d *= 2
    return f


def _along(bound, n: int):
    # A boundary's arrays repeated along a new leading time axis of length n.
    return tuple(ops.expand(x[None], (n,) + tuple(x.shape)) for x in bound)


def _parallel(chain: GaussianChain, left, right, sizes, check, maximize: bool):
    dim = 2 * chain.dp + chain.dg
    width = chain.dp + chain.dg
    f = canonical_rank(chain.w, chain.s, chain.k, dim, dim)
    n = f[0].shape[0]
    if n == 1:
        return None, None
    # alpha_t = left o f_0 o ... o f_{t-1}, beta_t = f_{t+1} o ... o f_{T-1} o right.
    heads = _prefix(tuple(x[:n - 1] for x in f), sizes, check, False, maximize)
    tails = _prefix(tuple(x[1:] for x in f), sizes, check, True, maximize)
    alphas = compose(_along(left, n - 1), ("g", "m"), heads, ("m", "g", "c"), ("g", "c"),
                     sizes, check, maximize=maximize)
    betas = compose(tails, ("p", "g", "m"), _along(right, n - 1), ("m", "g"), ("p", "g"),
                    sizes, check, maximize=maximize)
    return canonical_rank(*alphas, width, width), canonical_rank(*betas, width, width)


def _sequential(chain: GaussianChain, left, right, sizes, check, scan, maximize: bool):
    width = chain.dp + chain.dg
    f = (chain.w, chain.s, chain.k)

    def forward(c, x):  # alpha_{t+1} over [g, c] from alpha_t over [g, m] and step t
        out = compose(c, ("g", "m"), x, ("m", "g", "c"), ("g", "c"), sizes, check,
                      maximize=maximize)
        out = canonical_rank(*out, width, width)
        return out, out

    def backward(c, x):  # beta_{t-1} over [p, g] from step t and beta_t over [m, g]
        out = compose(x, ("p", "g", "m"), c, ("m", "g"), ("p", "g"), sizes, check,
                      maximize=maximize)
        out = canonical_rank(*out, width, width)
        return out, out

    n = f[0].shape[0]
    if n == 1:
        return None, None
    return (_scan_all(forward, left, tuple(x[:n - 1] for x in f), False, scan),
            _scan_all(backward, right, tuple(x[1:] for x in f), True, scan))


def _smooth(strategy, chain: GaussianChain, left, right, check, scan, maximize=False):
    sizes = {"p": chain.dp, "g": chain.dg, "m": chain.dp, "c": chain.dp}
    width = chain.dp + chain.dg
    left = canonical_rank(*left, width, width)
    right = canonical_rank(*right, width, width)
    if strategy == "sequential":
        alphas, betas = _sequential(chain, left, right, sizes, check, scan, maximize)
    else:
        alphas, betas = _parallel(chain, left, right, sizes, check, maximize)
    wa, sa, ka = _prepend(left, alphas, False)
    wb, sb, kb = _prepend(right, betas, True)
    # M_t over rows [p, g, c]: alpha's rows are [g, p], beta's [c, g]; both know g.
    dp, dg = chain.dp, chain.dg
    zeros_a = ops.new_zeros(sa, tuple(sa.shape[:-2]) + (dp, sa.shape[-1]))
    zeros_b = ops.new_zeros(sb, tuple(sb.shape[:-2]) + (dp, sb.shape[-1]))
    rows_a = ops.cat([sa[..., dg:, :], sa[..., :dg, :], zeros_a], -2)
    rows_b = ops.cat([zeros_b, sb[..., dp:, :], sb[..., :dp, :]], -2)
    return ops.cat([wa, wb], -1), ops.cat([rows_a, rows_b], -1), ops.add(ka, kb)


@cached("chains.gaussian_smooth.programs", maxsize=256)
def _compiled(strategy, dp, dg, maximize, backend):
    def fn(w, s, k, left, right):
        chain = GaussianChain(w, s, k, dp, dg, None, None, None, None)
        return _smooth(strategy, chain, left, right, None, backend.scan, maximize)

    return backend.jit(fn)


def smooth_gaussian_chain(chain: GaussianChain, left: tuple, right: tuple,
                          strategy: str | None = None, maximize: bool = False):
    """The message ``M_t = alpha_t(prev) + beta_t(curr)`` of every step of ``chain`` (see
    the module docstring), as ``(w, s, k)`` with the chain's time and batch axes and rows
    ``[prev, glob, curr]``.

    Args:
        chain: a chain with a time axis (``chain.power`` None).
        left: ``(w, s, k)`` of the left boundary over rows ``[glob, first prev]``.
        right: ``(w, s, k)`` of the right boundary over rows ``[last curr, glob]``.
        strategy: ``"parallel"``, ``"sequential"``, or ``"auto"``/None (the cost model's
            choice for the chain, as its forward pass).
        maximize: the max-product messages (``(max, add)``: max-marginals, whose argmax is
            the MAP path) instead of the integrals.

    Raises:
        ValueError: a filter's integral diverges (too little information on a state),
            naming the chain's states (numpy, torch and eager jax).

    Example:
        A random walk (unit steps) from ``x_0 ~ N(0, 1)``, no information at the end: step
        ``t`` hears ``x_t ~ N(0, t + 1)`` from the left, nothing from the right.

        >>> from funsor_core.algorithms.chains.gaussian_scan import gaussian_chain_parts
        >>> step = fc.Gaussian(white_vec=np.zeros((3, 1)),
        ...                    prec_sqrt=np.tile([[1.0], [-1.0]], (3, 1, 1)),
        ...                    inputs={"t": fc.Bint[3], "x": fc.Real, "y": fc.Real})
        >>> chain = gaussian_chain_parts(ops.logaddexp, ops.add, step,
        ...                              fc.Variable("t", fc.Bint[3]), (("x", "y"),))
        >>> left = (np.zeros(1), np.eye(1), np.zeros(()))  # exp(-x_0^2 / 2)
        >>> flat = (np.zeros(0), np.zeros((1, 0)), np.zeros(()))
        >>> w, s, k = smooth_gaussian_chain(chain, left, flat, "sequential")
        >>> precision = s @ s.swapaxes(-1, -2)  # rows [x, y]
        >>> np.allclose(precision[:, 0, 0], [1, 1 / 2, 1 / 3]), np.allclose(precision[:, 1], 0)
        (True, True)
    """
    backend = backend_of(chain.w)
    batch = math.prod(d.size for d in chain.batch.values())
    strategy = resolve_strategy(strategy, chain_problem(chain.w, chain.dp, batch,
                                                        chain.duration, False, True))
    if not backend.COMPILES:
        return _smooth(strategy, chain, left, right, "the chain's states", None, maximize)
    w, s, k = _compiled(strategy, chain.dp, chain.dg, maximize, backend)(
        chain.w, chain.s, chain.k, left, right)
    if diverged(k):  # eager jax: rerun with the checks, to raise as numpy does
        _smooth(strategy, chain, left, right, "the chain's states", None, maximize)
        raise ValueError("cannot smooth the chain: its filter diverges (a state's precision "
                         "is singular somewhere); add information on the chain's states")
    return w, s, k
