"""A new user's tries of the sharded samplers (h68): a traced ``num_samples`` of
``partitioned_mcmc`` or ``num_chains`` of ``sharded_chains`` raised jax's
TracerBoolConversionError from a comparison, and a traced ``num_partitions`` said "must be
an int >= 1, got JitTracer(...)"; each now names the count that must be concrete.
``sharded_chains`` checks its counts as ``gibbs`` does (``num_samples=5.0`` is refused).
The samples that do run are checked against exact marginals by enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.sharding import partitioned_mcmc, sharded_chains

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _chain():
    rng = np.random.default_rng(68)
    tables = [rng.normal(size=(2, 2)) for _ in range(3)]
    factors = [fc.Tensor(jnp.asarray(t), {f"v{i}": fc.Bint[2], f"v{i + 1}": fc.Bint[2]})
               for i, t in enumerate(tables)]
    states = np.array(list(itertools.product(range(2), repeat=4)))
    log_w = sum(t[states[:, i], states[:, i + 1]] for i, t in enumerate(tables))
    p = np.exp(log_w - np.logaddexp.reduce(log_w))
    return factors, (p[:, None] * states).sum(0)  # p(v_i = 1)


def test_traced_counts_are_named_and_concrete_ones_sample_the_model():
    factors, p1 = _chain()
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    key = jax.random.PRNGKey(0)
    tries = [
        ("partitioned_mcmc: num_samples", lambda n: partitioned_mcmc(
            factors, n, mesh, "x", num_partitions=1, rng_key=key)["v0"].data),
        ("partitioned_mcmc: num_partitions", lambda n: partitioned_mcmc(
            factors, 10, mesh, "x", num_partitions=n, rng_key=key)["v0"].data),
        ("sharded_chains: num_chains", lambda n: sharded_chains(
            factors, 10, mesh, num_chains=n, rng_key=0)["v0"].data),
    ]
    for name, fn in tries:
        with pytest.raises(TypeError, match=f"{name} must be a concrete number"):
            jax.jit(fn)(2)
    with pytest.raises(ValueError, match=r"need int num_samples >= 1.*got 5.0"):
        sharded_chains(factors, 5.0, mesh, num_chains=2, rng_key=0)
    with pytest.raises(ValueError, match="sweeps must be an int >= 1, got 0"):
        partitioned_mcmc(factors, 5, mesh, "x", sweeps=0, rng_key=key)
    # The same checks pass a numpy run with no mesh (jax's sampler compiles for seconds).
    host = [fc.Tensor(np.asarray(f.data), f.inputs) for f in factors]
    samples = partitioned_mcmc(host, 500, None, num_partitions=1, num_chains=8, warmup=10,
                               rng_key=0)
    means = np.array([np.asarray(samples[f"v{i}"].data).mean() for i in range(4)])
    np.testing.assert_allclose(means, p1, atol=0.05)  # 4,000 draws: several standard errors
