"""A new user's tries of ``markov_map`` (h33): NaN steps gave a NaN score beside a definite
looking path (all zeros); eagerly that now raises naming the batch entry, and the entries
without NaN keep their brute-force Viterbi path and score."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core.sum_product import markov_map


def test_nan_steps_raise_naming_the_entry_and_clean_entries_match_brute_force():
    rng = np.random.default_rng(2)
    steps = rng.standard_normal((3, 2, 2, 2))  # (t, b, x, y)
    inputs = {"t": fc.Bint[3], "b": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]}
    score, path = markov_map(fc.Tensor(torch.tensor(steps, requires_grad=True), inputs),
                             "t", {"x": "y"})
    for b in range(2):  # brute force over the 2^4 paths
        paths = list(itertools.product(range(2), repeat=4))
        scores = [sum(steps[t, b, p[t], p[t + 1]] for t in range(3)) for p in paths]
        np.testing.assert_allclose(score.data[b].item(), max(scores))
        assert tuple(path["x"].data[:, b].tolist()) == paths[int(np.argmax(scores))]
    bad = steps.copy()
    bad[1, 1, 0, 1] = np.nan
    with pytest.raises(ValueError, match=r"best score is NaN at \{'b': 1\}"):
        markov_map(fc.Tensor(torch.tensor(bad), inputs), "t", {"x": "y"})
