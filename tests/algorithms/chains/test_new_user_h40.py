"""A new user's tries of ``markov_map`` under ``jax.jit`` (h40): a batch entry whose best
score is NaN (NaN steps) or -inf (mass zero) came back beside a path of zeros that passed for
an answer (eagerly both raise); its states are now -1, as ``infer_discrete`` gives, and the
other entries keep their Viterbi paths. A boundary factor sharing no name with the chain (a
typo) was summed out on its own. Oracle: brute force over every path."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals

T, K = 3, 2
INPUTS = {"t": fc.Bint[T], "b": fc.Bint[3], "x": fc.Bint[K], "y": fc.Bint[K]}


def test_jit_void_entries_get_minus_one_and_the_others_brute_force_paths():
    steps = np.random.default_rng(3).standard_normal((T, 3, K, K))
    steps[1, 1, 0, 1] = np.nan
    steps[:, 2, :, :] = -np.inf

    def run(s):
        score, path = markov_map(fc.Tensor(s, INPUTS), "t", {"x": "y"})
        return score.data, path["x"].data

    score, path = jax.jit(run)(jnp.asarray(steps))
    paths = list(itertools.product(range(K), repeat=T + 1))
    scores = [sum(steps[t, 0, p[t], p[t + 1]] for t in range(T)) for p in paths]
    np.testing.assert_allclose(float(score[0]), max(scores), rtol=1e-6)
    assert tuple(np.asarray(path[:, 0]).tolist()) == paths[int(np.argmax(scores))]
    assert np.isnan(float(score[1])) and float(score[2]) == -np.inf
    assert (np.asarray(path[:, 1:]) == -1).all()


def test_boundary_factor_sharing_no_name_is_refused():
    # A typo'd boundary factor was summed out on its own: the total moved by its log-sum,
    # and the init it was meant to be was silently missing.
    steps = np.random.default_rng(4).standard_normal((T, K, K))
    chain = fc.Tensor(torch.tensor(steps), {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
    init = np.array([0.0, -2.0])
    total, _ = markov_marginals(ops.logaddexp, ops.add, chain, "t", {"x": "y"},
                                fc.Tensor(torch.tensor(init), {"x": fc.Bint[K]}))
    paths = itertools.product(range(K), repeat=T + 1)
    brute = np.logaddexp.reduce([init[p[0]] + sum(steps[t, p[t], p[t + 1]] for t in range(T))
                                 for p in paths])
    np.testing.assert_allclose(float(total.data), brute)
    with pytest.raises(ValueError, match=r"boundary factor 0 over \{'xx': Bint\[2\]\} shares "
                                         r"no name with the chain"):
        markov_marginals(ops.logaddexp, ops.add, chain, "t", {"x": "y"},
                         [fc.Tensor(torch.tensor(init), {"xx": fc.Bint[K]})])
