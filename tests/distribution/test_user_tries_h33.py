"""A new user's tries of the distribution families (h33): torch.distributions' other
parametrizations (``Categorical(logits=)``, ``MultivariateNormal(covariance_matrix=)``, a
covariance passed where funsor takes ``scale_tril``) raise naming the form that works, and
that form gives scipy's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import scipy.stats

from funsor_core.distribution import Categorical, CategoricalLogits, MultivariateNormal

COV = np.array([[2.0, 0.3], [0.3, 1.0]])
LOC = np.array([0.5, -1.0])
VALUE = np.array([0.1, 0.2])


def test_categorical_logits_points_to_categorical_logits():
    logits = np.array([0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match=r"'logits'.*use CategoricalLogits\(logits, value\)"):
        Categorical(logits=logits, value=1)
    np.testing.assert_allclose(CategoricalLogits(logits, value=1).data,
                               scipy.special.log_softmax(logits)[1])


def test_multivariate_normal_covariance_points_to_its_cholesky_factor():
    with pytest.raises(TypeError, match=r"'covariance_matrix'.*scale_tril=np.linalg.cholesky"):
        MultivariateNormal(LOC, covariance_matrix=COV, value=VALUE)
    with pytest.raises(TypeError, match=r"'precision_matrix'.*inv\(precision\)"):
        MultivariateNormal(LOC, precision_matrix=np.linalg.inv(COV), value=VALUE)
    with pytest.raises(ValueError, match=r"(?s)lower triangular.*\(a covariance\? pass "
                                         r"scale_tril=np.linalg.cholesky\(covariance\)\)"):
        MultivariateNormal(LOC, COV, value=VALUE)  # positional: funsor's scale_tril
    d = MultivariateNormal(LOC, np.linalg.cholesky(COV), value=VALUE)
    np.testing.assert_allclose(d.data, scipy.stats.multivariate_normal(LOC, COV).logpdf(VALUE))
    # a lower triangular factor that is not symmetric gets no covariance hint
    with pytest.raises(ValueError, match=r"positive diagonal, but it is [^(]*$"):
        MultivariateNormal(LOC, np.array([[1.0, 0.0], [2.0, -1.0]]), value=VALUE)
