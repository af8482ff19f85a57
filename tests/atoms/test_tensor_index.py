"""Substitution into a Tensor (indexing): range checks on every concrete array (numpy, torch,
eager jax, 0-d included), no clamping under ``jax.jit`` (NaN where an index is out of
range), and boolean index values selecting rather than masking. Oracle: numpy indexing."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms import DomainError
from funsor_core.testing import assert_close

DATA = np.array([10.0, 20.0, 30.0])


def _array(backend, x):
    if backend == "torch":
        torch = pytest.importorskip("torch")
        return torch.tensor(x)
    if backend == "jax":
        jnp = pytest.importorskip("jax.numpy")
        return jnp.array(x)
    return np.array(x)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("bad", [[3, 0], [-1, 0], 3, -1])
def test_out_of_range_index_raises_on_concrete_arrays(backend, bad):
    a = fc.Tensor(_array(backend, DATA), {"i": fc.Bint[3]})
    inputs = {"k": fc.Bint[2]} if np.ndim(bad) else {}
    idx = fc.Tensor(_array(backend, np.array(bad)), inputs, 3)
    with pytest.raises(DomainError, match=r"'i' of Bint\[3\]"):
        a(i=idx)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_in_range_index_matches_numpy(backend):
    a = fc.Tensor(_array(backend, DATA), {"i": fc.Bint[3]})
    idx = fc.Tensor(_array(backend, np.array([2, 0, 1, 2])), {"k": fc.Bint[4]}, 3)
    assert_close(np.asarray(a(i=idx).data), DATA[[2, 0, 1, 2]])


def test_traced_index_never_clamps_under_jit():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a = fc.Tensor(jnp.array(DATA), {"i": fc.Bint[3]})

    @jax.jit
    def gather(idx):
        return a(i=fc.Tensor(idx, {"k": fc.Bint[2]}, 3)).data

    assert_close(np.asarray(gather(jnp.array([2, 0]))), DATA[[2, 0]])
    out = np.asarray(gather(jnp.array([3, 0])))  # jax alone would clamp 3 to 2 and give 30
    assert np.isnan(out[0]) and out[1] == DATA[0]


def test_boolean_index_selects_entries():
    m = fc.Tensor(np.array([1, 0, 2]), {"j": fc.Bint[3]}, 3) == 0
    b = fc.Tensor(np.array([10.0, 20.0]), {"i": fc.Bint[2]})
    got = b(i=m)
    assert got.inputs == {"j": fc.Bint[3]}
    assert_close(got.data, np.array([10.0, 20.0])[(np.array([1, 0, 2]) == 0).astype(int)])


# ---------------------------------------------------------------------------------------------
# Guards: a bool substituted for a Bint input selects row 1 or 0, as numpy indexing does.
# (Moved from tests/test_defects_8.py.)
def test_bool_substituted_for_a_bint_input_selects_row():
    x = np.arange(6.0).reshape(2, 3)
    a = fc.Tensor(x, {"i": fc.Bint[2]})
    assert a(i=True).shape == (3,) and a(i=False).shape == (3,)
    np.testing.assert_allclose(a(i=True).data, x[1])
    np.testing.assert_allclose(a(i=False).data, x[0])
