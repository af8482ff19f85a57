"""``make_funsor``: term classes from type hints; values checked against numpy."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Array, Bint, Real, Reals
from funsor_core.factory import Bound, Fresh, Has, Value, make_funsor
from funsor_core.testing import assert_close, check_funsor, random_tensor
from interpretations import exact, lazy, reflect


@make_funsor
def MatMul(x: fc.Funsor, y: fc.Funsor, i: Bound) -> Fresh[lambda x: x]:
    return (x * y).reduce(ops.add, i)


def test_matmul_bound_name_is_summed_out():
    x = random_tensor({"a": Bint[3], "b": Bint[4]})
    y = random_tensor({"c": Bint[4], "d": Bint[3]})
    xy = MatMul(x, y(c="b"), "b")
    expected = np.einsum("ab,bd->ad", x.data, y.data)
    check_funsor(xy, {"a": Bint[3], "d": Bint[3]}, Real, expected)


def test_lazy_term_declares_binds_and_substitutes():
    x = random_tensor({"a": Bint[3], "b": Bint[4]})
    y = random_tensor({"b": Bint[4]})
    with lazy:
        term = MatMul(x, y, "b")
    assert isinstance(term, MatMul) and term.bound == frozenset({"b"})
    assert term.inputs == {"a": Bint[3]} and term.output is Real
    assert_close(fc.reinterpret(term)(a=1).data, (x.data[1] * y.data).sum())


@make_funsor
def Sum(x: fc.Funsor, dim: Value[int]) -> Fresh[
        lambda x, dim: Array[x.dtype, x.shape[:dim] + x.shape[dim + 1:]]]:
    return None


@exact.register(Sum, fc.Tensor, int)
def exact_sum_tensor_int(x, dim):
    data = x.data.sum(len(x.data.shape) - len(x.shape) + dim)
    return fc.Tensor(data, x.inputs, x.dtype)


def test_value_arguments_compute_the_output_domain():
    x = random_tensor({"a": Bint[3]}, Reals[2, 4, 5])
    with reflect:
        y = Sum(x, 1)
    check_funsor(y, {"a": Bint[3]}, Reals[2, 5])
    assert_close(fc.reinterpret(y).data, x.data.sum(2))
    with pytest.raises(TypeError, match="must be a int"):
        Sum(x, 1.5)
    with pytest.raises(TypeError, match="cannot depend"):
        Value[fc.Number]


@make_funsor
def Normal(loc: fc.Funsor, scale: fc.Funsor, value: Fresh[lambda loc: loc]) -> Fresh[Real]:
    return None


def test_fresh_argument_is_an_input_to_substitute():
    loc, scale = random_tensor({"i": Bint[3]}), random_tensor({"i": Bint[3]}).exp()
    d = Normal(loc, scale, "value")
    assert isinstance(d, Normal)
    check_funsor(d, {"i": Bint[3], "value": Real}, Real)
    assert isinstance(d(value=0.5), Normal) and "value" not in d(value=0.5).inputs


@make_funsor
def HasMatMul(x: Has[{"i"}], y: Has[{"i"}], i: Bound) -> Fresh[lambda x: x]:  # noqa: F821
    return (x * y).reduce(ops.add, i)


def test_has_warns_only_when_built_lazily():
    x = random_tensor({"a": Bint[3], "b": Bint[4]})
    y = random_tensor({"c": Bint[4]})
    with pytest.warns(SyntaxWarning, match="does not depend on the bound variable b"):
        with reflect:
            HasMatMul(x, y, "b")
    xy = HasMatMul(x, y, "b")  # evaluated: no term is built, so no warning
    check_funsor(xy, {"a": Bint[3], "c": Bint[4]}, Real)
    assert_close(xy.data, x.data.sum(1)[:, None] * y.data[None, :], atol=1e-12, rtol=1e-12)


def test_bad_hints_and_names():
    with pytest.raises(TypeError, match="argument 'x' has hint"):
        @make_funsor
        def Bad(x: int) -> Fresh[Real]:
            return None
    with pytest.raises(ValueError, match="cannot infer the domain"):
        MatMul(random_tensor({"a": Bint[2]}), random_tensor({"a": Bint[2]}), "zz")


@make_funsor
def Flatten(x: fc.Funsor, i: Bound, j: Bound,
            ij: Fresh[lambda i, j: Bint[i.size * j.size]]) -> Fresh[lambda x: x]:
    n = x.inputs[j.name].size
    m = x.inputs[i.name].size
    ij = x.materialize(fc.Variable(ij.name, Bint[m * n]))
    return x(**{i.name: ij // fc.Number(n, n + 1), j.name: ij % fc.Number(n, n + 1)})


@make_funsor
def Unflatten(x: fc.Funsor, i: Bound, hi: Fresh[lambda i: Bint[i.size // 2]],
              lo: Fresh[lambda: Bint[2]]) -> Fresh[lambda x: x]:
    return x(**{i.name: hi * fc.Number(2, 3) + lo})


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_flatten_and_unflatten_indices_by_arithmetic(backend):
    # funsor's idiom: x // Number(n, n + 1) and x % Number(n, n + 1) stay in Bint[m] and
    # Bint[n]; a lazy Bint expression of Bint variables indexes a tensor by evaluating it.
    fc.set_backend(backend)
    try:
        x = random_tensor({"a": Bint[3], "b": Bint[4]})
        flat = Flatten(x, "a", "b", "ab")
        assert isinstance(flat, fc.Tensor)
        check_funsor(flat, {"ab": Bint[12]}, Real, ops.reshape(x.data, (12,)))
        y = random_tensor({"a": Bint[5], "b": Bint[6]})
        unflat = Unflatten(y, "b", "c", "d")
        assert isinstance(unflat, fc.Tensor)
        check_funsor(unflat, {"a": Bint[5], "c": Bint[3], "d": Bint[2]}, Real,
                     ops.reshape(y.data, (5, 3, 2)))
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("a", [1, 5, 12])
@pytest.mark.parametrize("d", [1, 2, 4, 7])
def test_division_by_a_number_bounds_match_enumeration(a, d):
    i = fc.Variable("i", Bint[a])
    for op in (ops.floordiv, ops.mod):
        term = op(i, fc.Number(d, d + 1))
        values = [op(v, d) for v in range(a)]
        assert max(values) < term.output.size  # every value is in the domain
        assert term.output.size == max(values) + 1 or max(values) == 0  # and the bound is tight
        assert_close(term(i=fc.Tensor(np.arange(a), {"i": Bint[a]}, a)).data, np.array(values))


def test_mod_of_two_variables_is_bounded_by_both():
    # x % y <= min(x, y - 1), and numpy's x % 0 is 0: check every pair.
    for a in range(1, 6):
        for b in range(1, 6):
            term = fc.Variable("x", Bint[a]) % fc.Variable("y", Bint[b])
            vals = [np.mod(x, y) if y else 0 for x in range(a) for y in range(b)]
            assert max(vals) < term.output.size
