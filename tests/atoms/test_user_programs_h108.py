"""Programs a new user writes from the README (h108), on the Tensor atom: a traced table
indexed by concrete observations it closed over (``t[obs]``, ``t(y=obs)``) under ``jax.jit``
failed with a ConcretizationTypeError in the index range check (jax stages ``min`` even of a
concrete array while tracing). Oracle: numpy fancy indexing."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms import DomainError

jax = pytest.importorskip("jax")
jnp = jax.numpy


def test_traced_table_indexed_by_closed_over_observations_under_jit():
    table = np.arange(8.0).reshape(2, 4)
    obs_np = np.array([3, 1, 0])
    obs = fc.Tensor(jnp.asarray(obs_np), {"n": fc.Bint[3]}, dtype=4)

    def by_getitem(data):
        return fc.Tensor(data, {"x": fc.Bint[2]})[obs].data

    def by_subs(data):
        return fc.Tensor(data, {"x": fc.Bint[2], "y": fc.Bint[4]})(y=obs).data

    want = table[:, obs_np]
    np.testing.assert_allclose(np.asarray(jax.jit(by_getitem)(jnp.asarray(table))), want)
    np.testing.assert_allclose(np.asarray(jax.jit(by_subs)(jnp.asarray(table))), want)
    # the range is still checked on the concrete index, under jit too
    bad = fc.Tensor(jnp.asarray([2, 7]), {"n": fc.Bint[2]}, dtype=8)
    with pytest.raises(DomainError):
        jax.jit(lambda d: fc.Tensor(d, {"x": fc.Bint[2], "y": fc.Bint[4]})(y=bad).data)(
            jnp.asarray(table))
