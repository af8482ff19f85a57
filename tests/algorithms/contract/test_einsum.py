"""Our semiring einsum against opt_einsum.contract and numpy brute force."""

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import contract_arrays, einsum, naive_einsum, naive_plated_einsum

EQUATIONS = ["a,a->", "ab,bc->ac", "ab,bc,cd->", "ab,bc,cd->da", "abc,bd,de,c->ae", "a,b,c->abc",
             "ab->", "ab,ab->b"]
SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}


def _operands(eq, seed=0):
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    return [rng.normal(size=tuple(SIZES[c] for c in x)) for x in inputs]


def _brute(eq, operands, sum_fn):
    # Broadcast every operand to all letters by hand, add, then reduce the summed letters.
    inputs, out = eq.split("->")
    inputs = inputs.split(",")
    letters = "".join(sorted(set("".join(inputs))))
    total = 0.0
    for x, letters_x in zip(operands, inputs):
        total = total + _bcast(x, letters_x, letters)
    axes = tuple(i for i, c in enumerate(letters) if c not in out)
    red = sum_fn(total, axis=axes) if axes else total
    kept = [c for c in letters if c in out]
    return np.transpose(red, [kept.index(c) for c in out])


def _bcast(x, lx, letters):
    x = np.transpose(x, [lx.index(c) for c in letters if c in lx])
    return x.reshape([SIZES[c] if c in lx else 1 for c in letters])


def _logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


@pytest.mark.parametrize("eq", EQUATIONS)
def test_einsum_linear_vs_opt_einsum(eq, backend):
    operands = _operands(eq)
    expected = opt_einsum.contract(eq, *operands)
    arrays = [fc.to_data(fc.Tensor(x)) for x in operands]
    actual = einsum(eq, *arrays, backend=backend if backend != "jax" else "jax.numpy")
    assert np.allclose(ops.to_numpy(actual), expected)


@pytest.mark.parametrize("eq", EQUATIONS)
@pytest.mark.parametrize("semiring, sum_fn", [("log", _logsumexp), ("max", np.max),
                                              ("min", np.min)])
def test_einsum_log_max_vs_brute_force(eq, semiring, sum_fn, backend):
    operands = _operands(eq, 1)
    expected = _brute(eq, operands, sum_fn)
    arrays = [fc.to_data(fc.Tensor(x)) for x in operands]
    actual = einsum(eq, *arrays, backend=semiring)
    assert np.allclose(ops.to_numpy(actual), expected)
    naive = naive_einsum(eq, *arrays, backend=semiring)
    assert np.allclose(ops.to_numpy(naive), expected)


def test_log_einsum_is_stable_and_handles_minus_inf():
    a = np.array([[1000.0, -np.inf], [-np.inf, -np.inf]])
    b = np.array([1000.0, 3.0])
    actual = contract_arrays(ops.logaddexp, ops.add, ["ab", "b"], "a", [a, b])
    assert actual[0] == 2000.0 and actual[1] == -np.inf


@pytest.mark.parametrize("name, semiring", [
    ("pyro.ops.einsum.torch_log", "log"), ("funsor.einsum.numpy_log", "log"),
    ("funsor.einsum.numpy_map", "max"), ("torch", "linear"), ("jax.numpy", "linear")])
def test_einsum_backend_strings(name, semiring):
    eq = "ab,bc->a"
    operands = _operands(eq, 2)
    expected = einsum(eq, *operands, backend=semiring)
    assert np.allclose(einsum(eq, *operands, backend=name), expected)


def test_einsum_of_tensors_returns_tensor():
    data = np.random.default_rng(0).random((2, 3))
    x = fc.Tensor(data, {"a": fc.Bint[2], "b": fc.Bint[3]})
    result = einsum("ab->a", x)
    assert isinstance(result, fc.Tensor) and list(result.inputs) == ["a"]
    np.testing.assert_allclose(result.data, data.sum(1))
    # The output order follows the equation, whatever the operand's input order.
    result = einsum("ab->ba", x)
    assert list(result.inputs) == ["b", "a"]
    np.testing.assert_allclose(result.data, data.T)


