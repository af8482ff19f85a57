"""A new user's tries of ``sharded`` (h47): a misspelt plate ran unsharded without a word
(the values right, the user's intent lost). Leaving the block raises, naming the plate, the
names the block reduced and the mesh axes; a name declared for another program (a shared
wrapper) is fine while some declared name is used.

The default (neighborhood) partitioning of ``partitioned_mcmc`` on a 16-variable chain cut
in 4 blocks left variables on a boundary in every partitioning and refused the chain; chains
now fall back to shifted contiguous blocks.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.sharding.partitions import PartitionPlan, make_partitions
from funsor_core.sharding import partitioned_mcmc, sharded

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(scope="module")
def mesh():
    return jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))


def _model():
    data = np.arange(12.0).reshape(6, 2) / 10
    return data, fc.Tensor(jnp.asarray(data), {"data": fc.Bint[6], "z": fc.Bint[2]})


_MISSPELT = (r"plate \['dta'\] named in sharded\(...\) never occurred in a reduction .* mesh "
             r"axes \['x'\]; the block reduced \['data', 'z'\] \(a misspelt name\?\)\. The "
             r"mesh has axes \{'x': 1\}")


def test_a_misspelt_plate_raises_naming_it_the_model_plates_and_the_mesh(mesh):
    data, t = _model()
    with pytest.raises(ValueError, match=_MISSPELT):
        with sharded(mesh, plates={"dta": "x"}):
            t.reduce(ops.logaddexp, "z").reduce(ops.add, "data")
    with sharded(mesh, plates={"data": "x"}):  # spelt right: the value of numpy
        total = t.reduce(ops.logaddexp, "z").reduce(ops.add, "data")
    np.testing.assert_allclose(total.data, np.logaddexp.reduce(data, 1).sum(), rtol=1e-6)


def test_a_misspelt_plate_raises_under_jit(mesh):
    _, t = _model()

    @jax.jit
    def log_z(x):
        with sharded(mesh, plates={"dta": "x"}):
            u = fc.Tensor(x, t.inputs)
            return u.reduce(ops.logaddexp, "z").reduce(ops.add, "data").data

    with pytest.raises(ValueError, match=_MISSPELT):
        log_z(t.data)


def test_a_plate_declared_for_another_program_is_fine_when_one_is_used(mesh):
    data, t = _model()
    with sharded(mesh, plates={"data": "x", "d": "x"}):  # 'd' is another model's plate
        total = t.reduce(ops.add, frozenset({"data", "z"}))
    np.testing.assert_allclose(total.data, data.sum(), rtol=1e-6)


V = 16


def _chain(n=V, seed=47):
    rng = np.random.default_rng(seed)
    names = [f"x{i}" for i in range(n)]
    return names, [fc.Tensor(rng.normal(size=(2, 2)), {a: fc.Bint[2], b: fc.Bint[2]})
                   for a, b in zip(names, names[1:])]


def _exact_marginals(factors, names):
    # Enumeration of all 2^16 assignments (numpy), the oracle.
    states = np.array(list(itertools.product((0, 1), repeat=len(names))))
    logp = sum(f.data[states[:, i], states[:, i + 1]] for i, f in enumerate(factors))
    p = np.exp(logp - logp.max())
    return (p[:, None] * states).sum(0) / p.sum()


def test_default_partitions_of_a_chain_are_contiguous_and_move_every_variable():
    names, factors = _chain()
    graph = FactorGraph.build(factors)
    ids = make_partitions(graph, 4)
    plan = PartitionPlan(graph, ids, 4)  # raised before: x3, x8, x12 never active
    assert plan.active.any(0).all()
    order = [graph.names.index(n) for n in names]
    for row in ids[:, order]:  # along the chain, the ids change at most P times (cyclic)
        assert (np.diff(row) != 0).sum() <= 4 and set(row.tolist()) <= set(range(4))


def test_partitioned_mcmc_of_a_chain_in_4_blocks_matches_enumeration():
    names, factors = _chain()
    s = partitioned_mcmc(factors, 60, num_partitions=4, num_chains=200, warmup=10, rng_key=0)
    means = np.array([np.asarray(s[n].data).mean() for n in names])
    np.testing.assert_allclose(means, _exact_marginals(factors, names), atol=0.04)
