"""The interpreter on toy term classes, separately from the algebra; then cons-hashing,
pickling, quoting and rule tracing on the real terms."""

import asyncio
import logging
import pickle
import threading

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from funsor_core.interpreter import Interpretation, get_interpretation, reflect
from funsor_core.terms import Funsor
from funsor_core.testing import assert_close, random_tensor
from interpretations import exact, lazy


class Leaf(Funsor):
    fields = ("value",)
    _atom = True

    def _setup(self):
        self.inputs = {}
        self.output = Real


class Pair(Funsor):
    fields = ("left", "right")

    def _setup(self):
        self.inputs = {}
        self.output = Real


toy = Interpretation("toy", base=reflect)
log = []


@toy.register(Pair, Funsor, Funsor)
def toy_pair_funsor_funsor(left, right):
    log.append("generic")
    return Leaf(("generic", left.value, right.value))


@toy.register(Pair, Leaf, Leaf)
def toy_pair_leaf_leaf(left, right):
    log.append("specific")
    if left.value == "decline":
        return None
    return Leaf(left.value + right.value)


def test_most_specific_first_and_fall_through():
    log.clear()
    with toy:
        assert Pair(Leaf(1), Leaf(2)).value == 3
        assert log == ["specific"]
        r = Pair(Leaf("decline"), Leaf(2))
    assert log == ["specific", "specific", "generic"]
    assert r.value == ("generic", "decline", 2)


def test_all_decline_builds_term_and_other_interpretations_ignore_toy_rules():
    log.clear()
    left, right = Leaf(1), Leaf(2)
    with reflect:
        p = Pair(left, right)
    # Built as it is: the very arguments, no rule consulted, and cons-hashed.
    assert type(p) is Pair and p.left is left and p.right is right
    assert log == []
    with reflect:
        assert Pair(left, right) is p
    other = Interpretation("other", base=reflect)
    with other:
        q = Pair(left, right)
    assert q is p and log == []  # toy's rules belong to toy: other never runs them
    with toy:
        assert Pair(left, right).value == 3
    assert log == ["specific"]


def test_base_chain():
    child = Interpretation("child", base=toy)
    assert child.chain() == ["child", "toy", "reflect"]

    @child.register(Pair, Leaf, Leaf)
    def child_pair_leaf_leaf(left, right):
        return Leaf("child") if left.value == 0 else None

    with child:
        assert Pair(Leaf(0), Leaf(1)).value == "child"
        assert Pair(Leaf(5), Leaf(1)).value == 6  # falls through to toy's rule


def test_nesting_and_decorator():
    assert get_interpretation() is exact
    with lazy:
        assert get_interpretation() is lazy
        with toy:
            assert get_interpretation() is toy
        assert get_interpretation() is lazy
    assert get_interpretation() is exact

    @toy
    def inside():
        return get_interpretation()

    assert inside() is toy and get_interpretation() is exact


def test_threads_are_isolated():
    barrier = threading.Barrier(2, timeout=10)
    seen = {}

    def worker(name, interp):
        with interp:
            barrier.wait()  # both threads are inside their own `with` now
            seen[name] = get_interpretation()
            barrier.wait()
        seen[name + "_after"] = get_interpretation()

    threads = [threading.Thread(target=worker, args=("a", lazy)),
               threading.Thread(target=worker, args=("b", toy))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": lazy, "b": toy, "a_after": exact, "b_after": exact}
    assert get_interpretation() is exact


def test_asyncio_tasks_are_isolated():
    async def task(interp, event_in, event_out):
        with interp:
            event_out.set()
            await event_in.wait()
            return get_interpretation()

    async def main():
        e1, e2 = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(task(lazy, e2, e1), task(toy, e1, e2))

    assert asyncio.run(main()) == [lazy, toy]
    assert get_interpretation() is exact


def test_cons_hashing():
    x, y = fc.Variable("x", Real), fc.Variable("y", Real)
    assert fc.Variable("x", Real) is x
    with lazy:
        assert x + y is x + y
        assert (x + y) is not (y + x)
    t = random_tensor({"i": Bint[2]})
    with lazy:
        assert t * 2 is t * 2
    assert fc.Number(1.5) is fc.Number(1.5)


def test_pickle_round_trip():
    np.random.seed(0)
    t = random_tensor({"i": Bint[2], "j": Bint[3]})
    t2 = pickle.loads(pickle.dumps(t))
    assert_close(t2, t)
    x = fc.Variable("x", Real)
    with lazy:
        term = (t + x).reduce(ops.logaddexp, "j")
    with lazy:
        term2 = pickle.loads(pickle.dumps(term))
    assert type(term2) is fc.Reduce and term2.inputs == term.inputs
    assert_close(term2(x=0.5), term(x=0.5))


def test_quote_evaluates_back():
    np.random.seed(1)
    t = random_tensor({"i": Bint[2], "j": Bint[3]})
    x = fc.Variable("x", Real)
    with lazy:
        term = (t * x).reduce(ops.add, frozenset({"j", "i"})) - fc.Number(1.0)
    text = fc.quote(term)
    namespace = {"np": np, "ops": ops, **{k: getattr(fc, k) for k in fc.__all__}}
    with lazy:
        again = eval(text, namespace)
    assert fc.quote(again) == text
    assert_close(again(x=2.0), term(x=2.0))
    assert_close(eval(fc.quote(t), namespace), t)


def test_set_debug_logs_rule_names(caplog):
    t = random_tensor({"i": Bint[2]})
    fc.set_debug(True)
    try:
        with caplog.at_level(logging.DEBUG, logger="funsor_core.rules"):
            (t + t).reduce(ops.add, "i")
    finally:
        fc.set_debug(False)
    text = caplog.text
    assert "exact_binary_tensor_tensor" in text and "exact_reduce_tensor" in text
    caplog.clear()
    t + t
    assert caplog.text == ""
