"""Regressions from the correctness issue (defects 1-8), each against an independent oracle.

Oracles: enumeration of every discrete assignment, numpy matrix products, the sequential fold
``naive_sequential_sum_product``, and ``opt_einsum.contract`` on numpy.
"""

import itertools

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum
from funsor_core.sum_product import naive_sequential_sum_product, sequential_sum_product
from funsor_core.testing import random_gaussian
from interpretations import lazy


def _array(data):
    # A numpy array as an array of the active backend (funsor_core converts nothing silently).
    name = fc.get_backend()
    if name == "torch":
        import torch

        return torch.tensor(data)
    if name == "jax":
        import jax.numpy as jnp

        return jnp.asarray(data)
    return np.asarray(data)


def _tensor(data, names):
    return fc.Tensor(_array(data), {n: fc.Bint[s] for n, s in zip(names, np.shape(data))})


# ---------------------------------------------------------------------------------------------
# Defect 1: factor order must not matter (groups were removed with ``==``, which builds a funsor).
SIZES = {"a": 2, "b": 3, "c": 2, "d": 3}
# A Bayesian network a -> b, a -> c, (b, c) -> d: p(a) p(b|a) p(c|a) p(d|b,c).
NETWORK = ["a", "ab", "ac", "bcd"]


def _network_tables(rng):
    return [rng.uniform(0.1, 1.0, size=tuple(SIZES[c] for c in names)) for names in NETWORK]


def _enumerate(tables, names_list, keep):
    # Sum the product of all tables over every assignment of the letters not in ``keep``.
    letters = sorted(set("".join(names_list)))
    out = np.zeros(tuple(SIZES[c] for c in keep))
    for values in itertools.product(*(range(SIZES[c]) for c in letters)):
        point = dict(zip(letters, values))
        p = 1.0
        for table, names in zip(tables, names_list):
            p *= table[tuple(point[c] for c in names)]
        out[tuple(point[c] for c in keep)] += p
    return out


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_sum_product_bayesian_network_any_factor_order(order):
    rng = np.random.default_rng(1)
    tables = _network_tables(rng)
    factors = [_tensor(tables[k], NETWORK[k]) for k in order]
    for keep in ("", "d", "ad"):
        eliminate = frozenset("abcd") - frozenset(keep)
        result = fc.sum_product(ops.add, ops.mul, factors, eliminate)
        data = result.align(tuple(keep)).data if keep else result.data
        assert np.allclose(data, _enumerate(tables, NETWORK, keep))


def test_sum_product_repeated_factor():
    # The reproducer: [fa, fb, fb], and a group that merges into a non-first group.
    rng = np.random.default_rng(2)
    ta, tb, tc = rng.uniform(size=2), rng.uniform(size=(2, 3)), rng.uniform(size=3)
    fa, fb, fc_ = _tensor(ta, "a"), _tensor(tb, "ab"), _tensor(tc, "c")
    r = fc.sum_product(ops.add, ops.mul, [fa, fb, fb], frozenset("ab"))
    assert np.allclose(r.data, sum(ta[a] * tb[a, b] ** 2 for a in range(2) for b in range(3)))
    r = fc.sum_product(ops.add, ops.mul, [fc_, fa, fb], frozenset("abc"))
    assert np.allclose(r.data, tc.sum() * (ta[:, None] * tb).sum())


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_plated_einsum_three_local_factors(backend, order):
    # sum_a f(a) prod_i sum_b g(i,a,b) h(i,b) k(i,a): three factors local to plate i.
    rng = np.random.default_rng(3)
    f, g, h, k = (rng.uniform(size=s) for s in [(2,), (4, 2, 3), (4, 3), (4, 2)])
    local = [("iab", g), ("ib", h), ("ia", k)]
    picked = [local[j] for j in order]
    eq = "a," + ",".join(n for n, _ in picked) + "->"
    operands = [_tensor(f, "a")] + [_tensor(t, n) for n, t in picked]
    result = einsum(eq, *operands, plates="i", backend="numpy")
    expected = sum(f[a] * np.prod([sum(g[i, a, b] * h[i, b] * k[i, a] for b in range(3))
                                   for i in range(4)]) for a in range(2))
    assert np.allclose(ops.to_numpy(result.data), expected)


# ---------------------------------------------------------------------------------------------
# Defect 2: sequential_sum_product for lengths that are not powers of two.
def _chain_matrices(duration, seed=0):
    return np.random.default_rng(seed).uniform(size=(duration, 3, 3))


def _matrix_chain(mats):
    expected = mats[0]
    for m in mats[1:]:
        expected = expected @ m
    return expected


