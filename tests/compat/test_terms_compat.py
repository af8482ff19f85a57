# ruff: noqa: UP006  (these tests are about the typing module's own Tuple)
"""funsor-compatible term behaviour: generic term classes, dispatch on structured types,
domain subclass checks, reductions over constants and over lazy functions of Bint values."""

import functools
import itertools
import math
import operator
import typing

import numpy as np
import pytest

import funsor_core as fc
import funsor_core.testing as fctesting
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.registry import KeyedRegistry, PartialDispatcher
from funsor_core.terms import Funsor, Number, Reduce, Variable
from funsor_core.terms.reshaping import Lambda, Stack
from funsor_core.typing import deep_issubclass, get_args, get_origin
from interpretations import lazy


# -- generic term classes ---------------------------------------------------------------------
def test_parametrized_term_classes():
    r = Reduce[ops.AssociativeOp, Funsor, frozenset]
    assert r is Reduce[ops.AssociativeOp, Funsor, frozenset]
    assert get_origin(r) is Reduce and get_origin(Reduce) is Reduce
    assert get_args(r) == (ops.AssociativeOp, Funsor, frozenset) and get_args(Reduce) == ()
    assert issubclass(r, Funsor) and issubclass(r, Reduce) and not issubclass(Reduce, r)
    assert deep_issubclass(Reduce[ops.AssociativeOp, Variable, frozenset], r)
    assert not deep_issubclass(r, Reduce[ops.AssociativeOp, Variable, frozenset])
    assert not deep_issubclass(Stack[str, typing.Tuple[Number, Number]],
                               Stack[str, typing.Tuple[Number, Reduce]])
    assert type(Variable("x", Real)).__origin__ is Variable
    with pytest.raises(TypeError, match="one type per field"):
        Reduce[ops.AssociativeOp, Funsor]


def test_parametrized_instance_check_and_call():
    x = Variable("x", Bint[3])
    with lazy:  # calling a parametrized class builds the plain term
        z = Reduce[ops.AssociativeOp, Variable, frozenset](ops.add, x, frozenset({"x"}))
    assert type(z) is Reduce
    assert isinstance(z, Reduce[ops.AssociativeOp, Variable, frozenset])
    assert not isinstance(z, Reduce[ops.AssociativeOp, Number, frozenset])


# -- registry -----------------------------------------------------------------------------------
def test_partial_dispatcher_by_hints_and_variadic():
    f = PartialDispatcher(lambda *args: "default")

    @f.register()
    def _pair(a: typing.Tuple[int, int]) -> str:
        return "pair"

    @f.register([str])
    def _strings(*args):
        return "+".join(args)

    assert [f((1, 2)), f((1, 2.5)), f("a", "b"), f(3.0)] == ["pair", "default", "a+b", "default"]
    registry = KeyedRegistry()
    registry.register(Reduce, int)(lambda n: n * 2)
    assert registry(Reduce[ops.AssociativeOp, Funsor, frozenset], 4) == 8


# -- domains --------------------------------------------------------------------------------------
def test_domain_subclass_and_str():
    assert issubclass(Bint[2], Bint) and issubclass(Bint, Bint) and issubclass(Real, Reals)
    assert not issubclass(Bint, Bint[2]) and not issubclass(Bint[2], Bint[3])
    assert not issubclass(Reals[2], Bint) and not issubclass(Real, Reals[2])
    assert str(Reals[2, 3]) == "Reals[2,3]" and repr(Reals[2, 3]) == "Reals[2, 3]"


# -- reductions over a Bint Variable the funsor does not depend on ----------------------------
@pytest.mark.parametrize("op, oracle", [
    (ops.add, lambda v, n: n * v),
    (ops.mul, lambda v, n: v ** n),
    (ops.logaddexp, lambda v, n: np.logaddexp.reduce(np.full(n, v))),
    (ops.max, lambda v, n: v),
    (ops.min, lambda v, n: v),
])
def test_reduce_over_absent_variable(op, oracle):
    f = fc.Tensor(np.array([0.5, -1.25, 2.0]), {"j": Bint[3]})
    i = Variable("i", Bint[4])
    actual = f.reduce(op, i)
    assert actual.inputs == f.inputs
    np.testing.assert_allclose(actual.data, [oracle(v, 4) for v in f.data])
    # Partly present: reduce the present name, repeat over the absent one.
    both = f.reduce(op, frozenset({i, Variable("j", Bint[3])}))
    folded = {ops.add: np.sum, ops.mul: np.prod, ops.logaddexp: np.logaddexp.reduce,
              ops.max: np.max, ops.min: np.min}[op](np.tile(f.data, 4))
    np.testing.assert_allclose(both.data, folded)


