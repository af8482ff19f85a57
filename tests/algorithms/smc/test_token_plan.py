"""``TokenPlan``: the per-token elimination over the hidden indices and the backward draw,
against numpy enumeration of every hidden cell (a loopy hidden graph), and ``smc`` on a model
whose joint hidden table (3^14 cells per particle) the elimination never forms, against
``opt_einsum.contract`` over both tokens' hidden indices.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import opt_einsum
from scipy.special import gammaln, logsumexp
from scipy.stats import nbinom

from funsor_core.algorithms.smc.rejuvenate import move_draws, rejuvenate
from funsor_core.algorithms.smc.sweep import categorical
from funsor_core.algorithms.smc.token_plan import TokenPlan, _sum_child
from funsor_core.allocation import AllocationModel
from funsor_core.smc import smc

# A 4-cycle h1 - h2 - h3 - h4 - h1 once v and w are substituted (treewidth 2).
CYCLE = {"h1": (), "h2": ("h1",), "h3": ("h2",), "h4": ("h1",), "v": ("h3", "h4"),
         "w": ("h2",)}
CYCLE_CARDS = {"h1": 2, "h2": 3, "h3": 2, "h4": 3, "v": 2, "w": 3}


def _brute_force(model, tables, x):
    """log u per particle and the posterior over the hidden cells, by enumeration."""
    hidden = model.hidden
    cells = list(itertools.product(*(range(model.cards[h]) for h in hidden)))
    scores = np.zeros((tables[0].shape[0], len(cells)))
    for c, values in enumerate(cells):
        cell = dict(zip(model.visible, x)) | dict(zip(hidden, values))
        for table, fa in zip(tables, model.families.values()):
            at = tuple(cell[n] for n in fa)
            scores[:, c] += np.log(table[(slice(None),) + at]
                                   / table[(slice(None), slice(None)) + at[1:]].sum(1))
    return logsumexp(scores, 1), scores, cells


def test_token_plan_weigh_and_draw_match_enumeration():
    model = AllocationModel(CYCLE, CYCLE_CARDS, ("v", "w"), 1.0, 1.0)
    rng = np.random.default_rng(0)
    tables = tuple(rng.gamma(0.7, size=(3,) + tuple(model.cards[n] for n in fa)) + 0.05
                   for fa in model.families.values())
    x = np.array([1, 2])
    plan = TokenPlan(model, 3)
    assert sum(1 for s in plan.steps if s.summed) >= 2  # the backward pass has steps
    log_u, log_root, messages = plan.weigh(tables, x)
    exact_u, scores, cells = _brute_force(model, tables, x)
    np.testing.assert_allclose(log_u, exact_u, rtol=1e-12)
    np.testing.assert_allclose(logsumexp(log_root, 1), exact_u, rtol=1e-12)
    # Draws: particle 1 for every one of N draws, against its exact posterior.
    N = 20000
    big = TokenPlan(model, N)
    rep = tuple(np.repeat(t[1:2], N, 0) for t in tables)
    _, log_root, messages = big.weigh(rep, x)
    root = categorical(log_root, rng.random(log_root.shape))
    values = big.complete(messages, np.arange(N), root,
                          [rng.random(s) for s in big.uniform_shapes()])
    drawn = np.ravel_multi_index(tuple(values[h] for h in model.hidden),
                                 tuple(model.cards[h] for h in model.hidden))
    freq = np.bincount(drawn, minlength=len(cells)) / N
    p = np.exp(scores[1] - exact_u[1])
    assert np.all(np.abs(freq - p) < 4.5 * np.sqrt(p * (1 - p) / N) + 1e-3)


def _tokens_evidence(model, cells: list) -> float:
    """log p(c_1, ..., c_T) in this order, by contracting with opt_einsum one factor per family
    over every token's hidden indices: the urn's sequential draws (BDeu),
    prod_t (alpha + #{s < t: fa_s = fa_t}) / (I alpha + #{s < t: pa_s = pa_t})."""
    T = len(cells)
    letters = {}
    for t, h in itertools.product(range(T), model.hidden):
        letters[h, t] = opt_einsum.get_symbol(len(letters))
    operands, subscripts = [], []
    for n, fa in model.families.items():
        alpha, size = model.alpha[n], model.cards[n]
        grids = np.meshgrid(*(np.arange(model.cards[m]) for m in fa * T), indexing="ij")
        token = [grids[t * len(fa):(t + 1) * len(fa)] for t in range(T)]
        f = np.ones(grids[0].shape)
        for t in range(T):
            same = sum(np.all([a == b for a, b in zip(token[s], token[t])], 0) for s in range(t))
            same_pa = sum(np.all([a == b for a, b in zip(token[s][1:], token[t][1:])], 0)
                          for s in range(t))
            f = f * (alpha + same) / (size * alpha + same_pa)
        index, subs = [], ""
        for t, c in enumerate(cells):
            for m in fa:
                index.append(c[m] if m in c else slice(None))
                subs += "" if m in c else letters[m, t]
        operands.append(f[tuple(index)])
        subscripts.append(subs)
    return math.log(opt_einsum.contract(",".join(subscripts) + "->", *operands))


def test_smc_on_a_wide_hidden_chain():
    # 14 hidden indices of 3 values in a chain: 3^14 = 4.8M hidden cells per particle (the
    # joint table over 1,000 particles would be 38 GB); the plan's largest table has 27 cells.
    L = 14
    parents = {f"h{k}": ((f"h{k - 1}",) if k else ()) for k in range(L)}
    parents |= {"v": (f"h{L - 1}",), "w": ("h0",)}
    cards = {n: 3 for n in parents} | {"v": 2, "w": 2}
    model = AllocationModel(parents, cards, ("v", "w"), 1.0, 0.5)
    plan = TokenPlan(model, 1000)
    assert max(math.prod(s.flat[1:]) for s in plan.steps) <= 27
    X = np.array([[2, 0], [0, 1]])
    T = X.sum()
    cells = [{"v": 0, "w": 0}, {"v": 0, "w": 0}, {"v": 1, "w": 1}]
    exact = (nbinom(model.a, model.b / (model.b + 1)).logpmf(T) + gammaln(T + 1)
             - gammaln(X + 1.0).sum() + _tokens_evidence(model, cells))
    runs = np.array([float(smc(model, X, 1000, rng_key=s).log_z) for s in range(4)])
    assert runs.std() > 0  # the third token's weight depends on the hidden cells drawn
    ratios = np.exp(runs - exact)
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std() / 2 + 0.01


def test_rejuvenate_converges_to_the_allocation_posterior():
    # Gibbs moves on N independent particles from a fixed start: the histories' law tends to
    # p(h | c) ∝ pi(S(h)) prod S(h)! (the sequence probability; pi is checked against the
    # paper's golden values), by enumerating the 2^3 histories; the urns stay the counts.
    model = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 2},
                            ("i", "j"), 1.0, 1.0)
    cells = np.array([[0, 0], [0, 1], [1, 1]])
    tokens = np.concatenate([cells, np.arange(3)[:, None]], 1)
    N = 4000
    plan = TokenPlan(model, N)
    rng = np.random.default_rng(1)
    tables = tuple(np.full((N,) + tuple(model.cards[n] for n in fa), model.alpha[n])
                   for n, fa in model.families.items())
    for x in tokens:
        tables = plan.update(tables, {"k": np.zeros(N, dtype=np.int64)}, x, 1.0)
    state = tables + (np.zeros((N, 3), dtype=np.int64),)
    for _ in range(25):
        uniforms = [rng.random(shape) for shape in move_draws(plan)]
        state = rejuvenate(plan, state, tokens, tokens[-1], uniforms)
    history = state[-1]
    S = np.zeros((N, 2, 2, 2))  # (particle, k, i, j): model.names order
    for t, (i, j) in enumerate(cells):
        S[np.arange(N), history[:, t], i, j] += 1
    np.testing.assert_allclose(state[0] - model.alpha["k"], S.sum((2, 3)))
    np.testing.assert_allclose(state[1] - model.alpha["i"], S.sum(3).transpose(0, 2, 1))
    paths = list(itertools.product(range(2), repeat=3))
    log_p = []
    for path in paths:
        s = np.zeros((2, 2, 2), dtype=np.int64)
        for (i, j), k in zip(cells, path):
            s[k, i, j] += 1
        log_p.append(model.log_marginal_allocation(s) + gammaln(s + 1.0).sum())
    p = np.exp(np.array(log_p) - logsumexp(log_p))
    freq = np.bincount(history @ np.array([4, 2, 1]), minlength=8) / N
    assert np.all(np.abs(freq - p) < 4.5 * np.sqrt(p * (1 - p) / N) + 0.005)


def test_sum_child_every_layout():
    # The three layouts of the child sum (no parent; a short child; a long one) against np.sum.
    rng = np.random.default_rng(4)
    for shape in ((5, 2), (5, 3, 4), (5, 10, 3, 2)):
        table = rng.random(shape)
        np.testing.assert_allclose(_sum_child(table), table.sum(1), rtol=1e-12)


def test_smc_loopy_hidden_graph_torch():
    # Several backward steps on torch (advanced indexing of the step tables by the particles'
    # ancestors and kept values), against opt_einsum over the three tokens' hidden indices.
    import torch

    model = AllocationModel(CYCLE, CYCLE_CARDS, ("v", "w"), 1.0, 0.5)
    X = np.array([[1, 0, 1], [0, 1, 0]])
    cells = [{"v": 0, "w": 0}, {"v": 0, "w": 2}, {"v": 1, "w": 1}]
    exact = (nbinom(model.a, model.b / (model.b + 1)).logpmf(3) + gammaln(4.0)
             + _tokens_evidence(model, cells))
    runs = np.array([float(smc(model, torch.as_tensor(X), 200, rng_key=s).log_z)
                     for s in range(2)])
    np.testing.assert_allclose(runs, exact, atol=0.05)
