"""Every chain entry point given a raw array for ``trans`` raises a TypeError naming the call
and showing the Tensor to build (it was an AttributeError on ``.inputs`` deep inside); the
same numbers wrapped as a Tensor run, checked against a numpy forward pass."""

import numpy as np
import pytest

import funsor_core as fc
import funsor_core.sum_product as sp
from funsor_core import ops

STEPS = np.log(np.random.default_rng(0).dirichlet(np.ones(2), size=(3, 2)))  # (t, x, y)
INIT = fc.Tensor(np.zeros(2), {"x": fc.Bint[2]})
CALLS = {
    "sequential sum-product": lambda a: sp.sequential_sum_product(
        ops.logaddexp, ops.add, a, "t", {"x": "y"}),
    "naive": lambda a: sp.naive_sequential_sum_product(ops.logaddexp, ops.add, a, "t",
                                                       {"x": "y"}),
    "MarkovProduct": lambda a: sp.MarkovProduct(ops.logaddexp, ops.add, a, "t", {"x": "y"}),
    "markov_marginals": lambda a: sp.markov_marginals(ops.logaddexp, ops.add, a, "t",
                                                      {"x": "y"})[0],
    "markov_map": lambda a: sp.markov_map(a, "t", {"x": "y"})[0],
    "windowed_filter": lambda a: fc.windowed_filter(ops.logaddexp, ops.add, a, "t",
                                                    {"x": "y"}, INIT),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_raw_array_is_refused_by_name(name):
    with pytest.raises(TypeError, match=r"trans must be a funsor .* got ndarray"):
        CALLS[name](STEPS)


def test_the_same_numbers_as_a_tensor_run():
    trans = fc.Tensor(STEPS, {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    total = sp.sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    probs = np.exp(STEPS)
    expected = probs[0] @ probs[1] @ probs[2]  # p(x_0 -> x_3) summed over the middle states
    np.testing.assert_allclose(np.exp(total.align(("x", "y")).data), expected)
