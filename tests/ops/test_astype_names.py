"""ops.astype converts to a named dtype exactly, as funsor's does ("float32" on float64 data
gave float64, "uint8" and "int32" gave int64), against each library's own conversion; the
kinds "real", "float", "int", "bool" keep their meaning; a Bint Tensor cast to a float is Real."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

NAMES = ["float32", "float64", "int32", "uint8", "int16", "bool"]


def _arrays(backend):
    data = np.array([[0.25, 1.5], [2.75, -3.0]])
    if backend == "numpy":
        return data, lambda x, name: x.astype(name)
    if backend == "torch":
        torch = pytest.importorskip("torch")
        return torch.tensor(data), lambda x, name: x.to(getattr(torch, name))
    jnp = pytest.importorskip("jax.numpy")
    return jnp.asarray(data), lambda x, name: x.astype(jnp.dtype(name))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("name", NAMES)
def test_named_dtype_is_exact(backend, name):
    x, convert = _arrays(backend)
    got, want = ops.astype(x, name), convert(x, name)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_kinds_keep_their_meaning(backend):
    x, convert = _arrays(backend)
    f32 = convert(x, "float32")
    assert ops.astype(f32, "real").dtype == f32.dtype  # a float dtype is kept
    assert ops.astype(f32, "float").dtype == f32.dtype
    ints = ops.astype(x, "int")
    assert ops.is_floating(ops.astype(ints, "real")) and not ops.is_floating(ints)
    np.testing.assert_array_equal(np.asarray(ints), np.trunc(np.asarray(x)))


def test_bint_tensor_cast_to_a_float_is_real():
    t = fc.Tensor(np.array([0, 2, 1]), {"i": fc.Bint[3]}, 3)
    for name in ("real", "float32", np.float64):
        out = ops.astype(t, name)
        assert out.output == fc.Real and ops.is_floating(out.data)
    assert ops.astype(t, "uint8").output == fc.Bint[3]
    assert ops.astype(t, "uint8").data.dtype == np.uint8


def test_unknown_name_is_refused_on_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="real32"):
        ops.astype(torch.zeros(2), "real32")
