"""Generic terms: Variables, Numbers, lazy Binary/Unary/Subs and capture-avoiding substitution."""

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.testing import assert_close, random_tensor
from interpretations import lazy


def test_variable_substitution():
    x, y = fc.Variable("x", Real), fc.Variable("y", Real)
    f = (x * 2 + y).exp()
    assert f.inputs == {"x": Real, "y": Real}
    g = f(x=1.0, y=0.5)
    assert_close(g, fc.Number(float(np.exp(2.5))))
    assert f(x="z").inputs == {"z": Real, "y": Real}
    assert f(x=y).inputs == {"y": Real}
    assert_close(f(x=y)(y=1.0), fc.Number(float(np.exp(3.0))))


def test_simultaneous_substitution_swaps():
    x, y = fc.Variable("x", Real), fc.Variable("y", Real)
    f = x - y
    g = f(x=y, y=x)
    assert_close(g(x=1.0, y=3.0), fc.Number(2.0))


def test_real_vector_variable_indexing():
    v = fc.Variable("v", Reals[3])
    f = v[1] * 2
    assert f.output is Real
    data = np.array([1.0, 4.0, 9.0])
    assert_close(f(v=fc.Tensor(data)), fc.Tensor(np.array(8.0)))


def test_subs_into_lambda_avoids_capture():
    np.random.seed(0)
    t = random_tensor({"i": Bint[2]})
    x = fc.Variable("x", Real)
    with lazy:
        lam = fc.Lambda(fc.Variable("i", Bint[2]), t * x)
    value = random_tensor({"i": Bint[2]})
    result = lam(x=value)
    assert result.inputs == {"i": Bint[2]} and result.output is Reals[2]
    expected = t.data[None, :] * value.data[:, None]  # (free i, bound i')
    assert_close(result, fc.Tensor(expected, {"i": Bint[2]}))


def test_nested_subs_compose():
    x, y = fc.Variable("x", Real), fc.Variable("y", Real)
    with lazy:
        inner = fc.Subs(fc.Unary(ops.exp, x), (("x", y + 1.0),))
    assert isinstance(inner, fc.Unary)
    assert_close(inner(y=0.0), fc.Number(float(np.e)))


# Binary and Contraction (whose constructors keep a stash for _setup) parametrize like every
# term class: a cached subclass, covariant issubclass, and calling it builds the plain term.
def test_binary_and_contraction_parametrize():
    from funsor_core.ops import AddOp, BinaryOp

    assert issubclass(fc.Binary[AddOp, fc.Funsor, fc.Funsor], fc.Binary[BinaryOp, fc.Funsor,
                                                                       fc.Funsor])
    from funsor_core.engine.interpreter import reflect

    x = fc.Variable("x", Real)
    with reflect:  # built as it is (the default interpretation normalizes a sum)
        term = fc.Binary[AddOp, fc.Funsor, fc.Funsor](ops.add, x, fc.Number(1.0))
    assert type(term) is fc.Binary
    assert isinstance(term, fc.Binary[AddOp, fc.Variable, fc.Number])
    contraction = fc.Contraction[object, object, frozenset, tuple]
    assert contraction is fc.Contraction[object, object, frozenset, tuple]
    t = fc.Tensor(np.ones(2), {"i": Bint[2]})
    total = contraction(ops.add, None, frozenset({"i"}), (t,))
    assert float(total.data) == 2.0


# ---------------------------------------------------------------------------------------------
# Guards: substitution into Independent (a whole value, a batched value, a rename), and a value
# for a Stack's or Cat's own index reaches the term instead of being pushed into its parts.
# (Moved from tests/test_defects_8.py, defect 3 and the Stack/Cat follow-ups.)
def _independent_example():
    np.random.seed(3)
    c = fc.Tensor(np.random.randn(3, 2), {"i": Bint[3]})
    b = fc.Tensor(np.random.randn(3, 4), {"i": Bint[3], "b": Bint[4]})
    fn = (c * fc.Variable("x_i", Reals[2])).sum() + b
    return fn, fc.Independent(fn, "x", "i", "x_i")


def test_independent_substitution():
    fn, g = _independent_example()
    assert g.inputs == {"b": Bint[4], "x": Reals[3, 2]}
    value = np.random.randn(3, 2)
    expected = fn(x_i=fc.Tensor(value, {"i": Bint[3]})).reduce(ops.add, "i")
    actual = g(x=value)
    assert isinstance(actual, fc.Tensor) and actual.inputs == {"b": Bint[4]}
    assert np.allclose(actual.data, expected.data)
    with lazy:
        lazy_result = g(x=value)
    assert "x" not in lazy_result.inputs
    assert np.allclose(fc.reinterpret(lazy_result).data, expected.data)


def test_independent_substitution_of_batched_value_and_rename():
    fn, g = _independent_example()
    value = np.random.randn(5, 3, 2)
    # The value's own input "i" is not the bound plate "i": it must survive.
    actual = g(x=fc.Tensor(value, {"i": Bint[5]}))
    assert set(actual.inputs) == {"b", "i"}
    for k in range(5):
        expected = fn(x_i=fc.Tensor(value[k], {"i": Bint[3]})).reduce(ops.add, "i")
        assert np.allclose(actual(i=k).align(("b",)).data, expected.align(("b",)).data)
    renamed = g(x="y")
    assert isinstance(renamed, fc.Independent) and renamed.reals_var == "y"
    assert renamed.inputs["y"] is Reals[3, 2]


def test_lazy_substitution_into_stack_and_cat_index_is_not_dropped():
    # Stack and Cat make their index input themselves: a value for it must reach the term,
    # not be pushed into the parts (where it was dropped, or hit each part's own index).
    x = fc.Variable("x", fc.Real)
    with lazy:
        s = fc.Stack("i", (x, x + 1.0))(i=1)
    assert "i" not in s.inputs
    assert fc.reinterpret(s)(x=2.0).data == 3.0
    a = fc.Tensor(np.arange(4.0).reshape(2, 2), {"t": fc.Bint[2], "a": fc.Bint[2]})
    b = fc.Tensor(np.arange(6.0).reshape(3, 2), {"t": fc.Bint[3], "a": fc.Bint[2]})
    sub = fc.Slice("t", 1, 5, 2, 5)
    with lazy:
        c = fc.Cat("t", (a, b))(t=sub)
    expected = np.concatenate([a.data, b.data])[1:5:2]
    np.testing.assert_allclose(fc.reinterpret(c).align(("t", "a")).data, expected)
    np.testing.assert_allclose(fc.Cat("t", (a, b))(t=sub).align(("t", "a")).data, expected)


def test_stack_index_renamed_or_sliced_under_every_interpretation():
    # Oracle: the Stack built directly from the renamed / selected parts.
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    parts = (fc.Number(0.0), x, x * y)
    f = fc.Stack("i", parts)
    assert f(i="j") is fc.Stack("j", parts)
    xs = tuple(fc.Number(float(k)) for k in range(10))
    with lazy:
        sliced = fc.Stack("i", xs)(i=fc.Slice("j", 1, 10, 3, 10))
        assert sliced is fc.Stack("j", xs[1:10:3])
    np.testing.assert_allclose(fc.reinterpret(sliced).data, np.arange(10.0)[1:10:3])
