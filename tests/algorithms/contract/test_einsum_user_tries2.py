"""A new user's tries of einsum and sum_product (round 2): mixed float32/float64 operands."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum
from funsor_core.sum_product import sum_product

torch = pytest.importorskip("torch")


def test_torch_float32_with_float64_promotes_as_numpy():
    # torch.einsum raises on mixed dtypes; numpy and jax promote to float64
    rng = np.random.default_rng(0)
    a, b, c = rng.random((2, 3)), rng.random(3).astype(np.float32), rng.random(2)
    fa = fc.Tensor(torch.tensor(a), {"i": fc.Bint[2], "j": fc.Bint[3]})
    fb = fc.Tensor(torch.tensor(b), {"j": fc.Bint[3]})
    fc_ = fc.Tensor(torch.tensor(c), {"i": fc.Bint[2]})
    expected = np.einsum("ij,j->i", a, b.astype(np.float64))
    out = einsum("ij,j->i", fa, fb)
    assert out.data.dtype == torch.float64
    assert np.allclose(out.data.numpy(), expected)
    total = sum_product(ops.add, ops.mul, [fa, fb, fc_], frozenset("ij"))
    assert np.allclose(total.data.numpy(), expected @ c)
    plated = einsum("ij,j->", fa, fb, plates="i")
    # j lies outside plate i: sum_j b_j prod_i a_ij
    assert np.allclose(plated.data.numpy(), (a.prod(0) * b).sum())