def _plated_brute(a, ab, abc):
    # sum_a a[a] prod_b sum_... equation "a,ab,bc->" with plate "c" local to b: enumerate.
    total = 0.0
    for i in range(a.shape[0]):
        prod_b = 1.0
        for j in range(ab.shape[1]):
            prod_c = 1.0
            for k in range(abc.shape[2]):
                prod_c *= abc[i, j, k]
            prod_b *= ab[i, j] * prod_c
        total += a[i] * prod_b
    return total


def test_plated_einsum_vs_enumeration():
    rng = np.random.default_rng(3)
    a, ab, abc = rng.uniform(size=2), rng.uniform(size=(2, 3)), rng.uniform(size=(2, 3, 4))
    expected = _plated_brute(a, ab, abc)
    assert np.allclose(einsum("a,ab,abc->", a, ab, abc, plates="bc"), expected)
    assert np.allclose(naive_plated_einsum("a,ab,abc->", a, ab, abc, plates="bc"), expected)


def test_plated_einsum_local_variable_vs_enumeration():
    # "a,abx->" with plate b: x is summed inside the plate.
    rng = np.random.default_rng(4)
    a, abx = rng.uniform(size=2), rng.uniform(size=(2, 3, 2))
    expected = sum(a[i] * np.prod([sum(abx[i, j, x] for x in range(2)) for j in range(3)])
                   for i in range(2))
    assert np.allclose(einsum("a,abx->", a, abx, plates="b"), expected)
    assert np.allclose(naive_plated_einsum("a,abx->", a, abx, plates="b"), expected)


def test_backend_strings_name_semirings():
    # funsor's marginal/sample backends compute the log partition function forward (their
    # backward passes give marginals or samples); an unknown name is an error.
    x = np.log(np.array([0.25, 0.5]))
    for backend in ("pyro.ops.einsum.torch_marginal", "pyro.ops.einsum.torch_sample"):
        assert np.allclose(einsum("a->", x, backend=backend), np.log(0.75))
    with pytest.raises(ValueError, match="not supported"):
        einsum("a->", np.ones(2), backend="pyro.ops.einsum.torch_mystery")



@pytest.mark.parametrize("eq, plates", [("ab,bc->ac", ""), ("ab,bc,cd->", ""), ("a,ab->", "b")])
@pytest.mark.parametrize("semiring, sum_fn", [("numpy", None), ("log", _logsumexp)])
def test_einsum_lazy_builds_a_term_that_reinterpret_evaluates(eq, plates, semiring, sum_fn):
    # Under reflect (and lazy) einsum records the expression instead of computing it; the
    # recorded term evaluates to what the eager call returns, checked against numpy.
    from interpretations import lazy, reflect

    operands = _operands(eq, 2)
    letters = eq.split("->")[0].split(",")
    tensors = [fc.Tensor(x, {c: fc.Bint[SIZES[c]] for c in ls}) for x, ls in zip(operands, letters)]
    for interp in (reflect, lazy):
        with interp:
            term = einsum(eq, *tensors, plates=plates, backend=semiring)
        assert not isinstance(term, fc.Tensor)
        out = tuple(eq.split("->")[1])
        value = fc.reinterpret(term)
        assert isinstance(value, fc.Tensor)
        eager = einsum(eq, *tensors, plates=plates, backend=semiring)
        assert np.allclose(value.align(out).data, eager.align(out).data)
    if not plates:
        expected = (opt_einsum.contract(eq, *operands) if sum_fn is None
                    else _brute(eq, operands, sum_fn))
        assert np.allclose(value.align(out).data, expected)


