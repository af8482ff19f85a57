"""A new user's tries of ``to_funsor`` / ``to_data`` (h33): the README's round trip of a
torch Normal. Under exact a Normal of a Variable value is a Gaussian, and ``to_data`` of it
now says to convert under ``lazy``; under ``lazy`` the round trip gives the torch
distribution back (its log densities the oracle)."""

from __future__ import annotations

import pytest
import torch

import funsor_core as fc
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
