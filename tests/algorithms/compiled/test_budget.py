"""The memory budget on the ordinary contraction path (``fc.sum_product``, ``fc.einsum``): a
plan whose largest intermediate is over the budget raises ``MemoryBudgetError`` naming the
largest step's names before any array is allocated; under the budget, results equal numpy."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled import MemoryBudgetError


def _dense_network(n=100, parents=6, seed=4):
    # 100 binary names, each tied to 6 random earlier ones: its contraction plan needs far
    # more memory than any machine (it once tried to allocate 32 GiB before failing).
    rng = np.random.default_rng(seed)
    factors = [fc.Tensor(np.ones(2), {"x0": fc.Bint[2]})]
    for i in range(1, n):
        names = sorted({f"x{int(j)}" for j in rng.integers(0, i, size=min(i, parents))})
        inputs = {p: fc.Bint[2] for p in names}
        inputs[f"x{i}"] = fc.Bint[2]
        factors.append(fc.Tensor(np.ones((2,) * len(inputs)), inputs))
    return factors, frozenset(f"x{i}" for i in range(n))


def test_sum_product_over_budget_raises_before_allocating():
    factors, names = _dense_network()
    match = r"over the memory budget of 1\.0 GiB\. Its largest cluster has \d+ names .*x\d+: Bint"
    with fc.memory_budget(2 ** 30), pytest.raises(MemoryBudgetError, match=match):
        fc.sum_product(ops.add, ops.mul, factors, names)
    # Without a context the budget is the free memory, which no machine has for this plan.
    with pytest.raises(MemoryBudgetError, match="Nothing was allocated"):
        fc.sum_product(ops.logaddexp, ops.add, factors, names)


def test_small_contractions_respect_a_context_budget():
    rng = np.random.default_rng(0)
    a, b, c = rng.random((8, 3)), rng.random((3, 8)), rng.random(8)
    expected = np.einsum("ij,jk,k->i", a, b, c)
    with fc.memory_budget(2 ** 20):  # fits: the same numbers as numpy
        assert np.allclose(fc.einsum("ij,jk,k->i", a, b, c), expected, rtol=1e-12)
    # The largest intermediate (8 float64 numbers, 64 B) is over a 32-byte budget.
    with fc.memory_budget(32), pytest.raises(MemoryBudgetError, match=r"64\.0 B"):
        fc.einsum("ij,jk,k->i", a, b, c)
    assert np.allclose(fc.einsum("ij,jk,k->i", a, b, c), expected, rtol=1e-12)
