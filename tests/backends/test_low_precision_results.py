"""Result dtypes a user meets with low-precision and integer data (found by trying every
public entry point on float16, bfloat16, float32 and int data, h113): each result keeps the
inputs' float dtype (int data labelled Real computes in the backend's default float), and
each value is checked against a float64 oracle on the same rounded inputs (brute-force
enumeration, closed forms, ``math.lgamma``)."""
import itertools
import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Beta, Gamma, Poisson
from funsor_core.engine.floats import float_info
from funsor_core.loopy import loopy_bp

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy

I4 = {"i": fc.Bint[4]}


def _array(backend, dtype, x):
    if backend == "numpy":
        return np.asarray(x).astype(dtype)
    if backend == "torch":
        return torch.tensor(np.asarray(x)).to(getattr(torch, dtype))
    return jnp.asarray(x, dtype=dtype)


def _host(a):
    return a.double().numpy() if isinstance(a, torch.Tensor) else np.asarray(a).astype(float)


def test_float_info_reads_jax_scalar_types():
    assert float_info(jnp.bfloat16) == float_info(torch.bfloat16)
    assert float_info(jnp.float16) == float_info(np.float16)


def test_torch_logaddexp_of_integer_data_is_real(torch_backend):
    x, y = torch.tensor([0, 1, 5, -3]), torch.tensor([2, 1, 0, -3])
    got = ops.logaddexp(fc.Tensor(x, I4), fc.Tensor(y, I4)).data
    assert got.dtype == torch.get_default_dtype()
    np.testing.assert_allclose(got.double().numpy(), np.logaddexp(x.numpy(), y.numpy()),
                               rtol=1e-6)


@pytest.mark.parametrize("backend,dtype", [("numpy", "int64"), ("torch", "int64"),
                                           ("jax", "int32")])
def test_delta_with_an_integer_log_density_is_minus_inf_off_its_point(backend, dtype):
    fc.set_backend(backend)
    try:
        point, log_density = _array(backend, dtype, [1, 2]), _array(backend, dtype, [3, -1])
        inputs = {"i": fc.Bint[2]}
        delta = fc.Delta("x", fc.Tensor(point, inputs), fc.Tensor(log_density, inputs))
        got = delta(x=fc.Tensor(_array(backend, dtype, [1, 7]), inputs)).data
        assert ops.is_floating(got)
        np.testing.assert_array_equal(_host(got), [3.0, -math.inf])
    finally:
        fc.set_backend("numpy")


def test_numpy_float16_densities_stay_float16():
    # scipy's special functions have no float16 loops; the result is rounded back.
    rng = np.random.default_rng(0)
    a, b = rng.uniform(1, 3, (2, 4)).astype(np.float16)
    v = rng.uniform(0.2, 0.8, 4).astype(np.float16)
    k = np.array([0.0, 1.0, 3.0, 2.0], np.float16)
    lg = np.vectorize(math.lgamma)
    a64, b64, v64, k64 = (x.astype(float) for x in (a, b, v, k))
    cases = [
        (Gamma(fc.Tensor(a, I4), fc.Tensor(b, I4), fc.Tensor(v, I4)),
         a64 * np.log(b64) + (a64 - 1) * np.log(v64) - b64 * v64 - lg(a64)),
        (Beta(fc.Tensor(a, I4), fc.Tensor(b, I4), fc.Tensor(v, I4)),
         (a64 - 1) * np.log(v64) + (b64 - 1) * np.log1p(-v64) - lg(a64) - lg(b64)
         + lg(a64 + b64)),
        (Poisson(fc.Tensor(a, I4), fc.Tensor(k, I4)), k64 * np.log(a64) - a64 - lg(k64 + 1)),
    ]
    for got, expected in cases:
        assert got.data.dtype == np.float16
        np.testing.assert_allclose(got.data.astype(float), expected, rtol=0,
                                   atol=32 * float_info(np.float16).eps * np.abs(expected).max())


@pytest.mark.parametrize("backend,dtype", [("numpy", "float32"), ("numpy", "float16"),
                                           ("torch", "bfloat16"), ("jax", "bfloat16")])
def test_kbest_scores_keep_the_factors_dtype(backend, dtype):
    fc.set_backend(backend)
    try:
        rng = np.random.default_rng(1)
        x, y = _array(backend, dtype, rng.normal(size=(3, 4))), _array(backend, dtype,
                                                                       rng.normal(size=4))
        scores, _ = fc.infer_discrete([fc.Tensor(x, {"i": fc.Bint[3], "j": fc.Bint[4]}),
                                       fc.Tensor(y, {"j": fc.Bint[4]})], query="kbest", k=3)
        assert str(scores.data.dtype).endswith(dtype)
        joint = _host(x) + _host(y)
        expected = np.sort(joint.ravel())[::-1][:3]
        np.testing.assert_allclose(_host(scores.data), expected, rtol=0,
                                   atol=4 * float_info(dtype).eps * np.abs(expected).max())
    finally:
        fc.set_backend("numpy")


def test_loopy_refuses_float16_and_keeps_float32():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(3, 2))

    def factors(dtype):
        return [fc.Tensor(x.astype(dtype), {"u": fc.Bint[2], "v": fc.Bint[3]}),
                fc.Tensor(y.astype(dtype), {"v": fc.Bint[3], "w": fc.Bint[2]})]

    with pytest.raises(TypeError, match="log 0 is -1e\\+30, past the range of float16"):
        loopy_bp(factors(np.float16))
    log_z = loopy_bp(factors(np.float32)).log_z.data  # a tree: Bethe's log Z is exact
    x32, y32 = x.astype(np.float32).astype(float), y.astype(np.float32).astype(float)
    exact = np.log(sum(np.exp(x32[u, v] + y32[v, w])
                       for u, v, w in itertools.product(range(2), range(3), range(2))))
    assert log_z.dtype == np.float32
    assert abs(float(log_z) - exact) < 1e-5


def test_numpy_new_array_gives_python_floats_the_prototypes_dtype():
    # As torch's and jax's kernels do (the oracle: their results on the same call).
    proto = np.zeros(2, np.float32)
    assert ops.new_array(proto, [1.5, -2.0]).dtype == np.float32
    assert ops.new_array(torch.zeros(2, dtype=torch.float32), [1.5]).dtype == torch.float32
    assert ops.new_array(proto, np.ones(2)).dtype == np.float64  # arrays keep theirs
    assert ops.new_array(np.zeros(2, np.int64), [1.5]).dtype == np.float64
