"""``smc`` (BAM-SIS-R) and ``hmm_smc`` (fully adapted SMC): unbiasedness of Z-hat against
exact enumeration (``log_marginal_exact``) and the numpy forward algorithm, with tolerances
from the runs' own standard error; numpy, torch and jax (the sweep under ``jax.jit``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from funsor_core import ops
from funsor_core.algorithms.smc.sweep import systematic_resample
from funsor_core.allocation import AllocationModel
from funsor_core.smc import hmm_smc, smc

NMF = {"k": (), "i": ("k",), "j": ("k",)}
X1 = np.array([[2, 1, 1, 0], [0, 0, 1, 2], [0, 0, 1, 1]])


def to_numpy(x):
    return np.asarray(ops.to_numpy(x))


def _array(backend, x):
    if backend == "torch":
        import torch
        return torch.as_tensor(x)
    if backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    return np.asarray(x)


@pytest.mark.parametrize("scheme", ["adaptive", "joint"])
def test_smc_unbiased_in_z(scheme):
    # Few particles and many runs: E[Z-hat] = Z within 4 standard errors of the mean.
    X = np.array([[1, 0], [1, 1]])
    model = AllocationModel(NMF, {"i": 2, "j": 2, "k": 2}, ("i", "j"), 0.5, 0.2)
    exact = model.log_marginal_exact(X)
    ratios = np.exp([float(smc(model, X, 2, rng_key=s, ess_threshold=1.0, scheme=scheme).log_z)
                     - exact for s in range(60)])
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std() / np.sqrt(len(ratios)) + 1e-3
    assert ratios.std() > 0  # the hidden index was sampled


def test_smc_with_gibbs_moves_unbiased_in_z():
    # Resample-move: the moves leave each step's target invariant, so E[Z-hat] = Z still.
    X = np.array([[1, 0], [1, 1]])
    model = AllocationModel(NMF, {"i": 2, "j": 2, "k": 2}, ("i", "j"), 0.5, 0.2)
    exact = model.log_marginal_exact(X)
    ratios = np.exp([float(smc(model, X, 2, rng_key=s, ess_threshold=1.0, moves=2).log_z)
                     - exact for s in range(50)])
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std() / np.sqrt(len(ratios)) + 1e-3
    with pytest.raises(ValueError, match="moves must be >= 0"):
        smc(model, X, 2, moves=-1)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_smc_backends_agree_with_exact(backend):
    model = AllocationModel(NMF, {"i": 3, "j": 4, "k": 2}, ("i", "j"), 1.0, 1.0 / 12)
    result = smc(model, _array(backend, X1), 400, rng_key=1)
    log_z, ess = result
    # One run at 400 particles: the std of log Z-hat is ~0.03 here (benchmarks/smc.py).
    assert abs(float(log_z) - model.log_marginal_exact(X1)) < 0.15
    ess = to_numpy(ess)
    assert ess.shape == (X1.sum(),) and np.all((ess > 0) & (ess <= 400 + 1e-9))
    counts = {n: to_numpy(c) for n, c in result.counts.items()}
    # Every particle's urns hold the T tokens, and the visible marginals are X's.
    np.testing.assert_allclose(counts["k"].sum(1), X1.sum())
    np.testing.assert_allclose(counts["i"].sum(2), np.broadcast_to(X1.sum(1), (400, 3)))


def test_smc_no_hidden_index_is_exact_and_thresholds():
    model = AllocationModel({"i": (), "j": ("i",)}, {"i": 2, "j": 2}, ("i", "j"), 1.0, 1.0)
    S = np.array([[2, 1], [0, 1]])
    result = smc(model, S, 5, rng_key=0, order="cells")
    np.testing.assert_allclose(float(result.log_z), model.log_marginal_complete(S), atol=1e-12)
    nmf = AllocationModel(NMF, {"i": 3, "j": 4, "k": 3}, ("i", "j"), 0.1, 0.1)
    assert not to_numpy(smc(nmf, X1, 20, rng_key=0, ess_threshold=0.0).resampled).any()
    assert to_numpy(smc(nmf, X1, 20, rng_key=0, ess_threshold=1.0).resampled).all()
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        smc(model, X1, 5)


def test_systematic_resample_matches_searchsorted():
    # Oracle: draw k takes the first index whose cumulative weight exceeds (k + u) / num.
    rng = np.random.default_rng(1)
    for _ in range(30):
        m, u = int(rng.integers(1, 20)), rng.random()
        w = rng.dirichlet(np.full(3 * m, 0.3))
        for log_w, num in ((np.log(w[:m] / w[:m].sum()), m), (np.log(w.reshape(3, m)), m)):
            cum = np.cumsum(np.exp(log_w).reshape(-1))
            expected = np.minimum(np.searchsorted(cum, (np.arange(num) + u) / num, "right"),
                                  cum.size - 1)
            np.testing.assert_array_equal(systematic_resample(log_w, np.array(u), num),
                                          expected)


def test_systematic_resample_counts():
    # Each particle's number of copies is floor or ceil of M * w (the systematic property).
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(7))
    for u in (0.0, 0.3, 0.999):
        index = systematic_resample(np.log(w), np.array(u))
        copies = np.bincount(index, minlength=7)
        assert copies.sum() == 7
        assert np.all(np.abs(copies - 7 * w) < 1)


def _random_hmm(rng, K, T):
    log_init = np.log(np.full(K, 1.0 / K))
    log_trans = np.log(rng.dirichlet(np.ones(K), K))
    log_obs = np.log(rng.dirichlet(np.ones(K), T))
    alpha = log_init + log_obs[0]  # the forward algorithm, the exact oracle
    for t in range(1, T):
        alpha = logsumexp(alpha[:, None] + log_trans, 0) + log_obs[t]
    return log_init, log_trans, log_obs, logsumexp(alpha)


def test_hmm_smc_unbiased_numpy():
    log_init, log_trans, log_obs, exact = _random_hmm(np.random.default_rng(0), 3, 6)
    runs = np.array([float(hmm_smc(log_init, log_trans, log_obs, 4, rng_key=s,
                                   scheme=("joint", "adaptive")[s % 2]).log_z)
                     for s in range(80)])
    ratios = np.exp(runs - exact)
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std() / np.sqrt(len(ratios)) + 1e-3


def test_hmm_smc_jax_jit_small_std():
    import jax.numpy as jnp
    log_init, log_trans, log_obs, exact = _random_hmm(np.random.default_rng(1), 4, 30)
    args = [jnp.asarray(a) for a in (log_init, log_trans, log_obs)]
    runs = np.array([float(hmm_smc(*args, 100, rng_key=s).log_z) for s in range(20)])
    assert abs(runs.mean() - exact) < 4 * runs.std() / np.sqrt(len(runs)) + 0.01
    # The joint scheme's claim (benchmarks/smc.py: <= 0.05 at 100 steps, 100 particles).
    assert runs.std() < 0.05


def _forward(log_init, log_trans, log_obs):
    """The forward algorithm of a time-varying chain (``log_trans[t - 1]`` into step t)."""
    alpha = log_init + log_obs[0]
    for t in range(1, len(log_obs)):
        alpha = logsumexp(alpha[:, None] + log_trans[t - 1], 0) + log_obs[t]
    return logsumexp(alpha)


def test_hmm_smc_time_varying_unbiased_numpy():
    rng = np.random.default_rng(2)
    K, T = 3, 6
    log_init = np.log(rng.dirichlet(np.ones(K)))
    log_trans = np.log(rng.dirichlet(np.ones(K) * 0.5, (T - 1, K)))
    log_obs = np.log(rng.dirichlet(np.ones(K), T))
    exact = _forward(log_init, log_trans, log_obs)
    runs = np.array([float(hmm_smc(log_init, log_trans, log_obs, 4, rng_key=s,
                                   scheme=("joint", "adaptive")[s % 2]).log_z)
                     for s in range(60)])
    ratios = np.exp(runs - exact)
    assert abs(ratios.mean() - 1.0) < 4 * ratios.std() / np.sqrt(len(ratios)) + 1e-3
    with pytest.raises(ValueError, match=r"\(T - 1, K, K\)"):
        hmm_smc(log_init, log_trans[:-1], log_obs, 4)


def test_hmm_smc_markov_product_jax_jit():
    # A MarkovProduct with the emissions folded into its steps, against its own exact
    # elimination (the library's scan) and the numpy forward algorithm.
    import jax.numpy as jnp

    import funsor_core as fc
    from interpretations import lazy

    rng = np.random.default_rng(3)
    K, T = 3, 25
    log_init = np.log(rng.dirichlet(np.ones(K)))
    log_trans = np.log(rng.dirichlet(np.ones(K), (T - 1, K)))
    log_obs = np.log(rng.dirichlet(np.ones(K), T))
    steps = log_trans + log_obs[1:, None, :]
    chains = []
    for data in (steps, jnp.asarray(steps)):
        trans = fc.Tensor(data, {"t": fc.Bint[T - 1], "prev": fc.Bint[K], "curr": fc.Bint[K]})
        with lazy:
            chains.append(fc.MarkovProduct(ops.logaddexp, ops.add, trans, "t",
                                           {"prev": "curr"}))
    init = fc.Tensor(log_init + log_obs[0], {"prev": fc.Bint[K]})
    eliminated = float((init + chains[0].reduce(ops.logaddexp, "curr"))
                       .reduce(ops.logaddexp).data)
    exact = _forward(log_init, log_trans, log_obs)
    assert abs(eliminated - exact) < 1e-9
    first = jnp.asarray(np.vstack([log_obs[:1], np.zeros((T - 1, K))]))
    runs = np.array([float(hmm_smc(jnp.asarray(log_init), chains[1], first, 100,
                                   rng_key=s).log_z) for s in range(8)])
    assert abs(runs.mean() - exact) < 4 * runs.std() / np.sqrt(len(runs)) + 0.01
    assert runs.std() < 0.05


def test_smc_refuses_traced_counts_with_a_clear_error():
    # The token count (the sweep's length) is read from the counts' values: under a user's
    # jax.jit they are unknown, so smc says so instead of failing inside numpy.
    jax = pytest.importorskip("jax")
    m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
    with pytest.raises(ValueError, match="concrete"):
        jax.jit(lambda x: smc(m, x, 4, rng_key=0).log_z)(jax.numpy.asarray([[2, 1], [0, 1]]))
