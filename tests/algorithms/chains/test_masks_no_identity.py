"""Ragged chains of pairs with no identity transition (#28).

A masked step becomes the semiring's identity transition; ``(mul, mul)``, ``(add, add)`` and
``(logaddexp, mul)`` (funsor's left folds, no semirings) have none, nor has ``(max, mul)`` over
negative factors. ``markov_product(..., lengths=)`` of such a chain keeps each sequence's own
partial product step by step (the path of Gaussian chains); the functions that need the
identity (``masked_steps`` and the filters and smoothers built on it) refuse it by name.
Oracle: each sequence's left fold of its first ``lengths[b]`` steps in numpy.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, ops
from funsor_core.sum_product import MarkovProduct, markov_marginals, markov_product, masked_steps

PAIRS = {"mul-mul": (ops.mul, ops.mul, np.multiply.reduce, np.multiply),
         "add-add": (ops.add, ops.add, np.add.reduce, np.add),
         "logaddexp-mul": (ops.logaddexp, ops.mul, np.logaddexp.reduce, np.multiply),
         "max-mul": (ops.max, ops.mul, np.maximum.reduce, np.multiply),
         "min-mul": (ops.min, ops.mul, np.minimum.reduce, np.multiply)}


def _left_fold(steps, np_sum, np_prod):
    msg = steps[0]
    for step in steps[1:]:
        msg = np_sum(np_prod(msg[:, :, None], step[None]), axis=1)
    return msg


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_ragged_chain_of_any_pair_is_each_sequences_left_fold(pair, backend):
    sum_op, prod_op, np_sum, np_prod = PAIRS[pair]
    T, B = 4, 3
    steps = np.random.default_rng(len(pair)).normal(size=(T, B, 2, 2))  # negatives too
    lengths = np.array([1, 3, 4])
    if backend == "torch":
        torch = pytest.importorskip("torch")
        data, n = torch.tensor(steps), torch.tensor(lengths)
    else:
        data, n = steps, lengths
    trans = fc.Tensor(data, {"t": Bint[T], "b": Bint[B], "x": Bint[2], "y": Bint[2]})
    out = markov_product(sum_op, prod_op, trans, "t", {"x": "y"},
                         lengths=fc.Tensor(n, {"b": Bint[B]}))
    out = out.align(("b", "x", "y"))
    for b in range(B):
        expected = _left_fold(steps[:lengths[b], b], np_sum, np_prod)
        np.testing.assert_allclose(np.asarray(out.data[b]), expected, rtol=1e-12)


@pytest.mark.parametrize("pair", ["mul-mul", "add-add", "logaddexp-mul", "max-mul", "min-mul"])
def test_masking_a_chain_with_no_identity_is_refused_by_name(pair):
    sum_op, prod_op = PAIRS[pair][:2]
    steps = fc.Tensor(-np.ones((3, 2, 2)), {"t": Bint[3], "x": Bint[2], "y": Bint[2]})
    n = fc.Tensor(np.array([1, 3]), {"b": Bint[2]})
    pattern = rf"\({sum_op.name}, {prod_op.name}\) has no identity transition"
    with pytest.raises(ValueError, match=pattern):
        masked_steps(sum_op, prod_op, steps, "t", {"x": "y"}, lengths=n)
    with pytest.raises(ValueError, match=pattern):
        markov_marginals(sum_op, prod_op, steps, "t", {"x": "y"}, lengths=n)


def test_max_mul_over_nonnegative_factors_keeps_the_identity_path():
    steps = np.random.default_rng(0).uniform(size=(3, 2, 2, 2))
    steps[0, :, 1, 0] = 0.0  # a zero times the identity's off-diagonal entries
    lengths = np.array([2, 3])
    trans = fc.Tensor(steps, {"t": Bint[3], "b": Bint[2], "x": Bint[2], "y": Bint[2]})
    out = markov_product(ops.max, ops.mul, trans, "t", {"x": "y"},
                         lengths=fc.Tensor(lengths, {"b": Bint[2]})).align(("b", "x", "y"))
    for b in range(2):
        expected = _left_fold(steps[:lengths[b], b], np.maximum.reduce, np.multiply)
        np.testing.assert_allclose(out.data[b], expected, rtol=1e-12)


def test_max_mul_masked_steps_over_zeros_are_the_identity():
    # The dense masked steps of (max, mul) hold 0 off the diagonal, not max's unit -inf:
    # a state of probability 0 times -inf was NaN in the chain through them.
    steps = np.random.default_rng(1).uniform(size=(3, 2, 2, 2))
    steps[0, :, 1, :] = 0.0
    lengths = np.array([1, 3])
    trans = fc.Tensor(steps, {"t": Bint[3], "b": Bint[2], "x": Bint[2], "y": Bint[2]})
    masked = masked_steps(ops.max, ops.mul, trans, "t", {"x": "y"},
                          lengths=fc.Tensor(lengths, {"b": Bint[2]}))
    out = MarkovProduct(ops.max, ops.mul, masked, "t", {"x": "y"}).align(("b", "x", "y"))
    for b in range(2):
        expected = _left_fold(steps[:lengths[b], b], np.maximum.reduce, np.multiply)
        np.testing.assert_allclose(out.data[b], expected, rtol=1e-12)
