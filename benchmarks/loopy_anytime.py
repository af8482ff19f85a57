"""Anytime BP's wall time (Singh 2014 ch. 7.2.7.1, Figs 7.7-7.9 in small; issue #31).

The thesis's grids: ``n x n`` variables of domain ``L``, unary ``gamma(v)`` and pairwise
``gamma(v_i + v_j L)`` log factors, ``gamma(k) = k log(1 - p) + log p + N(0, 0.1)``, ``p ~
U(0, 1)`` per factor. The target is LoopyBP's converged marginals (flooding, tol 1e-12); each
row is the wall time (one thread, numpy, best of ``rounds``) and the message entries (a message
``f -> i`` reads ``prod_{j in f} |S_j|`` table entries) to reach an L2 error below 1e-7:

- LoopyBP: ``loopy_bp`` (flooding) stopped after the fewest iterations that reach it (found by
  an untimed search), and the same iterations of a hand-written dense numpy flooding BP for
  pairwise grids (no framework: the floor for dense BP);
- anytime BP (fixed / dynamic priorities, flooding inside each step, ``step_iters``), on the
  compact layout (tables of the active states) and on the masked one (full tables with log 0
  outside): timed over the generator's steps up to the first one below 1e-7;
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

import funsor_core as fc  # noqa: E402
from funsor_core.algorithms.loopy.anytime import (  # noqa: E402
    domain_mask,
    fixed_priorities,
    message_work,
)
from funsor_core.algorithms.loopy.graph import FactorGraph  # noqa: E402
from funsor_core.algorithms.loopy.messages import Semiring  # noqa: E402
from funsor_core.loopy import anytime_bp, loopy_bp  # noqa: E402

TARGET = 1e-7


def thesis_grid(rng, n: int, L: int):
    """Factors and ``(unary (n, n, L), right (n, n-1, L, L), down (n-1, n, L, L))`` tables."""
    def gamma(k, size):
        p = rng.uniform(1e-3, 1 - 1e-3, size=size + (1,) * k.ndim)
        return k * np.log1p(-p) + np.log(p) + rng.normal(0, 0.1, size=size + k.shape)

    v = np.arange(L)
    pair = v[:, None] + v[None, :] * L
    unary, right, down = gamma(v, (n, n)), gamma(pair, (n, n - 1)), gamma(pair, (n - 1, n))
    name = [[f"x{i}_{j}" for j in range(n)] for i in range(n)]
    dom = fc.Bint[L]
    factors = [fc.Tensor(unary[i, j], {name[i][j]: dom}) for i in range(n) for j in range(n)]
    factors += [fc.Tensor(right[i, j], {name[i][j]: dom, name[i][j + 1]: dom})
                for i in range(n) for j in range(n - 1)]
    factors += [fc.Tensor(down[i, j], {name[i][j]: dom, name[i + 1][j]: dom})
                for i in range(n - 1) for j in range(n)]
    return factors, (unary, right, down)


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


def _fewest_iters(factors, reference) -> int:
    hi = 1
    while l2(loopy_bp(factors, tol=0.0, max_iters=hi).beliefs, reference) >= TARGET:
        hi *= 2
    lo = hi // 2 + 1 if hi > 1 else 1
    while lo < hi:
        mid = (lo + hi) // 2
        ok = l2(loopy_bp(factors, tol=0.0, max_iters=mid).beliefs, reference) < TARGET
        lo, hi = (lo, mid) if ok else (mid + 1, hi)
    return hi


def _best(fn, rounds: int):
    best, out = float("inf"), None
    for _ in range(rounds):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _anytime_to_target(factors, reference, **kw):
    # Seconds of the steps up to the first below TARGET (the beliefs read each step are timed:
    # a user asks for them), its entries and error; the L2 evaluation itself is not timed.
    spent, err, step = 0.0, float("inf"), None
    steps = anytime_bp(factors, **kw)
    while err >= TARGET:
        t = time.perf_counter()
        step = next(steps, None)
        if step is None:
            break
        beliefs = step.result.beliefs
        spent += time.perf_counter() - t
        err = l2(beliefs, reference)
    return spent, step.num_message_entries, err


def rows(n: int, L: int, seed: int, rounds: int, grow: int, step_iters) -> dict:
    """Seconds / entries / L2 of each method on one thesis grid."""
    factors, (unary, right, down) = thesis_grid(np.random.default_rng(seed), n, L)
    full = loopy_bp(factors, tol=1e-12, max_iters=10000)
    reference = {k: np.exp(b.data) for k, b in full.beliefs.items()}
    graph = FactorGraph.build(factors)
    work = message_work(graph, domain_mask(graph, {}))
    k = _fewest_iters(factors, reference)
    out = {}
    t, r = _best(lambda: loopy_bp(factors, tol=0.0, max_iters=k), rounds)
    out["LoopyBP"] = (t, k * work, l2(r.beliefs, reference))
    t, b = _best(lambda: hand_flooding(unary, right, down, k), rounds)
    hand = {f"x{i}_{j}": b[i, j] for i in range(n) for j in range(n)}
    err = np.sqrt(sum(np.sum((hand[q] - reference[q]) ** 2) for q in reference))
    out["hand dense BP"] = (t, k * work, float(err))
    for priority in ("fixed", "dynamic"):
        for layout in ("compact", "masked"):
            kw = dict(priority=priority, grow=grow, step_iters=step_iters, layout=layout,
                      schedule="flooding")
            out[f"anytime {priority} {layout}"] = min(
                (_anytime_to_target(factors, reference, **kw) for _ in range(rounds)),
                key=lambda x: x[0])
    pri = fixed_priorities(graph, Semiring())
    top = {q: np.argsort(-pri[i, :L])[: max(L // 4, 1)] for i, q in enumerate(graph.names)}
    t, r = _best(lambda: loopy_bp(factors, domains=top, tol=1e-12, max_iters=10000), rounds)
    out["truncated 25%"] = (t, int(r.num_iters) * message_work(graph, domain_mask(graph, top)),
                            l2(r.beliefs, reference))
    return out


def main(quick: bool) -> None:
    rounds = 1 if quick else 2
    seeds = range(1) if quick else range(2)
    configs = [(5, 30, seeds, 25, 1), (5, 250, seeds, 25, 1), (10, 100, seeds, 25, 1)]
    for n, L, seeds, grow, step_iters in configs:
        print(f"anytime BP, thesis grid {n}x{n}, L={L}, grow {grow}, step_iters {step_iters}: "
              f"seconds (best of {rounds}) / message entries / L2 to reach L2 < {TARGET:g}")
        table = [rows(n, L, s, rounds, grow, step_iters) for s in seeds]
        for name in table[0]:
            cells = "  ".join(f"{r[name][0]:8.4f} s {r[name][1]:>10,} {r[name][2]:7.1e}"
                              for r in table)
            print(f"  {name:24} {cells}")
