"""The ``optimize`` interpretation and ``apply_optimizer``: planned pairwise contractions,
kept lazy under ``optimize``, equal to the unplanned result under every interpretation chain.

Oracles: the unplanned expression evaluated by ``exact`` (its own Contraction rules), numpy
brute force, and opt_einsum.
"""

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract import plan as plan_module
from funsor_core.terms.contraction import Contraction
from funsor_core.testing import assert_close, random_gaussian, random_tensor
from interpretations import (
    OPTIMIZE,
    apply_optimizer,
    exact,
    lazy,
    memoize,
    normalize,
    optimize,
    optimize_base,
)

SIZES = {"a": 2, "b": 3, "c": 2, "d": 4, "e": 3, "f": 2}
EQUATIONS = ["ab,bc,cd->", "ab,bc,cd->ad", "a,ab,bc,cd,de->e", "ab,ac,ad,ae->a",
             "abc,cd,de,ef->af", "a,b,c,ab,bc->"]
SEMIRINGS = [(ops.logaddexp, ops.add), (ops.add, ops.mul), (ops.max, ops.add),
             (ops.min, ops.add)]


def operands(eq, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    out = []
    for names in inputs:
        data = rng.uniform(0.5, 1.5, size=tuple(SIZES[c] for c in names)) if positive else \
            rng.normal(size=tuple(SIZES[c] for c in names))
        out.append(fc.Tensor(fc.to_data(fc.Tensor(data)), {c: fc.Bint[SIZES[c]] for c in names}))
    return out


def lazy_expression(eq, terms, sum_op, prod_op):
    # A product of the terms reduced over the letters not in the output, recorded by lazy
    # (Binary and Reduce terms, not yet in normal form).
    output = eq.split("->")[1]
    with lazy:
        product = terms[0]
        for t in terms[1:]:
            product = prod_op(product, t)
        reduced = frozenset(product.inputs) - set(output)
        return product.reduce(sum_op, reduced) if reduced else product


def pairwise_only(term):
    # Every Contraction in the term has at most two terms.
    todo, seen = [term], set()
    while todo:
        t = todo.pop()
        if id(t) in seen or not isinstance(t, fc.Funsor):
            continue
        seen.add(id(t))
        if isinstance(t, Contraction) and len(t.terms) > 2:
            return False
        todo.extend(a for a in t._args if isinstance(a, fc.Funsor))
        todo.extend(x for a in t._args if isinstance(a, tuple) for x in a)
    return True


def test_optimize_alias():
    assert OPTIMIZE is optimize and optimize.chain() == ["optimize", "lazy", "reflect"]


@pytest.mark.parametrize("eq", EQUATIONS)
@pytest.mark.parametrize("sum_op, prod_op", SEMIRINGS)
def test_planned_equals_unplanned_under_every_chain(eq, sum_op, prod_op, backend):
    terms = operands(eq, positive=prod_op is ops.mul)
    expr = lazy_expression(eq, terms, sum_op, prod_op)
    unplanned = fc.reinterpret(expr)  # exact, through its own rules
    assert isinstance(unplanned, fc.Tensor)
    # exact: apply_optimizer evaluates the planned steps
    assert_close(apply_optimizer(expr), unplanned, atol=1e-9, rtol=1e-9)
    # lazy: the planned expression, pairwise, then reinterpreted by exact
    with lazy:
        planned = apply_optimizer(expr)
    assert pairwise_only(planned) and not isinstance(planned, fc.Tensor)
    assert_close(fc.reinterpret(planned), unplanned, atol=1e-9, rtol=1e-9)
    # optimize alone keeps it lazy too
    with normalize:
        normal = fc.reinterpret(expr)
    with optimize:
        planned2 = fc.reinterpret(normal)
    assert planned2 is planned
    # memoize around exact: a second evaluation is a cache hit, with the same value
    with memoize():
        first = apply_optimizer(expr)
        second = apply_optimizer(expr)
    assert first is second
    assert_close(first, unplanned, atol=1e-9, rtol=1e-9)


# funsor's optimize_base: the same plan, built under the interpretation active at entry, so
# under exact the normal form is evaluated (as Pyro's TraceEnum_ELBO uses it); opt_einsum is
# the oracle, and under lazy the result is the pairwise plan.
@pytest.mark.parametrize("eq", EQUATIONS)
def test_optimize_base_evaluates_the_plan_under_the_entered_interpretation(eq, backend):
    terms = operands(eq, seed=2, positive=True)
    expr = lazy_expression(eq, terms, ops.logaddexp, ops.add)
    with normalize:
        normal = fc.reinterpret(expr)
    assert optimize_base.chain() == ["optimize_base"]
    with optimize_base:
        value = fc.reinterpret(normal)
    assert optimize_base.chain() == ["optimize_base"]  # entering it left nothing behind
    expected = np.log(opt_einsum.contract(eq, *[np.exp(ops.to_numpy(t.data)) for t in terms]))
    assert isinstance(value, fc.Tensor)
    output = eq.split("->")[1]
    assert np.allclose(ops.to_numpy(value.align(tuple(output)).data), expected)
    with lazy, optimize_base:
        planned = fc.reinterpret(normal)
    assert pairwise_only(planned)
    assert_close(fc.reinterpret(planned), value, atol=1e-9, rtol=1e-9)


def test_optimize_base_under_jax_jit():
    # Planned and evaluated at trace time: the jitted function equals opt_einsum.
    jax = pytest.importorskip("jax")
    eq = "a,ab,bc,cd,de->e"
    terms = operands(eq, seed=3)

    def run(arrays):
        tensors = [fc.Tensor(a, t.inputs) for a, t in zip(arrays, terms)]
        with normalize:
            normal = fc.reinterpret(lazy_expression(eq, tensors, ops.logaddexp, ops.add))
        with optimize_base:
            return fc.reinterpret(normal).data

    fc.set_backend("jax")
    try:
        actual = jax.jit(run)([jax.numpy.asarray(t.data) for t in terms])
    finally:
        fc.set_backend("numpy")
    expected = np.log(opt_einsum.contract(eq, *[np.exp(t.data) for t in terms]))
    assert np.allclose(np.asarray(actual), expected)


@pytest.mark.parametrize("eq", EQUATIONS)
def test_apply_optimizer_equals_opt_einsum(eq):
    terms = operands(eq, seed=1)
    expr = lazy_expression(eq, terms, ops.add, ops.mul)
    expected = opt_einsum.contract(eq, *[t.data for t in terms])
    actual = apply_optimizer(expr)
    output = eq.split("->")[1]
    data = actual.align(tuple(output)).data if output else actual.data
    np.testing.assert_allclose(data, expected, rtol=1e-10)


def test_plans_are_cached_by_structure(monkeypatch):
    eq = "ab,bc,cd,de->"
    calls = []
    search = opt_einsum.contract_path

    def counting(*args, **kwargs):
        calls.append(args[0])
        return search(*args, **kwargs)

    monkeypatch.setattr(plan_module.opt_einsum, "contract_path", counting)
    plan_module._plan.cache_clear()
    expr = lazy_expression(eq, operands(eq, seed=2), ops.logaddexp, ops.add)
    apply_optimizer(expr)
    planned_once = len(calls)
    # A same-shaped problem with other numbers: no new planning.
    expr2 = lazy_expression(eq, operands(eq, seed=3), ops.logaddexp, ops.add)
    apply_optimizer(expr2)
    assert planned_once >= 1 and len(calls) == planned_once


def test_planning_happens_at_trace_time_under_jit(monkeypatch):
    jax = pytest.importorskip("jax")
    eq = "ab,bc,cd,de->a"
    fc.set_backend("jax")
    try:
        terms = operands(eq, seed=4)
        calls = []
        search = opt_einsum.contract_path

        def counting(*args, **kwargs):
            calls.append(args[0])
            return search(*args, **kwargs)

        monkeypatch.setattr(plan_module.opt_einsum, "contract_path", counting)
        plan_module._plan.cache_clear()

        @jax.jit
        def f(*arrays):
            ts = [fc.Tensor(x, t.inputs) for x, t in zip(arrays, terms)]
            return apply_optimizer(lazy_expression(eq, ts, ops.logaddexp, ops.add)).data

        arrays = [t.data for t in terms]
        first = f(*arrays)
        traced = len(calls)
        second = f(*[x + 1.0 for x in arrays])
        assert len(calls) == traced  # the second call replays the compiled trace
        expected = fc.reinterpret(lazy_expression(eq, terms, ops.logaddexp, ops.add))
        np.testing.assert_allclose(np.asarray(first), np.asarray(expected.data), rtol=1e-9)
        np.testing.assert_allclose(np.asarray(second), np.asarray(expected.data) + 4.0,
                                   rtol=1e-9)
    finally:
        fc.set_backend("numpy")


def test_mixed_gaussian_tensor_expression():
    # A Gaussian chain with discrete weights: planned under optimize, evaluated by exact.
    np.random.seed(5)
    g0 = random_gaussian({"x": fc.Real})
    g1 = random_gaussian({"i": fc.Bint[3], "x": fc.Real, "y": fc.Real})
    g2 = random_gaussian({"y": fc.Real, "z": fc.Real})
    t = random_tensor({"i": fc.Bint[3], "k": fc.Bint[2]})
    u = random_tensor({"k": fc.Bint[2]})
    with lazy:
        expr = (g0 + g1 + g2 + t + u).reduce(ops.logaddexp, frozenset("xyzk"))
    expected = fc.reinterpret(expr)
    assert_close(apply_optimizer(expr), expected, atol=1e-9, rtol=1e-9)
    with lazy:
        planned = apply_optimizer(expr)
    assert pairwise_only(planned)
    assert_close(fc.reinterpret(planned), expected, atol=1e-9, rtol=1e-9)


def test_free_variables_stay_lazy_and_the_rest_is_planned():
    x = fc.Variable("x", fc.Real)
    terms = operands("ab,bc,cd->", seed=6)
    with lazy:
        expr = (terms[0] * terms[1] * terms[2] * x).reduce(ops.add, frozenset("abcd"))
    result = apply_optimizer(expr)
    assert "x" in result.inputs
    expected = fc.Contraction(ops.add, ops.mul, frozenset("abcd"), tuple(terms)).data
    np.testing.assert_allclose(result(x=2.0).data, 2.0 * expected, rtol=1e-10)


def test_max_times_with_unknown_signs_is_not_planned():
    # max_j (a * b_j) = a * max_j b_j only for a >= 0: with factors of unknown sign the
    # product is formed before the reduction, as the normal form says.
    t = operands("ab,bc,cd->", seed=7)
    with normalize:
        expr = fc.Contraction(ops.max, ops.mul, frozenset("abcd"), tuple(t))
    with optimize:
        kept = fc.reinterpret(expr)
    assert isinstance(kept, Contraction) and len(kept.terms) == 3
    expected = np.max(np.einsum("ab,bc,cd->abcd", *[x.data for x in t]))
    np.testing.assert_allclose(apply_optimizer(expr).data, expected, rtol=1e-12)
    with exact:
        positive = [x.exp() for x in t]
    with normalize:
        expr = fc.Contraction(ops.max, ops.mul, frozenset("abcd"), tuple(positive))
    with optimize:
        planned = fc.reinterpret(expr)
    assert pairwise_only(planned)