@pytest.mark.parametrize("duration", range(1, 18))
def test_sequential_sum_product_tensor_every_length(duration):
    mats = _chain_matrices(duration, duration)
    trans = _tensor(mats, ("t", "x", "y"))
    result = sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"})
    naive = naive_sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"})
    assert np.allclose(result.align(("x", "y")).data, _matrix_chain(mats))
    assert np.allclose(result.align(("x", "y")).data, naive.align(("x", "y")).data)


@pytest.mark.parametrize("duration", [1, 2, 3, 6, 7, 16, 17])
def test_sequential_sum_product_log_semiring_with_batch(backend, duration):
    # A batch input "b" rides along; log space against numpy matrix products of exp.
    logs = np.random.default_rng(duration).normal(size=(duration, 2, 3, 3))
    trans = _tensor(logs, ("t", "b", "x", "y"))
    result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    expected = np.stack([_matrix_chain(np.exp(logs[:, b])) for b in range(2)])
    assert np.allclose(np.exp(ops.to_numpy(result.align(("b", "x", "y")).data)), expected)


@pytest.mark.parametrize("duration", [2, 3, 5, 8, 13, 17])
def test_sequential_sum_product_tensor_lazy_then_reinterpret(duration):
    mats = _chain_matrices(duration, 100 + duration)
    trans = _tensor(mats, ("t", "x", "y"))
    with lazy:
        result = sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"})
    result = fc.reinterpret(result)
    assert isinstance(result, fc.Tensor)
    assert np.allclose(result.align(("x", "y")).data, _matrix_chain(mats))


def _at_points(factor, names, seed=0, count=4):
    # A Gaussian-valued result as numbers: its log density at a few random points.
    rng = np.random.default_rng(seed)
    return np.array([float(factor(**dict(zip(names, rng.normal(size=len(names))))).data)
                     for _ in range(count)])


@pytest.mark.parametrize("duration", [3, 5, 7, 100])
def test_sequential_sum_product_gaussian_chain(duration):
    trans = random_gaussian({"t": fc.Bint[duration], "x": fc.Real, "y": fc.Real})
    result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    naive = naive_sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert set(result.inputs) == {"x", "y"}
    assert np.allclose(_at_points(result, "xy"), _at_points(naive, "xy"), rtol=1e-8)


def test_sequential_sum_product_gaussian_lazy_odd_length():
    trans = random_gaussian({"t": fc.Bint[7], "x": fc.Real, "y": fc.Real})
    with lazy:
        result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    result = fc.reinterpret(result)
    naive = naive_sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert np.allclose(_at_points(result, "xy"), _at_points(naive, "xy"), rtol=1e-8)


# ---------------------------------------------------------------------------------------------
# Defect 3: a step that names a non-input raises instead of returning numbers.
@pytest.mark.parametrize("fn", [sequential_sum_product, naive_sequential_sum_product])
def test_sequential_sum_product_step_names_must_be_inputs(fn):
    trans = _tensor(np.ones((3, 2)), ("t", "x_curr"))
    with pytest.raises(ValueError, match=r"\['x_prev'\] are not inputs.*\['t', 'x_curr'\]"):
        fn(ops.add, ops.mul, trans, "t", {"x_prev": "x_curr"})
    trans = _tensor(np.ones((2, 2)), ("x_prev", "x_curr"))
    with pytest.raises(ValueError, match=r"\['y_prev', 'y_curr'\] are not inputs"):
        fn(ops.add, ops.mul, trans, "t", {"x_prev": "x_curr", "y_prev": "y_curr"})
    # A time *name* trans lacks is refused (funsor 0.4.8 accepts only a Variable, whose size
    # gives the number of steps); it used to return trans unchanged, hiding a misspelt time.
    with pytest.raises(ValueError, match="time 't' is not an input of the transition factor"):
        fn(ops.add, ops.mul, trans, "t", {"x_prev": "x_curr"})
    one = fn(ops.add, ops.mul, trans, fc.Variable("t", fc.Bint[1]), {"x_prev": "x_curr"})
    np.testing.assert_allclose(one.align(("x_prev", "x_curr")).data, np.ones((2, 2)))


# ---------------------------------------------------------------------------------------------
# Defect 4: more than 52 variables (opt_einsum's symbols past 'Z' are not torch/numpy letters).
def _tree(num_vars, seed=0):
    # A random tree on variables 0..num_vars-1: each v > 0 hangs off a random earlier parent.
    rng = np.random.default_rng(seed)
    edges = [(int(rng.integers(v)), v) for v in range(1, num_vars)]
    tables = [rng.uniform(0.5, 1.5, size=(2, 2)) for _ in edges]
    return edges, tables


