"""``funsor_core.sharding``: named dimensions on the axes of a device mesh.

A thin face; the interpretation and its state are in
``funsor_core.algorithms.sharding.kind`` (its module docstring documents the design and the
alternatives considered), the math in ``funsor_core.algorithms.sharding.plates`` and
``.chains``, Singh's partitioned MCMC in ``.partitioned_mcmc``, independent MCMC chains split
over the devices in ``.mcmc_chains``, the rules in
``interpretations.sharded``, the jax glue in ``backends.jax_sharding``."""

from funsor_core.algorithms.sharding.kind import Sharded, sharded
from funsor_core.algorithms.sharding.mcmc_chains import sharded_chains
from funsor_core.algorithms.sharding.partitioned_mcmc import partitioned_mcmc

__all__ = ["Sharded", "partitioned_mcmc", "sharded", "sharded_chains"]
