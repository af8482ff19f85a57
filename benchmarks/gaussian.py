"""Add two batched Gaussians over ``x: Reals[dim]`` and integrate ``x`` out (logaddexp).

Compares funsor-core (numpy) with hand-written numpy Cholesky code computing the same number
and with funsor 0.4.8 (numpy backend) when installed. Run with one thread:
``OMP_NUM_THREADS=1 python benchmarks/gaussian.py``.
"""

from __future__ import annotations

import os
import timeit

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402

BATCH = 4


def best_us(fn, number=2000, repeat=5) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def make_arrays(dim, rng):
    w1, w2 = rng.normal(size=(BATCH, dim)), rng.normal(size=(BATCH, dim))
    s1 = np.eye(dim) * 1.5 + 0.3 * rng.normal(size=(BATCH, dim, dim))
    s2 = np.eye(dim) * 1.5 + 0.3 * rng.normal(size=(BATCH, dim, dim))
    return w1, s1, w2, s2


def hand_written(w1, s1, w2, s2):
    # log ∫ exp(-0.5||x S1 - w1||^2 - 0.5||x S2 - w2||^2) dx via the precision's Cholesky.
    p = s1 @ np.swapaxes(s1, -1, -2) + s2 @ np.swapaxes(s2, -1, -2)
    i = (s1 @ w1[..., None] + s2 @ w2[..., None])[..., 0]
    chol = np.linalg.cholesky(p)
    z = np.linalg.solve(chol, i[..., None])[..., 0]
    dim = p.shape[-1]
    return (0.5 * dim * np.log(2 * np.pi) - np.log(np.diagonal(chol, 0, -2, -1)).sum(-1)
            + 0.5 * (z * z).sum(-1) - 0.5 * (w1 * w1).sum(-1) - 0.5 * (w2 * w2).sum(-1))


def main() -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    try:
        from collections import OrderedDict

        import funsor

        funsor.set_backend("numpy")
    except ImportError:
        funsor = None
    for dim in (2, 8):
        w1, s1, w2, s2 = make_arrays(dim, rng)
        inputs = {"i": fc.Bint[BATCH], "x": fc.Reals[dim]}
        g1 = fc.Gaussian(white_vec=w1, prec_sqrt=s1, inputs=inputs)
        g2 = fc.Gaussian(white_vec=w2, prec_sqrt=s2, inputs=inputs)
        ours = (g1 + g2).reduce(ops.logaddexp, "x").data
        np.testing.assert_allclose(ours, hand_written(w1, s1, w2, s2), rtol=1e-8)
        raw_us = best_us(lambda a=(w1, s1, w2, s2): hand_written(*a))
        our_us = best_us(lambda a=g1, b=g2: (a + b).reduce(ops.logaddexp, "x"))
        row = {"dim": dim, "hand_us": raw_us, "ours_us": our_us, "funsor_us": None}
        if funsor is not None:
            fin = OrderedDict(i=funsor.Bint[BATCH], x=funsor.Reals[dim])
            f1 = funsor.gaussian.Gaussian(white_vec=w1, prec_sqrt=s1, inputs=tuple(fin.items()))
            f2 = funsor.gaussian.Gaussian(white_vec=w2, prec_sqrt=s2, inputs=tuple(fin.items()))
            theirs = (f1 + f2).reduce(funsor.ops.logaddexp, "x").data
            np.testing.assert_allclose(theirs, ours, rtol=1e-8)
            row["funsor_us"] = best_us(lambda a=f1, b=f2: (a + b).reduce(funsor.ops.logaddexp, "x"),
                                       number=500)
        rows.append(row)
    print(f"Gaussian + Gaussian, logaddexp over x, batch {BATCH} (numpy, microseconds per call)")
    print(f"{'dim':>4} {'hand-written':>13} {'funsor-core':>12} {'ratio':>6} {'funsor 0.4.8':>13} "
          f"{'ratio':>6}")
    for r in rows:
        f = r["funsor_us"]
        fs = f"{f:13.1f} {f / r['hand_us']:6.1f}" if f is not None else f"{'n/a':>13} {'':>6}"
        print(f"{r['dim']:>4} {r['hand_us']:13.1f} {r['ours_us']:12.1f} "
              f"{r['ours_us'] / r['hand_us']:6.1f} {fs}")
    return rows


if __name__ == "__main__":
    main()