# ---------------------------------------------------------------------------------------------
# Guards: plated einsum with three factors local to a plate in any order; more than 52
# variables (opt_einsum's symbols past 'Z' are not numpy/torch letters); NaN propagates
# through the log-space kernel (it became -inf); a sum over Bint[0] is the semiring's zero.
# Oracles: loops in numpy, opt_einsum.contract on numpy, numpy's einsum.
# (Moved from tests/test_regressions_8.py, defects 1, 4, 5 and 8.)
def _letters_tensor(data, letters):
    from tests.backend_values import as_backend_array

    return fc.Tensor(as_backend_array(data),
                     {n: fc.Bint[s] for n, s in zip(letters, np.shape(data))})


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1),
                                   (2, 1, 0)])
def test_plated_einsum_three_local_factors(backend, order):
    # sum_a f(a) prod_i sum_b g(i,a,b) h(i,b) k(i,a): three factors local to plate i.
    rng = np.random.default_rng(3)
    f, g, h, k = (rng.uniform(size=s) for s in [(2,), (4, 2, 3), (4, 3), (4, 2)])
    local = [("iab", g), ("ib", h), ("ia", k)]
    picked = [local[j] for j in order]
    eq = "a," + ",".join(n for n, _ in picked) + "->"
    operands = [_letters_tensor(f, "a")] + [_letters_tensor(t, n) for n, t in picked]
    result = einsum(eq, *operands, plates="i", backend="numpy")
    expected = sum(f[a] * np.prod([sum(g[i, a, b] * h[i, b] * k[i, a] for b in range(3))
                                   for i in range(4)]) for a in range(2))
    assert np.allclose(ops.to_numpy(result.data), expected)


def _random_tree(num_vars, seed=0):
    # A random tree on variables 0..num_vars-1: each v > 0 hangs off a random earlier parent.
    rng = np.random.default_rng(seed)
    edges = [(int(rng.integers(v)), v) for v in range(1, num_vars)]
    tables = [rng.uniform(0.5, 1.5, size=(2, 2)) for _ in edges]
    return edges, tables


@pytest.mark.parametrize("semiring", ["numpy", "funsor.einsum.numpy_log"])
def test_einsum_hundred_variable_tree(backend, semiring):
    edges, tables = _random_tree(100)
    symbols = [opt_einsum.get_symbol(v) for v in range(100)]
    inputs = [symbols[u] + symbols[v] for u, v in edges]
    eq = ",".join(inputs) + "->" + symbols[0]
    expected = opt_einsum.contract(eq, *tables)  # numpy, unicode symbols are fine there
    log = semiring.endswith("_log")
    operands = [_letters_tensor(np.log(t) if log else t, letters)
                for t, letters in zip(tables, inputs)]

    def run(arrays):
        fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(arrays, operands)]
        return einsum(eq, *fs, backend=semiring).data

    if backend == "jax":  # one compile: eagerly each of the 99 distinct steps compiles
        import jax

        run = jax.jit(run)
    result = ops.to_numpy(run([f.data for f in operands]))
    assert np.allclose(np.exp(result) if log else result, expected)


def test_log_einsum_propagates_nan(backend):
    rng = np.random.default_rng(5)
    x, y = np.log(rng.uniform(size=(2, 3))), np.log(rng.uniform(size=(3, 2)))
    x[0, 1] = np.nan
    y[2, 1] = -np.inf  # a true zero stays -inf where no NaN reaches
    expected = np.log(np.einsum("ab,bc->ac", np.exp(x), np.exp(y)))  # numpy: nan stays nan
    result = ops.to_numpy(einsum("ab,bc->ac", _letters_tensor(x, "ab"), _letters_tensor(y, "bc"),
                                 backend="funsor.einsum.numpy_log").align(("a", "c")).data)
    assert np.isnan(result[0]).all() and not np.isnan(result[1]).any()
    assert np.allclose(result, expected, equal_nan=True)
    zeros = np.full((2, 3), -np.inf)
    result = ops.to_numpy(einsum("ab,bc->ac", _letters_tensor(zeros, "ab"),
                                 _letters_tensor(y, "bc"),
                                 backend="funsor.einsum.numpy_log").data)
    assert (result == -np.inf).all()


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
    result = einsum(eq, *[_letters_tensor(a, x) for a, x in zip(arrays, inputs.split(","))],
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