def test_reduce_over_absent_variable_errors():
    x = Variable("x", Real)
    with pytest.raises(ValueError, match=r"not inputs of this funsor"):
        x.reduce(ops.add, "i")  # a bare name has no domain: most likely a typo
    with pytest.raises(ValueError, match=r"y: Real"):
        x.reduce(ops.add, Variable("y", Real))
    assert x.reduce(ops.add, Variable("i", Bint[4])) is x * 4


# -- reductions of lazy functions of Bint values --------------------------------------------
@pytest.mark.parametrize("op, np_op", [
    (ops.add, np.add), (ops.mul, np.multiply), (ops.max, np.maximum), (ops.min, np.minimum),
])
@pytest.mark.parametrize("names", ["x", "yz", "xyz"])
def test_reduce_lazy_bint_expression(op, np_op, names):
    x, y, z = Variable("x", Bint[2]), Variable("y", Bint[3]), Variable("z", Bint[4])
    f = x * y + z
    actual = f.reduce(op, frozenset(names))
    # Oracle: enumerate every assignment with numpy, reduce the named axes.
    table = (np.arange(2)[:, None, None] * np.arange(3)[None, :, None]
             + np.arange(4)[None, None, :])
    axes = tuple("xyz".index(n) for n in names)
    expected = np_op.reduce(table, axis=axes) if len(axes) == 1 else functools.reduce(
        lambda t, a: np_op.reduce(t, axis=a), sorted(axes, reverse=True), table)
    kept = [n for n in "xyz" if n not in names]
    assert list(actual.inputs) == kept
    np.testing.assert_array_equal(np.asarray(actual.data), expected)
    # The Bint bound covers every value (n - 1 binary ops widen it).
    assert int(np.max(expected)) < actual.dtype


def test_reduce_bound_of_integer_tensor():
    data = np.array([[1, 4], [3, 5]])
    t = fc.Tensor(data, {"i": Bint[2], "j": Bint[2]}, 6)
    for op, np_op in [(ops.add, np.sum), (ops.mul, np.prod), (ops.max, np.max)]:
        r = t.reduce(op, "i")
        np.testing.assert_array_equal(r.data, np_op(data, axis=0))
        assert int(r.data.max()) < r.dtype


def test_integral_float_names_a_bint_value_and_lists_are_rejected():
    x = Variable("x", Bint[3])
    assert (x + 1.0)(x=2.0).data == 3.0
    with pytest.raises(fc.DomainError, match="must be an integer"):
        Number(1.5, 3)
    for bad in ([], set(), {}):
        with pytest.raises(ValueError, match="to_funsor does not convert"):
            fc.to_funsor(bad)


# -- Lambda indexing ------------------------------------------------------------------------------
def test_lambda_index_later_dim():
    data = np.arange(6.0).reshape(2, 3)
    t = fc.Tensor(data, {"j": Bint[2], "i": Bint[3]})
    lam = Lambda(Variable("j", Bint[2]), Lambda(Variable("i", Bint[3]), t))
    k = fc.Tensor(np.array([2, 0]), {"k": Bint[2]}, 3)
    actual = lam[:, k]  # actual[j] at k = data[j, k[k]]
    assert actual.output == Reals[2]
    np.testing.assert_array_equal(actual.align(("k",)).data, data[:, [2, 0]].T)
    z = Variable("z", Real)
    zij = Lambda(Variable("j", Bint[7]), Lambda(Variable("i", Bint[5]), z))
    assert zij[:, Variable("i", Bint[5])].inputs == {"z": Real}


def test_math_helpers_sanity():
    # Closed forms used for the bounds, checked against brute force over small cases.
    for k, n in itertools.product(range(1, 5), range(1, 4)):
        vals = list(itertools.product(range(k), repeat=n))
        assert max(map(sum, vals)) < n * (k - 1) + 1
        assert max(math.prod(v) for v in vals) < (k - 1) ** n + 1
        assert max(functools.reduce(operator.or_, v) for v in vals) < ops.infer_domain(
            ops.or_, Bint[k], Bint[k]).dtype


