"""One term, one backend (issue 13, item 8): combining arrays of two backends raises a
TypeError naming both, in every term and op that holds or combines arrays; nothing is
converted silently (that would drop autograd). A numpy *scalar* is a number and combines with
any backend; a numpy *array* is an array of the numpy backend and does not.

The oracle for the cases that must work is the same computation on one backend (numpy), and
torch autograd checked against the closed-form derivative.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.tensor import Einsum

jax = pytest.importorskip("jax")
jnp = jax.numpy
torch = pytest.importorskip("torch")

BACKENDS = ["numpy", "torch", "jax"]
PAIRS = [p for p in itertools.permutations(BACKENDS, 2)]


def _as(backend, a):
    return {"numpy": np.asarray, "torch": torch.as_tensor, "jax": jnp.asarray}[backend](
        np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a))


def _tensor(backend, data, names="i"):
    data = np.asarray(data)
    return fc.Tensor(_as(backend, data), {n: Bint[s] for n, s in zip(names, data.shape)})


def _gaussian(backend, name="x"):
    return fc.Gaussian(mean=_as(backend, [0.3]), covariance=_as(backend, [[1.5]]),
                       inputs={name: Real})


def _pattern(a, b):
    # Both backends are named, in whichever order the term holds them.
    return (rf"holds ({a}|{b}) arrays and .* holds ({b}|{a}) arrays; one term must use one "
            "backend")


@fc.function(Reals[2], Reals[2], Reals[2])
def _add_fn(x, y):
    return x + y


# Each builds a term combining arrays of backend a with arrays of backend b.
CASES = {
    "tensor_add_tensor": lambda a, b: _tensor(a, [1.0, 2.0]) + _tensor(b, [3.0, 4.0]),
    "tensor_matmul": lambda a, b: (fc.Tensor(_as(a, np.eye(2)))
                                   @ fc.Tensor(_as(b, np.ones((2, 2))))),
    "gaussian_add_gaussian": lambda a, b: _gaussian(a) + _gaussian(b, "y"),
    "gaussian_add_tensor": lambda a, b: _gaussian(a) + _tensor(b, [1.0, 2.0]),
    "tensor_add_gaussian": lambda a, b: _tensor(a, [1.0, 2.0]) + _gaussian(b),
    "delta_parts": lambda a, b: fc.Delta("x", fc.Tensor(_as(a, 1.0)), fc.Tensor(_as(b, 0.5))),
    "delta_add_tensor": lambda a, b: fc.Delta("x", fc.Tensor(_as(a, 1.0))) + _tensor(b, [1.0]),
    "stack": lambda a, b: fc.Stack("s", (_tensor(a, [1.0]), _tensor(b, [2.0]))),
    "cat": lambda a, b: fc.Cat("i", (_tensor(a, [1.0]), _tensor(b, [2.0]))),
    "index_tensor": lambda a, b: _tensor(a, [1.0, 2.0, 3.0], "k")(
        k=fc.Tensor(_as(b, np.array([0, 2])), {"i": Bint[2]}, 3)),
    "condition_gaussian": lambda a, b: _gaussian(a)(x=_tensor(b, [0.5, 1.0])),
    "contraction": lambda a, b: fc.Contraction(ops.add, ops.mul, frozenset("i"),
                                               (_tensor(a, [1.0, 2.0]), _tensor(b, [3.0, 4.0]))),
    "integrate": lambda a, b: fc.Integrate(
        _gaussian(a), fc.Variable("x", Real) * _tensor(b, [1.0, 2.0]), "x"),
    "einsum": lambda a, b: fc.einsum("i,i->", _tensor(a, [1.0, 2.0]), _tensor(b, [3.0, 4.0])),
    "einsum_term": lambda a, b: Einsum("ab,b->a", (fc.Tensor(_as(a, np.ones((2, 3)))),
                                                   fc.Tensor(_as(b, np.ones(3))))),
    "function": lambda a, b: _add_fn(fc.Tensor(_as(a, [1.0, 2.0])),
                                     fc.Tensor(_as(b, [3.0, 4.0]))),
    "lazy_then_substituted": lambda a, b: (fc.Variable("x", Real) * _tensor(a, [1.0, 2.0]))(
        x=fc.Tensor(_as(b, 0.5))),
}


@pytest.mark.parametrize("a, b", PAIRS, ids="-".join)
@pytest.mark.parametrize("case", list(CASES))
def test_mixing_two_backends_raises_naming_both(case, a, b):
    with pytest.raises(TypeError, match=_pattern(a, b)):
        CASES[case](a, b)


@pytest.mark.parametrize("case", list(CASES))
def test_one_backend_still_works(case):
    # The same constructions on one backend give numbers (or terms) with no error.
    for backend in BACKENDS:
        result = CASES[case](backend, backend)
        assert isinstance(result, fc.Funsor)


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("scalar", [np.float64(2.5), np.float32(2.5), np.int64(2)])
def test_numpy_scalars_combine_with_any_backend(backend, scalar):
    data = np.array([1.0, -2.0])
    t = _tensor(backend, data)
    for result, expected in ((t + scalar, data + float(scalar)),
                             (scalar * t, float(scalar) * data),
                             (t - fc.to_funsor(scalar), data - float(scalar))):
        assert type(result.data) is type(t.data)  # stays on the Tensor's backend
        np.testing.assert_allclose(np.asarray(result.data), expected)


def test_numpy_array_with_a_torch_term_raises():
    t = _tensor("torch", [1.0, 2.0])
    with pytest.raises(TypeError, match=_pattern("torch", "numpy")):
        t + np.array(2.0)  # a 0-d array is an array, not a scalar
    with pytest.raises(TypeError, match=_pattern("torch", "numpy")):
        t * np.array([1.0, 2.0])


def test_torch_autograd_survives_numpy_scalars():
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    f = (fc.Tensor(x, {"i": Bint[2]}) * np.float64(3.0)).exp().reduce(ops.add, "i")
    f.data.backward()
    # d/dx sum_i exp(3 x_i) = 3 exp(3 x)
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.exp(3.0 * np.array([0.5, 1.5])))


# ---------------------------------------------------------------------------------------------
# Guards: numpy and torch arrays mixed in one Gaussian, Stack or Cat raise at construction,
# eagerly and under lazy; Python numbers beside one backend keep it.
# (Moved from tests/test_defects_8.py, defect 5.)
def test_mixed_backends_raise_at_construction():
    from interpretations import lazy

    with pytest.raises(TypeError, match="numpy.*torch"):
        fc.Gaussian(mean=np.zeros(2), covariance=torch.eye(2, dtype=torch.float64),
                    inputs={"x": Reals[2]})
    with pytest.raises(TypeError, match="numpy.*torch"):
        fc.Gaussian(white_vec=np.zeros(2), prec_sqrt=torch.eye(2), inputs={"x": Reals[2]})
    a = fc.Tensor(np.zeros(2), {"j": Bint[2]})
    b = fc.Tensor(torch.ones(2, dtype=torch.float64), {"j": Bint[2]})
    for make in (lambda: fc.Stack("i", (a, b)), lambda: fc.Cat("j", (a, b))):
        with pytest.raises(TypeError, match="numpy.*torch"):
            make()
        with lazy, pytest.raises(TypeError, match="numpy.*torch"):
            make()
    # One backend with Python numbers still works, and keeps the backend.
    s = fc.Stack("i", (b, fc.Number(3.0)))
    assert isinstance(s.data, torch.Tensor)
    assert ops.to_numpy(s.data).tolist() == [[1.0, 1.0], [3.0, 3.0]]
