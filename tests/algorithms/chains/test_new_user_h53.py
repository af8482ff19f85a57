"""``markov_marginals`` of a chain with zero-probability evidence under ``jax.jit`` (h53):
eagerly it raises (no posterior), but under ``jit`` it returned the -inf total beside pairs of
0, which pass for marginals. The pairs of a dead batch entry are now NaN; a live entry beside
it is checked against brute-force enumeration of every path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_marginals

T, K = 3, 2


def _brute_pairs(logits):
    # p(x_t = a, x_{t+1} = b) by enumerating every path of T + 1 states.
    paths = list(itertools.product(range(K), repeat=T + 1))
    scores = np.array([sum(logits[t, p[t], p[t + 1]] for t in range(T)) for p in paths])
    total = logsumexp(scores)
    pairs = np.zeros((T, K, K))
    for p, s in zip(paths, scores):
        for t in range(T):
            pairs[t, p[t], p[t + 1]] += np.exp(s - total)
    return total, pairs


def test_dead_entry_under_jit_gives_nan_pairs_beside_a_live_entry():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    logits = np.random.default_rng(0).normal(size=(T, 2, K, K))
    logits[1, 1] = -np.inf  # batch entry b=1: step 1 forbids every transition

    @jax.jit
    def run(x):
        steps = fc.Tensor(x, {"t": fc.Bint[T], "b": fc.Bint[2], "x_prev": fc.Bint[K],
                              "x_curr": fc.Bint[K]})
        total, pairs = markov_marginals(ops.logaddexp, ops.add, steps, "t",
                                        {"x_prev": "x_curr"})
        return total.align(("b",)).data, pairs.align(("t", "b", "x_prev", "x_curr")).data

    total, pairs = (np.asarray(a) for a in run(jnp.array(logits, dtype=jnp.float32)))
    want_total, want_pairs = _brute_pairs(logits[:, 0])
    np.testing.assert_allclose(total[0], want_total, rtol=1e-5)
    np.testing.assert_allclose(pairs[:, 0], want_pairs, atol=1e-5)
    assert total[1] == -np.inf and np.isnan(pairs[:, 1]).all()  # was 0 everywhere


def test_swapped_semiring_raises_where_it_gave_a_number():
    # (add, logaddexp) is no semiring: the chain gave [[11.06, ...]] where the sum over paths
    # of the logaddexp along them is [[16.46, ...]]; it now raises naming the swap.
    from funsor_core.sum_product import (
        MarkovProduct,
        naive_sequential_sum_product,
        sequential_sum_product,
    )

    logits = np.random.default_rng(1).normal(size=(T, K, K))
    steps = fc.Tensor(logits, {"t": fc.Bint[T], "x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})
    swapped = (r"prod_op ops.logaddexp does not distribute over sum_op ops.add.*"
               r"arguments are swapped")
    for fn in (MarkovProduct, sequential_sum_product, naive_sequential_sum_product):
        with pytest.raises(ValueError, match=swapped):
            fn(ops.add, ops.logaddexp, steps, "t", {"x_prev": "x_curr"})
    got = MarkovProduct(ops.logaddexp, ops.add, steps, "t", {"x_prev": "x_curr"})
    want = np.array([[logsumexp([sum(logits[t, p[t], p[t + 1]] for t in range(T))
                                 for p in itertools.product(range(K), repeat=T + 1)
                                 if p[0] == a and p[-1] == b]) for b in range(K)]
                     for a in range(K)])
    np.testing.assert_allclose(got.align(("x_prev", "x_curr")).data, want, rtol=1e-12)


def test_a_scalar_numpy_length_is_one_length_for_the_chain():
    # A 0-d numpy length went to torch as shape (1,) and was refused as "not one number".
    logits = np.random.default_rng(2).normal(size=(T, K, K))
    steps = fc.Tensor(logits, {"t": fc.Bint[T], "x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})
    total, _ = markov_marginals(ops.logaddexp, ops.add, steps, "t", {"x_prev": "x_curr"},
                                lengths=fc.Tensor(np.array(2), {}, T + 1))
    want = logsumexp([logits[0, a, b] + logits[1, b, c]
                      for a, b, c in itertools.product(range(K), repeat=3)])
    np.testing.assert_allclose(float(total.data), want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"lengths must be integers in 0\.\.3 .* got \[7\]"):
        markov_marginals(ops.logaddexp, ops.add, steps, "t", {"x_prev": "x_curr"},
                         lengths=fc.Tensor(np.array(7), {}, 10))
