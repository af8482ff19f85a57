"""``Tensor @ Tensor`` of two vectors: one batched matrix product over the shared inputs.

Oracle: ``numpy.einsum`` of the same arrays with the batch inputs written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops


def _array(backend, x):
    if backend == "torch":
        import torch

        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return x


@pytest.mark.parametrize("case", ["disjoint", "shared", "one_side", "none"])
def test_vector_dot_vector(backend, case):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 5))  # (s, l, n)
    b = rng.normal(size=(2, 4, 5))  # (s, r, n)
    inputs_a = {"s": fc.Bint[2], "l": fc.Bint[3]}
    inputs_b = {"s": fc.Bint[2], "r": fc.Bint[4]}
    expected = np.einsum("sln,srn->slr", a, b)
    if case == "disjoint":
        a, b = a[0], b[0]
        inputs_a, inputs_b = {"l": fc.Bint[3]}, {"r": fc.Bint[4]}
        expected = expected[0]
    elif case == "one_side":
        b = b[0, 0]
        inputs_b = {}
        expected = np.einsum("sln,n->sl", a, b)
    elif case == "none":
        a, b = a[0, 0], b[0, 0]
        inputs_a, inputs_b = {}, {}
        expected = a @ b
    x = fc.Tensor(_array(backend, a), inputs_a)
    y = fc.Tensor(_array(backend, b), inputs_b)
    actual = x @ y
    names = [n for n in ("s", "l", "r") if n in actual.inputs]
    data = ops.to_numpy(actual.align(tuple(names)).data) if names else ops.to_numpy(actual.data)
    assert actual.output == fc.Real
    np.testing.assert_allclose(data, expected, rtol=1e-10)
