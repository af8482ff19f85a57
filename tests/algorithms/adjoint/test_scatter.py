"""Scatter against a numpy brute force: loop over every source point and op-combine it into
the destination by hand."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint.scatter import Scatter
from funsor_core.domains import Bint
from funsor_core.terms.base import Binary
from interpretations import lazy

NP_OPS = {ops.add: (np.add, 0.0), ops.mul: (np.multiply, 1.0), ops.max: (np.maximum, -np.inf),
          ops.min: (np.minimum, np.inf), ops.logaddexp: (np.logaddexp, -np.inf)}
SIZES = {"a": 2, "b": 3, "c": 2}


def _brute(op, source_names, src, keys, reduced):
    # keys: [(key, names of the index, index array, size)]; returns (names, array).
    np_op, unit = NP_OPS[op]
    full = list(dict.fromkeys([n for _, names, _, _ in keys for n in names] + source_names))
    kept = [n for n in full if n not in reduced]
    out = np.full([SIZES[n] for n in kept] + [k[3] for k in keys], unit)
    for point in itertools.product(*[range(SIZES[n]) for n in full]):
        at = dict(zip(full, point))
        value = src[tuple(at[n] for n in source_names)]
        dest = tuple(at[n] for n in kept) + tuple(
            int(idx[tuple(at[n] for n in names)]) for _, names, idx, _ in keys)
        out[dest] = np_op(out[dest], value)
    return kept + [k[0] for k in keys], out


def _case(seed, injective):
    rng = np.random.default_rng(seed)
    source_names = ["a", "b", "c"]
    src = rng.normal(size=(2, 3, 2))
    i_names = ["b", "c"]
    if injective:
        i = rng.permutation(8)[:6].reshape(3, 2)
    else:
        i = rng.integers(0, 3, size=(3, 2))  # 6 points into 3 slots: collisions
    return source_names, src, [("i", i_names, i, 8 if injective else 3)]


@pytest.mark.parametrize("op", list(NP_OPS))
@pytest.mark.parametrize("injective", [True, False])
@pytest.mark.parametrize("reduced", ["", "b", "bc", "ab"])
def test_scatter_vs_brute_force(op, injective, reduced):
    source_names, src, keys = _case(0, injective)
    source = fc.Tensor(src, {n: Bint[SIZES[n]] for n in source_names})
    subs = tuple((k, fc.Tensor(idx, {n: Bint[SIZES[n]] for n in names}, size))
                 for k, names, idx, size in keys)
    actual = Scatter(op, subs, source, frozenset(reduced))
    names, expected = _brute(op, source_names, src, keys, set(reduced))
    assert isinstance(actual, fc.Tensor)
    assert set(actual.inputs) == set(names)  # the order of the inputs is the layout's choice
    assert np.allclose(actual.align(tuple(names)).data, expected)


def test_scatter_variables_diag_and_number_source():
    src = np.array([1.0, 2.0, 3.0])
    k = fc.Variable("k", Bint[3])
    diag = Scatter(ops.add, (("i", k), ("j", k)), fc.Tensor(src, {"k": Bint[3]}), frozenset({k}))
    assert np.allclose(diag.align(("i", "j")).data, np.diag(src))
    one = Scatter(ops.max, (("i", fc.Number(1, 3)),), fc.Number(2.0), frozenset())
    assert np.allclose(one.data, [-np.inf, 2.0, -np.inf])


@pytest.mark.parametrize("op", list(NP_OPS))
def test_scatter_is_transpose_of_subs(op):
    source_names, src, keys = _case(1, True)
    source = fc.Tensor(src, {n: Bint[SIZES[n]] for n in source_names})
    (key, names, idx, size), = keys
    i = fc.Tensor(idx, {n: Bint[SIZES[n]] for n in names}, size)
    destin = Scatter(op, (("i", i),), source, frozenset())
    back = destin(i=i).align(tuple(source_names))
    assert np.allclose(back.data, src)


def test_scatter_lazy_then_reinterpret():
    source_names, src, keys = _case(2, False)
    source = fc.Tensor(src, {n: Bint[SIZES[n]] for n in source_names})
    (key, names, idx, size), = keys
    i = fc.Tensor(idx, {n: Bint[SIZES[n]] for n in names}, size)
    with lazy:
        term = Scatter(ops.logaddexp, (("i", i),), source, frozenset({"b"}))
    assert type(term) is Scatter
    assert term.inputs == {"c": Bint[2], "a": Bint[2], "i": Bint[3]}
    assert term.bound == frozenset({"b"})
    value = fc.reinterpret(term)
    names, expected = _brute(ops.logaddexp, source_names, src, keys, {"b"})
    assert np.allclose(value.align(tuple(names)).data, expected)


def test_scatter_substitution_renames_keys_and_pushes_batch_inputs():
    src = np.random.default_rng(3).normal(size=(2, 3))
    source = fc.Tensor(src, {"a": Bint[2], "b": Bint[3]})
    b = fc.Variable("b", Bint[3])
    with lazy:
        term = Scatter(ops.add, (("i", b),), source, frozenset({"b"}))
        renamed = term(i="j")
        # a value for the batch input 'a' that mentions the bound name 'b': b is renamed first
        pushed = term(a=fc.Tensor(np.array([1, 0, 1]), {"b": Bint[3]}, 2))
    assert type(renamed) is Scatter and set(renamed.inputs) == {"a", "j"}
    assert set(pushed.inputs) == {"b", "i"}
    # Scatter of b into i, reducing b, is the renaming b -> i.
    assert np.allclose(fc.reinterpret(renamed).align(("a", "j")).data, src)
    expected = src[[1, 0, 1]]  # [b', i] = src[a(b'), i]
    assert np.allclose(fc.reinterpret(pushed).align(("b", "i")).data, expected)


def test_scatter_substitution_under_a_binder_renames_the_key():
    # Reduce over the key i; substituting a value with a free 'i' renames the bound i.
    source = fc.Tensor(np.arange(3.0), {"k": Bint[3]})
    x = fc.Variable("x", Bint[3])
    with lazy:
        expr = (Scatter(ops.add, (("i", fc.Variable("k", Bint[3])),), source, frozenset())
                * fc.Tensor(np.ones(3), {"x": Bint[3]})).reduce(ops.add, "i")
        expr = expr(x=fc.Variable("i", Bint[3]))
    assert set(expr.inputs) == {"k", "i"}
    value = fc.reinterpret(expr).align(("k", "i")).data
    assert np.allclose(value, np.arange(3.0)[:, None] * np.ones((3, 3)))
    del x


@pytest.mark.parametrize("op", [ops.add, ops.max])
def test_scatter_backends(op, backend):
    source_names, src, keys = _case(4, False)
    arr = fc.Tensor(src.tolist()).data  # on the active backend
    (key, names, idx, size), = keys
    idx_arr = fc.Tensor(idx.tolist(), {}, size).data
    source = fc.Tensor(arr, {n: Bint[SIZES[n]] for n in source_names})
    i = fc.Tensor(idx_arr, {n: Bint[SIZES[n]] for n in names}, size)
    actual = Scatter(op, (("i", i),), source, frozenset({"b", "c"}))
    names, expected = _brute(op, source_names, src, keys, {"b", "c"})
    assert np.allclose(ops.to_numpy(actual.align(tuple(names)).data), expected)


def test_scatter_errors():
    source = fc.Tensor(np.zeros(2), {"k": Bint[2]})
    with pytest.raises(ValueError, match="cannot scatter into 'k'"):
        Scatter(ops.add, (("k", fc.Number(0, 2)),), source, frozenset())
    with pytest.raises(ValueError, match="cannot scatter into 'i'.*reduced"):
        Scatter(ops.add, (("i", fc.Number(0, 2)),), source, frozenset({"i"}))
    with pytest.raises(ValueError, match="no unit"):
        Scatter(ops.sub, (("i", fc.Number(0, 2)),), source, frozenset())
    with pytest.raises(TypeError, match="must be a funsor"):
        Scatter(ops.add, (("i", 0),), source, frozenset())


@pytest.mark.parametrize("op", [ops.logaddexp, ops.add, ops.max])
@pytest.mark.parametrize("collide", [False, True])
def test_scatter_accumulated_into_a_tensor(op, collide):
    # op(t, Scatter) and op(Scatter, Scatter) under exact equal evaluating the Scatters first:
    # the halves of a strided index land apart (one array), colliding ones are combined.
    rng = np.random.default_rng(3)
    n = {"n": Bint[3]}
    src = [fc.Tensor(rng.normal(size=(3, 2, 4)), {**n, "b": Bint[2], "c": Bint[4]})
           for _ in range(2)]
    idx = [fc.Tensor(np.array([0, 2, 4]), n, 6),
           fc.Tensor(np.array([1, 1, 5]) if collide else np.array([1, 3, 5]), n, 6)]
    dest = fc.Tensor(rng.normal(size=(4, 6, 2)), {"c": Bint[4], "i": Bint[6], "b": Bint[2]})
    with lazy:
        lazy_scatters = [Scatter(op, (("i", i),), s, frozenset({"n"})) for i, s in zip(idx, src)]
    a, b = (Scatter(*s._args) for s in lazy_scatters)  # evaluated (exact)
    assert type(a) is fc.Tensor
    for got, expected in [(Binary(op, dest, lazy_scatters[1]), op(dest, b)),
                          (Binary(op, *lazy_scatters), op(a, b))]:
        assert type(got) is fc.Tensor and dict(got.inputs) == dict(expected.inputs)
        np.testing.assert_allclose(got.data, expected.align(tuple(got.inputs)).data)