@pytest.mark.parametrize("semiring", ["numpy", "funsor.einsum.numpy_log"])
def test_einsum_hundred_variable_tree(backend, semiring):
    edges, tables = _tree(100)
    symbols = [opt_einsum.get_symbol(v) for v in range(100)]
    inputs = [symbols[u] + symbols[v] for u, v in edges]
    eq = ",".join(inputs) + "->" + symbols[0]
    expected = opt_einsum.contract(eq, *tables)  # numpy, unicode symbols are fine there
    log = semiring.endswith("_log")
    operands = [_tensor(np.log(t) if log else t, letters) for t, letters in zip(tables, inputs)]
    result = ops.to_numpy(einsum(eq, *operands, backend=semiring).data)
    assert np.allclose(np.exp(result) if log else result, expected)


def test_contract_tensors_hundred_variable_chain(backend):
    # Inputs named v0..v99 (the einsum letters are made up inside), against opt_einsum.
    rng = np.random.default_rng(4)
    tables = [rng.uniform(0.5, 1.5, size=(2, 2)) for _ in range(99)]
    factors = [_tensor(t, (f"v{k}", f"v{k + 1}")) for k, t in enumerate(tables)]
    reduced = frozenset(f"v{k}" for k in range(1, 100))
    result = fc.Contraction(ops.add, ops.mul, reduced, tuple(factors))
    symbols = [opt_einsum.get_symbol(v) for v in range(100)]
    eq = ",".join(symbols[k] + symbols[k + 1] for k in range(99)) + "->" + symbols[0]
    assert np.allclose(ops.to_numpy(result.data), opt_einsum.contract(eq, *tables))


# ---------------------------------------------------------------------------------------------
# Defect 5: NaN must propagate through the log-space kernel (it became -inf).
def test_log_einsum_propagates_nan(backend):
    rng = np.random.default_rng(5)
    x, y = np.log(rng.uniform(size=(2, 3))), np.log(rng.uniform(size=(3, 2)))
    x[0, 1] = np.nan
    y[2, 1] = -np.inf  # a true zero stays -inf where no NaN reaches
    expected = np.log(np.einsum("ab,bc->ac", np.exp(x), np.exp(y)))  # numpy: nan stays nan
    result = ops.to_numpy(einsum("ab,bc->ac", _tensor(x, "ab"), _tensor(y, "bc"),
                                 backend="funsor.einsum.numpy_log").align(("a", "c")).data)
    assert np.isnan(result[0]).all() and not np.isnan(result[1]).any()
    assert np.allclose(result, expected, equal_nan=True)
    zeros = np.full((2, 3), -np.inf)
    result = ops.to_numpy(einsum("ab,bc->ac", _tensor(zeros, "ab"), _tensor(y, "bc"),
                                 backend="funsor.einsum.numpy_log").data)
    assert (result == -np.inf).all()


# ---------------------------------------------------------------------------------------------
# Defect 8: a sum over Bint[0] is the semiring's zero on every backend (numpy raised).
@pytest.mark.parametrize("semiring, np_reduce", [
    ("numpy", lambda x, axis: np.add.reduce(x, axis=axis)),
    ("funsor.einsum.numpy_log", lambda x, axis: np.logaddexp.reduce(x, axis=axis)),
    ("funsor.einsum.numpy_map", lambda x, axis: np.maximum.reduce(x, axis=axis,
                                                                   initial=-np.inf)),
])
@pytest.mark.parametrize("eq", ["ij->j", "ij,jk->k", "ij,jk->jk"])
def test_einsum_over_empty_dim(backend, semiring, np_reduce, eq):
    sizes = {"i": 0, "j": 2, "k": 3}
    inputs, out = eq.split("->")
    arrays = [np.zeros(tuple(sizes[c] for c in x)) for x in inputs.split(",")]
    result = einsum(eq, *[_tensor(a, x) for a, x in zip(arrays, inputs.split(","))],
                    backend=semiring)
    # The oracle: broadcast to all letters "ijk" by hand (combine with + or *), then reduce.
    log = not semiring == "numpy"
    total = 0.0 if log else 1.0
    for a, x in zip(arrays, inputs.split(",")):
        a = a.reshape([sizes[c] if c in x else 1 for c in "ijk"])
        total = total + a if log else total * a
    total = np.broadcast_to(total, tuple(sizes[c] if c in inputs else 1 for c in "ijk"))
    expected = np_reduce(total, tuple(k for k, c in enumerate("ijk") if c not in out))
    expected = expected.reshape([sizes[c] for c in out])
    assert np.array_equal(ops.to_numpy(result.align(tuple(out)).data), expected)
