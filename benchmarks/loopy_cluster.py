"""Cluster BP under ``batch=`` against a Python loop over the batch (issue #31).

A 4x4 binary grid in four 2x2 clusters (the cluster graph a 4-cycle; messages over whole
clusters, 16 entries), ``B`` models that differ in their unary factors (a batch input ``n``),
10 flooding iterations (``tol=0``, so every run does the same work). Each row times one batched
``cluster_bp(..., batch=("n",))`` against the loop a user writes without it, ``B`` calls of
``cluster_bp`` on ``f(n=i)``; both give the same beliefs to 1e-12 (checked here). Samples use
one int seed (each element draws what it draws alone), FRAK ``k = 2`` new configurations per
call (per-element lists of different lengths); merged and full (batched before) for reference.
No peer has cluster BP (funsor 0.4.8 none; PGMax and pgmpy none).

One thread, numpy, best of ``rounds``: ``python benchmarks/loopy_cluster.py`` (``--quick``:
one round, B = 8 only).
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

# This checkout's funsor_core (not an installed copy): the rows measure the tree they sit in.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import funsor_core as fc  # noqa: E402
from funsor_core.loopy import cluster_bp  # noqa: E402

N = 4
CLUSTERS = [tuple(f"x{i + a}{j + b}" for a in (0, 1) for b in (0, 1))
            for i in (0, 2) for j in (0, 2)]
COMPRESSIONS = [("samples", 4), ("frak", 2), ("merged", 4), "full"]


def grid(rng, batch: int) -> list:
    """Batched unary factors (over ``n``) and shared pairwise factors of an N x N grid."""
    b2 = fc.Bint[2]
    fs = [fc.Tensor(rng.normal(0, 0.5, size=(batch, 2)), {"n": fc.Bint[batch], f"x{i}{j}": b2})
          for i in range(N) for j in range(N)]
    pairs = [(f"x{i}{j}", f"x{i}{j + 1}") for i in range(N) for j in range(N - 1)]
    pairs += [(f"x{i}{j}", f"x{i + 1}{j}") for i in range(N - 1) for j in range(N)]
    sign = np.array([[1.0, -1.0], [-1.0, 1.0]])
    return fs + [fc.Tensor(sign * rng.normal(), {a: b2, b: b2}) for a, b in pairs]


def best(fn, rounds: int) -> tuple:
    out, times = None, []
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def row(factors, batch: int, compression, rounds: int) -> tuple:
    kw = dict(compression=compression, tol=0.0, max_iters=10, scope="cluster", rng_key=1)
    elements = [[f(n=i) if "n" in f.inputs else f for f in factors] for i in range(batch)]
    t_batch, r = best(lambda: cluster_bp(factors, CLUSTERS, batch=("n",), **kw), rounds)
    t_loop, ones = best(lambda: [cluster_bp(fs, CLUSTERS, **kw) for fs in elements], rounds)
    err = max(float(np.abs(np.asarray(r.beliefs[v](n=i).data) - np.asarray(b.data)).max())
              for i, one in enumerate(ones) for v, b in one.beliefs.items())
    return t_loop, t_batch, err


def main(quick: bool) -> None:
    rounds = 1 if quick else 3
    print(f"cluster BP, {N}x{N} grid in 2x2 clusters, 10 iterations; loop of B runs vs one "
          "batched run (s, best of %d, one thread, numpy)" % rounds)
    print(f"{'compression':>14} {'B':>4} {'loop':>8} {'batched':>8} {'speed-up':>9} "
          f"{'max diff':>9}")
    for batch in (8,) if quick else (8, 64):
        factors = grid(np.random.default_rng(0), batch)
        for compression in COMPRESSIONS:
            t_loop, t_batch, err = row(factors, batch, compression, rounds)
            print(f"{str(compression):>14} {batch:>4} {t_loop:8.3f} {t_batch:8.3f} "
                  f"{t_loop / t_batch:9.1f} {err:9.1e}")


if __name__ == "__main__":
    main("--quick" in sys.argv)
