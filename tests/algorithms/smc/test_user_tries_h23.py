"""A new user's tries of ``hmm_smc`` and ``AllocationModel`` (h23): bad inputs raise naming
them; estimates still match the forward algorithm (numpy, the oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from funsor_core.allocation import AllocationModel
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
