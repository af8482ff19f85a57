"""funsor's output-dim idioms on Tensors: indexing by names and Bint-valued funsors
(``Getitem``), ``Einsum``, ``tensordot``, ``ops.stack``/``ops.cat`` of funsors and the numeric
helpers of ``funsor.tensor``. Oracles: numpy indexing and loops written out by hand."""

import itertools
import pickle

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.tensor import (
    REDUCE_OP_TO_NUMERIC,
    Einsum,
    Getitem,
    get_default_prototype,
    numeric_array,
    tensordot,
)
from funsor_core.terms import DomainError
from funsor_core.testing import assert_close, check_funsor
from interpretations import lazy


def arr(data, kind="real"):
    return backend_module().asarray(np.asarray(data), kind)


def npy(x):
    return np.asarray(ops.to_numpy(x.data))


# -- names and Variables turn output dims into inputs ------------------------------------------
def test_string_index_names_leading_dims_and_shares_data():
    data = np.random.RandomState(0).randn(5, 4, 3)
    x = fc.Tensor(data)
    assert x["i"] is fc.Tensor(data, {"i": Bint[5]})
    assert x["i", "j"] is fc.Tensor(data, {"i": Bint[5], "j": Bint[4]})
    i, j = fc.Variable("i", Bint[5]), fc.Variable("j", Bint[4])
    assert x[i, j] is x["i", "j"]
    assert fc.Lambda(i, x[i]) is x  # Lambda undoes the naming without copying


@pytest.mark.parametrize("index, order", [
    ((slice(None), "j"), (1, 0, 2)),
    ((slice(None), slice(None), "k"), (2, 0, 1)),
    ((Ellipsis, "k"), (2, 0, 1)),
    (("i", Ellipsis, "k"), (0, 2, 1)),
])
def test_string_index_at_any_dim(backend, index, order):
    data = np.random.RandomState(1).randn(2, 3, 4)
    x = fc.Tensor(arr(data))
    y = x[index]
    names = [p for p in index if isinstance(p, str)]
    assert list(y.inputs) == names
    # the named dims move to the left, in order; the rest keep their order
    assert_close(npy(y), np.transpose(data, order))


def test_string_index_with_batch_inputs(backend):
    data = np.random.RandomState(2).randn(3, 2, 4)
    x = fc.Tensor(arr(data), {"b": Bint[3]})
    y = x[:, "k"]
    check_funsor(y, {"b": Bint[3], "k": Bint[4]}, Reals[2])
    for b, k in itertools.product(range(3), range(4)):
        assert_close(npy(y(b=b, k=k)), data[b, :, k])


def test_variable_already_an_input_takes_the_diagonal(backend):
    data = np.random.RandomState(3).randn(3, 3, 2)
    x = fc.Tensor(arr(data), {"i": Bint[3]})
    y = x[fc.Variable("i", Bint[3])]
    check_funsor(y, {"i": Bint[3]}, Reals[2])
    assert_close(npy(y), np.stack([data[i, i] for i in range(3)]))


# -- gathers by Bint-valued funsors -------------------------------------------------------------
@pytest.mark.parametrize("position", [0, 1, 2])
def test_tensor_index_gathers_by_name(backend, position):
    rng = np.random.RandomState(4)
    data = rng.randn(2, 3, 4, 5)  # batch b, output (3, 4, 5)
    sizes = data.shape[1:]
    idx_data = rng.randint(0, sizes[position], size=(6, 2))  # inputs k, b
    x = fc.Tensor(arr(data), {"b": Bint[2]})
    idx = fc.Tensor(arr(idx_data, "int"), {"k": Bint[6], "b": Bint[2]}, sizes[position])
    index = (slice(None),) * position + (idx,)
    y = x[index]
    out = tuple(s for d, s in enumerate(sizes) if d != position)
    check_funsor(y, {"b": Bint[2], "k": Bint[6]}, Reals[out])
    for b, k in itertools.product(range(2), range(6)):
        at = [slice(None)] * 3
        at[position] = idx_data[k, b]
        assert_close(npy(y(b=b, k=k)), data[b][tuple(at)])


def test_mixed_index_ints_slices_none_ellipsis_funsors():
    rng = np.random.RandomState(5)
    data = rng.randn(4, 5, 6, 3)
    x = fc.Tensor(data)
    i = fc.Tensor(rng.randint(0, 5, size=7), {"k": Bint[7]}, 5)
    y = x[None, 1:3, i, ..., "m", None]  # "..." stands for dim 2, "m" names dim 3
    check_funsor(y, {"k": Bint[7], "m": Bint[3]}, Reals[1, 2, 6, 1])
    for k, m in itertools.product(range(7), range(3)):
        # numpy with the funsor indices replaced by their values at (k, m)
        assert_close(npy(y(k=k, m=m)), data[None, 1:3, i.data[k], :, m, None])


