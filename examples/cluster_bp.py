"""Cluster BP with compressed messages on a 9x8 grid in twelve 3x2 clusters (Singh 2014, Fig 8.6).

The model (thesis 8.4.3): binary variables on a 9x8 grid, local log factors drawn from
N(0, 0.25) and pairwise log factors ``(-1)^[y_i != y_j] e_ij`` with ``e_ij ~ N(0, 1)``. The
variables are split into twelve 3x2 clusters (one simulated machine each); inside a cluster
the elimination is exact, and the cluster messages, joint tables over a cluster's six
variables (64 entries, ``scope="cluster"``, as in the thesis), are compressed:
``factorized`` (each message the product of the exact cavity's single-variable marginals:
not loopy BP here, as the clusters have inner factors; plain ``loopy_bp``'s final error is
printed as a reference), ``full`` (generalized BP), ``("kbest", 8)``, ``("merged", 8)`` and
``("frak", 8)``.

After each iteration the mean L2 and KL of the variable marginals against the exact ones
(the library's elimination, ``sum_product``, once per cluster) are recorded against the
bytes sent, the cross-cluster ("network") messages only and all messages (network plus the
dense local factor-to-cluster messages); a few points of each curve are printed.
``--seeds`` averages over models, as the thesis does (20).

Run: ``python examples/cluster_bp.py`` (part of ``make demo``). Writes
``examples/out/cluster_bp.png`` when matplotlib is installed.
"""

from __future__ import annotations

import argparse

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import PROJECTIONS, cluster_bp, loopy_bp, marginal_errors
from funsor_core.sum_product import sum_product

ROWS, COLS, CLUSTER = 9, 8, (3, 2)

# The methods to run, by projection (a name in PROJECTIONS, or a (name, k) pair).
METHODS = [("factorized", "factorized"), ("GBP (full)", "full"),
           ("k-best, k=8", ("kbest", 8)), ("merged, k=8", ("merged", 8)),
           ("FRAK, k=8", ("frak", 8))]


def grid_model(rng) -> tuple:
    """The 9x8 grid's factors and its 3x2 clusters."""
    name = [[f"y{i}_{j}" for j in range(COLS)] for i in range(ROWS)]
    factors = [fc.Tensor(rng.normal(0.0, 0.5, size=2), {name[i][j]: fc.Bint[2]})
               for i in range(ROWS) for j in range(COLS)]  # N(0, 0.25): sd 0.5
    sign = np.array([[1.0, -1.0], [-1.0, 1.0]])  # (-1)^[y_i != y_j]
    pairs = [(name[i][j], name[i][j + 1]) for i in range(ROWS) for j in range(COLS - 1)]
    pairs += [(name[i][j], name[i + 1][j]) for i in range(ROWS - 1) for j in range(COLS)]
    factors += [fc.Tensor(sign * rng.normal(), {a: fc.Bint[2], b: fc.Bint[2]})
                for a, b in pairs]
    h, w = CLUSTER
    clusters = [tuple(name[i + a][j + b] for a in range(h) for b in range(w))
                for i in range(0, ROWS, h) for j in range(0, COLS, w)]
    return factors, clusters


def exact_marginals_by_cluster(factors, clusters) -> dict:
    """Exact log marginals by the library's elimination (``sum_product``): one elimination
    per cluster down to its joint (12 instead of one per variable, 72), then its variables'
    marginals from that joint."""
    names = frozenset(k for f in factors for k in f.inputs)
    out = {}
    for vs in clusters:
        joint = sum_product(ops.logaddexp, ops.add, factors, eliminate=names - frozenset(vs))
        for v in vs:
            m = joint.reduce(ops.logaddexp, frozenset(vs) - {v})
            out[v] = m - m.reduce(ops.logaddexp)
    return out


def curve(factors, clusters, exact, compression, max_iters) -> list:
    """``(network bytes, all bytes, L2, KL)`` after each iteration."""
    rows = []

    def record(r):
        err = marginal_errors(_floored(r.beliefs), exact)
        rows.append((r.counts.network_bytes, r.counts.total_bytes, err["l2"], err["kl"]))

    cluster_bp(factors, clusters, compression, tol=1e-8, max_iters=max_iters, scope="cluster",
               callback=record)
    return rows


def _floored(beliefs) -> dict:
    # As the thesis: zero probabilities count as 1e-10 in the KL.
    return {k: fc.Tensor(np.log(np.maximum(np.exp(b.data), 1e-10)), b.inputs)
            for k, b in beliefs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args()
    curves: dict = {label: [] for label, _ in METHODS}
    plain = []  # loopy BP's final (L2, KL), the reference the thesis compares with
    for seed in range(args.seeds):
        factors, clusters = grid_model(np.random.default_rng(seed))
        exact = exact_marginals_by_cluster(factors, clusters)
        r = loopy_bp(factors, tol=1e-8, max_iters=200)
        err = marginal_errors(r.beliefs, exact)
        plain.append((r.num_iters, err["l2"], err["kl"]))
        for label, compression in METHODS:
            name = compression[0] if isinstance(compression, tuple) else compression
            if name in PROJECTIONS:
                curves[label].append(curve(factors, clusters, exact, compression, args.iters))
    print(f"{ROWS}x{COLS} binary grid, {len(clusters)} clusters of {CLUSTER[0]}x{CLUSTER[1]}, "
          f"{args.seeds} model(s): error of the marginals against the bytes sent")
    print(f"  {'method':22} {'iters':>5} {'network KB':>11} {'all KB':>9} {'L2':>9} {'KL':>9}")
    final = {}
    for label, runs in curves.items():
        if not runs:
            print(f"  {label:22} skipped: its projection is not registered in PROJECTIONS")
            continue
        final[label] = _mean_curve(runs)
        net, total, l2, kl = final[label][-1]
        print(f"  {label:22} {len(final[label]):>5} {net / 1e3:>11.1f} {total / 1e3:>9.1f} "
              f"{l2:>9.2e} {kl:>9.2e}")
    iters, l2, kl = np.mean(plain, axis=0)
    print(f"  {'loopy BP (plain)':22} {iters:>5.0f} {'':>11} {'':>9} {l2:>9.2e} {kl:>9.2e}")
    print("  L2 after 1, 2, 4, 8, ... iterations (network KB: L2):")
    for label, rows in final.items():
        shown = [rows[i] for i in range(len(rows)) if (i + 1) & i == 0 or i == len(rows) - 1]
        print(f"  {label:22} " + ", ".join(f"{r[0] / 1e3:.1f}: {r[2]:.1e}" for r in shown))
    _plot(final)


def _mean_curve(runs) -> list:
    # Runs stop at different iterations: a finished run keeps its last row.
    n = max(len(r) for r in runs)
    padded = np.array([r + [r[-1]] * (n - len(r)) for r in runs])
    return [tuple(row) for row in padded.mean(axis=0)]


def _plot(final) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for label, rows in final.items():
        rows = np.array(rows)
        axes[0].loglog(rows[:, 1], rows[:, 2], ".-", label=label)
        axes[1].loglog(rows[:, 0], rows[:, 2], ".-", label=label)
    axes[0].set_xlabel("bytes sent, all messages")
    axes[1].set_xlabel("bytes sent, network messages")
    axes[0].set_ylabel("mean L2 error of the marginals")
    axes[0].legend()
    fig.suptitle(f"{ROWS}x{COLS} grid, 3x2 clusters (Singh 2014, Fig 8.6)")
    fig.tight_layout()
    fig.savefig(out_path("cluster_bp.png"), dpi=120)
    print("wrote", out_path("cluster_bp.png"))


if __name__ == "__main__":
    main()
