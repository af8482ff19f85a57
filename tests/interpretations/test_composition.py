"""Interpretations compose at any depth of a chain.

Toy interpretations (a counter of the terms its rules see, a tape that wraps ``interpret``)
are nested under exact, lazy, memoize and each other. The oracles are the same expressions
evaluated under plain ``exact`` and, for values, numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.engine.interpreter import ENTERED, Interpretation, get_interpretation
from interpretations import compress_gaussians, exact, lazy, memoize
from interpretations.memoize import Memoize


class Counter(Interpretation):
    """Counts the Binary terms its rules see, then declines."""

    stateful = True

    def __init__(self, name: str = "counter") -> None:
        super().__init__(name, fallback=ENTERED)
        self.seen = 0


@Counter.register(fc.Binary, object, fc.Funsor, fc.Funsor)
def counter_binary_funsor_funsor(counter, op, lhs, rhs):
    counter.seen += 1
    return None


class Tape(Interpretation):
    """Records the class of every term built through it (it overrides ``interpret``)."""

    stateful = True

    def __init__(self) -> None:
        super().__init__("tape", fallback=ENTERED)
        self.records: list = []

    def interpret(self, cls, args):
        result = self.defer(cls, args)
        self.records.append((cls.__name__, type(result).__name__))
        return result


def _x():
    return fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})


def test_tape_below_another_interpretation_records():
    x = _x()
    tape = Tape()
    with tape, Counter() as counter:
        y = (x + x).reduce(ops.add, "j")
    assert counter.seen == 1
    assert ("Binary", "Tensor") in tape.records
    assert isinstance(y, fc.Tensor)
    np.testing.assert_allclose(y.data, (2 * np.arange(6.0).reshape(2, 3)).sum(1))


def test_memoize_below_another_interpretation_caches():
    x = _x()
    with Memoize() as m, Counter():
        a = x * x
        b = x * x
    assert a is b
    assert len(m.cache) > 0


def test_two_instances_of_one_kind_both_see_terms():
    x = _x()
    with Counter("outer") as outer, Counter("inner") as inner:
        assert inner.chain()[:2] == ["inner", "outer"]
        _ = x + x
    assert (outer.seen, inner.seen) == (1, 1)


def test_entering_a_b_a_raises_and_leaves_no_cycle():
    a, b = Counter("a"), Counter("b")
    with a, b:
        with pytest.raises(ValueError, match="already active further down the chain"):
            with a:
                pass
        assert get_interpretation() is b
        assert b.chain() == ["b", "a", "exact", "normalize", "lazy", "reflect"]
        assert isinstance(_x() + 1, fc.Tensor)
    assert get_interpretation() is exact
    assert a.base is None and b.base is None


def test_reentering_the_active_interpretation_is_a_noop():
    a = Counter("a")
    with lazy, a:
        with a:
            assert a.chain() == ["a", "lazy", "reflect"]
            y = _x() + 1
        assert a.chain() == ["a", "lazy", "reflect"]
    assert isinstance(y, fc.Binary)
    assert a.seen == 1


def test_tape_inside_and_outside_memoize():
    x = _x()
    with lazy:
        expr = (x * x).reduce(ops.add, "j")
    expected = fc.reinterpret(expr)
    # Outside: the second evaluation is a cache hit, so the tape sees nothing new.
    tape = Tape()
    with tape, memoize():
        first = fc.reinterpret(expr)
        n = len(tape.records)
        second = fc.reinterpret(expr)
    assert first is second and n > 0 and len(tape.records) == n
    # Inside: the tape sees every term of both evaluations (the second from the cache).
    tape = Tape()
    with memoize(), tape:
        fc.reinterpret(expr)
        n = len(tape.records)
        fc.reinterpret(expr)
    assert n > 0 and len(tape.records) == 2 * n
    np.testing.assert_allclose(first.data, expected.data)


def test_chain_caches_follow_a_changed_fallback():
    # The rules a chain caches must follow a change of the chain below it.
    inner, outer = Counter("inner"), Counter("outer")
    x = _x()
    with outer, inner:  # outer -> exact
        assert isinstance(x + 1, fc.Tensor)
    with lazy, outer, inner:  # the same nesting, now above lazy
        assert isinstance(x + 1, fc.Binary)


def test_defer_builds_the_intercepted_pattern_without_recursion():
    double = Interpretation("double_sums", fallback=exact)

    @double.register(fc.Binary, type(ops.add), fc.Tensor, fc.Tensor)
    def double_sums_binary_tensor_tensor(op, lhs, rhs):
        # builds the very pattern it matches: with the constructor it would recurse
        total = double.defer(fc.Binary, (op, lhs, rhs))
        return total * 2

    x = _x()
    with double:
        y = x + x
    np.testing.assert_allclose(y.data, 4 * x.data)


def test_rest_runs_a_block_below_the_interpretation():
    x = _x()
    with exact.rest():
        y = x + x
    assert not isinstance(y, fc.Tensor)
    assert isinstance(fc.reinterpret(y), fc.Tensor)


def test_term_class_rules_see_the_class():
    names = []
    spy = Interpretation("spy_classes", fallback=exact)

    # One rule for every term class with an op and one funsor argument (Unary, and with
    # a third argument Reduce): registered on the base class, told the class it builds.
    @spy.register(fc.Funsor, object, fc.Funsor, term_class=True)
    @spy.register(fc.Funsor, object, fc.Funsor, frozenset, term_class=True)
    def spy_funsor_object_funsor(cls, op, arg, *rest):
        names.append(cls.__name__)
        return None

    x = _x()
    with spy:
        x.exp()
        x.reduce(ops.add, "i")
    assert names[:2] == ["Unary", "Reduce"]


def test_compress_gaussians_compresses_rule_results():
    rng = np.random.default_rng(0)
    for dim in (1, 2, 3):
        prec_sqrt = rng.normal(size=(dim, dim))
        white_vec = rng.normal(size=dim)
        g = fc.Gaussian(white_vec=white_vec, prec_sqrt=prec_sqrt, inputs={"x": fc.Reals[dim]})
        with compress_gaussians:
            h = g + g  # no reinterpret: the rule's result is compressed
        gs = [t for t in h.terms if isinstance(t, fc.Gaussian)]
        assert len(gs) == 1 and gs[0].rank <= dim
        # The density is unchanged: 2 * (-0.5 |x S - w|^2) at random points.
        for _ in range(3):
            point = rng.normal(size=dim)
            expected = -(np.sum((point @ prec_sqrt - white_vec) ** 2))
            np.testing.assert_allclose(float(h(x=point).data), expected, rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# A tape that records every contraction, pairwise along the plan (as in docs/extending.md),
# nested under exact, under memoize and under another stateful interpretation.
class ContractionTape(Interpretation):
    stateful = True

    def __init__(self) -> None:
        super().__init__("contraction_tape", fallback=ENTERED)
        self.steps: list = []

    def interpret(self, cls, args):
        from funsor_core.algorithms.contract.plan import plan_terms
        from funsor_core.terms.contraction import Contraction

        if cls is Contraction:
            red_op, bin_op, reduced_vars, terms = args
            if len(terms) > 2 and (red_op, bin_op) in ops.DISTRIBUTIVE_OPS:
                plan = plan_terms(terms, reduced_vars)
                return plan.run_terms(red_op, bin_op, reduced_vars, terms)
        result = self.defer(cls, args)
        if cls is Contraction and args[2]:  # an elimination step (not a plain sum)
            self.steps.append((len(args[3]), args[2]))
        return result


def _einsum_program(rng):
    arrays = [rng.random((2, 3)), rng.random((3, 4)), rng.random((4, 2)), rng.random(2)]
    expected = arrays[0] @ arrays[1] @ arrays[2] @ arrays[3]
    return (lambda: fc.einsum("ab,bc,cd,d->a", *arrays)), expected, set("bcd")


def _sum_product_program(rng):
    ab, bc, cd = rng.random((2, 3)), rng.random((3, 4)), rng.random((4, 5))
    factors = [fc.Tensor(ab, {"a": fc.Bint[2], "b": fc.Bint[3]}),
               fc.Tensor(bc, {"b": fc.Bint[3], "c": fc.Bint[4]}),
               fc.Tensor(cd, {"c": fc.Bint[4], "d": fc.Bint[5]})]
    expected = (ab @ bc @ cd).sum(1)

    def run():
        return fc.sum_product(ops.add, ops.mul, factors, frozenset("bcd")).align(("a",)).data

    return run, expected, set("bcd")


def _gaussian_chain_program(rng):
    # A Kalman-style chain x1 -> x2 -> x3 reduced over x2, x3: the value is checked against
    # the same program evaluated by plain exact (whose Gaussian algebra is tested against
    # closed forms in test_gaussian*.py).
    def g(names):
        inputs = {n: fc.Real for n in names}
        k = len(names)
        m = rng.normal(size=(k, k))
        return fc.Gaussian(mean=rng.normal(size=k), covariance=m @ m.T + np.eye(k),
                           inputs=inputs)

    g12, g23, g3 = g(["x1", "x2"]), g(["x2", "x3"]), g(["x3"])

    def run():
        total = fc.sum_product(ops.logaddexp, ops.add, [g12, g23, g3],
                               frozenset({"x2", "x3"}))
        return total(x1=0.3).data

    return run, run(), {"x2", "x3"}


@pytest.mark.parametrize("program", [_einsum_program, _sum_product_program,
                                     _gaussian_chain_program])
@pytest.mark.parametrize("nesting", ["exact", "memoize", "stateful"])
def test_tape_records_every_contraction(program, nesting):
    run, expected, eliminated = program(np.random.default_rng(0))
    tape = ContractionTape()
    if nesting == "exact":
        with tape:
            value = run()
    elif nesting == "memoize":
        with memoize(), tape:
            value = run()
    else:
        with Counter(), tape:
            value = run()
    np.testing.assert_allclose(value, expected, rtol=1e-10)
    # Every elimination was a pairwise step the tape saw, and together they eliminate all.
    assert tape.steps and all(n == 2 for n, _ in tape.steps)
    assert set().union(*(names for _, names in tape.steps)) == eliminated
