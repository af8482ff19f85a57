"""Planned contraction of Gaussians, and plates whose minor holds only real variables.

Oracles: the same contraction added into one joint Gaussian (``Gaussian`` sums are exact), a
hand-unrolled copy of each plate (every copy of a variable renamed, so no plate minor
remains), and closed-form Gaussian integrals.
"""

import logging

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract.dense import contract_planned
from funsor_core.algorithms.contract.plan import plan_terms, step_costs
from funsor_core.sum_product import PlateError, sum_product
from funsor_core.testing import assert_close, random_gaussian, random_tensor


def chain(n, batch=None, dim=1):
    b = {} if batch is None else {"i": fc.Bint[batch]}
    first = random_gaussian({**b, "x0": fc.Reals[dim]})
    steps = [random_gaussian({**b, f"x{k}": fc.Reals[dim], f"x{k + 1}": fc.Reals[dim]})
             for k in range(n)]
    return [first] + steps, frozenset(f"x{k}" for k in range(n + 1))


class _Rules(logging.Handler):
    # The names of the rules that fire (funsor_core's debug log).
    def __init__(self):
        super().__init__()
        self.names = []

    def emit(self, record):
        self.names.append(record.getMessage().split(":")[0])


def fired(fn):
    log = logging.getLogger("funsor_core.rules")
    level, handler = log.level, _Rules()
    log.addHandler(handler)
    fc.set_debug(True)
    try:
        result = fn()
    finally:
        fc.set_debug(False)
        log.removeHandler(handler)
        log.setLevel(level)
    return result, handler.names


def joint(terms, names):
    # One Gaussian of all terms, then every variable integrated at once.
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total.reduce(ops.logaddexp, names)


@pytest.mark.parametrize("n, batch, dim", [(3, None, 1), (6, 3, 2), (12, 2, 1)])
def test_planned_gaussian_chain_equals_the_joint_integral(n, batch, dim):
    np.random.seed(n)
    terms, names = chain(n, batch, dim)
    planned = plan_terms(terms, names).run_terms(ops.logaddexp, ops.add, names, terms)
    assert isinstance(planned, fc.Tensor)
    assert_close(planned, joint(terms, names), atol=1e-8, rtol=1e-8)


def test_exact_plans_a_long_gaussian_chain_and_keeps_a_short_one_joint():
    np.random.seed(0)
    short, short_names = chain(3)
    joint_cost, planned_cost = step_costs(short, plan_terms(short, short_names))
    assert joint_cost < planned_cost
    assert contract_planned(ops.logaddexp, ops.add, short_names, tuple(short)) is None
    long, long_names = chain(40, batch=4, dim=3)  # one joint factor would be 123-dimensional
    joint_cost, planned_cost = step_costs(long, plan_terms(long, long_names))
    assert planned_cost < joint_cost
    result, rules = fired(lambda: fc.Contraction(ops.logaddexp, ops.add, long_names,
                                                 tuple(long)))
    assert "exact_contraction_planned" in rules
    assert_close(result, joint(long, long_names), atol=1e-7, rtol=1e-7)
    _, rules = fired(lambda: fc.Contraction(ops.logaddexp, ops.add, short_names, tuple(short)))
    assert "exact_contraction_planned" not in rules


def test_mixed_gaussian_and_many_discrete_factors_are_planned():
    # A Gaussian over x and a chain of 16 discrete factors: adding all Tensors into one joint
    # factor would hold 4**16 entries; the plan never forms more than a pairwise product.
    np.random.seed(1)
    names = [f"z{k}" for k in range(16)]
    tensors = [random_tensor({names[k]: fc.Bint[4], names[k + 1]: fc.Bint[4]})
               for k in range(15)]
    g = random_gaussian({"x": fc.Real})
    result = fc.Contraction(ops.logaddexp, ops.add, frozenset(names) | {"x"},
                            (g,) + tuple(tensors))
    expected = g.reduce(ops.logaddexp, "x") + fc.Contraction(
        ops.logaddexp, ops.add, frozenset(names), tuple(tensors))
    assert_close(result, expected, atol=1e-9, rtol=1e-9)


