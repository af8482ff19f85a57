"""funsor's Tensor idioms: ``ops.sample``/``ops.null``, reductions of Tensors over inputs and
output dims, ``@function`` (with and without type hints, tuple outputs), ``ops.expand`` with
-1, ``new_arange`` with empty ranges, and deep copies. Every oracle is numpy by hand."""

import copy
import itertools
import typing

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.product import Product
from funsor_core.testing import assert_close, check_funsor

SIZES = {"a": 3, "b": 4, "c": 5}


def tensor(data, inputs, dtype="real"):
    kind = "real" if dtype == "real" else "int"
    return fc.Tensor(backend_module().asarray(data, kind), inputs, dtype)


def expect(data, inputs, dtype="real"):
    return fc.Tensor(np.asarray(data), inputs, dtype)


def np_logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


# ---------------------------------------------------------------------------------------------
# ops.sample is its own op that computes as logaddexp; ops.null is "no op" (None).
def test_sample_and_null_are_funsor_names_of_our_ops():
    assert ops.sample is not ops.logaddexp and isinstance(ops.sample, ops.AssociativeOp)
    a, b = np.log(np.array([0.25, 2.0])), np.log(np.array([0.5, 3.0]))
    np.testing.assert_allclose(ops.sample(a, b), np.log(np.exp(a) + np.exp(b)))
    assert ops.null is None and isinstance(ops.null, ops.NullOp)
    assert ops.UNITS[ops.sample] == -np.inf
    assert (ops.sample, ops.add) in ops.DISTRIBUTIVE_OPS
    assert fc.REDUCE_OP_TO_NUMERIC[ops.sample] is ops.logsumexp
    assert ops.sample in ops.REQUIRED_OPS and ops.logaddexp in ops.REQUIRED_OPS


