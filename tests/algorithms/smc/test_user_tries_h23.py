"""A new user's tries of ``hmm_smc`` and ``AllocationModel`` (h23): bad inputs raise naming
them; estimates still match the forward algorithm (numpy, the oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from funsor_core.allocation import AllocationModel, kl_divergence, kl_ntf, vb
from funsor_core.smc import hmm_smc

RNG = np.random.default_rng(0)
K, T = 3, 5
LI = np.log(RNG.dirichlet(np.ones(K)))
LT = np.log(RNG.dirichlet(np.ones(K), K))
LO = RNG.normal(size=(T, K))


def test_hmm_smc_matches_forward_and_refuses_mixed_or_empty_input():
    import torch

    alpha = LI + LO[0]
    for t in range(1, T):
        alpha = logsumexp(alpha[:, None] + LT, axis=0) + LO[t]
    # K = 3 particles per state value, drawn value-major: fully adapted, so close to exact
    assert abs(float(hmm_smc(LI, LT, LO, 600, rng_key=0).log_z) - logsumexp(alpha)) < 0.02
    with pytest.raises(TypeError, match="torch, numpy, numpy arrays"):
        hmm_smc(torch.tensor(LI), LT, LO, 10, rng_key=0)
    with pytest.raises(ValueError, match="at least one observation"):
        hmm_smc(LI, LT, np.zeros((0, K)), 10, rng_key=0)


@pytest.mark.parametrize("a, b", [(math.inf, 1.0), (1.0, math.inf), (math.nan, 1.0)])
def test_allocation_model_refuses_infinite_hyperparameters(a, b):
    with pytest.raises(ValueError, match="finite a > 0 and b > 0"):
        AllocationModel({"i": ()}, {"i": 2}, ("i",), a, b)


NMF = {"k": (), "i": ("k",), "j": ("k",)}
X = np.array([[2, 0, 1], [0, 1, 1]])


def test_vb_refuses_bad_counts_and_options_and_stays_below_the_exact_evidence():
    m = AllocationModel(NMF, {"i": 2, "j": 3, "k": 2}, ("i", "j"), 1.0, 1.0)
    assert vb(m, X, num_iters=30, rng_key=0).elbo <= m.log_marginal_exact(X) + 1e-9
    with pytest.raises(ValueError, match=r"X must have shape \(2, 3\)"):
        vb(m, np.ones((1, 2)), rng_key=0)
    for bad in (-X, np.where(X == 2, np.nan, X)):
        with pytest.raises(ValueError, match="finite nonnegative counts"):
            vb(m, bad, rng_key=0)
    for kwargs in ({"num_iters": 0}, {"num_restarts": 0}):
        with pytest.raises(ValueError, match="num_iters >= 1 and num_restarts >= 1"):
            vb(m, X, rng_key=0, **kwargs)


def test_kl_ntf_refuses_negative_data_and_empty_ranks():
    V = np.outer([1.0, 2.0], [1.0, 3.0, 2.0])  # rank 1: the fit reaches KL 0 (closed form)
    _, trace = kl_ntf(V, "ik,kj->ij", {"k": 1}, num_iters=50, rng_key=0)
    assert trace[-1] < 1e-10 and float(kl_divergence(V, V)) == 0.0
    for bad in (-V, np.where(V > 2, np.nan, V)):
        with pytest.raises(ValueError, match="finite and nonnegative"):
            kl_ntf(bad, "ik,kj->ij", {"k": 1}, num_iters=1)
    with pytest.raises(ValueError, match=r"ranks must be ints >= 1, got \{'k': 0\}"):
        kl_ntf(V, "ik,kj->ij", {"k": 0}, num_iters=1)
