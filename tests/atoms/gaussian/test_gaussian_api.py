"""funsor 0.4.8's public Gaussian helpers: Align of a Gaussian, the compression threshold,
BlockVector/BlockMatrix, and a Tensor minus a Gaussian.

Oracles: numpy (dense evaluation of the density at points, arrays written entry by entry).
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.gaussian import BlockMatrix, BlockVector, Gaussian
from funsor_core.testing import random_gaussian


def to_np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)))


def dense_eval(g, point):
    """The density from info_vec/precision in numpy: -0.5 x'Px + i'x - 0.5 ||w||^2."""
    p, i, w = to_np(g.precision), to_np(g.info_vec), to_np(g.white_vec)
    return -0.5 * point @ p @ point + i @ point - 0.5 * w @ w


# ---------------------------------------------------------------------------------------------
# Align: a Gaussian with its inputs reordered, Bint and real interleaved.
@pytest.mark.parametrize("order", [("y", "j", "x", "i"), ("x",), ("j", "i"), ("y", "x")])
def test_align_gaussian_is_a_gaussian_with_the_same_density(backend, order):
    rng = np.random.default_rng(1)
    inputs = {"i": fc.Bint[2], "j": fc.Bint[3], "x": fc.Real, "y": fc.Reals[2]}
    g = random_gaussian(inputs)
    h = g.align(order)
    assert type(h) is Gaussian
    assert tuple(h.inputs)[: len(order)] == order and h.inputs == g.inputs
    for i in range(2):
        for j in range(3):
            x, y = rng.normal(), rng.normal(size=2)
            value = h(i=i, j=j, x=fc.Tensor(_backend_array(x)), y=fc.Tensor(_backend_array(y)))
            # numpy oracle: slice the batch of g and evaluate x in g's own order (x then y).
            gi = g(i=i, j=j)
            expected = dense_eval(gi, np.concatenate([[x], y]))
            np.testing.assert_allclose(to_np(value.data), expected, rtol=1e-9)


def _backend_array(x):
    from funsor_core.engine.backend import backend_module

    return backend_module().asarray(np.asarray(x), "real")


def test_align_gaussian_round_trip():
    g = random_gaussian({"i": fc.Bint[2], "x": fc.Reals[2], "j": fc.Bint[3], "y": fc.Real})
    back = g.align(("y", "j", "x", "i")).align(tuple(g.inputs))
    np.testing.assert_allclose(back.white_vec, g.white_vec)
    np.testing.assert_allclose(back.prec_sqrt, g.prec_sqrt)


# ---------------------------------------------------------------------------------------------
# Compression threshold.
def test_set_compression_threshold_defers_compression_and_restores():
    rng = np.random.default_rng(0)
    w, s = rng.normal(size=5), rng.normal(size=(2, 5))  # rank 5 > 2 * dim 2
    inputs = {"x": fc.Reals[2]}
    assert type(fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs)) is fc.Contraction
    with Gaussian.set_compression_threshold(3):
        g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs)
        assert type(g) is Gaussian and g.rank == 5
        # a sum whose rank passes the threshold is still compressed, to a square root
        h = g + fc.Gaussian(white_vec=w[:2], prec_sqrt=s[:, :2], inputs=inputs)
        assert type(h) is fc.Contraction
    assert Gaussian.compression_threshold == 2
    # the compressed form is the same density: compare at points against numpy
    compressed = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs)
    for _ in range(3):
        x = rng.normal(size=2)
        expected = -0.5 * np.sum((x @ s - w) ** 2)
        np.testing.assert_allclose(compressed(x=x).data, expected, rtol=1e-9)
        np.testing.assert_allclose(g(x=x).data, expected, rtol=1e-9)


def test_set_compression_threshold_restores_on_error_and_checks_its_argument():
    with pytest.raises(RuntimeError):
        with Gaussian.set_compression_threshold(10):
            raise RuntimeError("boom")
    assert Gaussian.compression_threshold == 2
    with pytest.raises(ValueError, match="positive"):
        with Gaussian.set_compression_threshold(0):
            pass


# ---------------------------------------------------------------------------------------------
# BlockVector / BlockMatrix against numpy arrays written entry by entry.
@pytest.mark.parametrize("batch", [(), (4,), (3, 2)])
def test_block_vector(backend, batch):
    rng = np.random.default_rng(2)
    expected = np.zeros(batch + (10,))
    x = BlockVector(batch + (10,))
    a, b = rng.normal(size=batch), rng.normal(size=batch + (2,))
    expected[..., 1], expected[..., 6:8] = a, b
    x[..., 1] = _backend_array(a)
    x[..., 6:8] = _backend_array(b)
    np.testing.assert_array_equal(to_np(x.as_tensor()), expected)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_block_matrix(backend, batch, sparse):
    rng = np.random.default_rng(3)
    expected = np.zeros(batch + (6, 7))
    x = BlockMatrix(batch + (6, 7))
    blocks = [((..., 1, 1), batch), ((..., slice(3, 5), slice(3, 5)), batch + (2, 2))]
    if not sparse:
        blocks += [((..., 1, slice(3, 5)), batch + (2,)), ((..., slice(3, 5), 6), batch + (2,))]
    for index, shape in blocks:
        value = rng.normal(size=shape)
        expected[index] = value
        x[index] = _backend_array(value)
    np.testing.assert_array_equal(to_np(x.as_tensor()), expected)


def test_block_matrix_without_ellipsis_broadcasts_and_rejects_overlap():
    x = BlockMatrix((2, 3))
    x[0, :] = np.array(1.0)  # a scalar broadcasts over the block
    np.testing.assert_array_equal(x.as_tensor(), [[1, 1, 1], [0, 0, 0]])
    x[0:2, 0:1] = np.ones((2, 1))  # rows 0:2 overlap the band of row 0
    with pytest.raises(ValueError, match="overlap"):
        x.as_tensor()
    with pytest.raises(ValueError, match="shape"):
        BlockVector((4,))[1:3] = np.ones(3)
    with pytest.raises(IndexError, match="step 1"):
        BlockVector((4,))[::2] = np.ones(2)


# ---------------------------------------------------------------------------------------------
# t - g is kept as the sum t + (-g), funsor's normal form for a difference.
def test_tensor_minus_gaussian_is_a_sum_with_the_right_values():
    g = random_gaussian({"i": fc.Bint[2], "x": fc.Real})
    t = fc.Tensor(np.array([0.5, -1.0]), {"i": fc.Bint[2]})
    d = t - g
    assert type(d) is fc.Contraction
    for i in range(2):
        for x in (-0.3, 1.2):
            expected = t.data[i] - dense_eval(g(i=i), np.array([x]))
            np.testing.assert_allclose(d(i=i, x=x).data, expected, rtol=1e-9)
    g2 = random_gaussian({"i": fc.Bint[2], "y": fc.Real})
    s = (g + g2) - g2
    assert type(s) in (fc.Contraction, Gaussian)
    np.testing.assert_allclose(s(i=1, x=0.2, y=0.4).data, g(i=1, x=0.2).data, rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# Guards: bad Gaussian parameters (singular, not positive definite, NaN) raise a ValueError
# naming the parameter, and give NaN under jax.jit where nothing can raise; float32 survives
# numpy scalars and affine substitution with Number coefficients.
# (Moved from tests/test_defects_8.py, defect 6, and tests/test_regressions_13.py, item 14.)
_SINGULAR = np.array([[1.0, 1.0], [1.0, 1.0]])
_NAN = np.array([[1.0, np.nan], [np.nan, 1.0]])


def _active_array(data):
    from tests.backend_values import as_backend_array

    return as_backend_array(np.asarray(data, dtype=float))


@pytest.mark.parametrize("name", ["covariance", "precision", "scale_tril"])
def test_gaussian_bad_scale_names_parameter(backend, name):
    bad_matrix = np.zeros((2, 2)) if name == "scale_tril" else _SINGULAR
    what = "singular" if name == "scale_tril" else "not positive definite"
    with pytest.raises(ValueError, match=f"{name}= is {what}"):
        fc.Gaussian(mean=_active_array(np.zeros(2)), **{name: _active_array(bad_matrix)},
                    inputs={"x": fc.Reals[2]})
    with pytest.raises(ValueError, match=f"{name}= has NaN"):
        fc.Gaussian(mean=_active_array(np.zeros(2)), **{name: _active_array(_NAN)},
                    inputs={"x": fc.Reals[2]})


def test_gaussian_nan_mean_and_info_vec(backend):
    with pytest.raises(ValueError, match="mean= has NaN"):
        fc.Gaussian(mean=_active_array([0.0, np.inf]), covariance=_active_array(np.eye(2)),
                    inputs={"x": fc.Reals[2]})
    with pytest.raises(ValueError, match=r"info_vec= has NaN.*batch index \(1,\)"):
        fc.Gaussian(info_vec=_active_array([[0.0, 1.0], [np.nan, 0.0]]),
                    precision=_active_array(np.eye(2)),
                    inputs={"i": fc.Bint[2], "x": fc.Reals[2]})


def test_gaussian_bad_parameters_under_jit_give_nan():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    @jax.jit
    def normalizer(covariance):
        g = fc.Gaussian(mean=jnp.zeros(2), covariance=covariance, inputs={"x": fc.Reals[2]})
        return g.reduce(ops.logaddexp, "x").data

    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    expected = 0.5 * np.log(np.linalg.det(2 * np.pi * good))  # log of N's normalizer
    assert np.allclose(normalizer(jnp.asarray(good)), expected)
    for bad in (_SINGULAR, _NAN, -np.eye(2)):
        assert np.isnan(normalizer(jnp.asarray(bad)))


def test_float32_survives_numpy_scalars_and_number_coefficients():
    # A numpy float32 scalar (what a 0-d float32 expression returns) stays float32, and an
    # affine substitution with Number coefficients (`0.5 * y`) keeps a float32 Gaussian
    # float32; the values equal the float64 computation.
    assert fc.Tensor(np.float32(1.5)).data.dtype == np.float32
    assert fc.Tensor(np.float64(1.5)).data.dtype == np.float64
    y = fc.Variable("y", fc.Real)
    results = {}
    for dtype in (np.float32, np.float64):
        g = fc.Gaussian(white_vec=np.array([0.3], dtype), prec_sqrt=np.array([[1.7]], dtype),
                        inputs={"x": fc.Real})
        sub = g(x=0.5 * y + 1.0)
        assert sub.white_vec.dtype == dtype and sub.prec_sqrt.dtype == dtype
        results[dtype] = sub(y=np.array(0.8, dtype)).data
    # Oracle: -0.5 * (x * s - w) ** 2 at x = 0.5 * 0.8 + 1.0.
    expected = -0.5 * (1.4 * 1.7 - 0.3) ** 2
    np.testing.assert_allclose(results[np.float64], expected, rtol=1e-12)
    np.testing.assert_allclose(results[np.float32], expected, rtol=1e-6)
