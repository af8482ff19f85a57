"""A new user's tries of ``moment_matching`` (h40): a mixture with a NaN (or +inf) log weight
collapsed to a NaN Gaussian, and ``fc.moments`` of it blamed a singular precision ("the
integral diverges ... add a prior"); it now says the Gaussian holds NaN. Oracle: the mixture's
mean and variance in closed form for the finite weights."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from interpretations import moment_matching

X = fc.Variable("x", fc.Real)
LOC = np.array([-1.0, 2.0])


def _collapsed(log_w):
    mixture = (fc.Tensor(log_w, {"i": fc.Bint[2]})
               + Normal(fc.Tensor(LOC, {"i": fc.Bint[2]}), 1.0, value=X))
    with moment_matching, np.errstate(invalid="ignore"):
        return mixture.reduce(ops.logaddexp, "i")


def test_nan_weight_is_named_not_called_singular():
    w = np.array([0.3, 0.7])
    m = fc.moments(_collapsed(np.log(w)))
    mean = (w * LOC).sum()
    np.testing.assert_allclose(m.mean["x"].data, mean)
    np.testing.assert_allclose(m.covariance.data, [[(w * (1 + LOC ** 2)).sum() - mean ** 2]])
    for bad in ([np.nan, 0.0], [np.inf, 0.0]):
        with pytest.raises(ValueError, match=r"Gaussian over \['x'\] holds NaN \(a NaN or "
                                             r"\+inf log weight"):
            fc.moments(_collapsed(np.array(bad)))
