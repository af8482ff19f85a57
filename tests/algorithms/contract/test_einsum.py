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
