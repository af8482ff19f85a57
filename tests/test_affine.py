"""Affine recognition (structural) and coefficient extraction, against coefficients written
by hand."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.affine import extract_affine, is_affine


def test_extract_matrix_vector_affine():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=2)
    y = fc.Variable("y", fc.Reals[3])
    z = fc.Variable("z", fc.Real)
    const, coeffs = extract_affine(y @ fc.Tensor(a) + b + 2.0 * z)
    np.testing.assert_allclose(const.data, b)
    np.testing.assert_allclose(coeffs["y"].data, a)
    np.testing.assert_allclose(coeffs["z"].data, [[2.0, 2.0]])


def test_batched_coefficients():
    rng = np.random.default_rng(1)
    w = fc.Tensor(rng.normal(size=4), {"i": fc.Bint[4]})
    x = fc.Variable("x", fc.Real)
    const, coeffs = extract_affine(w * x + 1.0)
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
    const, coeffs = extract_affine(value)
    np.testing.assert_allclose(const.data, 1.0)
    np.testing.assert_allclose(coeffs["y"].data, [[3.0]])  # 0 + 1 + 2


def test_coefficients_match_a_numpy_oracle():
    # v(y) = y @ A + b is recovered exactly; check at random points against numpy.
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=2)
    y = fc.Variable("y", fc.Reals[3])
    const, coeffs = extract_affine(y @ fc.Tensor(a) - fc.Tensor(b) * 0.5)
    for point in rng.normal(size=(4, 3)):
        np.testing.assert_allclose(const.data + point @ coeffs["y"].data, point @ a - 0.5 * b)
