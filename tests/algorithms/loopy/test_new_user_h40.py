"""A new user's tries of loopy BP and Gibbs (h40): one bare factor failed with "a funsor of
output Real has no len()"; a NaN table under ``jax.jit`` (where it cannot be refused) gave
``log_z = -inf``, a claim of mass zero, instead of NaN; Gibbs at temperature 0 warned of a
division by zero. Oracles: ``scipy.special.logsumexp`` of the table (one factor is a tree:
BP is exact) and its argmax."""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core.loopy import gibbs, loopy_bp, mh

TABLE = np.random.default_rng(0).normal(size=(2, 3))
INPUTS = {"a": fc.Bint[2], "b": fc.Bint[3]}


def test_bare_factor_is_one_factor():
    f = fc.Tensor(TABLE, INPUTS)
    r = loopy_bp(f)
    np.testing.assert_allclose(r.log_z.data, logsumexp(TABLE))
    np.testing.assert_allclose(r.beliefs["a"].data,
                               logsumexp(TABLE, 1) - logsumexp(TABLE))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # temperature 0 divided by zero
        s = gibbs(f, 3, temperature=0.0, rng_key=0)
    best = np.unravel_index(TABLE.argmax(), TABLE.shape)
    assert s["a"].data.tolist() == [best[0]] * 3 and s["b"].data.tolist() == [best[1]] * 3
    s = mh(f, 1, warmup=30, temperature=0.0, rng_key=0)  # climbs and stays
    assert (int(s["a"].data[0]), int(s["b"].data[0])) == best


def test_nan_table_under_jit_gives_nan_not_mass_zero():
    def run(t):
        r = loopy_bp(fc.Tensor(t, INPUTS), max_iters=5)
        return r.log_z.data, r.beliefs["a"].data

    bad = jnp.asarray(TABLE).at[0, 1].set(jnp.nan)
    z, b = jax.jit(run)(bad)
    assert math.isnan(float(z)) and np.isnan(np.asarray(b)).all()
    z, _ = jax.jit(run)(jnp.full((2, 3), -jnp.inf))  # mass zero is still -inf
    assert float(z) == -math.inf
