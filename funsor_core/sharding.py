"""``funsor_core.sharding``: named dimensions on the axes of a device mesh.

A thin face; the interpretation and its state are in
``funsor_core.algorithms.sharding.kind`` (its module docstring documents the design and the
alternatives considered), the math in ``funsor_core.algorithms.sharding.plates`` and
``.chains``, the rules in ``interpretations.sharded``, the jax glue in
``backends.jax_sharding``."""

from funsor_core.algorithms.sharding.kind import Sharded, partitioned_mcmc, sharded

__all__ = ["Sharded", "partitioned_mcmc", "sharded"]
