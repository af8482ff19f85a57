"""A new user's tries of allocation models and SMC (h40): ``log_marginal_exact`` of
non-integer counts truncated them silently (``vb`` fitted them); ``num_particles=-1`` failed
inside numpy (``smc``) or as "a domain dtype must be non-negative" (``hmm_smc``); a Tensor of
counts was read as a 0-d array; ``hmm_smc`` turned a NaN log likelihood into a NaN estimate
with a cast warning. Oracles: enumeration of the completions (``log_marginal_exact``), the
closed form of a model with no hidden index, the forward algorithm."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.allocation import AllocationModel, vb
from funsor_core.smc import hmm_smc, smc

NMF = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 3, "k": 2},
                      visible=("i", "j"), a=1.0, b=1.0)
X = np.array([[2, 0, 1], [0, 1, 1]])


def test_exact_refuses_fractional_counts_and_reads_a_tensor_by_name():
    for fit in (NMF.log_marginal_exact, lambda x: vb(NMF, x, rng_key=0)):
        with pytest.raises(ValueError, match=r"integer counts: X\[\(0, 0\)\] = .*2.5 over "
                                             r"the indices \('i', 'j'\)"):
            fit(X + 0.5)
    t = fc.Tensor(X.T.astype(float), {"j": fc.Bint[3], "i": fc.Bint[2]})  # other order
    assert NMF.log_marginal_exact(t) == NMF.log_marginal_exact(X)
    flat = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 3}, "ij", 1.0, 1.0)
    assert float(smc(flat, t, 3, rng_key=0).log_z) == pytest.approx(
        flat.log_marginal_complete(X))  # no hidden index: every particle is exact
    with pytest.raises(ValueError, match=r"Tensor of scalar counts over \{'i': Bint\[2\]"):
        NMF.log_marginal_exact(fc.Tensor(X[0].astype(float), {"i": fc.Bint[3]}))


@pytest.mark.parametrize("kwargs, match", [
    ({"num_particles": -1}, r"num_particles must be >= 1 \(an int\), got -1"),
    ({"num_particles": 10.0}, r"num_particles must be >= 1 \(an int\), got 10.0"),
    ({"num_particles": 4, "moves": -2}, r"moves must be >= 0 \(an int\), got -2"),
])
def test_smc_argument_errors_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        smc(NMF, X, rng_key=0, **kwargs)


def test_hmm_smc_refuses_nan_and_bad_particle_counts():
    rng = np.random.default_rng(0)
    log_init, log_trans = np.log([0.5, 0.5]), np.log([[0.9, 0.1], [0.2, 0.8]])
    log_obs = rng.normal(size=(3, 2))
    alpha = log_init + log_obs[0]  # forward algorithm, the oracle
    for t in range(1, 3):
        alpha = np.logaddexp.reduce(alpha[:, None] + log_trans, 0) + log_obs[t]
    assert float(hmm_smc(log_init, log_trans, log_obs, 2000, rng_key=0).log_z) == \
        pytest.approx(np.logaddexp.reduce(alpha), abs=0.02)
    bad = log_obs.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"log_obs\[\(1, 0\)\] is nan"):
        hmm_smc(log_init, log_trans, bad, 10, rng_key=0)
    with pytest.raises(ValueError, match=r"num_particles must be >= 1 \(an int\), got -2"):
        hmm_smc(log_init, log_trans, log_obs, -2, rng_key=0)
