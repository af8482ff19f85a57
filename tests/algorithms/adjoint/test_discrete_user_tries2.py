"""A new user's tries of infer_discrete (round 2): NaN and +inf log factors."""

import numpy as np
import pytest

import funsor_core as fc


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_posinf_log_factor_raises_naming_the_entry(bad):
    # marginals were NaN while map() silently picked a state
    f = fc.Tensor(np.array([[0.0, -1.0], [bad, 0.5]]), {"a": fc.Bint[2], "b": fc.Bint[2]})
    with pytest.raises(ValueError, match=r"factor 0 has the log value .* at \{'a': 1, 'b': 0\}"):
        fc.infer_discrete([f], query="map")


def test_neg_inf_log_factor_is_probability_zero():
    logits = np.array([[0.0, -np.inf], [-1.0, 0.5]])
    f = fc.Tensor(logits, {"a": fc.Bint[2], "b": fc.Bint[2]})
    p = np.exp(logits) / np.exp(logits).sum()  # brute force
    marginals = fc.infer_discrete([f], query="marginals")
    assert np.allclose(marginals["a"].data, p.sum(1))
    assert np.allclose(marginals["b"].data, p.sum(0))
