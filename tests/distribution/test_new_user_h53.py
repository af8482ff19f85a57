"""Values outside a discrete family's support (h53). The Tensor constructor now refuses
integer data outside its ``Bint[n]`` bound, but a Categorical's value outside ``0..n-1``
(a number or a concrete 0-d array) is a value outside the support, whose log density stays
-inf, as the README promises; in range it matches scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from funsor_core.distribution import Categorical

P = np.array([0.2, 0.3, 0.5])


@pytest.mark.parametrize("value", [5, -1, 1.5, np.array(3)])
def test_categorical_value_outside_support_is_minus_inf(value):
    assert float(Categorical(probs=P, value=value).data) == -np.inf


@pytest.mark.parametrize("value", [0, 2, np.array(1)])
def test_categorical_value_in_support_matches_scipy(value):
    want = stats.multinomial(1, P).logpmf(np.eye(3)[int(value)])
    np.testing.assert_allclose(float(Categorical(probs=P, value=value).data), want)