def test_two_funsor_indices_broadcast_by_name_not_position():
    rng = np.random.RandomState(6)
    data = rng.randn(3, 4)
    u = fc.Tensor(rng.randint(0, 3, size=5), {"k": Bint[5]}, 3)
    v = fc.Tensor(rng.randint(0, 4, size=2), {"l": Bint[2]}, 4)
    y = fc.Tensor(data)[u, v]
    check_funsor(y, {"k": Bint[5], "l": Bint[2]}, Real)
    assert_close(npy(y), data[u.data[:, None], v.data[None, :]])


def test_number_and_slice_indices():
    data = np.random.RandomState(7).randn(3, 10)
    x = fc.Tensor(data)
    assert_close(npy(x[:, fc.Number(4, 10)]), data[:, 4])
    y = x[:, fc.Slice("s", 1, 9, 3, 10)]
    check_funsor(y, {"s": Bint[3]}, Reals[3])
    assert_close(npy(y), data[:, 1:9:3].T)


def test_substituting_into_a_named_dim_equals_indexing():
    rng = np.random.RandomState(8)
    data = rng.randn(5, 4, 3)
    x = fc.Tensor(data)
    y = fc.Tensor(rng.randint(0, 4, size=5), {"i": Bint[5]}, 4)
    assert_close(x["i", "j"](j=y), x["i", y])


# -- lazy funsors get a lazy Getitem ------------------------------------------------------------
def test_lazy_variable_index_is_a_term_that_substitutes():
    data = np.random.RandomState(9).randn(5, 4)
    v = fc.Variable("v", Reals[5, 4])
    y = v[:, "j"]
    assert isinstance(y, Getitem)
    check_funsor(y, {"v": Reals[5, 4], "j": Bint[4]}, Reals[5])
    assert_close(npy(y(v=fc.Tensor(data))), data.T)


def test_under_lazy_the_term_is_kept_and_reinterpreted():
    data = np.random.RandomState(10).randn(2, 3)
    idx = fc.Tensor(np.array([2, 0, 1, 1]), {"k": Bint[4]}, 3)
    with lazy:
        y = fc.Tensor(data)[:, idx]
    assert isinstance(y, Getitem)
    check_funsor(y, {"k": Bint[4]}, Reals[2])
    assert_close(npy(fc.reinterpret(y)), data[:, [2, 0, 1, 1]].T)
    assert pickle.loads(pickle.dumps(y)).inputs == y.inputs


def test_index_errors_name_the_domains():
    x = fc.Tensor(np.zeros((2, 3)))
    with pytest.raises(DomainError, match=r"output dim 0 of size 2 .* output Bint\[2\]"):
        x[fc.Variable("i", Bint[3])]
    with pytest.raises(TypeError, match="real-valued funsor"):
        x[fc.Variable("r", Real)]
    with pytest.raises(IndexError, match="too many indices"):
        x["i", "j", "k"]
    with pytest.raises(DomainError, match=r"span \[0, 5\]"):
        x[fc.Tensor(np.array([0, 5]), {"k": Bint[2]}, 2)]


# -- Einsum and tensordot on output dims --------------------------------------------------------
@pytest.mark.parametrize("equation", ["a,b->ab", "ab,b->a", "ab,bc->ac", "ab,ba->", "abc,cb->a",
                                      "ab,bc"])
def test_einsum_matches_numpy_with_batch_inputs(backend, equation):
    rng = np.random.RandomState(11)
    sizes = {"a": 2, "b": 3, "c": 4}
    lhs, rhs = equation.split("->")[0].split(",")
    xd = rng.randn(5, *(sizes[c] for c in lhs))
    yd = rng.randn(6, 5, *(sizes[c] for c in rhs))
    x = fc.Tensor(arr(xd), {"i": Bint[5]})
    y = fc.Tensor(arr(yd), {"j": Bint[6], "i": Bint[5]})
    actual = Einsum(equation, x, y)
    assert set(actual.inputs) == {"i", "j"}
    for i, j in itertools.product(range(5), range(6)):
        assert_close(npy(actual(i=i, j=j)), np.einsum(equation, xd[i], yd[j, i]), atol=1e-10)


def test_einsum_of_lazy_operand_stays_lazy_and_substitutes():
    a = np.random.RandomState(12).randn(2, 3)
    v = fc.Variable("v", Reals[3])
    y = Einsum("ab,b->a", fc.Tensor(a), v)
    assert isinstance(y, Einsum)
    check_funsor(y, {"v": Reals[3]}, Reals[2])
    assert_close(npy(y(v=fc.Tensor(np.ones(3)))), a.sum(1))


@pytest.mark.parametrize("x_shape, xy_shape, y_shape", [
    ((), (), ()), ((2,), (), (4,)), ((2, 3), (6,), (4,)), ((2,), (6, 7), (4, 5))])
def test_tensordot_matches_numpy(x_shape, xy_shape, y_shape):
    rng = np.random.RandomState(13)
    x, y = rng.randn(*x_shape, *xy_shape), rng.randn(*xy_shape, *y_shape)
    actual = tensordot(fc.Tensor(x), fc.Tensor(y), len(xy_shape))
    assert_close(npy(actual), np.tensordot(x, y, len(xy_shape)), atol=1e-10)


