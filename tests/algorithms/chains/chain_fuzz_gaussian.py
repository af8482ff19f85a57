"""Fuzzing Gaussian chains (Kalman filters): ``MarkovProduct`` (each strategy), funsor's
``sequential_sum_product``, ``markov_product`` with ragged ``lengths`` and
``windowed_filter``, evaluated at random points, against closed-form Gaussian algebra in
float64 numpy (the joint quadratic form of all states, its interior integrated by a
Schur complement), with a batch name, rank-deficient steps, on numpy, torch and jax
(eager and under ``jax.jit``).

Run long: ``python -m tests.algorithms.chains.chain_fuzz_gaussian 0 1000``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct, markov_product, sequential_sum_product
from interpretations import lazy
from tests.algorithms.chains.chain_fuzz import run_cases

STEP = {"x_prev": "x_curr"}


def draw_gaussian(seed: int) -> dict:
    """A random Gaussian chain case.

    Example:
        >>> draw_gaussian(0)["d"] in (1, 2, 3)
        True
    """
    r = np.random.default_rng(seed)
    backend = str(r.choice(["numpy", "torch", "jax"]))
    return dict(seed=seed, backend=backend, jit=backend == "jax" and bool(r.random() < 0.5),
                d=int(r.integers(1, 4)), T=int(r.integers(1, 31)) if r.random() < 0.5
                else int(r.integers(1, 6)), B=int(r.integers(0, 4)),
                rank=str(r.choice(["full", "half"])), ragged=bool(r.random() < 0.3),
                strategy=[None, "parallel", "sequential"][int(r.integers(0, 3))])


def gaussian_data(c: dict) -> dict:
    """Square-root information arrays: steps (T, B, 2d, r), (T, B, r); init (B, d, d), (B, d);
    random points; lengths (B,) in 1..T.

    Example:
        >>> gaussian_data(draw_gaussian(0))["S"].shape[-2] == 2 * draw_gaussian(0)["d"]
        True
    """
    r = np.random.default_rng(30_000 + c["seed"])
    d, T, b = c["d"], c["T"], max(c["B"], 1)
    rk = 2 * d if c["rank"] == "full" else d
    # Each step pins x_curr near a linear map of x_prev (an x_curr block near the identity):
    # the joint is then a proper, well-conditioned product of conditionals.
    # x_prev's block small, so the implied dynamics contract: growing ones would make the
    # joint's precision too ill-conditioned for the oracle over 30 steps.
    S = r.normal(size=(T, b, 2 * d, rk)) * 0.3
    S[..., d:, :] += np.eye(d, rk)
    W = r.normal(size=(T, b, rk))
    S0 = r.normal(size=(b, d, d)) * 0.3 + np.eye(d)
    W0 = r.normal(size=(b, d))
    pts = r.normal(size=(2, b, d))
    lengths = r.integers(1, T + 1, size=b) if c["ragged"] else np.full(b, T)
    return dict(S=S, W=W, S0=S0, W0=W0, pts=pts, lengths=lengths)


def _joint(S, W, S0=None, W0=None):
    # (J, h, c) of sum_t -0.5 |z_t S_t - w_t|^2 (+ the init's) over x_0..x_T, z_t = (x_t, x_t+1)
    T, d = S.shape[0], S.shape[1] // 2
    n = (T + 1) * d
    J, h, c = np.zeros((n, n)), np.zeros(n), 0.0
    for t in range(T):
        sl = slice(t * d, (t + 2) * d)
        J[sl, sl] += S[t] @ S[t].T
        h[sl] += S[t] @ W[t]
        c -= 0.5 * W[t] @ W[t]
    if S0 is not None:
        J[:d, :d] += S0 @ S0.T
        h[:d] += S0 @ W0
        c -= 0.5 * W0 @ W0
    return J, h, c


def _integrate(J, h, c, keep: list, at: np.ndarray) -> float:
    # log of the integral over the coordinates not in ``keep``, the kept ones set to ``at``
    n = J.shape[0]
    rest = [i for i in range(n) if i not in keep]
    e = np.asarray(at, dtype=float)
    val = c - 0.5 * e @ J[np.ix_(keep, keep)] @ e + h[keep] @ e if keep else c
    if rest:
        Jii = J[np.ix_(rest, rest)]
        hi = h[rest] - (J[np.ix_(rest, keep)] @ e if keep else 0.0)
        val += 0.5 * hi @ np.linalg.solve(Jii, hi) + 0.5 * len(rest) * math.log(2 * math.pi) \
            - 0.5 * np.linalg.slogdet(Jii)[1]
    return float(val)


def gaussian_oracle(c: dict, x: dict) -> dict:
    """Per batch entry: the total with the init, the chain at the points (x_0, x_n), the
    filter at x_n (n the entry's length).

    Example:
        >>> c = draw_gaussian(1); sorted(gaussian_oracle(c, gaussian_data(c)))
        ['chain', 'filter', 'total']
    """
    d = c["d"]
    out = {"total": [], "chain": [], "filter": []}
    for b in range(max(c["B"], 1)):
        n = int(x["lengths"][b])
        S, W = x["S"][:n, b], x["W"][:n, b]
        J, h, k = _joint(S, W, x["S0"][b], x["W0"][b])
        out["total"].append(_integrate(J, h, k, [], np.zeros(0)))
        last = list(range(n * d, (n + 1) * d))
        out["filter"].append(_integrate(J, h, k, last, x["pts"][1, b]))
        J, h, k = _joint(S, W)
        out["chain"].append(_integrate(J, h, k, list(range(d)) + last,
                                       np.concatenate([x["pts"][0, b], x["pts"][1, b]])))
    return {key: np.array(v) for key, v in out.items()}


def _run(c: dict, a: dict) -> dict:
    d, T = c["d"], c["T"]
    batch = {"b": fc.Bint[c["B"]]} if c["B"] else {}
    bn = tuple(batch)
    trans = fc.Gaussian(white_vec=a["W"], prec_sqrt=a["S"], inputs={
        "t": fc.Bint[T], **batch, "x_prev": fc.Reals[d], "x_curr": fc.Reals[d]})
    init = fc.Gaussian(white_vec=a["W0"], prec_sqrt=a["S0"],
                       inputs={**batch, "x_prev": fc.Reals[d]})
    p0 = fc.Tensor(a["pts"][0], batch, "real") if c["B"] else fc.Tensor(a["pts"][0])
    p1 = fc.Tensor(a["pts"][1], batch, "real") if c["B"] else fc.Tensor(a["pts"][1])
    out = {}

    def data(f):
        return f.align(bn).data if bn else f.data

    if c["ragged"]:
        n = fc.Tensor(a["lengths"], batch, dtype=T + 1)
        chain = markov_product(ops.logaddexp, ops.add, trans, "t", STEP, lengths=n)
        lz = chain  # evaluated step by step (not under lazy: see masks._carried_product)
        filt = fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", STEP, init, lengths=n)
    else:
        chain = MarkovProduct(ops.logaddexp, ops.add, trans, "t", STEP, strategy=c["strategy"])
        with lazy:
            lz = MarkovProduct(ops.logaddexp, ops.add, trans, "t", STEP, strategy=c["strategy"])
        filt = fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", STEP, init)
        out["sequential_sum_product"] = data(sequential_sum_product(
            ops.logaddexp, ops.add, trans, "t", STEP)(x_prev=p0, x_curr=p1))
    out["chain"] = data(chain(x_prev=p0, x_curr=p1))
    with lazy:
        total = (init + lz).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
    out["total"] = data(fc.reinterpret(total))
    out["filter"] = data(filt(x_curr=p1))
    return out


def check_gaussian(c: dict) -> list:
    """Disagreements of the Gaussian chain entry points with closed-form numpy.

    Example:
        >>> check_gaussian(dict(seed=0, backend="numpy", jit=False, d=2, T=3, B=0,
        ...                     rank="full", ragged=False, strategy=None))
        []
    """
    x = gaussian_data(c)
    exp = gaussian_oracle(c, x)
    sq = slice(None) if c["B"] else 0
    host = {"S": x["S"][:, sq], "W": x["W"][:, sq], "S0": x["S0"][sq], "W0": x["W0"][sq],
            "pts": x["pts"][:, sq], "lengths": x["lengths"][sq]}
    previous = fc.get_backend()
    fc.set_backend(c["backend"])
    fails = []
    try:
        if c["backend"] == "torch":
            import torch
            host = {k: torch.tensor(v) for k, v in host.items()}
        elif c["backend"] == "jax":
            import jax.numpy as jnp
            host = {k: jnp.asarray(v) for k, v in host.items()}
        try:
            if c["jit"]:
                import jax
                out = jax.jit(lambda a: _run(c, a))(host)
            else:
                out = _run(c, host)
        except Exception as e:  # noqa: BLE001 (a fuzzer reports every failure)
            return [f"raised {type(e).__name__}: {e}"]
        for name, v in out.items():
            v = np.asarray(ops.to_numpy(v), dtype=np.float64).reshape(-1)
            want = exp["chain" if name == "sequential_sum_product" else name]
            if not np.allclose(v, want, rtol=1e-7, atol=1e-7):
                fails.append(f"{name}: {v[:3]} expected {want[:3]}")
    finally:
        fc.set_backend(previous)
    return fails


def main(argv) -> int:
    """Run ``count`` Gaussian cases from seed ``first``."""
    return run_cases(draw_gaussian, check_gaussian, argv, "Gaussian ")

if __name__ == "__main__":
    import jax

    jax.config.update("jax_enable_x64", True)
    sys.exit(main(sys.argv))
