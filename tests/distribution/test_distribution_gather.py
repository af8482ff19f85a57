"""A Categorical's log density at an integer value is a gather (``array_math.take_last``), not
a one-hot sum: checked against numpy indexing where the value and the probabilities each
have batch inputs the other lacks (Pyro's enumerated HMM steps; a take of the flat index,
with the dims in either order) or share one (one advanced index per dim), on numpy, torch
and under ``jax.jit``, and the torch gradient against its closed form (every size gathers
here: ``GATHER_ABOVE`` is 0)."""

import jax
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.distribution import array_math
from funsor_core.distribution.array_math import take_last
from funsor_core.domains import Bint

jax.config.update("jax_enable_x64", True)
SIZES, K = {"a": 3, "b": 4}, 5
# (inputs of probs, inputs of the value): apart (in both orders of the names), shared
LAYOUTS = [("a", "b"), ("b", "a"), ("ab", "b")]


@pytest.fixture(autouse=True)
def _always_gather(monkeypatch):
    # Small cases keep the one-hot sum (fewer array calls); these test the gather.
    monkeypatch.setattr(array_math, "GATHER_ABOVE", 0)


def _case(probs_names, value_names):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(K), size=tuple(SIZES[n] for n in probs_names))
    value = rng.integers(0, K, size=tuple(SIZES[n] for n in value_names))
    # numpy oracle over (a, b): probs[.., value[..]] by explicit loops
    expected = np.empty((SIZES["a"], SIZES["b"]))
    for a in range(SIZES["a"]):
        for b in range(SIZES["b"]):
            at = {"a": a, "b": b}
            row = probs[tuple(at[n] for n in probs_names)]
            expected[a, b] = np.log(row[value[tuple(at[n] for n in value_names)]])
    return probs, value, expected


def _density(probs, value, probs_names, value_names):
    p = fc.Tensor(probs, {n: Bint[SIZES[n]] for n in probs_names})
    v = fc.Tensor(value, {n: Bint[SIZES[n]] for n in value_names}, K)
    return D.Categorical(p, value=v).align(("a", "b")).data


@pytest.mark.parametrize("layout", LAYOUTS, ids=["apart", "apart-b-first", "shared"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_categorical_gather_broadcasts(backend, layout):
    probs, value, expected = _case(*layout)
    wrap = torch.tensor if backend == "torch" else np.asarray
    actual = _density(wrap(probs), wrap(value), *layout)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12)


def test_categorical_gather_under_jit():
    layout = LAYOUTS[0]
    probs, value, expected = _case(*layout)
    fc.set_backend("jax")
    try:
        actual = jax.jit(lambda p, v: _density(p, v, *layout))(jax.numpy.asarray(probs),
                                                              jax.numpy.asarray(value))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12)


def test_categorical_gather_gradient():
    # d/dp_k sum_b [log p_{v_b} - log sum p] = count_k / p_k - B / sum p, per row a.
    probs, value, _ = _case("a", "b")
    p = torch.tensor(probs, requires_grad=True)
    _density(p, torch.tensor(value), "a", "b").sum().backward()
    counts = np.bincount(value, minlength=K)
    expected = counts / probs - SIZES["b"] / probs.sum(-1, keepdims=True)
    np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-10)


def test_take_last_with_the_index_dims_first():
    # table (1, 4, n), index (3, 1): the taken (4, 3) dims are interleaved back to (3, 4).
    rng = np.random.default_rng(1)
    table, index = rng.normal(size=(1, 4, 6)), rng.integers(0, 6, size=(3, 1))
    expected = np.array([[table[0, j, index[i, 0]] for j in range(4)] for i in range(3)])
    np.testing.assert_array_equal(take_last(table, index), expected)
