"""A chain of no steps is refused by every chain function (#28, h92).

``windowed_filter`` with ``time`` of ``Bint[0]`` returned ``init`` renamed, where
``MarkovProduct``, ``markov_product``, ``markov_marginals``, ``markov_map`` and
``sequential_sum_product`` refuse an empty chain (funsor 0.4.8's asserts). Now every one
raises the same ValueError naming the time and ``Bint[0]``; a sequence of no steps inside a
batch is ``lengths[b] = 0`` on a time axis of T >= 1. Oracles: brute-force enumeration of
every path (T = 1 and the ragged batch) in numpy.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, ops
from funsor_core.sum_product import (
    MarkovProduct,
    markov_map,
    markov_marginals,
    markov_product,
    sequential_sum_product,
)

STEP = {"s": "s2"}
EMPTY = r"over 't': the chain is empty \(('t' is )?Bint\[0\]\); it needs at least one step"


def _chain(T, K=3, seed=0):
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(T, K, K))
    init = rng.normal(size=K)
    trans = fc.Tensor(steps, {"t": Bint[T], "s": Bint[K], "s2": Bint[K]})
    return steps, init, trans, fc.Tensor(init, {"s": Bint[K]})


def _gaussian_chain(T):
    trans = fc.Gaussian(mean=np.zeros((T, 2)), covariance=np.eye(2),
                        inputs={"t": Bint[T], "x": fc.Real, "x2": fc.Real})
    init = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    return trans, init


CALLS = {
    "windowed_filter": lambda tr, i: fc.windowed_filter(ops.logaddexp, ops.add, tr, "t", STEP, i),
    "windowed_filter_lengths": lambda tr, i: fc.windowed_filter(
        ops.logaddexp, ops.add, tr, "t", STEP, i, lengths=fc.Tensor(np.array([0]), {"b": Bint[1]})),
    "MarkovProduct": lambda tr, i: MarkovProduct(ops.logaddexp, ops.add, tr, "t", STEP),
    "markov_product": lambda tr, i: markov_product(ops.logaddexp, ops.add, tr, "t", STEP),
    "sequential_sum_product": lambda tr, i: sequential_sum_product(
        ops.logaddexp, ops.add, tr, fc.Variable("t", Bint[0]), STEP),
    "markov_marginals": lambda tr, i: markov_marginals(ops.logaddexp, ops.add, tr, "t", STEP, [i]),
    "markov_map": lambda tr, i: markov_map(tr, "t", STEP, [i]),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_empty_chain_refused_by_every_chain_function(call):
    _, _, trans, init = _chain(0)
    with pytest.raises(ValueError, match=EMPTY):
        CALLS[call](trans, init)


@pytest.mark.parametrize("method", ["gpb2", "imm"])
def test_empty_gaussian_chain_refused_by_both_filters(method):
    trans, init = _gaussian_chain(0)
    with pytest.raises(ValueError, match=EMPTY):
        fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", {"x": "x2"}, init, method=method)


def test_one_step_chain_agrees_across_functions_with_enumeration():
    steps, init, trans, init_t = _chain(1)
    expected = np.logaddexp.reduce(init[:, None] + steps[0], axis=0)  # message over s2
    message = fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", STEP, init_t)
    np.testing.assert_allclose(message.align(("s2",)).data, expected)
    product = markov_product(ops.logaddexp, ops.add, trans, "t", STEP).align(("s", "s2"))
    np.testing.assert_allclose(product.data, steps[0])
    total, _ = markov_marginals(ops.logaddexp, ops.add, trans, "t", STEP, [init_t])
    np.testing.assert_allclose(total.data, np.logaddexp.reduce(expected))


def test_zero_length_entry_of_a_ragged_batch_gets_init():
    steps, init, trans, init_t = _chain(2)
    lengths = fc.Tensor(np.array([0, 1, 2]), {"b": Bint[3]})
    out = fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", STEP, init_t,
                             lengths=lengths).align(("b", "s2")).data
    expected = [init]  # no step: init under the curr name
    for n in (1, 2):
        msg = init
        for t in range(n):
            msg = np.logaddexp.reduce(msg[:, None] + steps[t], axis=0)
        expected.append(msg)
    np.testing.assert_allclose(out, np.stack(expected))
