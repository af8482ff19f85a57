"""Complex data of every backend are refused when a Tensor is built (#28, h92).

numpy complex arrays were refused, but torch and jax ones (and a traced jax array under
``jax.jit``) took the constructor's fast path, which looked at numpy dtypes only. Oracle: the
same ``TypeError`` as numpy's, and the real part of the same data still building a Tensor
whose reduction equals numpy's.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, ops

COMPLEX = r"dtype {}.*\(complex numbers\) cannot be a Tensor"


def _backends():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    return {"numpy": (np.asarray, "complex64"),
            "torch": (torch.as_tensor, "torch.complex64"),
            "jax": (jnp.asarray, "complex64")}


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("warm", [False, True])
def test_complex_data_refused_on_every_backend(backend, warm):
    asarray, name = _backends()[backend]
    z = np.array([1 + 1j, 2.0, 3.0], dtype=np.complex64)
    inputs = {"i": Bint[3]}
    if warm:  # the signature seen before: the constructor's shortest path
        fc.Tensor(asarray(z.real), inputs)
        fc.Tensor(asarray(z.real + 1), inputs)
    with pytest.raises(TypeError, match=COMPLEX.format(name)):
        fc.Tensor(asarray(z), inputs)
    real = fc.Tensor(asarray(z.real), inputs).reduce(ops.max)
    assert float(ops.to_numpy(real.data)) == np.max(z.real)


def test_complex_traced_data_refused_under_jit():
    jax = pytest.importorskip("jax")
    inputs = {"i": Bint[3]}

    @jax.jit
    def total(x):
        return fc.Tensor(x, inputs).reduce(ops.add).data

    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert float(total(x)) == pytest.approx(float(np.sum(x)))
    with pytest.raises(TypeError, match=COMPLEX.format("complex64")):
        total(x.astype(np.complex64))
