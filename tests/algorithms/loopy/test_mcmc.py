"""Blocked Gibbs and MH: exact one-round transition matrices leave the exact distribution
invariant (enumeration), the samplers draw from those kernels, seeds reproduce runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.mcmc import SamplerPlan, conditional_logits, run_chains
from funsor_core.loopy import gibbs, mh
from tests.algorithms.loopy.models import joint
from tests.backend_values import as_backend_array


def _loopy_binary(rng, n=5):
    # A cycle over n binary variables, unary factors and one ternary factor.
    sizes = {f"v{i}": 2 for i in range(n)}
    scopes = [(f"v{i}",) for i in range(n)] + [(f"v{i}", f"v{(i + 1) % n}") for i in range(n)]
    scopes.append(("v0", "v2", "v3"))
    tables = [(s, rng.normal(size=(2,) * len(s))) for s in scopes]
    factors = [fc.Tensor(t, {v: fc.Bint[2] for v in s}) for s, t in tables]
    return factors, tables, sizes


def _states(n):
    return np.array(list(itertools.product(range(2), repeat=n)), dtype=np.int64)


# A user's MH proposal for binary variables: log q(y | x), rows x (far from uniform).
LOG_Q = np.log(np.array([[0.3, 0.7], [0.9, 0.1]]))


def _mh_step(lg, x, log_q):
    # Single-site MH from state x: propose y ~ q(. | x), accept min(1, p(y) q(x|y) / p(x) q(y|x)).
    p = np.zeros(2)
    for y in range(2):
        if y != x:
            q_xy, q_yx = np.exp(log_q[x, y]), np.exp(log_q[y, x])
            p[y] = q_xy * min(1.0, np.exp(lg[y] - lg[x]) * q_yx / q_xy)
    p[x] = 1.0 - p.sum()
    return p


def _round_kernel(plan, flat, kernel):
    """The exact one-round transition matrix (colour after colour), built from the sampler's
    own Markov-blanket conditionals; ``"mh-q"``: MH with the proposal ``LOG_Q``."""
    K = np.eye(2 ** len(plan.graph.names))
    for Kc in _colour_kernels(plan, flat, kernel):
        K = K @ Kc
    return K


def _colour_kernels(plan, flat, kernel):
    """One exact transition matrix per colour block (its variables updated at once)."""
    n = len(plan.graph.names)
    states = _states(n)
    code = {tuple(s): k for k, s in enumerate(states)}
    out = []
    for c, vs in enumerate(plan.colour_vars):
        logits = conditional_logits(plan, flat, states, c)  # (S, n_c, 2)
        Kc = np.zeros((len(states), len(states)))
        for k, x in enumerate(states):
            per_var = []
            for m, v in enumerate(vs):
                lg = logits[k, m]
                if kernel == "gibbs":
                    p = np.exp(lg - np.logaddexp.reduce(lg))
                else:  # uniform proposal over 2 states, or LOG_Q
                    p = _mh_step(lg, x[v], LOG_Q if kernel == "mh-q" else np.log(np.full(
                        (2, 2), 0.5)))
                per_var.append(p)
            for ys in itertools.product(range(2), repeat=len(vs)):
                y = x.copy()
                y[vs] = ys
                Kc[k, code[tuple(y)]] = np.prod([per_var[m][ys[m]] for m in range(len(vs))])
        out.append(Kc)
    return out


@pytest.mark.parametrize("kernel, n", [("gibbs", 5), ("mh", 5), ("mh-q", 6)])
def test_one_round_kernel_leaves_the_exact_distribution_invariant(kernel, n):
    factors, tables, sizes = _loopy_binary(np.random.default_rng(0), n)
    plan = SamplerPlan(FactorGraph.build(factors))
    assert len(plan.colour_vars) >= 3  # an odd cycle needs three colours
    flat = plan.flat_table()
    j = joint(tables, sizes).reshape(-1)  # states in the same (v0 .. v4) order
    pi = np.exp(j - np.logaddexp.reduce(j))
    K = _round_kernel(plan, flat, kernel)
    np.testing.assert_allclose(K.sum(1), 1.0, atol=1e-12)
    assert np.abs(pi @ K - pi).max() < 1e-12
    # Each block's kernel alone leaves pi invariant (adjacent variables in one block would
    # break this), so every order of the blocks does: here also the reverse.
    blocks = _colour_kernels(plan, flat, kernel)
    for Kc in blocks:
        assert np.abs(pi @ Kc - pi).max() < 1e-12
    reverse = np.linalg.multi_dot(blocks[::-1])
    assert np.abs(pi @ reverse - pi).max() < 1e-12
    # The Markov-blanket conditionals equal the joint's conditionals.
    states = _states(len(sizes))
    for c, vs in enumerate(plan.colour_vars):
        logits = conditional_logits(plan, flat, states, c)
        for m, v in enumerate(vs):
            flip = states.copy()
            flip[:, v] = 1 - flip[:, v]
            idx = flip @ (2 ** np.arange(len(sizes))[::-1])
            got = logits[np.arange(len(states)), m, 1 - states[:, v]] - logits[
                np.arange(len(states)), m, states[:, v]]
            np.testing.assert_allclose(got, j[idx] - j, atol=1e-12)


@pytest.mark.parametrize("kernel", ["gibbs", "mh", "mh-q"])
def test_sampler_draws_from_the_kernel(kernel):
    factors, tables, sizes = _loopy_binary(np.random.default_rng(1), n=4)
    plan = SamplerPlan(FactorGraph.build(factors))
    K = _round_kernel(plan, plan.flat_table(), kernel)
    start, chains = 5, 20000
    init = np.tile(_states(4)[start], (chains, 1))
    proposal = LOG_Q if kernel == "mh-q" else None
    x = run_chains(plan, init, 1, "mh" if kernel == "mh-q" else kernel, rng_key=0,
                   proposal=proposal)[0]
    freq = np.bincount(x @ (2 ** np.arange(4)[::-1]), minlength=16) / chains
    assert 0.5 * np.abs(freq - K[start]).sum() < 0.02


def test_jax_draws_of_several_rounds_at_once_follow_the_kernel():
    # On jax the uniforms of up to 8 small rounds come from one generator call; each round
    # must still read its own: the pooled (x_{r-1}, x_r) transitions of 16 rounds (two such
    # calls) against p_{r-1}(i) K(i, j) from the enumerated one-round kernel.
    jax = pytest.importorskip("jax")
    from funsor_core.algorithms.loopy.mcmc import _rounds_per_draw

    rng = np.random.default_rng(9)
    tables = [(("a",), rng.normal(size=2)), (("b",), rng.normal(size=2)),
              (("a", "b"), np.array([[1.5, -1.0], [-1.0, 1.5]]))]
    chains, rounds = 4096, 16
    assert _rounds_per_draw(rounds, (chains, 2)) == 8
    plan = SamplerPlan(FactorGraph.build([fc.Tensor(t, {v: fc.Bint[2] for v in s})
                                          for s, t in tables]))
    K = _round_kernel(plan, plan.flat_table(), "gibbs")
    fc.set_backend("jax")
    try:
        fs = [fc.Tensor(jax.numpy.asarray(t), {v: fc.Bint[2] for v in s}) for s, t in tables]
        xs = np.asarray(run_chains(SamplerPlan(FactorGraph.build(fs)),
                                   np.zeros((chains, 2), np.int64), rounds, rng_key=0))
    finally:
        fc.set_backend("numpy")
    code = np.concatenate([np.zeros((1, chains), np.int64), xs @ np.array([2, 1])])
    pairs = np.bincount((code[:-1] * 4 + code[1:]).reshape(-1), minlength=16) / code[1:].size
    p, expected = np.eye(4)[0], np.zeros((4, 4))
    for _ in range(rounds):
        expected += p[:, None] * K / rounds
        p = p @ K
    assert 0.5 * np.abs(pairs - expected.reshape(-1)).sum() < 0.03


def test_same_seed_same_run_on_every_backend():
    jax = pytest.importorskip("jax")
    factors, tables, _ = _loopy_binary(np.random.default_rng(2), n=4)
    domains = [dict(f.inputs) for f in factors]
    for name in ("numpy", "torch"):
        fc.set_backend(name)
        try:
            fs = [fc.Tensor(as_backend_array(t, name), d) for (_, t), d in zip(tables, domains)]
            a, b = (gibbs(fs, 30, warmup=3, num_chains=2, rng_key=7) for _ in range(2))
            c, d = (mh(fs, 30, num_chains=2, rng_key=8, proposal=LOG_Q) for _ in range(2))
            assert a["v1"].inputs == {"particle": fc.Bint[30], "chain": fc.Bint[2]}
            for v in a:
                assert (np.asarray(a[v].data) == np.asarray(b[v].data)).all()
                assert (np.asarray(c[v].data) == np.asarray(d[v].data)).all()
            assert c["v0"].dtype == 2
        finally:
            fc.set_backend("numpy")
    fc.set_backend("jax")
    try:  # jax: the eager run and the jitted run of one seed are identical
        def fn(*arrays):  # two of the factors: a smaller program to compile twice
            fs = [fc.Tensor(x, d) for x, d in zip(arrays, domains[4:6])]
            return gibbs(fs, 5, warmup=1, num_chains=2, rng_key=7)["v1"].data
        arrays = [as_backend_array(t, "jax") for _, t in tables[4:6]]
        jitted = jax.jit(fn)
        assert (np.asarray(jitted(*arrays)) == np.asarray(fn(*arrays))).all()
        # What raises eagerly (a model of mass zero, a NaN potential) gives no state, -1,
        # under jit (the same compiled program: same shapes).
        for bad in (jax.numpy.full_like(arrays[0], -np.inf), arrays[0].at[0, 0].set(np.nan)):
            with pytest.raises(ValueError):
                fn(bad, arrays[1])
            assert (np.asarray(jitted(bad, arrays[1])) == -1).all()
    finally:
        fc.set_backend("numpy")


def test_annealing_reaches_the_map():
    factors, tables, sizes = _loopy_binary(np.random.default_rng(3), n=6)
    j = joint(tables, sizes)
    best = np.unravel_index(np.argmax(j), j.shape)
    temps = np.geomspace(2.0, 0.01, 60)
    s = gibbs(factors, 1, warmup=59, num_chains=8, rng_key=0, temperature=temps)
    for i, v in enumerate(sizes):
        assert (np.asarray(s[v].data) == best[i]).all()


def test_empirical_marginals_and_counters():
    factors, tables, sizes = _loopy_binary(np.random.default_rng(4), n=5)
    j = joint(tables, sizes)
    p = np.exp(j - np.logaddexp.reduce(j.reshape(-1)))
    s = gibbs(factors, 500, warmup=20, num_chains=16, rng_key=1)
    m = s.marginals()
    for i, v in enumerate(sizes):
        exact = p.sum(axis=tuple(a for a in range(len(sizes)) if a != i))
        assert np.abs(np.exp(m[v].data) - exact).max() < 0.03
    assert s.num_updates == 520 * 16 * 5
    with pytest.raises(ValueError, match="num_samples >= 1"):
        gibbs(factors, 0)
    with pytest.raises(ValueError, match="subsample: the fraction .* got 1.5"):
        mh(factors, 10, subsample=1.5)
    with pytest.raises(ValueError, match="unknown kernel"):
        run_chains(SamplerPlan(FactorGraph.build(factors)), np.zeros((1, 5), int), 1, "hmc")


def test_gumbel_max_draws_for_more_than_two_states():
    # a (3 states) and b (2 states): with b fixed at 1, one round draws a from p(a | b = 1).
    t = np.log(np.array([[1.0, 2.0], [3.0, 1.0], [1.0, 5.0]]))
    f = fc.Tensor(t, {"a": fc.Bint[3], "b": fc.Bint[2]})
    plan = SamplerPlan(FactorGraph.build([f]))
    x = run_chains(plan, np.tile([0, 1], (20000, 1)), 1, rng_key=3, keep_all=False)
    assert x.shape == (20000, 2)
    # colour 0 is a (updated from b = 1), then b from p(b | new a): check a's frequencies.
    freq = np.bincount(x[:, 0], minlength=3) / len(x)
    p = np.exp(t[:, 1]) / np.exp(t[:, 1]).sum()
    assert np.abs(freq - p).max() < 0.015


def test_block_conditionals_of_ternary_factors_and_ragged_domains():
    # A ternary factor over 3-state variables: K = 9 joint states of the others, so the
    # tables are picked by a row gather (K > SELECT_MAX); b has 2 states of D = 3 (padding).
    from funsor_core.algorithms.loopy.blocks import SELECT_MAX

    rng = np.random.default_rng(5)
    sizes = {"a": 3, "b": 2, "c": 3, "d": 3}
    scopes = [("a",), ("a", "b"), ("a", "c", "d"), ("b", "c"), ("d",)]
    tables = [(s, rng.normal(size=tuple(sizes[v] for v in s))) for s in scopes]
    factors = [fc.Tensor(t, {v: fc.Bint[sizes[v]] for v in s}) for s, t in tables]
    plan = SamplerPlan(FactorGraph.build(factors))
    assert max(plan.blocks.K) > SELECT_MAX
    j = joint(tables, sizes)
    states = np.array(list(itertools.product(*[range(d) for d in sizes.values()])))
    for c, vs in enumerate(plan.colour_vars):
        logits = conditional_logits(plan, plan.flat_table(), states, c)  # (S, n_c, 3)
        for m, v in enumerate(vs):
            for s in range(list(sizes.values())[v]):
                moved = states.copy()
                moved[:, v] = s
                expected = j[tuple(moved.T)] - j[tuple(states.T)]
                got = logits[:, m, s] - logits[np.arange(len(states)), m, states[:, v]]
                np.testing.assert_allclose(got, expected, atol=1e-12)


def _grid_marginals(tables, rows: int, cols: int) -> dict:
    """Exact marginals of a binary grid ``x{i}{j}`` by enumeration of each column's
    ``2^rows`` states and forward-backward along the columns (numpy)."""
    col = [{f"x{i}{j}": 2 for i in range(rows)} for j in range(cols)]
    within, across = [[] for _ in range(cols)], [[] for _ in range(cols - 1)]
    for scope, t in tables:
        js = sorted({int(v[2]) for v in scope})
        (within[js[0]] if len(js) == 1 else across[js[0]]).append((scope, t))
    n = 2 ** rows
    u = [joint(within[j], col[j]).reshape(n) for j in range(cols)]
    h = [joint(across[j], {**col[j], **col[j + 1]}).reshape(n, n) for j in range(cols - 1)]
    fwd, bwd = [u[0]], [np.zeros(n)] * cols
    for j in range(cols - 1):
        fwd.append(u[j + 1] + np.logaddexp.reduce(fwd[j][:, None] + h[j], axis=0))
    for j in range(cols - 2, -1, -1):
        bwd[j] = np.logaddexp.reduce(h[j] + (u[j + 1] + bwd[j + 1])[None, :], axis=1)
    out = {}
    for j in range(cols):
        m = fwd[j] + bwd[j]
        m = np.exp(m - np.logaddexp.reduce(m)).reshape((2,) * rows)
        for i in range(rows):
            out[f"x{i}{j}"] = m.sum(axis=tuple(a for a in range(rows) if a != i))
    return out


def test_24_variables_marginals_within_a_budget_dependent_kl_of_exact():
    # A 4 x 6 binary grid. For N independent draws 2 N KL(p || p_hat) -> chi^2 with d - 1 = 1
    # degree of freedom per variable (mean 1); Gibbs draws are correlated, so N counts
    # N / tau effective draws: the bound 4 / N allows an autocorrelation time tau up to 8
    # (about 1.5 here) and halves with each doubling of the budget. Oracle: enumeration of
    # the columns' states, forward-backward along the grid (and the library's elimination
    # agrees with it).
    from funsor_core.loopy import exact_marginals, marginal_errors
    from tests.algorithms.loopy.models import _model

    rows, cols = 4, 6
    sizes = {f"x{i}{j}": 2 for i in range(rows) for j in range(cols)}
    scopes = [(v,) for v in sizes]
    scopes += [(f"x{i}{j}", f"x{i}{j + 1}") for i in range(rows) for j in range(cols - 1)]
    scopes += [(f"x{i}{j}", f"x{i + 1}{j}") for i in range(rows - 1) for j in range(cols)]
    factors, tables, _ = _model(np.random.default_rng(6), sizes, scopes, False, scale=0.5)
    oracle = _grid_marginals(tables, rows, cols)
    exact = {v: fc.Tensor(np.log(p), {v: fc.Bint[2]}) for v, p in oracle.items()}
    _, library = exact_marginals(factors)
    assert len(exact) == 24
    for v, p in oracle.items():
        np.testing.assert_allclose(np.exp(library[v].data), p, atol=1e-12, err_msg=v)
    kls = []
    for chains, n in [(8, 100), (32, 400)]:
        s = gibbs(factors, n, warmup=20, num_chains=chains, rng_key=0)
        kl = marginal_errors(s.marginals(), exact)["kl"]
        assert kl < 4.0 / (chains * n)
        kls.append(kl)
    assert kls[1] < kls[0] / 4


def test_bad_init_and_temperature_are_named():
    # A short init failed with an IndexError; a state out of range or a negative
    # temperature sampled silently.
    f = fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    with pytest.raises(ValueError, match=r"init: .*shape \(1, 2\) .*\['a', 'b'\], got \(1, 1\)"):
        gibbs([f], 5, init=np.zeros((1, 1), dtype=int))
    with pytest.raises(ValueError, match=r"chain 0 starts variable 'b' \(Bint\[3\]\) at 3"):
        mh([f], 5, init=np.array([[1, 3]]))
    with pytest.raises(ValueError, match=r"temperature must be >= 0"):
        gibbs([f], 5, temperature=-1.0)
    with pytest.raises(ValueError, match=r"one per round .*= 7\), got shape \(2,\)"):
        gibbs([f], 5, warmup=2, temperature=np.ones(2))
    s = gibbs([f], 5, init=np.array([[1, 2]]), rng_key=0)  # a valid start still runs
    assert s["b"].inputs == {"particle": fc.Bint[5]}
