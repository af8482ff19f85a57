"""A new user's tries of loopy inference and MCMC (h103):

- ``jax.jit(lambda seed: gibbs(factors, n, rng_key=seed))(0)`` (an int seed passed through
  ``jit``, as one passes a seed to any jitted sampler) failed deep in jax with "invalid PRNG
  key data: expected key_data.ndim >= 1"; a 0-d integer array (traced or concrete) is a seed
  now, as an int is, for every sampler that takes ``rng_key`` (``KeyStream``).

Oracles: the same call eagerly with the Python int seed (the same draws), and the exact
marginal by enumeration of the 6 states.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.loopy import gibbs, mh

jax = pytest.importorskip("jax")
jnp = jax.numpy

TABLE = np.log(np.array([[1.0, 2.0, 3.0], [4.0, 1.0, 1.0]]))


def _factors(array):
    return [fc.Tensor(array, {"a": fc.Bint[2], "b": fc.Bint[3]})]


@pytest.mark.parametrize("sampler", [gibbs, mh])
def test_a_traced_int_seed_draws_as_the_same_int_seed_does(sampler):
    factors = _factors(jnp.asarray(TABLE))
    eager = np.asarray(sampler(factors, 400, num_chains=2, rng_key=7)["a"].data)
    traced = jax.jit(lambda seed: sampler(factors, 400, num_chains=2, rng_key=seed)["a"].data)
    assert np.array_equal(np.asarray(traced(7)), eager)
    concrete = sampler(factors, 400, num_chains=2, rng_key=jnp.asarray(7))["a"].data
    assert np.array_equal(np.asarray(concrete), eager)
    # and the draws are the model's: p(a = 1) = 6 / 12 by enumeration
    p = np.exp(TABLE)
    assert abs(eager.mean() - p[1].sum() / p.sum()) < 0.06


def test_a_zero_dim_int_seed_on_numpy_and_torch_is_the_int_seed():
    torch = pytest.importorskip("torch")
    for array, seed in ((TABLE, np.array(3)), (torch.tensor(TABLE), torch.tensor(3))):
        a = np.asarray(gibbs(_factors(array), 50, rng_key=seed)["b"].data)
        b = np.asarray(gibbs(_factors(array), 50, rng_key=3)["b"].data)
        assert np.array_equal(a, b)
