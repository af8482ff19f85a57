"""Belief propagation against Gibbs sampling on a 4x4 binary grid (Singh 2014, Fig 6.1).

A 4x4 Ising-like grid (unary and pairwise log factors) is small enough for exact marginals
(``exact_marginals``: elimination). Loopy BP converges in a few dozen messages per edge to a
fixed point with a small bias; Gibbs sampling's error keeps falling with the number of samples,
so the two error curves cross (plotted against wall seconds, BP stopped after 1 to 32
iterations, as Fig 6.1 plots them against time). Both are run through ``funsor_core.loopy``
and compared with ``marginal_errors`` (mean total variation per variable); the BP beliefs are
also computed by the ``LoopyBP`` interpretation, as the Bethe log Z of a lazy sum of factors.

Then anytime BP (Singh 2014 ch. 7.2, Figs 7.7-7.9 in small) on the thesis's 5x5 grid with
domain 100 (7.2.7.1: geometric potentials with noise; ``loopy.models.thesis_grid``): it starts
from one state per variable and grows the domains by fixed or dynamic priorities, one flooding
iteration per step on compact tables of the active states (``step_iters=1``); the L2 error of
its marginals against LoopyBP's converged ones falls with the wall time and the message entries
(a message reads the product of its factor's sparse domain sizes), next to LoopyBP (flooding,
iteration by iteration), the thesis's baselines random asynchronous BP and residual BP (RBP),
and truncated BP (the top 25% of each domain): right on the text's draws (their mass sits in
the top states), wrong (L2 ~3e-2) on the ``p_max=0.1`` variant, which is also printed. Plot:
``examples/out/loopy_anytime.png``.

Single-value sparsity (ch. 7.1) on a 30-variable chain with domain 10: the lower the
threshold, the more variables are fixed (their beliefs point masses) and the larger the error
against the exact marginals; above 1 it is LoopyBP. MCMCMC (ch. 5.1, Fig 5.2 in small): one
binary variable with 100 unary factors, MH scoring a fraction ``p`` of them per proposal:
below ``p = 1`` the marginal error stops falling (the chain's stationary law is biased).

Run: ``python examples/loopy_grid.py`` (part of ``make demo``). Writes
``examples/out/loopy_grid.png`` and ``examples/out/loopy_anytime.png`` when matplotlib is
installed.
"""

from __future__ import annotations

import time

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.anytime import (
    domain_mask,
    factor_work,
    fixed_priorities,
    message_work,
)
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.messages import Semiring
from funsor_core.algorithms.loopy.models import thesis_grid
from funsor_core.loopy import (
    anytime_bp,
    exact_marginals,
    gibbs,
    loopy_bp,
    marginal_errors,
    mh,
)
from interpretations import LoopyBP

N, COUPLING = 4, 0.8


def grid_factors(rng):
    names = [[f"x{i}{j}" for j in range(N)] for i in range(N)]
    spin = np.array([-1.0, 1.0])
    factors = [fc.Tensor(rng.normal(scale=0.3) * spin, {names[i][j]: fc.Bint[2]})
               for i in range(N) for j in range(N)]
    pairs = [(names[i][j], names[i][j + 1]) for i in range(N) for j in range(N - 1)]
    pairs += [(names[i][j], names[i + 1][j]) for i in range(N - 1) for j in range(N)]
    for a, b in pairs:
        w = COUPLING * rng.uniform(-1, 1)
        factors.append(fc.Tensor(w * np.outer(spin, spin), {a: fc.Bint[2], b: fc.Bint[2]}))
    return factors


def _l2(beliefs, reference) -> float:
    return float(np.sqrt(sum(np.sum((np.exp(beliefs[k].data) - reference[k]) ** 2)
                             for k in reference)))


