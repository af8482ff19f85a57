"""The Tensor atom: substitution (indexing), Stack, Cat, Lambda, Independent, Align, functions."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.testing import assert_close, check_funsor, random_tensor


def tensor(data, inputs, dtype="real"):
    kind = "real" if dtype == "real" else "int"
    return fc.Tensor(backend_module().asarray(data, kind), inputs, dtype)


def expect(data, inputs, dtype="real"):
    return fc.Tensor(np.asarray(data), inputs, dtype)


@pytest.fixture
def x_ijk():
    np.random.seed(0)
    x = np.random.randn(2, 3, 4, 2)
    return x, {"i": Bint[2], "j": Bint[3], "k": Bint[4]}


def test_construction(backend):
    np.random.seed(1)
    f = random_tensor({"i": Bint[2], "j": Bint[3]}, Reals[4])
    check_funsor(f, {"j": Bint[3], "i": Bint[2]}, Reals[4])
    assert f.data.shape == (2, 3, 4)
    g = random_tensor({"i": Bint[5]}, Bint[3])
    assert g.output is Bint[3]
    assert_close(ops.to_numpy(g.data) < 3, np.ones(5, bool))
    assert fc.Tensor([1.0, 2.0]).output is Reals[2]


def test_subs_number(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    assert_close(f(j=1), expect(x[:, 1], {"i": Bint[2], "k": Bint[4]}))
    assert_close(f(i=1, k=3), expect(x[1, :, 3], {"j": Bint[3]}))
    assert_close(f(0, 1), expect(x[0, 1], {"k": Bint[4]}))
    assert_close(f(0, k=2), expect(x[0, :, 2], {"j": Bint[3]}))
    assert_close(f(1, 2, 3), expect(x[1, 2, 3], {}))
    assert f(z=0) is f


def test_subs_rename(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    assert_close(f(j="a"), expect(x, {"i": Bint[2], "a": Bint[3], "k": Bint[4]}))
    g = f(i="k2", k="i")  # a simultaneous swap of names
    assert_close(g, expect(x, {"k2": Bint[2], "j": Bint[3], "i": Bint[4]}))


def test_subs_variable_onto_existing_input_is_diagonal(backend):
    np.random.seed(2)
    x = np.random.randn(3, 2, 3)
    f = tensor(x, {"i": Bint[3], "k": Bint[2], "j": Bint[3]})
    d = f(i=fc.Variable("j", Bint[3]))
    expected = np.stack([x[a, :, a] for a in range(3)])  # (j, k)
    assert_close(d, expect(expected, {"j": Bint[3], "k": Bint[2]}))
    assert_close(f(j="i"), expect(expected, {"i": Bint[3], "k": Bint[2]}))


def test_subs_tensor_advanced_indexing(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    np.random.seed(3)
    idx = np.random.randint(0, 3, (5,))
    g = f(j=tensor(idx, {"n": Bint[5]}, 3))
    expected = np.stack([x[:, idx[n]] for n in range(5)], axis=1)  # (i, n, k, 2)
    assert_close(g, expect(expected, {"i": Bint[2], "n": Bint[5], "k": Bint[4]}))


def test_subs_tensor_overlapping_inputs(backend, x_ijk):
    # The value depends on 'i', which stays an input of f: the result is indexed jointly.
    x, inputs = x_ijk
    f = tensor(x, inputs)
    np.random.seed(4)
    idx = np.random.randint(0, 4, (2, 3))  # k as a function of (i, n)
    g = f(k=tensor(idx, {"i": Bint[2], "n": Bint[3]}, 4))
    expected = np.empty((2, 3, 3, 2))
    for a in range(2):
        for b in range(3):
            for n in range(3):
                expected[a, b, n] = x[a, b, idx[a, n]]
    assert_close(g, expect(expected, {"i": Bint[2], "j": Bint[3], "n": Bint[3]}))


def test_subs_two_tensors_broadcast_by_name(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    np.random.seed(5)
    ii = np.random.randint(0, 2, (4,))
    kk = np.random.randint(0, 4, (5, 4))
    g = f(i=tensor(ii, {"m": Bint[4]}, 2), k=tensor(kk, {"n": Bint[5], "m": Bint[4]}, 4))
    expected = np.empty((4, 3, 5, 2))
    for m in range(4):
        for n in range(5):
            expected[m, :, n] = x[ii[m], :, kk[n, m]]
    assert_close(g, expect(expected, {"m": Bint[4], "j": Bint[3], "n": Bint[5]}))


def test_subs_mixed_number_variable_tensor(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    idx = np.array([3, 0])
    g = f(i=1, j="a", k=tensor(idx, {"m": Bint[2]}, 4))
    expected = np.stack([x[1, :, idx[m]] for m in range(2)], axis=1)  # (a, m, 2)
    assert_close(g, expect(expected, {"a": Bint[3], "m": Bint[2]}))


def test_subs_slice(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    assert_close(f(k=fc.Slice("k", 1, 4, 2, 4)), expect(x[:, :, 1:4:2], inputs | {"k": Bint[2]}))
    assert_close(f(j=fc.Slice("t", 3)), expect(x, {"i": Bint[2], "t": Bint[3], "k": Bint[4]}))
    s = fc.Slice("j", 0, 3, 2)
    assert s.inputs == {"j": Bint[2]} and s.output is Bint[3]


def test_subs_ints_and_arrays_by_keyword(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    assert_close(f(j=np.int64(2)), expect(x[:, 2], {"i": Bint[2], "k": Bint[4]}))


def test_stack(backend):
    np.random.seed(6)
    a = np.random.randn(2, 3)
    b = np.random.randn(3)
    fa = tensor(a, {"i": Bint[2], "j": Bint[3]})
    fb = tensor(b, {"j": Bint[3]})
    s = fc.Stack("s", (fa, fb, fc.Number(1.5)))
    expected = np.stack([a, np.broadcast_to(b, (2, 3)), np.full((2, 3), 1.5)])
    assert_close(s, expect(expected, {"s": Bint[3], "i": Bint[2], "j": Bint[3]}))
    assert_close(s(s=1), fb.align(("j",)) + 0 * fa)


def test_cat(backend):
    np.random.seed(7)
    a = np.random.randn(2, 3)
    b = np.random.randn(4, 2)  # (i, k) with i of size 4 and k instead of j
    fa = tensor(a, {"i": Bint[2], "j": Bint[3]})
    fb = tensor(b, {"i": Bint[4], "k": Bint[2]})
    c = fc.Cat("n", (fa, fb), "i")
    check_funsor(c, {"n": Bint[6], "j": Bint[3], "k": Bint[2]}, Real)
    expected = np.concatenate([np.broadcast_to(a[:, :, None], (2, 3, 2)),
                               np.broadcast_to(b[:, None, :], (4, 3, 2))])
    assert_close(c, expect(expected, {"n": Bint[6], "j": Bint[3], "k": Bint[2]}))


def test_lambda(backend):
    np.random.seed(8)
    x = np.random.randn(2, 3, 4)
    f = tensor(x, {"i": Bint[2], "j": Bint[3]})
    g = fc.Lambda(fc.Variable("j", Bint[3]), f)
    assert_close(g, expect(np.asarray(x), {"i": Bint[2]}))
    assert g.output is Reals[3, 4]
    h = fc.Lambda(fc.Variable("i", Bint[2]), f)
    assert_close(h, expect(np.swapaxes(x, 0, 1), {"j": Bint[3]}))
    absent = fc.Lambda(fc.Variable("z", Bint[5]), f)
    assert_close(absent, expect(np.broadcast_to(x[:, :, None], (2, 3, 5, 4)),
                                {"i": Bint[2], "j": Bint[3]}))
    # Lambda then indexing by a value gives the substitution back.
    assert_close(h[1], f(i=1))


def test_independent_without_real_input(backend):
    np.random.seed(9)
    x = np.random.randn(3, 2)
    f = tensor(x, {"i": Bint[3], "b": Bint[2]})
    g = fc.Independent(f, "X", "i", "x")
    assert_close(g, expect(x.sum(0), {"b": Bint[2]}))


def test_align(backend, x_ijk):
    x, inputs = x_ijk
    f = tensor(x, inputs)
    g = f.align(("k", "i"))
    assert tuple(g.inputs) == ("k", "i", "j")
    assert_close(ops.to_numpy(g.data), np.transpose(x, (2, 0, 1, 3)))
    assert f.align(("i",)) is f
    assert_close(fc.Align(f, ("j",)), f)


def test_function(backend):
    np.random.seed(10)

    @fc.function(Reals[3], Reals[3], Real)
    def dot(a, b):
        return (a * b).sum(-1)

    x = np.random.randn(2, 3)
    y = np.random.randn(4, 3)
    r = dot(tensor(x, {"i": Bint[2]}), tensor(y, {"k": Bint[4]}))
    assert_close(r, expect(x @ y.T, {"i": Bint[2], "k": Bint[4]}))
    v = fc.Variable("v", Reals[3])
    lazy_r = dot(tensor(x, {"i": Bint[2]}), v)
    assert isinstance(lazy_r, fc.Function)
    assert_close(lazy_r(v=tensor(y, {"k": Bint[4]})), r)


def test_number_arithmetic():
    n = fc.Number(2.0) * fc.Number(3.0) + 1
    assert isinstance(n, fc.Number) and n.data == 7.0
    b = fc.Number(1, 3) + fc.Number(2, 4)
    assert b.output is Bint[6] and b.data == 3
    assert (fc.Number(1.0) < 2).output is Bint[2]
    assert fc.Number(2.0).item() == 2.0


# ---------------------------------------------------------------------------------------------
# Guards: float data for a Bint-valued Tensor raises naming the dtype; an integer Tensor to a
# negative power is real (numpy's own 1 / x), on every backend and under jax.jit.
# (Moved from tests/test_regressions_13.py, item 14.)
def test_float_data_for_a_bint_tensor_raises(backend):
    from tests.backend_values import as_backend_array

    data = as_backend_array(np.array([0.5, 1.7]))
    with pytest.raises(fc.DomainError, match=r"dtype .*float.* cannot hold Bint\[3\] values"):
        fc.Tensor(data, {"k": Bint[2]}, 3)
    ok = fc.Tensor(as_backend_array(np.array([0, 2])), {"k": Bint[2]}, 3)  # integers are fine
    assert ok.dtype == 3


def test_bint_bound_given_as_a_zero_dim_integer_array(backend):
    # Pyro's plates under torch.jit.trace read their size as a 0-d tensor.
    from tests.backend_values import as_backend_array

    bound = as_backend_array(np.array(3))
    t = fc.Tensor(as_backend_array(np.array([0, 2])), {"k": Bint[2]}, bound)
    assert t.dtype == 3 and type(t.dtype) is int and t.output == Bint[3]


@pytest.mark.parametrize("dtype", ["real", 5])
@pytest.mark.parametrize("exponent", [-1, -2, 2])
def test_integer_tensor_power_is_real(dtype, exponent):
    from tests.backend_values import values_on_every_backend

    data = np.array([1, 2, 4])

    def fn(x):
        return (fc.Tensor(x, {"k": Bint[3]}, dtype) ** exponent).data

    expected = 1.0 / data.astype(float) ** -exponent if exponent < 0 else data ** exponent
    for value in values_on_every_backend(fn, data):
        np.testing.assert_allclose(value, expected, rtol=1e-12)
