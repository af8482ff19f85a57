"""funsor_core.testing.assert_close on compound terms and Deltas: equal structure with close
children passes; a different number or structure fails. Oracle: the terms' own arrays."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.testing import assert_close


def _sum(shift):
    g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    return g + fc.Tensor(np.array(0.5 + shift))


def test_compound_terms_compare_by_children():
    assert_close(_sum(0.0), _sum(1e-9))
    with pytest.raises(AssertionError):
        assert_close(_sum(0.0), _sum(1e-2))


def test_deltas_compare_by_points_and_log_densities():
    a = fc.Delta("x", fc.Tensor(np.array(1.0)), fc.Tensor(np.array(0.25)))
    b = fc.Delta("x", fc.Tensor(np.array(1.0 + 1e-9)), fc.Tensor(np.array(0.25)))
    assert_close(a, b)
    with pytest.raises(AssertionError):
        assert_close(a, fc.Delta("x", fc.Tensor(np.array(2.0)), fc.Tensor(np.array(0.25))))


def test_assert_close_looks_through_a_lazy_align_but_not_past_a_difference():
    from funsor_core.testing import assert_close, random_gaussian, random_tensor
    from interpretations import lazy

    g = random_gaussian({"i": fc.Bint[2], "x": fc.Real}) + random_tensor({"i": fc.Bint[2]})
    with lazy:
        aligned = g.align(("x", "i"))
    assert type(aligned).__name__ == "Align"
    assert_close(aligned, g)
    assert_close(g, aligned)
    with pytest.raises(AssertionError):
        assert_close(aligned, g + 1.0)