def anytime_demo(rng, target=1e-7) -> dict:
    factors, _ = thesis_grid(rng, n=5, L=100)
    full = loopy_bp(factors, tol=1e-12, max_iters=1000)
    reference = {k: np.exp(b.data) for k, b in full.beliefs.items()}
    graph = FactorGraph.build(factors)
    arity = np.array([len(vs) for vs in graph.factor_vars])
    per_message = factor_work(graph, domain_mask(graph, {})) // arity  # entries per message
    curves = {"LoopyBP": [], "BP random async": [], "RBP": [], "anytime fixed": [],
              "anytime dynamic": [], "truncated 25%": []}
    for name, schedule in (("LoopyBP", "flooding"), ("BP random async", "random"),
                           ("RBP", "residual")):
        for k in range(1, 4):
            t = time.perf_counter()
            r = loopy_bp(factors, schedule=schedule, tol=1e-13, max_iters=k)
            curves[name].append((time.perf_counter() - t, int(r.messages_computed @ per_message),
                                 _l2(r.beliefs, reference)))
    for priority in ("fixed", "dynamic"):
        spent, steps = 0.0, anytime_bp(factors, priority, grow=25, step_iters=1,
                                       schedule="flooding")
        while not curves[f"anytime {priority}"] or curves[f"anytime {priority}"][-1][2] > target:
            t = time.perf_counter()
            step = next(steps, None)
            if step is None:
                break
            beliefs = step.result.beliefs
            spent += time.perf_counter() - t
            curves[f"anytime {priority}"].append((spent, step.num_message_entries,
                                                  _l2(beliefs, reference)))
    pri = fixed_priorities(graph, Semiring())
    top = {x: np.argsort(-pri[i])[:25] for i, x in enumerate(graph.names)}
    t = time.perf_counter()
    r = loopy_bp(factors, domains=top, tol=1e-10)
    curves["truncated 25%"].append((time.perf_counter() - t,
                                    int(r.num_iters) * message_work(graph, domain_mask(graph, top)),
                                    _l2(r.beliefs, reference)))
    print("anytime BP, thesis grid 5x5, domain 100: seconds / message entries (computed) to "
          "L2 < 1e-7")
    for name, c in curves.items():
        hit = next((p for p in c if p[2] < target), c[-1])
        print(f"  {name:16} {hit[0]:7.3f} s {hit[1]:>10,} entries  (L2 {hit[2]:.1e})")
    truncated_variant(rng)
    return curves


