"""A new user's tries of ``to_funsor`` / ``to_data`` (h33): the README's round trip of a
torch Normal. Under exact a Normal of a Variable value is a Gaussian, and ``to_data`` of it
now says to convert under ``lazy``; under ``lazy`` the round trip gives the torch
distribution back (its log densities the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core.terms.inputs import DomainError
from interpretations import lazy


def test_to_data_of_an_eager_normal_says_to_convert_under_lazy():
    fc.set_backend("torch")
    try:
        raw = torch.distributions.Normal(torch.tensor([0.0, 1.0, -2.0]), torch.tensor(2.0))
        eager = fc.to_funsor(raw, fc.Real, {-1: "i"})
        with pytest.raises(ValueError, match=r"convert it to a torch distribution, build it "
                                             r"\(or call to_funsor\) under `with lazy:`"):
            fc.to_data(eager, {"i": -1})
        with lazy:
            kept = fc.to_funsor(raw, fc.Real, {-1: "i"})
        back = fc.to_data(kept, {"i": -1})
        value = torch.tensor([0.5, -0.3, 1.0])
        torch.testing.assert_close(back.log_prob(value), raw.log_prob(value))
        # the eager Gaussian still has the right log density at the same values
        at = fc.Tensor(value, {"i": fc.Bint[3]})
        torch.testing.assert_close(eager(value=at).data, raw.log_prob(value))
    finally:
        fc.set_backend("numpy")


def test_fractional_floats_for_a_bint_output_raise_and_whole_ones_convert():
    whole = fc.to_funsor(np.array([0.0, 2.0, 1.0]), fc.Bint[3], {-1: "n"})
    np.testing.assert_array_equal(whole.data, [0, 2, 1])  # the same integers
    # was truncated silently to 2
    with pytest.raises(DomainError, match=r"whole numbers .*got \[2.5\]"):
        fc.to_funsor(np.array([0.0, 2.5, 1.0]), fc.Bint[3], {-1: "n"})


def test_dims_named_wrongly_raise_naming_the_batch_shape():
    a = np.arange(24.0).reshape(2, 3, 4)
    with pytest.raises(DomainError, match=r"batch shape \(2, 3\), which excludes the output "
                                          r"shape \(4,\)"):
        fc.to_funsor(a, fc.Reals[4], {-3: "i", -2: "j"})  # dims counted with the output's
    f = fc.to_funsor(a, fc.Reals[4], {-2: "i", -1: "j"})
    np.testing.assert_array_equal(fc.to_data(f, {"i": -1, "j": -2}), a.transpose(1, 0, 2))
    for bad in ({"i": 0, "j": 1}, {"i": -1, "j": -1}):  # were an IndexError, a reshape error
        with pytest.raises(ValueError, match=r"distinct negative batch dims"):
            fc.to_data(f, bad)
    np.testing.assert_array_equal(fc.to_data(f, {"i": np.int64(-2), "j": -1}), a)
