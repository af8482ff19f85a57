"""Interop: funsors cross jax.jit / vmap / grad as pytrees; torch autograd flows through ops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.testing import assert_close


@pytest.fixture
def jax_backend():
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


def np_logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m, axis)


def test_jit_takes_and_returns_tensor(jax_backend):
    data = np.random.randn(2, 3)
    x = fc.Tensor(jnp.asarray(data), {"i": fc.Bint[2], "j": fc.Bint[3]})

    @jax.jit
    def normalize(f):
        return f - f.reduce(ops.logaddexp, "j")

    y = normalize(x)
    assert isinstance(y, fc.Tensor)
    assert y.inputs == {"i": fc.Bint[2], "j": fc.Bint[3]}
    expected = data - np_logsumexp(data, 1)[:, None]
    np.testing.assert_allclose(np.asarray(y.data), expected, rtol=1e-12)


def test_jit_traces_once_per_structure(jax_backend):
    traces = []

    @jax.jit
    def f(x, y):
        traces.append(1)
        return (x + y).reduce(ops.add, "i")

    inputs = {"i": fc.Bint[3]}
    for _ in range(3):
        a, b = np.random.randn(3), np.random.randn(3)
        out = f(fc.Tensor(jnp.asarray(a), inputs), fc.Tensor(jnp.asarray(b), inputs))
        np.testing.assert_allclose(np.asarray(out.data), (a + b).sum(), rtol=1e-12)
    assert len(traces) == 1


def test_grad_through_funsor_ops(jax_backend):
    data = np.random.randn(4)

    def loss(arr):
        f = fc.Tensor(arr, {"i": fc.Bint[4]})
        return (f * f).reduce(ops.logaddexp, "i").data

    g = jax.grad(loss)(jnp.asarray(data))
    # d/dx logsumexp(x^2) = softmax(x^2) * 2x
    s = np.exp(data**2 - np_logsumexp(data**2, 0))
    np.testing.assert_allclose(np.asarray(g), s * 2 * data, rtol=1e-10)


def test_grad_with_respect_to_a_funsor(jax_backend):
    data = np.random.randn(3)
    x = fc.Tensor(jnp.asarray(data), {"i": fc.Bint[3]})
    g = jax.grad(lambda f: f.exp().reduce(ops.add, "i").data)(x)
    assert isinstance(g, fc.Tensor) and g.inputs == x.inputs
    np.testing.assert_allclose(np.asarray(g.data), np.exp(data), rtol=1e-12)


def test_vmap_over_stacked_data(jax_backend):
    # vmap maps over an extra leading axis of the arrays, outside the named inputs.
    batch = np.random.randn(5, 2, 3)

    def make(arr):
        return fc.Tensor(arr, {"i": fc.Bint[2], "j": fc.Bint[3]})

    def f(t):
        return t.reduce(ops.logaddexp, "j")

    stacked = jax.vmap(make)(jnp.asarray(batch))
    out = jax.vmap(f)(stacked)
    assert out.inputs == {"i": fc.Bint[2]}
    np.testing.assert_allclose(np.asarray(out.data), np_logsumexp(batch, 2), rtol=1e-12)


def test_torch_gradient_through_chain():
    fc.set_backend("torch")
    try:
        a = torch.randn(2, 3, requires_grad=True)
        b = torch.randn(3, requires_grad=True)
        x = fc.Tensor(a, {"i": fc.Bint[2], "j": fc.Bint[3]})
        y = fc.Tensor(b, {"j": fc.Bint[3]})
        out = ((x * y).exp() + 1).log().reduce(ops.logaddexp, "j").reduce(ops.add, "i")
        out.data.backward()
        a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        hand = torch.logsumexp(torch.log(torch.exp(a2 * b2) + 1), dim=1).sum()
        hand.backward()
        assert_close(a.grad, a2.grad, rtol=1e-10)
        assert_close(b.grad, b2.grad, rtol=1e-10)
    finally:
        fc.set_backend("numpy")


def test_switch_backends_back_and_forth():
    for name in ("jax", "numpy", "torch", "numpy", "jax", "torch", "numpy"):
        fc.set_backend(name)
        assert fc.get_backend() == name
        t = fc.Tensor([1.0, 2.0], {"i": fc.Bint[2]})
        assert type(t.data).__module__.split(".")[0] in (
            {"numpy": "numpy", "torch": "torch", "jax": "jaxlib"}[name], name)
        np.testing.assert_allclose(np.asarray(ops.to_numpy((t + t).data)), [2.0, 4.0])
    fc.set_backend("numpy")


# ---------------------------------------------------------------------------------------------
# Guards: to_data of a Stack of Numbers gives what the Tensor it stands for gives, for every
# name_to_dim, as an array of the active backend. (Moved from tests/test_regressions_13.py,
# item 12.)
@pytest.mark.parametrize("dtype", ["real", 3])
def test_to_data_of_a_stack_of_numbers(backend, dtype):
    from tests.backend_values import as_backend_array, to_numpy

    values = (1.0, 2.0) if dtype == "real" else (1, 2)
    stack = fc.Stack("s", tuple(fc.Number(v, dtype) for v in values))
    tensor = fc.Tensor(as_backend_array(np.array(values)), {"s": fc.Bint[2]}, dtype)
    for name_to_dim in ({"s": -1}, {"s": -2}):
        actual = fc.to_data(stack, name_to_dim=name_to_dim)
        expected = np.reshape(np.array(values), (2,) + (1,) * (-name_to_dim["s"] - 1))
        np.testing.assert_array_equal(to_numpy(actual), expected)
        np.testing.assert_array_equal(to_numpy(actual), to_numpy(fc.to_data(tensor, name_to_dim)))
        assert type(actual) is type(tensor.data)


# ---------------------------------------------------------------------------------------------
# to_funsor of whole numbers held as floats with a Bint output (Pyro enumerates Bernoulli sites
# as 0.0/1.0) gives the integer Tensor, on every backend and under jax.jit.
def test_to_funsor_float_data_for_a_bint_output():
    from tests.backend_values import values_on_every_backend

    values = np.array([[0.0], [1.0], [1.0]])

    def convert(x):
        t = fc.to_funsor(x, fc.Bint[2], {-2: "x"})
        assert t.inputs == {"x": fc.Bint[3]} and t.dtype == 2 and not ops.is_floating(t.data)
        return t.data

    for actual in values_on_every_backend(convert, values):
        np.testing.assert_array_equal(actual, values[:, 0].astype(int))


# to_funsor: a batch dim of size 1 names no input even when dim_to_name names it (it
# broadcasts, as in funsor 0.4.8); to_data puts it back as a size-1 dim.
def test_to_funsor_size_one_dims_name_no_input(backend):
    from tests.backend_values import as_backend_array, to_numpy

    x = np.arange(3.0).reshape(3, 1, 1)
    t = fc.to_funsor(as_backend_array(x), fc.Real, {-3: "a", -2: "b", -1: "c"})
    assert t.inputs == {"a": fc.Bint[3]}
    np.testing.assert_array_equal(to_numpy(fc.to_data(t, {"a": -3})), x)


def test_to_funsor_dims_counted_from_the_left_get_the_fix():
    # dim_to_name's keys are negative (from the right of the batch shape), as in funsor; keys
    # counted from the left (0, 1) raised "batch dim -2 ... has no name" alone (h79): the
    # message now spells out the negative keys, and they give the round trip.
    a = np.arange(24.0).reshape(2, 3, 4)
    with pytest.raises(fc.DomainError, match=r"negative dims, e.g. dim_to_name=\{-2: 'i', "
                                             r"-1: 'j'\}"):
        fc.to_funsor(a, fc.Reals[4], dim_to_name={0: "i", 1: "j"})
    t = fc.to_funsor(a, fc.Reals[4], dim_to_name={-2: "i", -1: "j"})
    assert t.inputs == {"i": fc.Bint[2], "j": fc.Bint[3]}
    np.testing.assert_array_equal(fc.to_data(t.align(("j", "i")), {"i": -2, "j": -1}), a)
