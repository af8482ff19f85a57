"""Affine recognition by probing, against coefficients written by hand."""

from __future__ import annotations

import numpy as np

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
