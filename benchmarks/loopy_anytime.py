"""Anytime BP's wall time against the thesis's baselines (Singh 2014 ch. 7.2.7.1, Figs 7.7-7.9
in small; issue #31).

The thesis's grids (``funsor_core.algorithms.loopy.models.thesis_grid``): ``n x n`` variables
of domain ``L``, unary ``gamma(v)`` and pairwise ``gamma(v_i + v_j L)`` log factors, ``gamma(k)
= k log(1 - p) + log p + N(0, 0.1)``, ``p ~ U(0, 1)`` per factor. The reference is LoopyBP's
converged marginals (flooding, tol 1e-12); each row is the wall time (one thread, numpy, best
of ``rounds``) and the message entries (an update of factor ``f`` reads ``|f| prod_{j in f}
|S_j|`` table entries, ``factor_work``; RBP's rows count the messages it computes to rank
the factors, sent or not) to reach an L2 error below 1e-4 (Fig 7.9) and 1e-7
(Fig 7.7):

- BP with the thesis's baselines: flooding (vectorized), random asynchronous (a fresh random
  order of factors every sweep) and residual BP (RBP: a priority queue over factors by the
  dynamic range of their message change, eq. 7.6; ``asynchronous.py``), each stopped after
  the fewest iterations that reach the target (found by an untimed search; an RBP iteration
  is ``F`` factor updates); a hand-written dense numpy flooding BP for the same iterations as
  flooding (no framework: the floor for dense BP);
- anytime BP (fixed / dynamic priorities) on the compact layout (tables of the active
  states), ``grow`` values per step, ``step_iters`` flooding iterations per step (and fixed
  priorities with RBP steps, as the thesis's Algorithm 7.4): timed over the generator's
  steps up to the first one below the target;
- truncated BP: ``loopy_bp(domains=)`` at the top 25 % of each domain by eq. 7.5, converged
  (it may converge to the wrong marginals: its final L2 is shown).

No peer runs anytime BP (funsor 0.4.8 has no BP; PGMax and pgmpy have no sparse domains).

``python benchmarks/loopy.py --anytime`` (``--quick``: one seed and one round).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

# This checkout's funsor_core (not an installed copy): the rows measure the tree they sit in.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from funsor_core.algorithms.loopy.anytime import (  # noqa: E402
    domain_mask,
    factor_work,
    fixed_priorities,
)
from funsor_core.algorithms.loopy.graph import FactorGraph  # noqa: E402
from funsor_core.algorithms.loopy.messages import Semiring  # noqa: E402
from funsor_core.algorithms.loopy.models import grid_name, thesis_grid  # noqa: E402
from funsor_core.loopy import anytime_bp, loopy_bp  # noqa: E402

TARGETS = (1e-4, 1e-7)
BP_SCHEDULES = {"LoopyBP flooding": "flooding", "BP random async": "random",
                "RBP (residual)": "residual"}


def hand_flooding(unary, right, down, iters: int) -> np.ndarray:
    """Dense flooding sum-product on the grid, in numpy: marginals ``(n, n, L)``."""
    n, L = unary.shape[0], unary.shape[2]
    # messages into each variable from its right / left / down / up neighbour factors
    fr, fl = np.zeros((n, n - 1, L)), np.zeros((n, n - 1, L))  # right[i,j] -> (i,j) / (i,j+1)
    fd, fu = np.zeros((n - 1, n, L)), np.zeros((n - 1, n, L))  # down[i,j] -> (i,j) / (i+1,j)

    def lse(x, axis):
        m = x.max(axis, keepdims=True)
        return np.squeeze(m, axis) + np.log(np.exp(x - m).sum(axis))

    def norm(m):
        return m - lse(m, -1)[..., None]

    for _ in range(iters):
        b = unary.copy()
        b[:, :-1] += fr
        b[:, 1:] += fl
        b[:-1] += fd
        b[1:] += fu
        # right[i,j](a at (i,j), c at (i,j+1)): to (i,j) sums c with (i,j+1)'s other messages
        fr, fl = (norm(lse(right + (b[:, 1:] - fl)[:, :, None, :], -1)),
                  norm(lse(right + (b[:, :-1] - fr)[:, :, :, None], -2)))
        fd, fu = (norm(lse(down + (b[1:] - fu)[:, :, None, :], -1)),
                  norm(lse(down + (b[:-1] - fd)[:, :, :, None], -2)))
    b = unary.copy()
    b[:, :-1] += fr
    b[:, 1:] += fl
    b[:-1] += fd
    b[1:] += fu
    return np.exp(norm(b))


def l2(beliefs: dict, reference: dict) -> float:
    return float(np.sqrt(sum(np.sum((np.exp(beliefs[k].data) - reference[k]) ** 2)
                             for k in reference)))


def _bp(factors, schedule, iters):
    return loopy_bp(factors, schedule=schedule, tol=1e-13, max_iters=iters)


def _fewest_iters(factors, schedule, reference, target) -> int:
    hi = 1
    while l2(_bp(factors, schedule, hi).beliefs, reference) >= target:
        hi *= 2
    lo = hi // 2 + 1 if hi > 1 else 1
    while lo < hi:
        mid = (lo + hi) // 2
        ok = l2(_bp(factors, schedule, mid).beliefs, reference) < target
        lo, hi = (lo, mid) if ok else (mid + 1, hi)
    return hi


def _best(fn, rounds: int):
    best, out = float("inf"), None
    for _ in range(rounds):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _anytime_curve(factors, reference, **kw) -> list:
    # (seconds, entries, L2) after each step, up to the first below the smallest target; the
    # beliefs read each step are timed (a user asks for them), the L2 evaluation is not.
    spent, curve = 0.0, []
    steps = anytime_bp(factors, **kw)
    while not curve or curve[-1][2] >= min(TARGETS):
        t = time.perf_counter()
        step = next(steps, None)
        if step is None:
            break
        beliefs = step.result.beliefs
        spent += time.perf_counter() - t
        curve.append((spent, step.num_message_entries, l2(beliefs, reference)))
    return curve


def _first_below(curve, target):
    return next((c for c in curve if c[2] < target), curve[-1])


def rows(n: int, L: int, seed: int, rounds: int, grow: int, step_iters, p_max=None) -> dict:
    """``{method: {target: (seconds, entries, L2)}}`` on one thesis grid (``p_max``: the
    flat variant, ``p ~ U(0, p_max)``)."""
    factors, (unary, right, down) = thesis_grid(np.random.default_rng(seed), n, L,
                                                p_max=p_max)
    full = loopy_bp(factors, tol=1e-12, max_iters=10000)
    reference = {k: np.exp(b.data) for k, b in full.beliefs.items()}
    graph = FactorGraph.build(factors)
    work = factor_work(graph, domain_mask(graph, {}))
    per_message = work // np.maximum([len(vs) for vs in graph.factor_vars], 1)
    out: dict = {name: {} for name in list(BP_SCHEDULES) + ["hand numpy BP"]}
    for target in TARGETS:
        for name, schedule in BP_SCHEDULES.items():
            k = _fewest_iters(factors, schedule, reference, target)
            t, r = _best(lambda: _bp(factors, schedule, k), rounds)  # noqa: B023
            # entries of the messages computed (RBP's unsent candidates included)
            out[name][target] = (t, int(r.messages_computed @ per_message),
                                 l2(r.beliefs, reference))
            if schedule == "flooding":
                t, b = _best(lambda: hand_flooding(unary, right, down, k), rounds)  # noqa: B023
                err = np.sqrt(sum(np.sum((b[i, j] - reference[grid_name(i, j)]) ** 2)
                                  for i in range(n) for j in range(n)))
                out["hand numpy BP"][target] = (t, int(k * work.sum()), float(err))
    for name, priority, schedule in (("anytime fixed", "fixed", "flooding"),
                                     ("anytime dynamic", "dynamic", "flooding"),
                                     ("anytime fixed, RBP", "fixed", "residual")):
        kw = dict(priority=priority, grow=grow, step_iters=step_iters, layout="compact",
                  schedule=schedule)
        curves = [_anytime_curve(factors, reference, **kw) for _ in range(rounds)]
        out[name] = {
            target: min((_first_below(c, target) for c in curves), key=lambda x: x[0])
            for target in TARGETS}
    pri = fixed_priorities(graph, Semiring())
    top = {q: np.argsort(-pri[i, :L])[: max(L // 4, 1)] for i, q in enumerate(graph.names)}
    t, r = _best(lambda: loopy_bp(factors, domains=top, tol=1e-12, max_iters=10000), rounds)
    trunc = (t, int(r.factor_updates @ factor_work(graph, domain_mask(graph, top))),
             l2(r.beliefs, reference))
    out["truncated 25%"] = dict.fromkeys(TARGETS, trunc)
    return out


def main(quick: bool) -> None:
    rounds = 1 if quick else 2
    seeds = range(1) if quick else range(3)
    # The last: the flat variant p ~ U(0, 0.1), not the thesis's text (see thesis_grid).
    configs = [(5, 100, None), (5, 250, None), (10, 100, None), (5, 100, 0.1)]
    grow, step_iters = 25, 1
    for n, L, p_max in configs:
        table = [rows(n, L, s, rounds, grow, step_iters, p_max) for s in seeds]
        model = "thesis grid" if p_max is None else f"flat variant p ~ U(0, {p_max}),"
        for target in TARGETS:
            print(f"{model} {n}x{n}, L={L}, to L2 < {target:g}: seconds (best of {rounds}) /"
                  f" message entries / L2, seeds {list(seeds)}; anytime grow {grow}, "
                  f"step_iters {step_iters}")
            for name in table[0]:
                cells = "  ".join(f"{r[name][target][0]:7.3f} s {r[name][target][1]:>10,} "
                                  f"{r[name][target][2]:7.1e}" for r in table)
                print(f"  {name:18} {cells}")
