"""Gaussians need float32 or float64 data: a float16 or bfloat16 parameter (a Gaussian's own,
or a Normal's or MultivariateNormal's whose value is a real variable, which makes it a
Gaussian) raises a TypeError naming the parameter and the dtype when the term is built, on
every backend, eagerly and under ``jax.jit`` alike (dtypes are static); float32 builds."""
import numpy as np
import pytest

import funsor_core as fc
from funsor_core.distribution import MultivariateNormal, Normal

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy

CASES = [("numpy", "float16"), ("torch", "float16"), ("torch", "bfloat16"),
         ("jax", "float16"), ("jax", "bfloat16")]


def _array(backend, dtype, x):
    if backend == "numpy":
        return np.asarray(x, dtype=dtype)
    if backend == "torch":
        return torch.tensor(np.asarray(x, dtype=np.float64)).to(getattr(torch, dtype))
    return jnp.asarray(x, dtype=dtype)


def _builds(backend, dtype):
    mean, cov = _array(backend, dtype, [0.5, -1.0]), _array(backend, dtype, np.eye(2) * 2)
    scale = fc.Tensor(_array(backend, dtype, 0.5))
    tril = fc.Tensor(_array(backend, dtype, np.eye(2)))
    x, y = fc.Variable("x", fc.Reals[2]), fc.Variable("y", fc.Real)
    return [
        ("Gaussian mean=", lambda: fc.Gaussian(mean=mean, covariance=cov,
                                               inputs={"x": fc.Reals[2]})),
        ("Gaussian white_vec=", lambda: fc.Gaussian(white_vec=mean, prec_sqrt=cov,
                                                    inputs={"x": fc.Reals[2]})),
        ("Normal's scale", lambda: Normal(fc.Tensor(mean)[0], scale, y)),
        ("Normal's scale", lambda: Normal(0.0, scale, y)),
        ("MultivariateNormal's scale_tril", lambda: MultivariateNormal(fc.Tensor(mean), tril, x)),
    ]


@pytest.mark.parametrize("backend,dtype", CASES)
def test_sixteen_bit_gaussians_are_refused_by_name(backend, dtype):
    fc.set_backend(backend)
    try:
        for what, build in _builds(backend, dtype):
            with pytest.raises(TypeError, match=f"{what}.* has dtype {dtype}; Gaussians need "
                                                "float32 or float64"):
                build()
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_refused_under_jit_as_eagerly(dtype):
    fc.set_backend("jax")
    try:
        y = fc.Variable("y", fc.Real)
        with pytest.raises(TypeError, match=f"Normal's scale.* has dtype {dtype}"):
            jax.jit(lambda s: Normal(0.0, fc.Tensor(s), y)(y=1.0).data)(jnp.asarray(0.5, dtype))
    finally:
        fc.set_backend("numpy")


def test_float32_parameters_build(backend):
    # The boundary: float32 is accepted and keeps its dtype (oracle: the closed-form density).
    mean = _array(backend, "float32", [0.5])
    y = fc.Variable("y", fc.Real)
    g = Normal(fc.Tensor(mean)[0], fc.Tensor(_array(backend, "float32", 2.0)), y)
    got = g(y=1.5).data
    assert "float32" in str(got.dtype)
    expected = -0.5 * 0.5 ** 2 - np.log(2.0) - 0.5 * np.log(2 * np.pi)
    assert abs(float(got) - expected) < 1e-6
