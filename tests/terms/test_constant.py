"""``Constant(const_inputs, arg)``: constant along extra inputs; checked by enumerating the
constant inputs and comparing with ``arg`` in numpy."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.constant import Constant
from funsor_core.domains import Bint, Real
from funsor_core.testing import assert_close, random_tensor
from interpretations import lazy


def test_inputs_and_value_everywhere(backend):
    arg = random_tensor({"i": Bint[2]})
    c = Constant({"x": Bint[3], "y": Real}, arg)
    assert c.inputs == {"x": Bint[3], "y": Real, "i": Bint[2]}
    assert c.const_inputs == {"x": Bint[3], "y": Real}
    assert c.const_vars == {fc.Variable("x", Bint[3]), fc.Variable("y", Real)}
    for x in range(3):
        assert c(x=x, y=0.5) is arg  # the value does not depend on x, y


def test_substitution_renames_or_drops():
    data = random_tensor({})
    c = Constant({"x": Bint[3], "y": Real}, data)
    assert c(x=0) is Constant({"y": Real}, data)
    v = fc.Variable("v", Real)
    assert c(y=v) is Constant({"x": Bint[3], "v": Real}, data)
    t = random_tensor({"a": Bint[2]})
    assert c(y=t) is Constant({"x": Bint[3], "a": Bint[2]}, data)
    with lazy:  # substitution is propagated under lazy too
        assert c(x=1, y=2.0) is data


def test_substitution_into_arg():
    arg = random_tensor({"i": Bint[2]})
    c = Constant({"x": Bint[3]}, arg)
    result = c(i=1)
    assert isinstance(result, Constant) and result.const_inputs == {"x": Bint[3]}
    assert_close(result.arg.data, arg.data[1])


def test_unary_and_binary_act_on_arg():
    z = random_tensor({"z": Bint[2]})
    x = random_tensor({"x": Bint[3]})
    c = Constant({"x": Bint[3], "y": Real}, z)
    e = c.exp()
    assert e.const_inputs == c.const_inputs
    assert_close(e.arg.data, np.exp(z.data))
    for result in (c + x, x + c):
        # x is no longer constant: the sum varies with it
        assert result.const_inputs == {"y": Real}
        assert_close(result.arg.align(("z", "x")).data, z.data[:, None] + x.data[None, :])
    both = c * Constant({"y": Real, "w": Bint[2]}, x)
    assert both.const_inputs == {"y": Real, "w": Bint[2]}
    assert_close(both.arg.align(("z", "x")).data, z.data[:, None] * x.data[None, :])


# Enumeration oracle: reduce arg's values repeated once per assignment of the constant inputs.
_NUMPY_REDUCE = {
    ops.add: np.sum, ops.mul: np.prod, ops.max: np.max,
    ops.logaddexp: lambda a: np.log(np.exp(a).sum()),
}


@pytest.mark.parametrize("op", list(_NUMPY_REDUCE), ids=lambda op: op.name)
def test_reduce_over_constant_inputs(op):
    arg = random_tensor({"i": Bint[2]})
    c = Constant({"x": Bint[3], "w": Bint[2], "y": Real}, arg)
    result = c.reduce(op, {"x", "w", "i"})
    assert result.const_inputs == {"y": Real}
    every_assignment = np.stack([arg.data] * (3 * 2))  # (x, w) pairs, then i
    expected = _NUMPY_REDUCE[op](every_assignment)
    assert_close(result.arg.data, expected, atol=1e-10, rtol=1e-10)


def test_reduce_integer_constant_is_exact():
    c = Constant({"x": Bint[3], "y": Bint[2]}, fc.Number(1))
    assert c.reduce(ops.add, {"x", "y"}) is fc.Number(6)


def test_reduce_real_constant_input_stays_lazy():
    c = Constant({"y": Real}, fc.Number(1.0))
    result = c.reduce(ops.add, "y")  # an integral of 1 over the real line: no number
    assert not isinstance(result, (fc.Number, fc.Tensor, Constant))
    assert "y" not in result.inputs


def test_align():
    data = random_tensor({"i": Bint[2], "j": Bint[3]})
    x = Constant({"a": Real, "b": Bint[4]}, data)
    y = x.align(("b", "a", "j", "i"))
    assert isinstance(y, Constant)
    assert tuple(y.inputs) == ("b", "a", "j", "i")
    for b in range(4):
        for i in range(2):
            for j in range(3):
                assert x(a=0.0, b=b, i=i, j=j).data == y(a=0.0, b=b, i=i, j=j).data


def test_bad_input_names_the_clash():
    arg = random_tensor({"i": Bint[2]})
    with pytest.raises(ValueError, match="'i' is both constant"):
        Constant({"i": Bint[2]}, arg)
