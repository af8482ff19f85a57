"""A new user's tries of SMC (h68):

- ``hmm_smc`` of a ``MarkovProduct`` whose step ``trans + obs`` was recorded under ``lazy``
  (the README's way to build an HMM) was refused ("whose trans is a Tensor, got Binary"); the
  ground step is now evaluated, as exact would. Oracle: the numpy forward algorithm.
- ``AllocationModel(..., visible="ij")`` of an index named ``ij`` read two indices;
- evidence of probability zero gave ``hmm_smc(..., scheme="adaptive")`` a NaN estimate;
- ``rng_key=1.5`` failed with "'float' object has no attribute 'random'", ``rng_key="a"``
  with "no backend for arrays of type str"; both now name ``rng_key`` and what it takes.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaln

import funsor_core as fc
from funsor_core import ops
from funsor_core.allocation import AllocationModel
from funsor_core.smc import hmm_smc, smc
from interpretations import lazy

K, T = 3, 6


def _hmm():
    rng = np.random.default_rng(68)
    log_init = np.log(np.full(K, 1.0 / K))
    log_trans = np.log(0.1 + 0.7 * np.eye(K))
    log_obs = rng.normal(size=(T, K))
    alpha = log_init + log_obs[0]  # the forward algorithm, the oracle
    for t in range(1, T):
        alpha = np.logaddexp.reduce(alpha[:, None] + log_trans, 0) + log_obs[t]
    return log_init, log_trans, log_obs, np.logaddexp.reduce(alpha)


def test_a_chain_whose_step_was_recorded_under_lazy_runs():
    log_init, log_trans, log_obs, log_z = _hmm()
    trans = fc.Tensor(log_trans, {"prev": fc.Bint[K], "curr": fc.Bint[K]})
    obs = fc.Tensor(log_obs[1:], {"t": fc.Bint[T - 1], "curr": fc.Bint[K]})
    first = np.concatenate([log_obs[:1], np.zeros((T - 1, K))])  # y_0's; the rest in steps
    with lazy:
        chain = fc.MarkovProduct(ops.logaddexp, ops.add, trans + obs, "t", {"prev": "curr"})
    assert not isinstance(chain.trans, fc.Tensor)
    step = trans + obs  # the same chain, its step evaluated first
    with lazy:
        eager = fc.MarkovProduct(ops.logaddexp, ops.add, step, "t", {"prev": "curr"})
    assert isinstance(eager.trans, fc.Tensor)
    runs = [float(hmm_smc(log_init, c, first, 400, rng_key=seed).log_z)
            for c in (chain, eager) for seed in range(3)]
    assert runs[:3] == runs[3:]  # the same chain, the same draws
    # Fully adapted SMC with 400 particles: log Z-hat within a few standard errors (~0.01).
    np.testing.assert_allclose(np.mean(runs[:3]), log_z, atol=0.05)
    with pytest.raises(ValueError, match="trans must have exactly the inputs"):
        with lazy:
            extra = fc.MarkovProduct(ops.logaddexp, ops.add, trans + obs + fc.Tensor(
                np.zeros(2), {"b": fc.Bint[2]}), "t", {"prev": "curr"})
        hmm_smc(log_init, extra, first, 10)


@pytest.mark.parametrize("rng_key", [1.5, "a", [0, 1]])
def test_rng_key_of_a_wrong_type_is_named(rng_key):
    log_init, log_trans, log_obs, _ = _hmm()
    model = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, "ij", a=1.0, b=1.0)
    X = np.array([[2, 1], [0, 1]])
    with pytest.raises(TypeError, match="smc: rng_key must be an int seed, None, a numpy"):
        smc(model, X, 4, rng_key=rng_key)
    with pytest.raises(TypeError, match="hmm_smc: rng_key must be an int seed, None, a numpy"):
        hmm_smc(log_init, log_trans, log_obs, 4, rng_key=rng_key)
    # The keys it takes: no hidden index, so every particle is exact (the closed form).
    for key in (None, 0, np.int64(3), np.random.default_rng(0)):
        np.testing.assert_allclose(float(smc(model, X, 4, rng_key=key).log_z),
                                   model.log_marginal_exact(X), rtol=1e-12)


@pytest.mark.parametrize("scheme", ["adaptive", "joint"])
def test_evidence_of_probability_zero_gives_minus_inf(scheme):
    # A chain that never switches, observed in state 0 at t = 0 and in state 1 at t = 3:
    # p(y) = 0 (the forward algorithm's -inf). "adaptive" gave NaN: the weights after the
    # impossible step were -inf - -inf.
    torch = pytest.importorskip("torch")
    log_init = np.log(np.full(2, 0.5))
    log_trans = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    log_obs = np.zeros((5, 2))
    log_obs[0, 1] = log_obs[3, 0] = -np.inf
    alpha = log_init + log_obs[0]
    for t in range(1, 5):
        alpha = np.logaddexp.reduce(alpha[:, None] + log_trans, 0) + log_obs[t]
    assert np.logaddexp.reduce(alpha) == -np.inf
    with np.errstate(invalid="ignore"):  # the impossible step's draws read NaN weights
        for to in (np.asarray, torch.as_tensor):
            result = hmm_smc(to(log_init), to(log_trans), to(log_obs), 8, rng_key=0,
                             scheme=scheme)
            assert float(result.log_z) == -np.inf
        # Possible evidence keeps its number (state 0 throughout: log 0.5).
        log_obs[3, 0] = 0.0
        log_obs[3, 1] = -np.inf
        np.testing.assert_allclose(float(hmm_smc(log_init, log_trans, log_obs, 8, rng_key=0,
                                                 scheme=scheme).log_z), np.log(0.5))


def test_a_visible_string_that_names_an_index_is_that_index():
    # visible="ij" was read as ("i", "j") even where "ij" is the index's name (a ValueError
    # naming ('i', 'j')); one-letter names keep the old reading.
    mixture = AllocationModel({"k": (), "ij": ("k",)}, {"ij": 3, "k": 2}, visible="ij",
                              a=1.0, b=1.0)
    assert mixture.visible == ("ij",) and mixture.hidden == ("k",)
    assert AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, "ij", 1.0, 1.0).visible == \
        ("i", "j")
    X = np.array([2, 0, 3])
    # Oracle: k sums out of a one-visible model (BDeu: alpha_i = a / I), leaving the
    # negative binomial total times a Dirichlet-multinomial over i (Cemgil et al. (C.3)).
    a, b, n, alpha = 1.0, 1.0, X.sum(), np.full(3, 1.0 / 3)
    log_nb = gammaln(a + n) - gammaln(a) - gammaln(n + 1) + a * np.log(b / (b + 1)) \
        - n * np.log(b + 1)
    log_dm = gammaln(n + 1) - gammaln(X + 1).sum() + gammaln(alpha.sum()) \
        - gammaln(alpha.sum() + n) + (gammaln(alpha + X) - gammaln(alpha)).sum()
    np.testing.assert_allclose(mixture.log_marginal_exact(X), log_nb + log_dm, rtol=1e-12)
    np.testing.assert_allclose(float(smc(mixture, X, 16, rng_key=0).log_z), log_nb + log_dm,
                               rtol=1e-10)  # k's urns do not change the visible ones' law
