"""float16 and bfloat16 arrays through the linear-algebra ops, as a user applies them to a
Tensor: numpy, torch and jax have no 16-bit factorizations, so the backends compute them in
float32 and round the result once to the input's dtype (``ops.LINALG_OPS``,
``kernel_helpers.in_float32``). Oracle: numpy float64 on the same rounded inputs, within a
few ``eps`` of the dtype; the dtype kept; jax eager and under ``jax.jit`` alike."""
import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import MultivariateNormal
from funsor_core.engine.floats import float_info

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy

CASES = [("numpy", "float16"), ("torch", "float16"), ("torch", "bfloat16"),
         ("jax", "float16"), ("jax", "bfloat16")]


def _array(backend, dtype, x):
    if backend == "numpy":
        return x.astype(dtype)
    if backend == "torch":
        return torch.tensor(x).to(getattr(torch, dtype))
    return jnp.asarray(x, dtype=dtype)


def _host(a):
    if isinstance(a, torch.Tensor):
        return a.double().numpy()
    return np.asarray(a).astype(np.float64)


def _spd(rng):
    a = rng.normal(size=(3, 3))
    return a @ a.T + 3 * np.eye(3)


def _programs():
    rng = np.random.default_rng(0)
    m = _spd(rng)
    lower = np.linalg.cholesky(m)
    r = rng.normal(size=(3, 2))
    return [
        ("cholesky", (m,), lambda a: ops.cholesky(fc.Tensor(a)), np.linalg.cholesky),
        ("logdet", (m,), lambda a: ops.logdet(fc.Tensor(a)), lambda m: np.linalg.slogdet(m)[1]),
        ("det", (m,), lambda a: ops.det(fc.Tensor(a)), np.linalg.det),
        ("inv", (m,), lambda a: ops.inv(fc.Tensor(a)), np.linalg.inv),
        ("triangular_solve", (r, lower),
         lambda a, b: ops.triangular_solve(fc.Tensor(a), fc.Tensor(b)),
         lambda r, L: np.linalg.solve(L, r)),
        ("cholesky_solve", (r, lower),
         lambda a, b: ops.cholesky_solve(fc.Tensor(a), fc.Tensor(b)),
         lambda r, L: np.linalg.solve(L @ L.T, r)),
    ]


@pytest.mark.parametrize("backend,dtype", CASES)
def test_linalg_ops_compute_16_bit_floats_in_float32(backend, dtype):
    fc.set_backend(backend)
    try:
        eps = float_info(dtype).eps
        programs = _programs()
        arrays = [[_array(backend, dtype, x) for x in inputs] for _, inputs, _, _ in programs]

        def run_all(arrays):
            return [p(*xs).data for (_, _, p, _), xs in zip(programs, arrays)]

        runs = [run_all(arrays)]
        if backend == "jax":  # one program for all six: one compilation
            runs.append(jax.jit(run_all)(arrays))
        for results in runs:
            for (name, _, _, oracle), xs, got in zip(programs, arrays, results):
                expected = oracle(*[_host(a) for a in xs])
                assert str(got.dtype).endswith(dtype), (name, got.dtype)
                scale = max(1.0, float(np.abs(expected).max()))
                np.testing.assert_allclose(_host(got), expected, rtol=0, atol=16 * eps * scale,
                                           err_msg=name)
    finally:
        fc.set_backend("numpy")


def test_mixed_widths_promote_to_the_wider_dtype(torch_backend):
    lower = torch.tensor([[2.0, 0.0], [1.0, 1.0]], dtype=torch.float32)
    rhs = torch.tensor([[1.0], [3.0]], dtype=torch.float16)
    got = ops.triangular_solve(fc.Tensor(rhs), fc.Tensor(lower)).data
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.double().numpy(), np.linalg.solve(lower.double().numpy(),
                                                                      rhs.double().numpy()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_multivariate_normal_density_at_a_tensor_value(torch_backend, dtype):
    # A value given as data: the log density itself (a triangular solve), no Gaussian.
    rng = np.random.default_rng(1)
    lower = np.linalg.cholesky(_spd(rng) / 3)
    loc, value = rng.normal(size=3), rng.normal(size=3)
    args = [torch.tensor(x).to(getattr(torch, dtype)) for x in (loc, lower, value)]
    loc, lower, value = (a.double().numpy() for a in args)
    got = MultivariateNormal(fc.Tensor(args[0]), scale_tril=fc.Tensor(args[1]),
                             value=fc.Tensor(args[2])).data
    d = np.linalg.solve(lower, value - loc)
    expected = -0.5 * d @ d - np.log(np.diag(lower)).sum() - 1.5 * np.log(2 * np.pi)
    assert got.dtype == getattr(torch, dtype)
    assert abs(float(got) - expected) < 16 * float_info(dtype).eps * max(1.0, abs(expected))