def test_slice_substitution_matches_python_slicing():
    # Slice(i, a, b, s)(i=v) denotes range(a, b, s)[v]: numbers, renames and slices of slices,
    # against Python's own slicing of a list, for every small slice.
    for dtype in (1, 4, 7):
        items = list(range(dtype))
        for start in range(dtype):
            for stop in range(start, dtype + 1):
                for step in (1, 2, 3):
                    outer = fc.Slice("i", start, stop, step, dtype)
                    assert outer.slice == slice(start, stop, step)
                    picked = items[outer.slice]
                    for k, want in enumerate(picked):
                        assert outer(i=k) is fc.Number(want, dtype)
                    renamed = outer(i="j")
                    assert isinstance(renamed, fc.Slice) and renamed(j="i") is outer
                    n = len(picked)
                    for a in range(n + 1):
                        for b in range(a, n + 1):
                            for s in (1, 2):
                                inner = fc.Slice("j", a, b, s, n)
                                both = outer(i=inner)
                                assert isinstance(both, fc.Slice)
                                assert items[both.slice] == picked[a:b:s]
                                assert both.inputs == inner.inputs and both.output == outer.output


def test_type_hints_of_a_term_are_its_inputs_and_output():
    x = fc.Variable("x", fc.Reals[2])
    t = fc.Tensor(np.ones((3, 2)))["i"]
    for term in (x, t, x + t, (x * t).reduce(ops.add, "i"), fc.Number(1.5), t(i=1)):
        hints = typing.get_type_hints(term)
        assert hints.pop("return") is term.output
        assert hints == dict(term.inputs)


def test_to_data_of_a_free_variable_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="'x'"):
        fc.to_data(fc.Variable("x", fc.Real))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("op", [ops.or_, ops.and_])
def test_logical_reductions_of_integers_are_bitwise(backend, op):
    # or/and over Bint[k > 2] values fold bitwise, as reducing the enumerated values by the
    # Python operator does; odd sizes exercise the folding's leftover part.
    fc.set_backend(backend)
    try:
        from funsor_core.testing import random_tensor

        t = random_tensor({"a": Bint[3], "b": Bint[5], "c": Bint[2]}, fc.Bint[9])
        data = np.asarray(t.data)
        pyop = {ops.or_: operator.or_, ops.and_: operator.and_}[op]
        for names in (("a",), ("b",), ("a", "b"), ("a", "b", "c")):
            axes = tuple("abc".index(n) for n in names)
            kept = tuple(data.shape[i] for i in range(3) if i not in axes)
            moved = np.moveaxis(data, axes, range(-len(axes), 0)).reshape(kept + (-1,))
            expected = np.apply_along_axis(lambda v: functools.reduce(pyop, v.tolist()), -1,
                                           moved)
            actual = t.reduce(op, frozenset(names))
            assert np.array_equal(np.asarray(actual.data), expected)
            assert int(expected.max()) < actual.output.size
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_a_stack_of_numbers_keeps_its_parts_and_evaluates_where_it_meets_arrays(backend):
    # Oracle: the numpy array of the parts' values.
    fc.set_backend(backend)
    try:
        vals = [0.5, -1.0, 2.0, 4.0, 3.5]
        parts = tuple(fc.Number(v) for v in vals)
        s = Stack("i", parts)
        ref = np.array(vals)
        assert isinstance(s, Stack) and s.parts == parts
        for k in range(5):
            assert s(i=k) is parts[k]
        sl = s(i=fc.Slice("j", 1, 5, 2, 5))
        assert isinstance(sl, Stack) and sl.parts == parts[1:5:2]
        np.testing.assert_allclose(np.asarray(s.data), ref)
        assert s.reduce(ops.add, "i") is fc.Number(float(ref.sum()))
        assert_close = np.testing.assert_allclose
        other = fctesting.random_tensor({"i": Bint[5], "k": Bint[2]})
        prod = s * other
        assert isinstance(prod, fc.Tensor)
        assert_close(np.asarray(prod.align(("i", "k")).data),
                     ref[:, None] * np.asarray(other.align(("i", "k")).data), rtol=1e-6)
        assert_close(np.asarray(s.exp().data), np.exp(ref), rtol=1e-6)
        assert_close(np.asarray(s.reduce(ops.logaddexp, "i").data),
                     np.log(np.exp(ref).sum()), rtol=1e-6)
        idx = fc.Tensor(fctesting.backend_module().asarray(np.array([4, 0]), "int"),
                        {"k": Bint[2]}, 5)
        assert_close(np.asarray(s(i=idx).data), ref[[4, 0]], rtol=1e-6)
        both = fc.Cat("i", (Stack("i", parts[:2]), Stack("i", parts[2:])))
        assert both is s
    finally:
        fc.set_backend("numpy")


def test_finitary_is_the_base_of_einsum_and_is_not_built_directly():
    x = fc.Variable("x", Reals[2, 3])
    term = fc.Einsum("ab->a", x)
    assert isinstance(term, fc.Finitary)
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(term(x=a).data, np.einsum("ab->a", a))
    with pytest.raises(NotImplementedError, match="Einsum"):
        fc.Finitary(ops.add, (x, x))
