"""Eager jax chains of pairs with no identity transition are not padded (#28, h92).

Eager jax pads a chain's time axis to a power of two with masked steps, each the identity
transition (sum_op's zero off the diagonal, prod_op's unit on it). Pairs that are no semiring
((mul, mul), (add, add), (logaddexp, mul): a left fold, as in funsor) have no identity, nor
has (max, mul) / (min, mul) over negative factors: MarkovProduct on jax gave wrong numbers
(rows repeated, or inf) for T = 3 (found by the bad-input fuzzer, seed 8000637). Oracle: the
left fold along time in numpy.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, ops
from funsor_core.sum_product import MarkovProduct

PAIRS = {"mul-mul": (ops.mul, ops.mul, np.multiply.reduce, np.multiply),
         "add-add": (ops.add, ops.add, np.add.reduce, np.add),
         "logaddexp-mul": (ops.logaddexp, ops.mul, np.logaddexp.reduce, np.multiply),
         "max-mul": (ops.max, ops.mul, np.maximum.reduce, np.multiply),
         "add-mul": (ops.add, ops.mul, np.add.reduce, np.multiply)}


@pytest.mark.parametrize("T", [3, 5])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_jax_chain_of_any_pair_is_the_left_fold(pair, T):
    jnp = pytest.importorskip("jax.numpy")
    sum_op, prod_op, np_sum, np_prod = PAIRS[pair]
    steps = np.random.default_rng(T).normal(size=(T, 2, 2))  # negative entries too
    msg = steps[0]
    for t in range(1, T):
        msg = np_sum(np_prod(msg[:, :, None], steps[t][None]), axis=1)
    fc.set_backend("jax")
    try:
        trans = fc.Tensor(jnp.asarray(steps), {"t": Bint[T], "x": Bint[2], "y": Bint[2]})
        out = MarkovProduct(sum_op, prod_op, trans, "t", {"x": "y"}).align(("x", "y"))
        np.testing.assert_allclose(np.asarray(out.data), msg, rtol=1e-10)
    finally:
        fc.set_backend("numpy")
