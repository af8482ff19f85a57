"""A new user's tries of ``partitioned_mcmc`` (h23), one device: a ``Bint[0]`` variable
(no assignment: enumeration's sum is empty) and zero partitions raise naming them; the
marginals of an ordinary run still match enumeration."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.sharding import partitioned_mcmc


def test_partitioned_mcmc_refuses_empty_domains_and_zero_partitions():
    table = np.log(np.array([[1.0, 3.0], [2.0, 2.0]]))
    f = fc.Tensor(table, {"a": fc.Bint[2], "b": fc.Bint[2]})
    s = partitioned_mcmc([f], 400, num_chains=16, rng_key=0)
    p_b = np.exp(table).sum(0) / np.exp(table).sum()
    np.testing.assert_allclose(np.exp(s.marginals()["b"].data), p_b, atol=0.05)
    with pytest.raises(ValueError, match="num_partitions must be an int >= 1, got 0"):
        partitioned_mcmc([f], 5, rng_key=0, num_partitions=0)
    empty = fc.Tensor(np.zeros((0, 2)), {"a": fc.Bint[0], "b": fc.Bint[2]})
    assert np.exp(np.zeros((0, 2))).sum() == 0
    with pytest.raises(ValueError, match=r"\['a'\] are Bint\[0\]"):
        partitioned_mcmc([empty], 5, rng_key=0)


def test_sharded_particles_must_name_a_sample_input_of_the_monte_carlo():
    # A misspelt particles= name drew every particle on one device without a word.
    jax = pytest.importorskip("jax")
    from jax.sharding import Mesh

    from funsor_core import ops
    from funsor_core.distribution import Normal
    from funsor_core.sharding import sharded
    from interpretations import MonteCarlo

    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
    w = fc.Variable("w", fc.Real)
    fc.set_backend("jax")
    try:
        q = Normal(0.5, 0.8, value=w)
        with MonteCarlo(rng_key=jax.random.PRNGKey(0), particle=fc.Bint[4]):
            with sharded(mesh, particles={"particle": "x"}):
                est = fc.Integrate(q, ops.sigmoid(w), "w")
            with sharded(mesh, particles={"samples": "x"}):
                with pytest.raises(ValueError, match="sample inputs .*'particle'.* none of"):
                    fc.Integrate(q, ops.sigmoid(w), "w")
    finally:
        fc.set_backend("numpy")
    values = np.asarray(est.data)
    assert est.inputs == {"particle": fc.Bint[4]} and ((0 < values) & (values < 1)).all()
