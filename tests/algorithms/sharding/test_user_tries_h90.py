"""A new user's tries of sharding (h90):

- ``sharded(mesh, plates={"data": 0})`` (a mesh axis index instead of its name) failed with
  "'int' object is not iterable"; it names the plate and the value now;
- ``partitioned_mcmc`` of a model of mass zero returned samples (states of probability zero)
  where ``gibbs`` raises; it raises the same error now (eagerly), and under ``jax.jit`` its
  chains' states are -1, as ``gibbs``'s and ``sharded_chains``'s
  (``test_sharded.py::test_sharded_mcmc_chains_equal_one_device_chain_by_chain``);
- ``help(sharded)`` showed one line and an example with a string for a mesh: it has its
  arguments and a real example now.

Oracles: ``gibbs``'s eager error for the same model; exact marginals by enumeration.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.loopy import gibbs
from funsor_core.sharding import partitioned_mcmc, sharded


@pytest.mark.parametrize("where", ["plates", "time", "particles"])
@pytest.mark.parametrize("axis", [0, 1.5, None])
def test_a_mesh_axis_that_is_no_name_is_named(where, axis):
    with pytest.raises(TypeError, match=rf"'data' needs a mesh axis name .* got {axis!r}"):
        sharded("a mesh", **{where: {"data": axis}})
    assert sharded("a mesh", **{where: {"data": ["x", "y"]}}).mesh_axes("data") == ("x", "y")


def _chain(first):
    names = ["a", "b", "c", "d"]
    tables = [first] + [np.log(np.array([[2.0, 1.0], [1.0, 2.0]]))] * 3
    return [fc.Tensor(t, {s: fc.Bint[2], u: fc.Bint[2]})
            for t, s, u in zip(tables, names, names[1:])]


def test_partitioned_mcmc_of_a_model_of_mass_zero_raises_as_gibbs_does():
    factors = _chain(np.full((2, 2), -np.inf))
    with pytest.raises(ValueError, match="gibbs: chain 0 ended in a state of probability zero"):
        gibbs(factors, 5, rng_key=0)
    with pytest.raises(ValueError, match="partitioned_mcmc: chain 0 ended in a state of "
                                         "probability zero"):
        partitioned_mcmc(factors, 5, num_partitions=1, rng_key=0)
    # A model with mass still samples: p(a = b) = 2/3 on the first pair, by enumeration.
    factors = _chain(np.log(np.array([[2.0, 1.0], [1.0, 2.0]])))
    s = partitioned_mcmc(factors, 300, num_partitions=1, num_chains=20, rng_key=0)
    same = (np.asarray(s["a"].data) == np.asarray(s["b"].data)).mean()
    assert abs(same - 2 / 3) < 0.03
