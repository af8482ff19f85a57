"""A switching funsor user's programs (h67): a sample input whose name is already an input
of the sampled term with another domain raised nothing and was dropped (the draws silently
indexed by the term's own ``i``). It raises naming both domains now; one of the same domain
is still dropped, as in funsor 0.4.8 (the term's input already indexes the draws)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.montecarlo import extract_samples

LOGITS = np.array([[np.log(0.2), np.log(0.8), -np.inf], [-np.inf, -np.inf, 0.0]])  # rows i, cols j


def _term():
    return fc.Tensor(LOGITS, {"i": fc.Bint[2], "j": fc.Bint[3]})


def test_sample_input_clashing_with_an_input_raises():
    with pytest.raises(fc.terms.inputs.DomainError,
                       match="sample_inputs 'i': Bint\\[5\\] clashes with the term's input 'i' "
                             "of domain Bint\\[2\\]"):
        _term().sample(frozenset({"j"}), {"i": fc.Bint[5]}, rng_key=0)


def test_sample_input_of_the_same_domain_is_the_terms_own():
    s = _term().sample(frozenset({"j"}), {"i": fc.Bint[2]}, rng_key=0)
    assert dict(s.inputs) == {"i": fc.Bint[2], "j": fc.Bint[3]}
    # row 1 has all its mass on j = 2; row 0 none on j = 2: each row drew from its own row
    j = extract_samples(s)["j"].align(("i",)).data
    assert j[1] == 2 and LOGITS[0, j[0]] > -np.inf


def test_sample_input_with_a_fresh_name_adds_draws():
    s = _term().sample(frozenset({"j"}), {"n": fc.Bint[4]}, rng_key=0)
    j = extract_samples(s)["j"].align(("n", "i")).data
    assert j.shape == (4, 2) and (j[:, 1] == 2).all()
    assert np.isfinite(LOGITS[0][j[:, 0]]).all()
