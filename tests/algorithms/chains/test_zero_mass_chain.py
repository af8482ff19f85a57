"""A chain of mass zero (every path has a log potential of -inf) has no posterior: its
marginals and best path are undefined, so ``markov_marginals`` and ``markov_map`` raise naming
the batch entry, as ``infer_discrete`` does, where a live entry beside it is checked against
brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.discrete_smooth import markov_map, markov_marginals

T, K = 3, 2


def _steps(torch, dead_entry: bool):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(T, 2, K, K))
    if dead_entry:
        logits[1, 1] = -np.inf  # batch entry b=1: step 1 forbids every transition
    return logits, fc.Tensor(torch.tensor(logits), {"t": fc.Bint[T], "b": fc.Bint[2],
                                                    "x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})


def _brute_total(logits, b):
    return logsumexp([sum(logits[t, b, path[t], path[t + 1]] for t in range(T))
                      for path in itertools.product(range(K), repeat=T + 1)])


def test_a_chain_of_mass_zero_has_no_marginals_and_no_best_path():
    torch = pytest.importorskip("torch")
    logits, steps = _steps(torch, dead_entry=True)
    assert _brute_total(logits, 1) == -np.inf and np.isfinite(_brute_total(logits, 0))
    dead = r"the chain has mass zero at \{'b': 1\}"
    with pytest.raises(ValueError, match="markov_marginals: " + dead):
        markov_marginals(ops.logaddexp, ops.add, steps, "t", {"x_prev": "x_curr"})
    with pytest.raises(ValueError, match="markov_map: " + dead):
        markov_map(steps, "t", {"x_prev": "x_curr"})
    logits, steps = _steps(torch, dead_entry=False)  # every entry alive: totals as enumerated
    total, pairs = markov_marginals(ops.logaddexp, ops.add, steps, "t", {"x_prev": "x_curr"})
    np.testing.assert_allclose(total.data.numpy(), [_brute_total(logits, b) for b in range(2)])
    np.testing.assert_allclose(pairs.data.sum((-1, -2)).numpy(), np.ones((T, 2)))
