"""A new user's tries of the allocation model (h62): ``log_marginal_exact`` called under
``jax.jit`` failed with jax's TracerArrayConversionError from inside numpy; it now names X and
its indices. Oracle: scipy's log pi(S) summed over every completion of X."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from funsor_core.allocation import AllocationModel
from tests.algorithms.smc.test_allocation import _scipy_log_pi

X = np.array([[2, 0, 1], [0, 1, 1]])


def _nmf():
    return AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 3, "k": 2},
                           visible=("i", "j"), a=1.0, b=1.0)


def _brute_force(model):
    # Every S over (k, i, j) with sum_k S = X: each cell's count split between k = 0 and 1.
    scores = []
    for split in itertools.product(*(range(x + 1) for x in X.ravel())):
        first = np.array(split).reshape(X.shape)
        scores.append(_scipy_log_pi(np.stack([first, X - first]), model))
    return logsumexp(scores)


def test_exact_marginal_on_every_backend_and_a_clear_error_under_jit():
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    model = _nmf()
    expected = _brute_force(model)
    for counts in (X, X.tolist(), jax.numpy.asarray(X), torch.as_tensor(X)):
        np.testing.assert_allclose(model.log_marginal_exact(counts), expected, rtol=1e-12)
    with pytest.raises(ValueError, match=r"X over the indices \('i', 'j'\) must be concrete"):
        jax.jit(model.log_marginal_exact)(jax.numpy.asarray(X))


def test_smc_of_a_model_without_indices_and_traced_particle_counts_say_what_is_wrong():
    from scipy.stats import nbinom

    from funsor_core.smc import smc

    empty = AllocationModel({}, {}, visible=(), a=1.0, b=1.0)
    # No indices: log p(X) is the negative binomial of the total count, exactly.
    np.testing.assert_allclose(empty.log_marginal_exact(np.array(3)),
                               nbinom(1.0, 0.5).logpmf(3), rtol=1e-12)
    with pytest.raises(ValueError, match="no indices.*log_marginal_exact"):
        smc(empty, np.array(3), num_particles=4, rng_key=0)  # was an IndexError
    jax = pytest.importorskip("jax")
    with pytest.raises(ValueError, match="num_particles must be >= 1.*a traced value"):
        jax.jit(lambda n: smc(_nmf(), X, num_particles=n, rng_key=0).log_z)(4)
