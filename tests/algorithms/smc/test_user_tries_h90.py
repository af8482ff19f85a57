"""A new user's tries of allocation models and SMC (h90):

- ``AllocationModel(..., cards={"k": 2.5})`` silently built the model with ``k`` of 2 states
  (``int(2.5)``); a cardinality must be a whole number now (``2.0`` still is 2);
- ``a="1"`` failed with "'<' not supported between instances of 'int' and 'str'", an array
  ``a`` with numpy's "truth value of an array ... is ambiguous", a traced ``a`` under
  ``jax.jit`` with jax's bool-conversion error: each names the hyperparameter now;
- ``smc("model", X, ...)`` failed with "'str' object has no attribute 'names'";
- a traced ``ess_threshold`` under ``jax.jit`` failed inside jax (``hmm_smc``: "__array__()
  was called on traced array"; ``smc``: a bool conversion); both name it now.

Oracle: ``log p(X)`` by summing the closed-form allocation probability (a negative binomial
total, a multinomial coefficient and one Polya urn per family and parent configuration,
written here from Cemgil et al.'s formula) over every completion of ``X`` into the hidden
indices, enumerated here (not by the library's enumerator).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from funsor_core.allocation import AllocationModel
from funsor_core.smc import hmm_smc, smc

PARENTS = {"a": (), "h": ("a",), "c": ("h",)}  # a -> h -> c, h hidden
CARDS = {"a": 2, "h": 2, "c": 2}
X = np.array([[1, 2], [1, 0]])  # over (a, c)


def _log_urns(S: np.ndarray, a: float, b: float) -> float:
    """log p(S) of a full allocation tensor S over (a, h, c), BDeu pseudo-counts."""
    n = S.sum()
    out = gammaln(a + n) - gammaln(a) - gammaln(n + 1) + a * np.log(b / (b + 1)) \
        - n * np.log(b + 1)  # NB(n; a, b)
    out += gammaln(n + 1) - gammaln(S + 1).sum()  # multinomial coefficient
    families = {"a": S.sum((1, 2))[:, None], "h": S.sum(2).T, "c": S.sum(0).T}  # (child, pa)
    for counts in families.values():
        alpha = a / counts.size  # a / (|child| |parent configurations|)
        for col in counts.T:
            out += gammaln(alpha + col).sum() - gammaln(alpha * len(col) + col.sum()) \
                - len(col) * gammaln(alpha) + gammaln(alpha * len(col))
    return out


def _log_evidence(X: np.ndarray, a: float, b: float) -> float:
    splits = [[(m, int(X[i, j]) - m) for m in range(int(X[i, j]) + 1)]
              for i, j in itertools.product(range(2), range(2))]
    scores = []
    for choice in itertools.product(*splits):
        S = np.zeros((2, 2, 2), np.int64)
        for (i, j), (h0, h1) in zip(itertools.product(range(2), range(2)), choice):
            S[i, 0, j], S[i, 1, j] = h0, h1
        scores.append(_log_urns(S, a, b))
    return float(logsumexp(scores))


def test_a_hidden_middle_index_matches_the_urns_and_smc_brackets_it():
    model = AllocationModel(PARENTS, CARDS, ("a", "c"), a=2.0, b=0.5)
    expected = _log_evidence(X, 2.0, 0.5)
    assert abs(model.log_marginal_exact(X) - expected) < 1e-10
    estimate = float(smc(model, X, 2000, rng_key=0, scheme="joint").log_z)
    assert abs(estimate - expected) < 0.05


def test_a_fractional_cardinality_is_refused_and_a_whole_float_is_that_int():
    with pytest.raises(ValueError, match=r"index 'h' needs an int cardinality >= 1, got 2\.5"):
        AllocationModel(PARENTS, {**CARDS, "h": 2.5}, ("a", "c"), a=2.0, b=0.5)
    with pytest.raises(ValueError, match="index 'h' needs an int cardinality"):
        AllocationModel(PARENTS, {**CARDS, "h": True}, ("a", "c"), a=2.0, b=0.5)
    model = AllocationModel(PARENTS, {**CARDS, "h": 2.0}, ("a", "c"), a=2.0, b=0.5)
    assert model.cards["h"] == 2
    assert abs(model.log_marginal_exact(X) - _log_evidence(X, 2.0, 0.5)) < 1e-10


@pytest.mark.parametrize("a", ["1", np.array([1.0, 2.0]), None])
def test_a_hyperparameter_that_is_no_number_is_named(a):
    with pytest.raises(TypeError, match="hyperparameter a must be a concrete real number"):
        AllocationModel(PARENTS, CARDS, ("a", "c"), a=a, b=0.5)


def test_a_traced_hyperparameter_is_named_under_jit():
    jax = pytest.importorskip("jax")
    with pytest.raises(TypeError, match="hyperparameter b must be a concrete real number"):
        jax.jit(lambda b: AllocationModel(PARENTS, CARDS, ("a", "c"), a=2.0, b=b).b)(0.5)


def test_smc_of_something_else_than_an_allocation_model_says_what_it_takes():
    with pytest.raises(TypeError, match="takes an AllocationModel, got str; .* hmm_smc"):
        smc("model", X, 10, rng_key=0)


def test_a_traced_ess_threshold_is_named():
    jax = pytest.importorskip("jax")
    model = AllocationModel(PARENTS, CARDS, ("a", "c"), a=2.0, b=0.5)
    with pytest.raises(TypeError, match="smc: ess_threshold must be a number in .*traced"):
        jax.jit(lambda e: smc(model, X, 4, rng_key=0, ess_threshold=e).log_z)(0.5)
    log_init, log_trans, log_obs = np.zeros(2), np.log(np.full((2, 2), 0.5)), np.zeros((3, 2))
    with pytest.raises(TypeError, match="hmm_smc: ess_threshold must be a number in .*traced"):
        jax.jit(lambda e: hmm_smc(log_init, log_trans, log_obs, 4, ess_threshold=e).log_z)(0.5)
    # Concrete, it runs: a normalized chain with flat emissions has log Z = 0 (the forward
    # algorithm), which every particle's weight gives exactly.
    assert float(hmm_smc(log_init - np.log(2), log_trans, log_obs, 4, rng_key=0,
                         ess_threshold=0.5).log_z) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("scheme", ["joint", "adaptive"])
def test_evidence_of_probability_zero_gives_minus_inf_quietly(scheme):
    # The forward algorithm's log p(y) is -inf once a step has no possible state; the joint
    # scheme's resampling grid subtracted -inf from -inf (numpy RuntimeWarnings, errors here).
    log_init, log_trans = np.log([0.5, 0.5]), np.log(np.full((2, 2), 0.5))
    log_obs = np.zeros((5, 2))
    log_obs[1] = -np.inf
    alpha = log_init + log_obs[0]
    for t in range(1, 5):
        alpha = logsumexp(alpha[:, None] + log_trans, axis=0) + log_obs[t]
    assert logsumexp(alpha) == -np.inf
    result = hmm_smc(log_init, log_trans, log_obs, 50, rng_key=0, scheme=scheme)
    assert float(result.log_z) == -np.inf