@pytest.mark.parametrize("dims", [(), ("a",), ("a", "b"), ("b", "a", "c")])
def test_sample_reduction_of_all_inputs_is_logsumexp(backend, dims):
    rng = np.random.default_rng(0)
    data = rng.random(tuple(SIZES[d] for d in dims)) + 0.5
    x = tensor(data, {d: Bint[SIZES[d]] for d in dims})
    actual = x.reduce(ops.sample)
    expected = np_logsumexp(data.reshape(-1), 0) if dims else data
    check_funsor(actual, {}, Real)
    assert_close(actual, expect(expected, {}), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("reduced", [("a",), ("c",), ("a", "c"), ("b", "a", "c")])
def test_sample_reduction_of_some_inputs(backend, reduced):
    dims = ("b", "a", "c")
    rng = np.random.default_rng(1)
    data = rng.standard_normal(tuple(SIZES[d] for d in dims))
    x = tensor(data, {d: Bint[SIZES[d]] for d in dims})
    actual = x.reduce(ops.sample, frozenset(reduced))
    axes = tuple(dims.index(d) for d in reduced)
    kept = {d: Bint[SIZES[d]] for d in dims if d not in reduced}
    assert_close(actual, expect(np_logsumexp(data, axes), kept), atol=1e-12, rtol=1e-12)


def test_null_contraction_reduces_nothing():
    # Contraction(ops.null, ops.add, {}, terms) is the sum of the terms, as with red_op=None.
    x = fc.Tensor(np.array([1.0, 2.0]), {"i": Bint[2]})
    y = fc.Tensor(np.array([10.0, 20.0, 30.0]), {"j": Bint[3]})
    actual = Contraction(ops.null, ops.add, frozenset(), (x, y))
    expected = np.array([1.0, 2.0])[:, None] + np.array([10.0, 20.0, 30.0])
    assert_close(actual.align(("i", "j")), expect(expected, {"i": Bint[2], "j": Bint[3]}))


# ---------------------------------------------------------------------------------------------
# Reductions over inputs and output dims, compared with numpy's in one call.
@pytest.mark.parametrize("event_shape", [(), (4,), (2, 3)])
@pytest.mark.parametrize("dims", [(), ("a",), ("b", "a")])
def test_prod_over_output_dims(backend, dims, event_shape):
    rng = np.random.default_rng(2)
    batch = tuple(SIZES[d] for d in dims)
    data = rng.random(batch + event_shape) + 0.5
    x = tensor(data, {d: Bint[SIZES[d]] for d in dims})
    actual = x.prod()
    expected = np.prod(data.reshape(batch + (-1,)), -1)
    check_funsor(actual, {d: Bint[SIZES[d]] for d in dims}, Real)
    assert_close(actual, expect(expected, dict(x.inputs)), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("axis", [None, (0, 1), (1, 2), (0, 2), -1, (), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_prod_kernel_axes(backend, axis, keepdims):
    # Adjacent axes are merged into one product; separate ones reduce one at a time.
    data = np.random.default_rng(3).random((2, 3, 4)) + 0.5
    x = backend_module().asarray(data, "real")
    actual = ops.to_numpy(ops.prod(x, axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(actual, np.prod(data, axis=axis, keepdims=keepdims), rtol=1e-14)


@pytest.mark.parametrize("op", [ops.sum, ops.prod, ops.logsumexp, ops.amax, ops.amin])
def test_reduction_of_a_0d_array_is_itself(backend, op):
    x = backend_module().asarray(np.array(0.75), "real")
    actual = op(x, None)
    assert tuple(actual.shape) == ()
    np.testing.assert_allclose(ops.to_numpy(actual), 0.75, rtol=1e-15)


# ---------------------------------------------------------------------------------------------
# @function
def test_function_from_type_hints(backend):
    @fc.function
    def matmul(x: Reals[3, 4], y: Reals[4, 5]) -> Reals[3, 5]:
        return x @ y

    assert isinstance(matmul, fc.Function)
    assert matmul.fn.__name__ == "matmul"
    check_funsor(matmul, {"x": Reals[3, 4], "y": Reals[4, 5]}, Reals[3, 5])
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    actual = matmul(tensor(a, {"i": Bint[2]}), tensor(b, {}))
    assert_close(actual, expect(a @ b, {"i": Bint[2]}), atol=1e-12, rtol=1e-12)
    by_name = matmul(y=tensor(b, {}), x=tensor(a, {"i": Bint[2]}))
    assert_close(by_name, actual)


def test_function_with_domains_is_lazy_in_free_arguments():
    @fc.function(Reals[3], Reals[3], Real)
    def dot(u, v):
        return (u * v).sum(-1)

    check_funsor(dot, {"u": Reals[3], "v": Reals[3]}, Real)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(3), rng.standard_normal((2, 3))
    half = dot(fc.Tensor(a))
    assert isinstance(half, fc.Function)
    check_funsor(half, {"v": Reals[3]}, Real)
    assert_close(half(v=fc.Tensor(b, {"k": Bint[2]})), expect(b @ a, {"k": Bint[2]}))


def test_function_of_raw_arrays_and_of_a_builtin(backend):
    # A builtin with no signature (torch.matmul) names its arguments by position.
    matmul = {"numpy": np.matmul, "jax": None, "torch": None}[backend]
    if matmul is None:
        module = __import__(backend if backend == "torch" else "jax.numpy", fromlist=["x"])
        matmul = module.matmul
    f = fc.function(Reals[4, 3], Reals[3, 2], Reals[4, 2])(matmul)
    assert len(f.inputs) == 2
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    m = backend_module()
    actual = f(m.asarray(a, "real"), m.asarray(b, "real"))
    assert_close(actual, expect(a @ b, {}), atol=1e-12, rtol=1e-12)


def _max_and_argmax(x):
    return ops.amax(x, -1), ops.argmax(x, -1)


@pytest.mark.parametrize("hinted", [False, True])
def test_function_with_tuple_output(backend, hinted):
    calls = []

    def max_and_argmax(x):
        calls.append(1)
        return _max_and_argmax(x)

    if hinted:
        max_and_argmax.__annotations__ = {"x": Reals[8], "return": Product[Real, Bint[8]]}
        f = fc.function(max_and_argmax)
    else:
        # funsor users spell the output typing.Tuple[...]
        f = fc.function(Reals[8], typing.Tuple[Real, Bint[8]])(max_and_argmax)  # noqa: UP006
    lazy_max, lazy_argmax = f
    assert isinstance(lazy_max, fc.Function) and isinstance(lazy_argmax, fc.Function)
    check_funsor(lazy_max, {"x": Reals[8]}, Real)
    check_funsor(lazy_argmax, {"x": Reals[8]}, Bint[8])
    data = np.random.default_rng(7).standard_normal((2, 3, 8))
    inputs = {"i": Bint[2], "j": Bint[3]}
    x = tensor(data, inputs)
    actual_max, actual_argmax = f(x)
    assert_close(actual_max, expect(data.max(-1), inputs))
    assert_close(actual_argmax, expect(data.argmax(-1), inputs, 8))
    assert len(calls) == 1  # both parts share one call of fn on the same arrays
    assert_close(lazy_max(x=x), actual_max)


def test_function_errors_name_the_problem():
    def f(x: Reals[2], y):
        return x

    with pytest.raises(TypeError, match=r"f\(\) lacks \['y', 'the return'\]"):
        fc.function(f)
    with pytest.raises(TypeError, match="takes 1 arguments"):
        fc.function(Real, Real, Real)(lambda x: x)
    with pytest.raises(TypeError, match="output must be a domain"):
        fc.function(Real, "real")(lambda x: x)


# ---------------------------------------------------------------------------------------------
# Array ops: expand with -1, arange with empty ranges.
@pytest.mark.parametrize("shape", [(4, 3, 2), (4, -1, 2), (4, 3, -1), (4, -1, -1), (-1, -1)])
def test_expand_minus_one_keeps_the_size(backend, shape):
    data = np.arange(6.0).reshape(3, 2)
    x = backend_module().asarray(data, "real")
    actual = ops.to_numpy(ops.expand(x, shape))
    explicit = tuple(n if n != -1 else data.shape[i - len(shape) + 2]
                     for i, n in enumerate(shape))
    np.testing.assert_array_equal(actual, np.broadcast_to(data, explicit))


def test_expand_minus_one_in_a_new_dim_is_an_error():
    with pytest.raises(ValueError, match="new leading dim 0"):
        ops.expand(np.zeros(3), (-1, 3))


@pytest.mark.parametrize("start, stop, step", list(itertools.product([0, 1, 2, 10], [0, 1, 2, 10],
                                                                     [1, 2, 5, 10])))
def test_arange_slices_an_input(backend, start, stop, step):
    data = np.random.default_rng(8).standard_normal((10, 2))
    f = tensor(data, {"i": Bint[10]})
    actual = f(i=f.new_arange("j", start, stop, step, dtype=10))
    n = len(range(start, stop, step))
    assert actual.inputs == {"j": Bint[n]}
    assert_close(actual, expect(data[start:stop:step], {"j": Bint[n]}))


# ---------------------------------------------------------------------------------------------
# Deep copies own their data.
def test_deepcopy_copies_the_data(backend):
    data = backend_module().asarray(np.arange(6.0).reshape(3, 2), "real")
    x = fc.Tensor(data, {"i": Bint[3]})
    y = copy.deepcopy(x)
    assert y is not x and y.data is not x.data
    assert y.inputs == x.inputs and y.output is x.output
    assert_close(y, x)
    assert copy.deepcopy(x, {id(data): data}) is x
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]  # one copy per original, as deepcopy promises
