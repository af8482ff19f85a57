"""markov_product's lengths over a batch name the chain lacks (#28/#29, h29).

A chain batched by ``b`` with lengths over ``bb`` (a typo) silently gained a batch input; it
must raise naming the name and the chain's inputs. A transition shared by every sequence (no
batch input of its own) still takes its batch from the lengths. Oracle: per-sequence
products of the transition matrices in numpy.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_product

RNG = np.random.default_rng(29)


def test_lengths_over_a_name_the_batched_chain_lacks_raise():
    steps = fc.Tensor(np.log(RNG.random((3, 2, 2, 2))),
                      {"t": fc.Bint[3], "b": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]})
    n = fc.Tensor(np.array([1, 3]), {"bb": fc.Bint[2]})
    with pytest.raises(ValueError, match=r"lengths has the batch inputs \['bb'\], which the "
                                         r"chain lacks; the chain's inputs are \['t', 'b', "):
        markov_product(ops.logaddexp, ops.add, steps, "t", {"x": "y"}, lengths=n)
    good = markov_product(ops.logaddexp, ops.add, steps, "t", {"x": "y"}, lengths=n(bb="b"))
    p = np.exp(steps.data)
    for b, length in enumerate([1, 3]):
        expected = np.linalg.multi_dot([p[t, b] for t in range(length)] + [np.eye(2)])
        np.testing.assert_allclose(np.exp(good.align(("b", "x", "y")).data[b]), expected)


def test_a_shared_transition_takes_its_batch_from_the_lengths():
    a = RNG.random((2, 2))
    n = fc.Tensor(np.array([1, 3]), {"bb": fc.Bint[2]})
    out = markov_product(ops.logaddexp, ops.add, fc.Tensor(np.log(a), {"x": fc.Bint[2],
                                                                        "y": fc.Bint[2]}),
                         fc.Variable("t", fc.Bint[3]), {"x": "y"}, lengths=n)
    data = np.exp(out.align(("bb", "x", "y")).data)
    for b, length in enumerate([1, 3]):
        np.testing.assert_allclose(data[b], np.linalg.matrix_power(a, length))
