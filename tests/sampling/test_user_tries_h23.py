"""A new user's tries of ``Funsor.sample`` (h23): drawing a ``Bint[0]`` name (no value to
draw: enumeration has no outcome) raises naming it (was numpy's "argmax of an empty
sequence"); ordinary draws follow the enumerated softmax."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.montecarlo import extract_samples


def test_sampling_an_empty_domain_raises_and_draws_follow_softmax():
    logits = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]])
    t = fc.Tensor(logits, {"i": fc.Bint[2], "j": fc.Bint[3]})
    n = 4000
    points = extract_samples(t.sample(frozenset({"i", "j"}), {"particle": fc.Bint[n]},
                                      rng_key=0))
    counts = np.zeros((2, 3))
    np.add.at(counts, (np.asarray(points["i"].data), np.asarray(points["j"].data)), 1)
    np.testing.assert_allclose(counts / n, np.exp(logits) / np.exp(logits).sum(), atol=0.03)
    empty = fc.Tensor(np.zeros((2, 0)), {"i": fc.Bint[2], "j": fc.Bint[0]})
    with pytest.raises(ValueError, match=r"\['j'\] are Bint\[0\]"):
        empty.sample(frozenset({"j"}), {"particle": fc.Bint[3]}, rng_key=0)
