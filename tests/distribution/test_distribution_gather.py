"""A Categorical's log density at an integer value is a gather (``discrete._take_last``), not
a one-hot sum: checked against numpy indexing where the value and the probabilities each
have batch inputs the other lacks (Pyro's enumerated HMM steps), on numpy, torch and under
``jax.jit``, and the torch gradient against its closed form."""

import jax
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.domains import Bint

jax.config.update("jax_enable_x64", True)
A, B, K = 3, 4, 5


def _case():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(K), size=A)  # over input "a"
    value = rng.integers(0, K, size=B)  # over input "b"
    expected = np.log(probs[:, value])  # (a, b)
    return probs, value, expected


def _density(probs, value):
    p = fc.Tensor(probs, {"a": Bint[A]})
    v = fc.Tensor(value, {"b": Bint[B]}, K)
    return D.Categorical(p, value=v).align(("a", "b")).data


@pytest.mark.parametrize("backend", ["numpy", "torch", "jit"])
def test_categorical_gather_broadcasts_both_ways(backend):
    probs, value, expected = _case()
    if backend == "jit":
        fc.set_backend("jax")
        try:
            actual = jax.jit(_density)(jax.numpy.asarray(probs), jax.numpy.asarray(value))
        finally:
            fc.set_backend("numpy")
    elif backend == "torch":
        actual = _density(torch.tensor(probs), torch.tensor(value))
    else:
        actual = _density(probs, value)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12)


def test_categorical_gather_gradient():
    # d/dp_k sum_b [log p_{v_b} - log sum p] = count_k / p_k - B / sum p, per row a.
    probs, value, _ = _case()
    p = torch.tensor(probs, requires_grad=True)
    _density(p, torch.tensor(value)).sum().backward()
    counts = np.bincount(value, minlength=K)
    expected = counts / probs - B / probs.sum(-1, keepdims=True)
    np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-10)
