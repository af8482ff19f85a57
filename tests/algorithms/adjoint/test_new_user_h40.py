"""A new user's tries of ``infer_discrete`` (h40): a NaN log factor is refused eagerly, but
under ``jax.jit`` the MAP and samples were a definite-looking state (``argmax`` of a NaN row
picks its first entry); they are now -1, the value the docs give a model without an answer
(mass zero). Oracle: the argmax of the table where it is finite."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funsor_core as fc


def _map_and_sample(a):
    fs = [fc.Tensor(a, {"z": fc.Bint[2]}),
          fc.Tensor(jnp.zeros((2, 3)), {"z": fc.Bint[2], "x": fc.Bint[3]})]
    best = fc.infer_discrete(fs, query="map")
    draw = fc.infer_discrete(fs, query="sample", rng_key=jax.random.PRNGKey(0))
    return best["z"].data, best["x"].data, draw["z"].data, draw["x"].data


def test_nan_factor_under_jit_gives_no_state():
    with pytest.raises(ValueError, match=r"log value nan at \{'z': 0\}"):
        _map_and_sample(jnp.array([jnp.nan, 0.0]))
    run = jax.jit(_map_and_sample)
    assert [int(v) for v in run(jnp.array([jnp.nan, 0.0]))] == [-1] * 4
    finite = np.array([-40.0, 0.0])  # the MAP and a sure sample: z = argmax
    assert [int(v) for v in run(jnp.asarray(finite))][::2] == [int(np.argmax(finite))] * 2
