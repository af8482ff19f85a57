"""funsor's positional spellings of ops with parameters, applied to funsors (issue 13, item 13):
``ops.transpose(f, -1, -2)``, ``ops.clamp(f, 0, 1)``, ``ops.diagonal(f, 0, 1)``, ``ops.flip``,
``ops.triangular_inv``, ``ops.permute``, ``ops.expand``, ``ops.full_like`` and ``reshape`` of a
Variable. Each acts on the output dims only; the oracle is numpy on the batched array with
the axes shifted past the batch dims (and, for ``triangular_inv``, ``np.linalg.inv`` of the
triangle), on numpy, torch and jax, eagerly, lazily and under ``jax.jit``.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from interpretations import lazy

jax = pytest.importorskip("jax")
jnp = jax.numpy
torch = pytest.importorskip("torch")

INPUTS = {"i": Bint[2]}  # one batch dim in front of a (3, 4) or (3, 3) output


def _as(backend, a):
    return {"numpy": np.asarray, "torch": torch.as_tensor, "jax": jnp.asarray}[backend](a)


def _np(x):
    return np.asarray(x.detach() if isinstance(x, torch.Tensor) else x)


def _lower(rng, shape):
    return np.tril(rng.normal(size=shape), -1) * 0.3 + np.eye(shape[-1]) * 2.0


# name: (funsor expression of f, numpy oracle on the batched data, data shape)
CASES = {
    "transpose": (lambda f: ops.transpose(f, -1, -2), lambda d: np.swapaxes(d, -1, -2),
                  (2, 3, 4)),
    "transpose_pos": (lambda f: ops.transpose(f, 0, 1), lambda d: np.swapaxes(d, 1, 2),
                      (2, 3, 4)),
    "clamp": (lambda f: ops.clamp(f, 0, 1), lambda d: np.clip(d, 0, 1), (2, 3, 4)),
    "clamp_kw": (lambda f: ops.clamp(f, max=0.2), lambda d: np.minimum(d, 0.2), (2, 3, 4)),
    "diagonal": (lambda f: ops.diagonal(f, -1, -2),
                 lambda d: np.diagonal(d, axis1=-1, axis2=-2), (2, 3, 4)),
    "diagonal_pos": (lambda f: ops.diagonal(f, 0, 1),
                     lambda d: np.diagonal(d, axis1=1, axis2=2), (2, 4, 3)),
    "flip": (lambda f: ops.flip(f, -1), lambda d: np.flip(d, -1), (2, 3, 4)),
    "flip_first": (lambda f: ops.flip(f, 0), lambda d: np.flip(d, 1), (2, 3, 4)),
    "flip_all": (lambda f: ops.flip(f), lambda d: np.flip(d, (1, 2)), (2, 3, 4)),
    "permute": (lambda f: ops.permute(f, (1, 0)), lambda d: np.transpose(d, (0, 2, 1)),
                (2, 3, 4)),
    "expand": (lambda f: ops.expand(f, (5, 3, 4)),
               lambda d: np.broadcast_to(d[:, None], (2, 5, 3, 4)), (2, 3, 4)),
    "expand_minus_one": (lambda f: ops.expand(f, (2, -1, 4)),
                         lambda d: np.broadcast_to(d[:, None], (2, 2, 3, 4)), (2, 3, 1)),
    "full_like": (lambda f: ops.full_like(f, 2.5), lambda d: np.full_like(d, 2.5), (2, 3, 4)),
    "triangular_inv": (lambda f: ops.triangular_inv(f),
                       lambda d: np.linalg.inv(np.tril(d)), (2, 3, 3)),
    "triangular_inv_upper": (lambda f: ops.triangular_inv(f, True),
                             lambda d: np.linalg.inv(np.triu(d)), (2, 3, 3)),
}


def _data(name, rng):
    shape = CASES[name][2]
    if name.startswith("triangular_inv"):
        d = _lower(rng, shape)
        return np.swapaxes(d, -1, -2) if name.endswith("upper") else d
    return rng.normal(size=shape)


@pytest.mark.parametrize("name", list(CASES))
def test_output_op_on_a_tensor(backend, name):
    build, oracle, _ = CASES[name]
    data = _data(name, np.random.default_rng(0))
    expected = oracle(data)
    f = fc.Tensor(_as(backend, data), INPUTS)
    actual = build(f)
    assert isinstance(actual, fc.Tensor) and actual.inputs == INPUTS
    assert actual.output.shape == expected.shape[1:]
    np.testing.assert_allclose(_np(actual.data), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_output_op_lazy_then_substituted(name):
    build, oracle, _ = CASES[name]
    data = _data(name, np.random.default_rng(1))
    v = fc.Variable("v", Reals[data.shape[1:]])
    with lazy:
        expr = build(v)
    assert isinstance(expr, fc.Unary)
    actual = expr(v=fc.Tensor(data, INPUTS))
    expected = oracle(data)
    np.testing.assert_allclose(_np(actual.data), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["transpose", "diagonal_pos", "flip", "permute", "expand",
                                  "clamp", "triangular_inv", "full_like"])
def test_output_op_under_jit(name):
    build, oracle, _ = CASES[name]
    data = _data(name, np.random.default_rng(2))
    fc.set_backend("jax")
    try:
        value = jax.jit(lambda d: build(fc.Tensor(d, INPUTS)).data)(jnp.asarray(data))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(value), oracle(data), rtol=1e-10, atol=1e-12)


def test_ops_on_arrays_take_the_same_positional_parameters(backend):
    rng = np.random.default_rng(3)
    d, low = rng.normal(size=(2, 3, 4)), _lower(rng, (2, 3, 3))
    x, lx = _as(backend, d), _as(backend, low)
    np.testing.assert_allclose(_np(ops.diagonal(x, -1, -3)), np.diagonal(d, axis1=-1, axis2=-3))
    np.testing.assert_allclose(_np(ops.flip(x, (0, 2))), np.flip(d, (0, 2)))
    np.testing.assert_allclose(_np(ops.triangular_inv(lx)), np.linalg.inv(low), rtol=1e-10)
    np.testing.assert_allclose(_np(ops.transpose(x, 0, -1)), np.swapaxes(d, 0, -1))
    np.testing.assert_allclose(_np(ops.clamp(x, -0.5, 0.5)), np.clip(d, -0.5, 0.5))


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_reshape_of_a_variable_then_a_number(backend_name):
    fc.set_backend(backend_name)
    try:
        r = fc.Variable("s", Real).reshape((1,))(s=0.3)
        assert isinstance(r, fc.Tensor) and r.output == Reals[1]
        np.testing.assert_allclose(_np(r.data), [0.3])
        e = ops.expand(fc.Variable("s", Real), (2, 3))(s=1.5)
        np.testing.assert_allclose(_np(e.data), np.full((2, 3), 1.5))
    finally:
        fc.set_backend("numpy")
    v = fc.Variable("v", Reals[2, 3]).reshape((3, 2))
    data = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(v(v=data).data, data.reshape(3, 2))


def test_bad_parameters_raise_where_the_op_is_applied():
    f = fc.Tensor(np.zeros((2, 3, 4)), INPUTS)
    with pytest.raises(ValueError, match="out of range for an output of 2 dims"):
        ops.transpose(f, 0, 2)
    with pytest.raises(ValueError, match="not a permutation"):
        ops.permute(f, (0, 0))
    with pytest.raises(ValueError, match=r"ops.expand .*\(\(3, 4\), \(3, 5\)\) do not broadcast"):
        ops.expand(f, (3, 5))
    with pytest.raises(ValueError, match="square matrices"):
        ops.triangular_inv(f)
    with pytest.raises(TypeError, match="takes at most 2 parameters"):
        ops.clamp(f, 0, 1, 2)
    with pytest.raises(ValueError, match=r"cannot fill a Bint\[3\] output with 0.5"):
        ops.full_like(fc.Tensor(np.zeros(2, dtype=int), INPUTS, 3), 0.5)
