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