def test_ops_einsum_of_funsors_builds_einsum():
    x = fc.Tensor(np.ones((2, 3)))
    assert_close(npy(ops.einsum("ab->a", x)), np.full(2, 3.0))


# -- ops.stack / ops.cat of funsors act on output dims ------------------------------------------
@pytest.mark.parametrize("shape, axis", [((), 0), ((), -1), ((2, 3), 0), ((2, 3), 1), ((2, 3), 2),
                                         ((2, 3), -1), ((2, 3), -3)])
def test_stack_of_funsors_matches_numpy(backend, shape, axis):
    rng = np.random.RandomState(14)
    parts = [rng.randn(*shape) for _ in range(3)]
    actual = ops.stack(tuple(fc.Tensor(arr(p)) for p in parts), axis)
    check_funsor(actual, {}, Reals[np.stack(parts, axis).shape])
    assert_close(npy(actual), np.stack(parts, axis))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cat_of_funsors_with_inputs_matches_numpy(axis):
    rng = np.random.RandomState(15)
    a = rng.randn(4, 2, 3)  # input i, output (2, 3)
    b = rng.randn(2, 3)
    parts = (fc.Tensor(a, {"i": Bint[4]}), fc.Tensor(b))
    actual = ops.cat(parts, axis)
    check_funsor(actual, {"i": Bint[4]}, Reals[np.concatenate([a[0], b], axis).shape])
    for i in range(4):
        assert_close(npy(actual(i=i)), np.concatenate([a[i], b], axis))


def test_stack_of_lazy_parts_substitutes():
    v = fc.Variable("v", Reals[2])
    s = ops.stack((v, fc.Tensor(np.zeros(2))), 1)
    check_funsor(s, {"v": Reals[2]}, Reals[2, 2])
    assert_close(npy(s(v=fc.Tensor(np.array([1.0, 2.0])))), np.array([[1.0, 0.0], [2.0, 0.0]]))


def test_stack_of_numbers():
    assert_close(npy(ops.stack((fc.Number(2.0), fc.Number(3.0)))), np.array([2.0, 3.0]))


# -- numeric helpers and modules as in funsor ---------------------------------------------------
def test_numeric_helpers(backend):
    a = numeric_array([[1, 2]], "int64")
    assert tuple(a.shape) == (1, 2) and "int" in str(a.dtype)
    assert "float" in str(numeric_array([1.0]).dtype)
    assert tuple(get_default_prototype().shape) == (0,)
    data = np.random.RandomState(16).rand(3, 4)
    for op, numeric in REDUCE_OP_TO_NUMERIC.items():
        if op in (ops.and_, ops.or_):
            continue
        expected = fc.Tensor(arr(data), {"i": Bint[3]}).reduce(op, "i")
        assert_close(npy(expected), np.asarray(ops.to_numpy(numeric(arr(data), 0))))


def test_einsum_and_sum_product_are_modules():
    import types

    import funsor_core.einsum
    import funsor_core.sum_product

    assert fc.einsum is funsor_core.einsum and isinstance(fc.einsum, types.ModuleType)
    assert fc.sum_product is funsor_core.sum_product
    x = fc.Tensor(np.ones((2, 3)), {"a": Bint[2], "b": Bint[3]})
    assert_close(npy(fc.einsum.einsum("ab->a", x)), np.full(2, 3.0))
    assert_close(npy(fc.einsum("ab->a", x)), np.full(2, 3.0))  # the module calls its namesake
    f = fc.sum_product(ops.add, ops.mul, [x], frozenset("b"))
    assert_close(npy(f), np.full(2, 3.0))


def test_materialize_substitutes_aranges_for_bint_inputs():
    u, v = fc.Variable("u", Bint[2]), fc.Variable("v", Bint[3])
    x = fc.Tensor(np.zeros(1))
    with lazy:
        k = u * 3 + v
    m = x.materialize(k)
    assert isinstance(m, fc.Tensor)
    check_funsor(m, {"u": Bint[2], "v": Bint[3]}, m.output)
    assert_close(npy(m), np.arange(2)[:, None] * 3 + np.arange(3)[None, :])
    assert x.materialize(fc.Number(1.0)) is fc.Number(1.0)


def test_traced_jax_index_out_of_range_gives_nan_not_a_clamped_value():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        x = fc.Tensor(arr(np.arange(6.0).reshape(2, 3)))

        @jax.jit
        def gather(idx):
            return x[:, fc.Tensor(idx, {"k": Bint[2]}, 3)].data

        ok = np.asarray(gather(arr([2, 0], "int")))
        bad = np.asarray(gather(arr([5, 1], "int")))
    finally:
        fc.set_backend("numpy")
    data = np.arange(6.0).reshape(2, 3)
    assert_close(ok, data[:, [2, 0]].T)
    assert np.isnan(bad[0]).all() and np.allclose(bad[1], data[:, 1])
