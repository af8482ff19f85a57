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
