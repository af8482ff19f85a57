"""A new user's tries of Gaussians with NaN data (h40): a switching filter fed a NaN
observation, or a Gaussian whose square-root precision holds NaN, raised "cannot marginalize
x: its precision block has rank 0 < 1 ... add a prior", blaming a flat density; the error now
says the Gaussian holds NaN and where. Oracle: the closed-form normalizer of the finite one."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops


def test_nan_precision_is_named_not_called_flat():
    prec_sqrt = np.array([[[2.0]], [[3.0]]])  # precisions 4 and 9, white_vec 0: mean 0
    g = fc.Gaussian(white_vec=np.zeros((2, 1)), prec_sqrt=prec_sqrt,
                    inputs={"i": fc.Bint[2], "x": fc.Real})
    np.testing.assert_allclose(g.reduce(ops.logaddexp, "x").data,
                               0.5 * np.log(2 * np.pi / np.array([4.0, 9.0])))
    bad = fc.Gaussian(white_vec=np.zeros((2, 1)), prec_sqrt=np.array([[[2.0]], [[np.nan]]]),
                      inputs={"i": fc.Bint[2], "x": fc.Real})
    with pytest.raises(ValueError, match=r"cannot marginalize x: its Gaussian holds NaN at "
                                         r"batch index \(1,\)"):
        bad.reduce(ops.logaddexp, "x")
