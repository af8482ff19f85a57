"""A Markov chain built under ``lazy`` with a parameter over time unrolls into steps that
index the parameter by constant times; it compiles to one program (each step a static slice
of the parameter); a ``MarkovProduct`` term of one parameter is one call to the chain kernel.
Both checked against numpy matrix products on numpy, torch and ``jax.jit``."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from interpretations.lazy import lazy
from tests.backend_values import values_on_every_backend


@pytest.mark.parametrize("sum_op, prod_op", [(ops.logaddexp, ops.add), (ops.add, ops.mul)])
def test_unrolled_chain_compiles(sum_op, prod_op):
    log = sum_op is ops.logaddexp
    trans = fc.Variable("t", fc.Reals[5, 3, 3])["time", "prev", "curr"]
    init = fc.Variable("p0", fc.Reals[3])["prev"]
    with lazy:
        chain = fc.sequential_sum_product(sum_op, prod_op, trans, "time", {"prev": "curr"})
        expr = fc.sum_product(sum_op, prod_op, [init, chain], frozenset({"prev"}))
    program = fc.compile(expr)
    assert set(program.inputs) == {"p0", "t"} and program.output == ("curr",)
    rng = np.random.default_rng(0)
    t, p0 = rng.normal(size=(5, 3, 3)), rng.normal(size=3)
    expected = np.exp(p0)
    for k in range(5):  # the forward pass by hand
        expected = expected @ np.exp(t[k])
    args = (p0, t) if log else (np.exp(p0), np.exp(t))
    for value in values_on_every_backend(lambda p0, t: program(p0=p0, t=t), *args,
                                         eager_jax=False):
        assert np.allclose(np.exp(value) if log else value, expected, rtol=1e-12)


def test_markov_product_is_one_chain_kernel_call():
    # A MarkovProduct term of a parameter (dims in another order than time, prev, curr).
    from funsor_core.terms.markov import MarkovProduct

    trans = fc.Variable("t", fc.Reals[4, 3, 3])["time", "curr", "prev"]
    init = fc.Variable("p0", fc.Reals[3])["prev"]
    with lazy:
        chain = MarkovProduct(ops.logaddexp, ops.add, trans, "time", {"prev": "curr"})
        expr = fc.sum_product(ops.logaddexp, ops.add, [init, chain], frozenset({"prev"}))
    program = fc.compile(expr)
    rng = np.random.default_rng(1)
    t, p0 = rng.normal(size=(4, 3, 3)), rng.normal(size=3)
    expected = np.exp(p0)
    for k in range(4):  # t[k] is indexed (curr, prev): the step matrix is its transpose
        expected = expected @ np.exp(t[k]).T
    for value in values_on_every_backend(lambda p0, t: program(p0=p0, t=t), p0, t,
                                         eager_jax=False):
        assert np.allclose(np.exp(value), expected, rtol=1e-12)
    two = fc.Variable("u", fc.Reals[4, 2, 2, 2, 2])["time", "a", "b", "c", "d"]
    with lazy:
        other = MarkovProduct(ops.logaddexp, ops.add, two, "time", {"a": "b", "c": "d"})
        other = other.reduce(ops.logaddexp, frozenset("abcd"))
    with pytest.raises(NotImplementedError, match="exactly .time, prev, curr."):
        fc.compile(other)
