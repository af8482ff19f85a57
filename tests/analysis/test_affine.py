"""Affine recognition (structural) and coefficient extraction, against coefficients written
by hand."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.affine import extract_affine, extract_affine_flat, is_affine


def test_extract_matrix_vector_affine():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=2)
    y = fc.Variable("y", fc.Reals[3])
    z = fc.Variable("z", fc.Real)
    const, coeffs = extract_affine_flat(y @ fc.Tensor(a) + b + 2.0 * z)
    np.testing.assert_allclose(const.data, b)
    np.testing.assert_allclose(coeffs["y"].data, a)
    np.testing.assert_allclose(coeffs["z"].data, [[2.0, 2.0]])


def test_batched_coefficients():
    rng = np.random.default_rng(1)
    w = fc.Tensor(rng.normal(size=4), {"i": fc.Bint[4]})
    x = fc.Variable("x", fc.Real)
    const, coeffs = extract_affine_flat(w * x + 1.0)
    np.testing.assert_allclose(const.data, 1.0)
    np.testing.assert_allclose(coeffs["x"].data[:, 0, 0], w.data)


def test_nonlinear_is_rejected():
    x = fc.Variable("x", fc.Real)
    assert not is_affine(x * x)
    assert not is_affine(x.exp())
    assert is_affine(3.0 * x - 1.0)


@pytest.mark.parametrize("build, expected", [
    (lambda x, y, a: x[0] - 2.0 * y, True),                        # indexing, scaling, sub
    (lambda x, y, a: (x @ a) / 4.0 + 1.0, True),                    # matmul by a constant
    (lambda x, y, a: -(x.sum()) + y, True),                         # neg, sum of output dims
    (lambda x, y, a: y / y, False),                                 # division by a variable
    (lambda x, y, a: x @ x, False),                                 # quadratic form
    (lambda x, y, a: (x * y).sum(), False),                         # product of variables
    (lambda x, y, a: y.sigmoid(), False),                           # nonlinear unary
    (lambda x, y, a: abs(y), False),                                # piecewise linear
])
def test_structure_decides(build, expected):
    x, y = fc.Variable("x", fc.Reals[2]), fc.Variable("y", fc.Real)
    a = fc.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert is_affine(build(x, y, a)) is expected


def test_constant_with_bint_inputs_is_affine_and_reduce_over_plates():
    w = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    y = fc.Variable("y", fc.Real)
    value = (w * y).reduce(fc.ops.add, "i") + 1.0
    assert is_affine(value)
    const, coeffs = extract_affine_flat(value)
    np.testing.assert_allclose(const.data, 1.0)
    np.testing.assert_allclose(coeffs["y"].data, [[3.0]])  # 0 + 1 + 2


def test_coefficients_match_a_numpy_oracle():
    # v(y) = y @ A + b is recovered exactly; check at random points against numpy.
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=2)
    y = fc.Variable("y", fc.Reals[3])
    const, coeffs = extract_affine_flat(y @ fc.Tensor(a) - fc.Tensor(b) * 0.5)
    for point in rng.normal(size=(4, 3)):
        np.testing.assert_allclose(const.data + point @ coeffs["y"].data, point @ a - 0.5 * b)


# ---------------------------------------------------------------------------------------------
# funsor's form: (coeff, eqn) per input, applied with Einsum; checked against numpy at points.
@pytest.mark.parametrize("build", [
    lambda x, y, t: x * 2.0 + 1.0,
    lambda x, y, t: x[fc.Variable("j", fc.Bint[2])] / 4 - 3.5,
    lambda x, y, t: x.sum() - 0.5,
    lambda x, y, t: x + y,
    lambda x, y, t: x * t + 1.0,
    lambda x, y, t: fc.Einsum("abc,ab->c", fc.Tensor(np.arange(24.0).reshape(2, 3, 4)), x),
    lambda x, y, t: fc.Tensor(np.ones(4)) + fc.Einsum(
        "abc,ab->c", fc.Tensor(np.arange(24.0).reshape(2, 3, 4)), x),
])
def test_extract_affine_funsor_form(build):
    rng = np.random.default_rng(3)
    x, y = fc.Variable("x", fc.Reals[2, 3]), fc.Variable("y", fc.Reals[2, 3])
    t = fc.Tensor(rng.normal(size=(5, 2, 3)), {"i": fc.Bint[5]})
    value = build(x, y, t)
    assert is_affine(value)
    const, coeffs = extract_affine(value)
    reals = [k for k, d in value.inputs.items() if d.dtype == "real"]
    assert list(coeffs) == reals
    for name, (coeff, eqn) in coeffs.items():
        assert coeff.output.shape == value.inputs[name].shape + value.output.shape
        assert isinstance(eqn, str)
    points = {k: rng.normal(size=value.inputs[k].shape) for k in reals}
    actual = const
    for name, (coeff, eqn) in coeffs.items():
        actual = actual + fc.Einsum(eqn, coeff, fc.Tensor(points[name]))
    expected = value(**points)
    if expected.inputs:
        actual = actual.align(tuple(expected.inputs))
    # numpy oracle for the einsum cases, the funsor evaluation otherwise
    np.testing.assert_allclose(actual.data, expected.data, rtol=1e-9, atol=1e-12)
    if "x" in points and len(reals) == len(value.inputs) == 1:
        flat = points["x"].reshape(-1)
        np.testing.assert_allclose(
            np.asarray(actual.data).reshape(-1),
            np.asarray(const.data).reshape(-1) + flat @ extract_affine_flat(value)[1]["x"].data)


def test_einsum_structure():
    a = fc.Tensor(np.ones((2, 3)))
    x, y = fc.Variable("x", fc.Reals[3]), fc.Variable("y", fc.Reals[2])
    assert is_affine(fc.Einsum("ab,b->a", a, x))
    assert not is_affine(fc.Einsum("a,a->", x, x))            # quadratic
    assert not is_affine(fc.Einsum("ab,a,b->", a, y, x))      # bilinear
    assert extract_affine(fc.Einsum("a,a->", x, x)) is None
