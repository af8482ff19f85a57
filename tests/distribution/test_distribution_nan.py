"""NaN parameters given as Python numbers (or Numbers) raise when a distribution is built, on
the fast Normal path and the general path alike, naming the family and the parameter.
Arrays are not checked for NaN (a comparison per build costs more than 3% of a small
``Normal``'s construction on torch; issue #28)."""

from __future__ import annotations

import pytest

import funsor_core as fc
from funsor_core import distribution as D

Y = fc.Variable("y", fc.Real)
NAN = float("nan")


@pytest.mark.parametrize("build", [
    lambda: D.Normal(NAN, 1.0, Y),  # the fast path declines, the general path raises
    lambda: D.Normal(fc.Number(NAN), 1.0, "y"),
    lambda: D.Normal(NAN, 1.0),
    lambda: D.Laplace(NAN, 1.0, Y),
])
def test_nan_number_loc_raises_naming_the_parameter(build):
    with pytest.raises(ValueError, match=r"parameter 'loc' must be a number \(not NaN\)"):
        build()


def test_nan_number_in_a_positive_parameter_raises():
    with pytest.raises(ValueError, match="Gamma: parameter 'concentration'"):
        D.Gamma(NAN, 1.0, Y)
