"""The engine's extension points: interpretation kinds and stateful instances, declared
fallbacks (fixed chains and ENTERED), Tuple[...] patterns, and the declarative term protocol
(slots, bound, alpha-renaming, pickling and pytrees derived from ``fields``/``binds``).

Oracles: the toy rules' own bookkeeping, brute-force numpy values of the same expressions,
and the same expression built under another interpretation.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.engine.interpreter import (
    ENTERED,
    Interpretation,
    Tuple,
    get_interpretation,
    reflect,
    tuple_type,
)
from funsor_core.terms import Funsor
from funsor_core.terms.traversal import alpha_rename, substitute
from funsor_core.testing import assert_close, random_tensor
from interpretations import exact, lazy, normalize

BinaryOp = ops.BinaryOp


# -- a stateful kind: counts and records the rules it fires ------------------------------------
class Counting(Interpretation):
    """Counts Tensor + Tensor additions, scaled by a per-instance weight; falls back to the
    interpretation active when it was entered."""

    stateful = True

    def __init__(self, weight: float = 1.0):
        super().__init__("counting", fallback=ENTERED)
        self.weight = weight
        self.count = 0


@Counting.register(fc.Binary, BinaryOp, fc.Tensor, fc.Tensor)
def counting_binary_tensor_tensor(interp, op, lhs, rhs):
    interp.count += 1
    if op is not ops.add:
        return None
    # Decline the rewrite itself: the fallback evaluates (or records) the sum.
    return None


@Counting.register(fc.Binary, BinaryOp, fc.Number, fc.Number)
def counting_binary_number_number(interp, op, lhs, rhs):
    interp.count += 1
    return fc.Number(interp.weight * float(op(lhs.data, rhs.data)))


def test_stateful_rules_read_their_own_instance():
    a, b = Counting(weight=2.0), Counting(weight=10.0)
    with a:
        x = fc.Number(1.0) + fc.Number(2.0)
    with b:
        y = fc.Number(1.0) + fc.Number(2.0)
        z = fc.Number(3.0) * fc.Number(4.0)
    assert (a.count, b.count) == (1, 2)
    assert x.data == 2.0 * 3.0 and y.data == 10.0 * 3.0 and z.data == 10.0 * 12.0
    # Kinds share one rule table; instances share no state.
    assert type(a) is type(b) is Counting and a._cache is not b._cache


def test_stateful_kind_falls_back_to_the_interpretation_it_was_entered_in():
    t1, t2 = random_tensor({"i": fc.Bint[2]}), random_tensor({"i": fc.Bint[2]})
    counter = Counting()
    with exact:
        with counter:
            evaluated = t1 + t2
            assert counter.chain() == ["counting", "exact", "normalize", "lazy", "reflect"]
    with lazy:
        with counter:
            recorded = t1 + t2
            assert counter.chain() == ["counting", "lazy", "reflect"]
    assert counter.count == 2
    assert isinstance(evaluated, fc.Tensor)
    assert isinstance(recorded, fc.Binary)  # lazy recorded what counting declined
    assert_close(evaluated.data, t1.data + t2.data)
    assert_close(fc.reinterpret(recorded).data, t1.data + t2.data)
    assert get_interpretation() is exact


def test_stateful_kind_nested_in_itself_keeps_a_finite_chain():
    counter = Counting()
    with lazy, counter, counter:
        assert get_interpretation() is counter
        assert counter.chain() == ["counting", "lazy", "reflect"]
    with normalize, counter:
        assert counter.chain()[:2] == ["counting", "normalize"]


def test_fixed_fallback_chain_is_what_was_declared():
    toy = Interpretation("toy_fixed", fallback=lazy)
    assert toy.chain() == ["toy_fixed", "lazy", "reflect"]
    t = random_tensor({"i": fc.Bint[2]})
    with exact:
        with toy:  # entered inside exact, but declared to fall back to lazy
            y = t + t
    assert isinstance(y, fc.Binary)
    assert exact.chain() == ["exact", "normalize", "lazy", "reflect"]
    assert exact.__name__ == "exact"


def test_rules_of_one_pattern_accumulate_in_registration_order():
    toy = Interpretation("toy_order", fallback=reflect)
    calls = []

    @toy.register(fc.Binary, BinaryOp, fc.Number, fc.Number)
    def toy_first(op, lhs, rhs):
        calls.append("first")
        return None

    @toy.register(fc.Binary, BinaryOp, fc.Number, fc.Number)
    def toy_second(op, lhs, rhs):
        calls.append("second")
        return fc.Number(-1.0)

    with toy:
        assert (fc.Number(1.0) + fc.Number(1.0)).data == -1.0
    assert calls == ["first", "second"]


# -- Tuple patterns ----------------------------------------------------------------------------
def test_tuple_pattern_subclass_relation():
    G, T, N = fc.Gaussian, fc.Tensor, fc.Number
    assert issubclass(Tuple[T, N], Tuple[(T, N), ...])
    assert issubclass(Tuple[(T, N), ...], Tuple[Funsor, ...])
    assert not issubclass(Tuple[Funsor, ...], Tuple[(T, N), ...])
    assert issubclass(Tuple[G, T], Tuple[(G, fc.Contraction), (T, N)])
    assert not issubclass(Tuple[T, G], Tuple[(G, fc.Contraction), (T, N)])
    assert not issubclass(Tuple[T, T, T], Tuple[T, T])
    assert issubclass(Tuple[T, T], tuple)
    assert not issubclass(tuple, Tuple[T, ...])
    assert tuple_type((fc.Number(1.0), ("a", 2))) is Tuple[N, Tuple[str, int]]


def test_tuple_patterns_dispatch_on_element_types_most_specific_first():
    toy = Interpretation("toy_tuple", fallback=reflect)
    seen = []

    @toy.register(fc.Stack, str, Tuple[fc.Number, ...])
    def toy_stack_numbers(name, parts):
        seen.append("numbers")
        return fc.Number(float(sum(p.data for p in parts)))

    @toy.register(fc.Stack, str, Tuple[Funsor, ...])
    def toy_stack_funsors(name, parts):
        seen.append("funsors")
        return None

    with toy:
        s = fc.Stack("i", (fc.Number(1.0), fc.Number(2.0)))
        v = fc.Stack("i", (fc.Number(1.0), fc.Variable("x", fc.Real)))
    assert s.data == 3.0
    assert isinstance(v, fc.Stack)
    assert seen == ["numbers", "funsors"]


def test_exact_contraction_rules_are_registered_patterns():
    key_tensors = (fc.Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                   Tuple[fc.Tensor, fc.Tensor])
    names = [r.__name__ for r in exact.rules(key_tensors)]
    assert names[0] == "exact_contraction_tensors"
    key_gauss = (fc.Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                 Tuple[fc.Gaussian, fc.Tensor])
    assert "exact_contraction_gaussians" in [r.__name__ for r in exact.rules(key_gauss)]
    assert "exact_contraction_tensors" not in [r.__name__ for r in exact.rules(key_gauss)]


# -- declarative term protocol -----------------------------------------------------------------
class Shift(Funsor):
    """A toy binder: ``Shift(arg, name)`` = arg reduced (logaddexp) over ``name`` plus 1."""

    fields = ("arg", "name")
    binds = ("name",)

    def _setup(self):
        arg, name = self._args
        self.inputs = {k: d for k, d in arg.inputs.items() if k != name}
        self.output = arg.output


@exact.register(Shift, fc.Tensor, str)
def exact_shift_tensor(arg, name):
    return arg.reduce(ops.logaddexp, name) + 1.0


def test_declared_term_derives_slots_bound_and_pickling():
    assert "arg" in Shift.__slots__ and "name" in Shift.__slots__
    with lazy:
        s = Shift(fc.Variable("i", fc.Bint[3]) * 0.0 + fc.Variable("j", fc.Bint[2]), "i")
    assert s.bound == frozenset({"i"})
    assert s.inputs == {"j": fc.Bint[2]}
    with lazy:
        back = pickle.loads(pickle.dumps(s))
    assert type(back) is Shift and back.name == "i" and back.arg is s.arg


def test_declared_binder_is_alpha_renamed_on_capture():
    # Substituting a value that mentions 'i' into Shift(f, 'i') must rename the bound 'i'.
    data = np.random.randn(3, 2)
    f = fc.Tensor(data, {"i": fc.Bint[3], "j": fc.Bint[2]})
    with lazy:
        s = Shift(f, "i")
        renamed = alpha_rename(s, {"i": "k"})
        captured = substitute(s, {"j": fc.Variable("i", fc.Bint[2])})
    assert renamed.name == "k" and "k" in renamed.arg.inputs
    assert captured.name != "i" and set(captured.inputs) == {"i"}
    value = fc.reinterpret(captured)
    expected = np.log(np.exp(data).sum(0)) + 1.0  # indexed by the new free 'i' (was j)
    assert_close(value.align(("i",)).data, expected)


def test_declared_term_is_a_jax_pytree():
    jax = pytest.importorskip("jax")
    t = fc.Tensor(jax.numpy.arange(3.0), {"i": fc.Bint[3]})  # loads the jax backend
    with lazy:
        s = Shift(t, "i")
    leaves, treedef = jax.tree_util.tree_flatten(s)
    assert len(leaves) == 1 and leaves[0] is t.data
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is Shift and rebuilt.name == "i"
    value = fc.reinterpret(rebuilt).data
    assert_close(np.asarray(value), np.log(np.exp(np.arange(3.0)).sum()) + 1.0)


def test_declaration_errors_name_the_fields():
    with pytest.raises(TypeError, match=r"binds names \['nope'\]"):
        class Broken(Funsor):  # noqa: F841
            fields = ("arg",)
            binds = ("nope",)