def test_a_mixture_variable_is_reduced_after_the_reals():
    # i indexes the Gaussians (a mixture): it is summed only once x and y are integrated.
    np.random.seed(2)
    g1 = random_gaussian({"i": fc.Bint[3], "x": fc.Real})
    g2 = random_gaussian({"i": fc.Bint[3], "x": fc.Real, "y": fc.Real})
    g3 = random_gaussian({"y": fc.Real, "z": fc.Real})
    t = random_tensor({"i": fc.Bint[3]})
    names = frozenset("ixyz")
    terms = (g1, g2, g3, t)
    plan_result = contract_planned(ops.logaddexp, ops.add, names, terms)
    expected = joint(list(terms), frozenset("xyz")).reduce(ops.logaddexp, "i")
    if plan_result is not None:
        assert_close(plan_result, expected, atol=1e-9, rtol=1e-9)
    assert_close(fc.Contraction(ops.logaddexp, ops.add, names, terms), expected,
                 atol=1e-9, rtol=1e-9)


def unroll(factor, plate, size, names):
    # The copies of ``factor`` along ``plate``, each variable of ``names`` renamed per copy.
    return [factor(**{plate: k}, **{v: f"{v}{k}" for v in names if v in factor.inputs})
            for k in range(size)]


@pytest.mark.parametrize("case", ["one_factor", "shared_global", "extra_plate"])
def test_real_minor_is_eliminated_exactly(case):
    # x lives in plate i, y in plate j, and a factor in both uses both: the forbidden minor.
    # Gaussians are eliminated anyway, by stacking y's copies along j (funsor does the same).
    # Oracle: plate j unrolled by hand, which leaves a graph with no minor.
    np.random.seed(3)
    f_i = random_gaussian({"i": fc.Bint[2], "x": fc.Real})
    f_j = random_gaussian({"j": fc.Bint[3], "y": fc.Real})
    f_ij = random_gaussian({"i": fc.Bint[2], "j": fc.Bint[3], "x": fc.Real, "y": fc.Real})
    factors, plates, eliminate = [f_i, f_j, f_ij], "ij", set("ijxy")
    if case == "shared_global":
        w = random_gaussian({"w": fc.Real})
        f_i = random_gaussian({"i": fc.Bint[2], "x": fc.Real, "w": fc.Real})
        factors = [w, f_i, f_j, f_ij]
        eliminate |= {"w"}
    elif case == "extra_plate":
        f_j = random_gaussian({"j": fc.Bint[3], "k": fc.Bint[2], "y": fc.Real})
        factors, plates = [f_i, f_j, f_ij], "ijk"
    actual = sum_product(ops.logaddexp, ops.add, factors, frozenset(eliminate),
                         frozenset(plates))
    unrolled = [f for f in factors if "j" not in f.inputs]
    for f in factors:
        if "j" in f.inputs:
            unrolled += unroll(f, "j", 3, {"y"})
    copies = {"y0", "y1", "y2"}
    expected = sum_product(ops.logaddexp, ops.add, unrolled,
                           frozenset(eliminate - {"j", "y"} | copies),
                           frozenset(plates.replace("j", "")))
    assert set(actual.inputs) == set(expected.inputs)
    assert_close(actual, expected, atol=1e-8, rtol=1e-8)


def test_discrete_minor_still_raises():
    x = random_tensor({"i": fc.Bint[2], "x": fc.Bint[2]})
    y = random_tensor({"j": fc.Bint[2], "y": fc.Bint[2]})
    xy = random_tensor({"i": fc.Bint[2], "j": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]})
    with pytest.raises(PlateError, match="intractable!.*'x'.*'i'.*'y'.*'j'"):
        sum_product(ops.logaddexp, ops.add, [x, y, xy], frozenset("ijxy"), frozenset("ij"))
