"""A new user's tries of ``fc.plan`` and ``fc.compile`` (h23): bad calls raise naming the
parameter; the values still equal ``np.einsum`` (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from interpretations import lazy

U = np.array([0.2, 0.5, 0.3])
G = np.eye(2)[[0, 1, 1]]
Y = np.arange(8.0).reshape(2, 4) / 8
TH = np.array([0.5, 1.0, 2.0, 3.0])


def _factors():
    return [fc.Tensor(U, {"u": fc.Bint[3]}), fc.Tensor(G, {"u": fc.Bint[3], "x": fc.Bint[2]}),
            fc.Tensor(Y, {"x": fc.Bint[2], "y": fc.Bint[4]})]


def _program():
    u, g, y = _factors()
    theta = fc.Variable("theta", fc.Reals[4])["y"]
    with lazy:
        expr = (u * g * y * theta).reduce(ops.add, {"u", "x", "y"})
    return fc.compile(expr, functional={"x": g})


def test_plan_with_too_few_factors_names_the_count():
    u, g, y = _factors()
    plan = fc.plan([u, fc.functional(g, "x"), y], frozenset({"u", "x"}))
    np.testing.assert_allclose(plan([u, g, y]).data, np.einsum("u,ux,xy->y", U, G, Y))
    with pytest.raises(ValueError, match="made for 3 factors.*got 2"):
        plan([u, g])


def test_program_checks_parameter_shapes_names_and_backends():
    import torch

    program = _program()
    np.testing.assert_allclose(program(theta=TH), np.einsum("u,ux,xy,y->", U, G, Y, TH))
    with pytest.raises(ValueError, match=r"'theta' is Reals\[4\].*shape \(5,\)"):
        program(theta=np.ones(5))
    with pytest.raises(ValueError, match=r"unknown: \['phi'\]"):
        program(theta=TH, phi=TH)
    with pytest.raises(TypeError, match="'theta' holds torch arrays.*numpy"):
        program(theta=torch.ones(4, dtype=torch.float64))


def test_program_with_numpy_constants_runs_under_jax_jit():
    # A log-space program compiled from numpy Tensors, called with traced jax parameters,
    # raised TracerArrayConversionError; the numpy constants now become jax arrays.
    import jax
    import jax.numpy as jnp

    u, g, y = _factors()
    theta = fc.Variable("theta", fc.Reals[4])["y"]
    with lazy:
        expr = (u + g + y + theta).reduce(ops.logaddexp, {"u", "x", "y"})
    program = fc.compile(expr)
    joint = U[:, None, None] + G[:, :, None] + Y[None] + TH[None, None]
    expected = np.log(np.exp(joint).sum())
    value = jax.jit(lambda t: program(theta=t))(jnp.asarray(TH))
    np.testing.assert_allclose(np.asarray(value), expected, rtol=1e-6)
