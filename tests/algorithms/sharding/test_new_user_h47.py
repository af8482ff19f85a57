"""A new user's tries of ``sharded`` (h47): a misspelt plate ran unsharded without a word
(the values right, the user's intent lost). Leaving the block raises, naming the plate, the
names the block reduced and the mesh axes; a name declared for another program (a shared
wrapper) is fine while some declared name is used."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sharding import sharded

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
