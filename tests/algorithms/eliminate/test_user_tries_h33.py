"""A new user's tries of the elimination entry points (h33): one factor passed bare where
a list is expected (``sum_product``, ``infer_discrete``, ``markov_marginals``,
``markov_map``) is a list of one; it failed with "a funsor of output Real has no len()"."""

from __future__ import annotations

import itertools

import numpy as np
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals, sum_product


def _tables():
    rng = np.random.default_rng(0)
    return np.log(rng.dirichlet(np.ones(3))), np.log(rng.dirichlet(np.ones(3), 3))


def test_sum_product_and_infer_discrete_take_a_bare_factor():
    init, trans = _tables()
    f = fc.Tensor(init[:, None] + trans, {"a": fc.Bint[3], "b": fc.Bint[3]})
    joint = np.exp(init[:, None] + trans)  # the oracle: the table itself
    np.testing.assert_allclose(sum_product(ops.logaddexp, ops.add, f, {"a"}).data,
                               np.log(joint.sum(0)))
    np.testing.assert_allclose(sum_product(ops.logaddexp, ops.add, [f], {"a"}).data,
                               np.log(joint.sum(0)))
    marginals = fc.infer_discrete(f, query="marginals")
    np.testing.assert_allclose(marginals["b"].data, joint.sum(0) / joint.sum())
    best = fc.infer_discrete(f, query="map")
    assert (int(best["a"].data), int(best["b"].data)) == np.unravel_index(joint.argmax(), (3, 3))


def test_markov_marginals_and_map_take_a_bare_boundary_factor():
    init, trans = _tables()
    T = 3
    obs = np.random.default_rng(1).standard_normal((T, 3))
    first = fc.Tensor(torch.tensor(init), {"x": fc.Bint[3]})
    steps = fc.Tensor(torch.tensor(trans[None] + obs[:, None, :]),
                      {"t": fc.Bint[T], "x": fc.Bint[3], "y": fc.Bint[3]})
    # brute force over every path of T + 1 states
    paths = list(itertools.product(range(3), repeat=T + 1))
    scores = np.array([init[p[0]] + sum(trans[p[t], p[t + 1]] + obs[t, p[t + 1]]
                                        for t in range(T)) for p in paths])
    total, _ = markov_marginals(ops.logaddexp, ops.add, steps, "t", {"x": "y"}, first)
    np.testing.assert_allclose(total.data.numpy(), np.logaddexp.reduce(scores))
    score, path = markov_map(steps, "t", {"x": "y"}, first)
    np.testing.assert_allclose(score.data.numpy(), scores.max())
    assert tuple(path["x"].data.tolist()) == paths[scores.argmax()]
