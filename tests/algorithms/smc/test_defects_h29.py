"""kl_divergence validates its arguments as kl_ntf does (#28/#29, h29).

Oracle: the generalized KL divergence written out in numpy, with 0 log 0 = 0.
"""

import numpy as np
import pytest

from funsor_core.allocation import kl_divergence


def numpy_kl(x, x_hat):
    x, x_hat = np.asarray(x, float), np.asarray(x_hat, float)
    terms = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / x_hat), 0.0)
    return float(np.sum(terms - x + x_hat))


def test_valid_arrays_match_numpy():
    x, x_hat = np.array([[2.0, 0.0], [1.0, 3.0]]), np.array([[1.0, 0.5], [2.0, 3.0]])
    assert float(kl_divergence(x, x_hat)) == pytest.approx(numpy_kl(x, x_hat), rel=1e-12)


@pytest.mark.parametrize("x, x_hat, name", [
    ([-1.0, 2.0], [1.0, 2.0], "X"),
    ([np.nan, 2.0], [1.0, 2.0], "X"),
    ([1.0, 2.0], [1.0, -0.5], "X_hat"),
    ([1.0, 2.0], [np.nan, 2.0], "X_hat"),
])
def test_negative_or_nan_entries_raise_naming_the_argument(x, x_hat, name):
    with pytest.raises(ValueError, match=rf"kl_divergence: {name} must be nonnegative"):
        kl_divergence(np.array(x), np.array(x_hat))


def test_shapes_must_agree():
    with pytest.raises(ValueError, match=r"X has shape \(2, 3\) but X_hat has shape \(1, 3\)"):
        kl_divergence(np.ones((2, 3)), np.ones((1, 3)))


def test_traced_invalid_data_give_nan_under_jit():
    jax = pytest.importorskip("jax")
    fn = jax.jit(kl_divergence)
    x, x_hat = np.array([2.0, 1.0]), np.array([1.0, 3.0])
    assert float(fn(x, x_hat)) == pytest.approx(numpy_kl(x, x_hat), rel=1e-12)
    assert np.isnan(float(fn(-x, x_hat))) and np.isnan(float(fn(x, -x_hat)))
