"""A single compressed cluster message (Singh 2014, section 8.4.1, Fig 8.3).

A random 3x3 grid with domain 3: local factors ``psi_i(y) ~ N(0, 1)``, pairwise factors
``+theta_ij`` when the two values are equal and ``-theta_ij`` otherwise, ``theta_ij ~ N(0, 1)``.
The full cluster message is the joint over the 9 variables (3^9 = 19,683 values), from the
library's exact elimination (``sum_product`` eliminating nothing). It is compressed by

- factorized: the product of its marginals (9 x 3 values; loopy BP's message),
- samples: the distinct configurations among k draws, each at its own value (8.2.2),
- k-best: the k best configurations, zero elsewhere (8.2.3),
- merged: the k best plus the rest's mass spread uniformly (8.2.4),
- samples+merged: the sampled set, the MAP, and the rest's mass (FRAK seeded with the samples),
- FRAK: a list grown over calls by the current best absent configurations, merged (8.2.4),

and each is scored by Fig 8.3's four errors against the full message (symmetric KL with the
1e-10 floor, total variation, L2, Hellinger) at its size (bytes / the full message's bytes).
Factorized and k-best are computed here with numpy; cluster BP's own projections take over.

Run: ``python examples/cluster_messages.py [--grids 10]`` (one grid in ``make demo``). Writes
``examples/out/cluster_messages.png`` when matplotlib is installed.
"""

from __future__ import annotations

import argparse

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import (
    project_factorized,
    project_frak,
    project_kbest,
    project_merged,
    project_samples,
    table_errors,
)
from funsor_core.sum_product import sum_product

N, D = 3, 3
KS = (1, 3, 10, 30, 100, 300, 1000)
DRAWS = (3, 10, 30, 100, 300, 1000, 3000)
METRICS = ("sym_kl", "tv", "l2", "hellinger")


def full_message(rng) -> np.ndarray:
    """The grid's joint log table over x00..x22 (unnormalized), by exact elimination."""
    names = [f"x{i}{j}" for i in range(N) for j in range(N)]
    factors = [fc.Tensor(rng.normal(size=D), {v: fc.Bint[D]}) for v in names]
    same = np.eye(D) * 2.0 - 1.0  # +1 if equal, -1 otherwise
    pairs = [(f"x{i}{j}", f"x{i}{j + 1}") for i in range(N) for j in range(N - 1)]
    pairs += [(f"x{i}{j}", f"x{i + 1}{j}") for i in range(N - 1) for j in range(N)]
    for a, b in pairs:
        factors.append(fc.Tensor(rng.normal() * same, {a: fc.Bint[D], b: fc.Bint[D]}))
    joint = sum_product(ops.logaddexp, ops.add, factors, eliminate=frozenset())
    return np.asarray(joint.align(tuple(names)).data, dtype=np.float64)


def rows_for(table: np.ndarray, seed: int) -> list:
    """``(method, size, errors)`` for every method and size on one message."""
    full_bytes = table.size * table.itemsize
    rows = []

    def add(method, log_q, nbytes):
        rows.append((method, nbytes / full_bytes, table_errors(table, log_q)))

    add("factorized", *project_factorized(table)[:2])
    for k in KS:
        add("k-best", *project_kbest(table, k=k)[:2])
        p = project_merged(table, k=k)
        add("merged", p.log_table, p.nbytes)
    state = None
    for k in KS:  # FRAK: each call adds the current best absent ones, up to the next size
        p = project_frak(table, k=k, state=state)
        state = p.state
        add("FRAK", p.log_table, p.nbytes)
    for draws in DRAWS:
        s = project_samples(table, k=draws, rng_key=seed)
        add("samples", s.log_table, s.nbytes)
        kept = tuple(int(i) for i in np.flatnonzero(np.isfinite(s.log_table.reshape(-1))))
        m = project_frak(table, state=kept)
        add("samples+merged", m.log_table, m.nbytes)
    return rows


def main(grids: int = 1, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    runs = [rows_for(full_message(rng), seed + g) for g in range(grids)]
    mean: dict = {}
    for i, (method, _, _) in enumerate(runs[0]):
        sizes = [run[i][1] for run in runs]
        errs = {m: float(np.mean([run[i][2][m] for run in runs])) for m in METRICS}
        mean.setdefault(method, []).append((float(np.mean(sizes)), errs))
    print(f"Fig 8.3: one 3x3 cluster message, domain {D} ({D ** (N * N)} values), mean over "
          f"{grids} grid(s); size = bytes / full message bytes")
    print(f"{'method':>15} {'size':>8} " + " ".join(f"{m:>10}" for m in METRICS))
    for method, points in mean.items():
        for size, errs in points:
            print(f"{method:>15} {size:8.4f} " + " ".join(f"{errs[m]:10.2e}" for m in METRICS))
    report_claim(mean)
    plot(mean)
    return mean


def error_at(points: list, size: float, metric: str) -> float:
    """The error at ``size`` by log-log interpolation along a method's sweep (nan outside)."""
    xs = np.log([p[0] for p in points])
    ys = np.log(np.maximum([p[1][metric] for p in points], 1e-300))
    order = np.argsort(xs)
    if not xs.min() <= np.log(size) <= xs.max():
        return float("nan")
    return float(np.exp(np.interp(np.log(size), xs[order], ys[order])))


def report_claim(mean: dict) -> None:
    """The thesis: FRAK (merged) best at equal size. Compare at a few common sizes."""
    for size in (0.01, 0.1, 0.25):
        best = {m: error_at(p, size, "tv") for m, p in mean.items() if m != "factorized"}
        ranked = sorted((v, m) for m, v in best.items() if np.isfinite(v))
        print(f"  at size {size:g}, total variation: "
              + ", ".join(f"{m} {v:.2e}" for v, m in ranked))
    (size, errs), = mean["factorized"]
    firsts = {m: min((s for s, e in p if e["tv"] < errs["tv"]), default=None)
              for m, p in mean.items() if m != "factorized"}
    print(f"  factorized: size {size:.4f}, total variation {errs['tv']:.2e}; the smallest "
          "swept size below it: " + ", ".join(f"{m} {'-' if s is None else f'{s:.4f}'}"
                                              for m, s in firsts.items()))


def plot(mean: dict) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, metric in zip(axes, METRICS):
        for method, points in mean.items():
            style = {"factorized": "o", "FRAK": "x--"}.get(method, ".-")  # FRAK on merged
            ax.plot([p[0] for p in points], [max(p[1][metric], 1e-12) for p in points],
                    style, label=method)
        ax.set(xscale="log", yscale="log", xlabel="size / full message size", title=metric)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_path("cluster_messages.png"), dpi=90)
    print(f"  plot: {out_path('cluster_messages.png')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=int, default=1, help="random grids to average over")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.grids, args.seed)