def truncated_variant(rng, n=5, L=100) -> None:
    # On the text's draws (p ~ U(0, 1)) the top 25% of each domain hold all the mass, so
    # truncated BP is right; with p ~ U(0, 0.1) (``p_max``, not the text) the mass spreads
    # and truncated BP converges to wrong marginals, as Fig 7.7 shows it.
    factors, _ = thesis_grid(rng, n=n, L=L, p_max=0.1)
    graph = FactorGraph.build(factors)
    full = loopy_bp(factors, tol=1e-12, max_iters=1000)
    reference = {k: np.exp(b.data) for k, b in full.beliefs.items()}
    pri = fixed_priorities(graph, Semiring())
    top = {x: np.argsort(-pri[i])[: L // 4] for i, x in enumerate(graph.names)}
    r = loopy_bp(factors, domains=top, tol=1e-10)
    last = list(anytime_bp(factors, "fixed", grow=L // 4, step_iters=1,
                           schedule="flooding"))[-1]
    print(f"  p ~ U(0, 0.1) variant: truncated 25% converges to L2 "
          f"{_l2(r.beliefs, reference):.1e} (wrong); anytime fixed ends at "
          f"L2 {_l2(last.result.beliefs, reference):.1e}")


def _plot_anytime(plt, curves) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for name, c in curves.items():
        t, n, e = zip(*c)
        style = "o" if len(c) == 1 else ".-"
        axes[0].loglog(t, np.maximum(e, 1e-17), style, label=name)
        axes[1].loglog(n, np.maximum(e, 1e-17), style, label=name)
    for ax, label in zip(axes, ("wall seconds (one thread)", "message entries")):
        ax.axhline(1e-7, color="k", ls=":", lw=0.8)
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_xlabel(label)
        ax.set_ylabel("L2 error vs LoopyBP")
    axes[0].legend(fontsize=7)
    fig.suptitle("anytime BP, 5x5 grid, domain 100 (Singh 2014 Figs 7.7-7.9 in small)")
    fig.tight_layout()
    fig.savefig(out_path("loopy_anytime.png"), dpi=120)
    print("wrote", out_path("loopy_anytime.png"))


def sparsity_demo(rng, n=30, domain=10) -> None:
    names = [f"c{i}" for i in range(n)]
    factors = [fc.Tensor(rng.normal(size=domain) * rng.choice([0.5, 4.0]), {v: fc.Bint[domain]})
               for v in names]
    factors += [fc.Tensor(rng.normal(size=(domain, domain)),
                          {a: fc.Bint[domain], b: fc.Bint[domain]})
                for a, b in zip(names, names[1:])]
    _, exact = exact_marginals(factors)
    print(f"single-value sparsity, chain of {n}, domain {domain}:")
    for threshold in (1.01, 0.999, 0.99, 0.9):
        r = loopy_bp(factors, tol=1e-10, sparsity_threshold=threshold)
        tv = marginal_errors(r.beliefs, exact)["tv"]
        print(f"  threshold {threshold:<5}: {len(r.fixed):>2} fixed, {r.num_iters:>3} sweeps, "
              f"mean total variation {tv:.1e}")


def mcmcmc_demo(rng, num_factors=30) -> None:
    # The thesis's scores (N(+-0.5, 1)) make the exact marginal all but certain; smaller
    # ones keep it near 0.3 so that the bias shows.
    scores = rng.normal(0.0, 0.5, size=(num_factors, 2))
    factors = [fc.Tensor(s, {"y": fc.Bint[2]}) for s in scores]
    exact = np.exp(exact_marginals(factors)[1]["y"].data)
    print(f"MCMCMC, one variable, {num_factors} factors: L1 error of the marginal")
    for p in (0.05, 0.2, 1.0):
        errors = []
        for n in (100, 1000):
            s = mh(factors, n, warmup=10, num_chains=32, rng_key=0, subsample=p)
            errors.append(np.abs(np.exp(s.marginals()["y"].data) - exact).sum())
        print(f"  p = {p:<4}: " + ", ".join(f"{32 * n} samples {e:.1e}"
                                           for n, e in zip((100, 1000), errors)))


def main() -> None:
    factors = grid_factors(np.random.default_rng(0))
    log_z, exact = exact_marginals(factors)
    bp = loopy_bp(factors, tol=1e-10)
    bp_tv = marginal_errors(bp.beliefs, exact)["tv"]
    print(f"exact log Z {float(log_z.data):.4f}; Bethe log Z {float(bp.log_z.data):.4f} "
          f"after {bp.num_iters} iterations ({bp.num_messages} messages)")
    with LoopyBP(tol=1e-10):
        lazy_z = sum(factors[1:], factors[0]).reduce(ops.logaddexp)
    assert abs(float(lazy_z.data) - float(bp.log_z.data)) < 1e-9
    print(f"BP mean total variation per variable: {bp_tv:.2e}")
    # Fig 6.1 plots both errors against time: BP stopped after k iterations, Gibbs after n
    # samples (numpy, wall seconds of each run).
    bp_curve = []
    for k in (1, 2, 4, 8, 16, 32):
        seconds = []
        for _ in range(3):  # best of 3: a run is a millisecond or so
            start = time.perf_counter()
            r = loopy_bp(factors, tol=0.0, max_iters=k)
            seconds.append(time.perf_counter() - start)
        bp_curve.append((min(seconds), marginal_errors(r.beliefs, exact)["tv"]))
    print("BP after 1, 2, 4, ..., 32 iterations: " + ", ".join(
        f"{tv:.1e} ({sec * 1e3:.1f} ms)" for sec, tv in bp_curve))
    budgets, gibbs_curve = [30, 100, 300, 1000, 3000, 10000], []
    for n in budgets:
        start = time.perf_counter()
        s = gibbs(factors, n, warmup=20, num_chains=4, rng_key=1)
        tv = marginal_errors(s.marginals(), exact)["tv"]
        gibbs_curve.append((time.perf_counter() - start, tv))
        print(f"Gibbs {4 * n:>6} samples: mean total variation {tv:.2e} "
              f"({gibbs_curve[-1][0] * 1e3:.0f} ms){'  (below BP)' if tv < bp_tv else ''}")
    curves = anytime_demo(np.random.default_rng(2))
    sparsity_demo(np.random.default_rng(3))
    mcmcmc_demo(np.random.default_rng(4))
    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.loglog(*zip(*gibbs_curve), "o-", label="Gibbs (4 chains)")
        ax.loglog(*zip(*bp_curve), "s-", label="loopy BP (1..32 iterations)")
        ax.axhline(bp_tv, color="k", ls="--", label="loopy BP (converged)")
        ax.set_xlabel("wall seconds (numpy)")
        ax.set_ylabel("mean total variation")
        ax.set_title("4x4 grid: BP vs Gibbs (Fig 6.1)")
        ax.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        fig.savefig(out_path("loopy_grid.png"), dpi=120)
        print("wrote", out_path("loopy_grid.png"))
        _plot_anytime(plt, curves)


if __name__ == "__main__":
    main()
