"""The eager fast paths of Tensor ops (issue #29 item 4): a binary op of tensors with the same
inputs, one integer substitution, a reduction by a cached recipe. Each is checked against
numpy by hand, including the cases that must leave the fast path (other input order, outputs
of another rank, integer bounds, bool data) on numpy and torch, and under ``jax.jit``."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Reals
from funsor_core.ops.op import cast_bool_args
from funsor_core.terms.base import to_funsor
from tests.backend_values import as_backend_array, to_numpy

B2, B3 = Bint[2], Bint[3]


@pytest.fixture(params=["numpy", "torch"])
def backend(request):
    """numpy and torch eagerly; jax runs the same paths under ``jax.jit`` below (eager jax
    compiles each op, which would cost seconds here)."""
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


def _tensor(data, inputs, dtype="real"):
    return fc.Tensor(as_backend_array(data), inputs, dtype)


def test_binary_same_inputs(backend):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    x, y = _tensor(a, {"i": B2, "j": B3}), _tensor(b, {"i": B2, "j": B3})
    z = x + y
    assert z.inputs == {"i": B2, "j": B3} and z.output is fc.Real
    np.testing.assert_allclose(to_numpy(z.data), a + b)
    lt = x < y  # a comparison: same arrays, a Bint[2] result
    assert lt.output is Bint[2]
    np.testing.assert_array_equal(to_numpy(lt.data), a < b)
    # The same names in another order take the aligning path.
    yt = _tensor(b.T, {"j": B3, "i": B2})
    np.testing.assert_allclose(to_numpy((x * yt).data), a * b)
    # The same inputs with outputs of another rank: output dims broadcast from the right.
    v = rng.normal(size=(2, 3, 4))
    w = _tensor(v, {"i": B2, "j": B3})
    assert w.output is Reals[4]
    np.testing.assert_allclose(to_numpy((x + w).data), a[..., None] + v)
    np.testing.assert_allclose(to_numpy((w - x).data), v - a[..., None])


def test_binary_same_inputs_integers_and_bools(backend):
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 3, (2, 3)), rng.integers(0, 2, (2, 3)).astype(bool)
    x = _tensor(a, {"i": B2, "j": B3}, 3)
    y = fc.Tensor(as_backend_array(b), {"i": B2, "j": B3}, 2)  # bool data: Bint[2] values
    z = x + y
    assert z.output is Bint[4]  # 2 + 1 is the largest sum
    np.testing.assert_array_equal(to_numpy(z.data), a + b.astype(int))
    np.testing.assert_array_equal(to_numpy((y + y).data), 2 * b.astype(int))


@pytest.mark.parametrize("dtype", ["real", 5])
def test_subs_one_number_each_position(backend, dtype):
    rng = np.random.default_rng(2)
    data = rng.integers(0, 5, (2, 3, 4, 2)) if dtype == 5 else rng.normal(size=(2, 3, 4, 2))
    inputs = {"i": B2, "j": B3, "k": Bint[4]}
    x = _tensor(data, inputs, dtype)
    for pos, name in enumerate(inputs):
        for value in range(inputs[name].size):
            got = x(**{name: value})
            expected = np.take(data, value, axis=pos)
            assert got.inputs == {n: d for n, d in inputs.items() if n != name}
            assert got.output is x.output
            np.testing.assert_array_equal(to_numpy(got.data), expected)
    with pytest.raises(ValueError, match="out of range"):
        x(j=3)


def test_to_funsor_int_cache_is_keyed_by_domain():
    assert to_funsor(1, Bint[2]).output is Bint[2]
    assert to_funsor(1, Bint[3]).output is Bint[3]
    assert to_funsor(1, Bint[2]) is to_funsor(1, Bint[2])
    with pytest.raises(ValueError, match="out of range"):
        to_funsor(3, Bint[3])
    with pytest.raises(ValueError, match="scalar cannot have output"):
        to_funsor(1, fc.Array[3, (2,)])


def test_reduce_recipes(backend):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3, 4))
    inputs = {"i": B2, "j": B3, "k": Bint[4]}
    x = _tensor(a, inputs)
    got = x.reduce(ops.logaddexp, "j")
    assert got.inputs == {"i": B2, "k": Bint[4]}
    np.testing.assert_allclose(to_numpy(got.data), np.log(np.exp(a).sum(1)))
    got = x.reduce(ops.max, frozenset({"i", "k"}))
    assert got.inputs == {"j": B3}
    np.testing.assert_allclose(to_numpy(got.data), a.max((0, 2)))
    n = rng.integers(0, 3, (2, 3))
    y = _tensor(n, {"i": B2, "j": B3}, 3)
    total = y.reduce(ops.add, "j")
    assert total.output is Bint[7]  # three values below 3 sum below 7
    np.testing.assert_array_equal(to_numpy(total.data), n.sum(1))
    bits = _tensor(np.array([[1, 2, 4], [3, 0, 1]]), {"i": B2, "j": B3}, 8)
    np.testing.assert_array_equal(to_numpy(bits.reduce(ops.or_, "j").data), [7, 3])


def test_fast_paths_under_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        inputs = {"i": B2, "j": B3}

        @jax.jit
        def f(a, b):
            x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
            return ((x + y)(i=1).data, x.reduce(ops.logaddexp, "i").data)

        rng = np.random.default_rng(4)
        a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
        s, r = f(a, b)
        np.testing.assert_allclose(np.asarray(s), (a + b)[1], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(r), np.log(np.exp(a).sum(0)), rtol=1e-6)
    finally:
        fc.set_backend("numpy")


def test_cast_bool_args_kernel_arities():
    cast = lambda a: a.astype(int)  # noqa: E731
    one = cast_bool_args(np.negative, np.dtype(bool), cast)
    np.testing.assert_array_equal(one(np.array([True, False])), [-1, 0])
    two = cast_bool_args(np.add, np.dtype(bool), cast)
    np.testing.assert_array_equal(two(np.array([1.5]), np.array([True])), [2.5])
    np.testing.assert_array_equal(two(np.array([True]), 2), [3])
    three = cast_bool_args(lambda a, b, c: a + b + c, np.dtype(bool), cast)
    np.testing.assert_array_equal(three(np.array([1]), np.array([True]), np.array([True])),
                                  [3])
