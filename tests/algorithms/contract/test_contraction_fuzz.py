"""A seeded slice of the contraction fuzzer (``contraction_fuzz.py``, #29's exactness
acceptance): random plated graphs and trees in every semiring, through every entry point
(``sum_product``, ``partial_sum_product``, ``einsum`` of arrays and of Tensors, in log and linear
form, lazy build + ``apply_optimizer``, ``reinterpret`` under ``optimize``, ``Funsor.reduce``,
adjoint marginals) and every backend, against enumeration of the unrolled graph in numpy; plus
the regression tests of the defects it found."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum
from funsor_core.sum_product import sum_product
from tests.algorithms.contract import contraction_fuzz as fuzz
from tests.algorithms.eliminate.test_plated_graphs import GRAPHS, brute_force

# (backends, first seed, number of cases): numpy is cheap, each jax case compiles.
SLICES = [(("numpy",), 0, 160), (("torch",), 400, 24), (("jax", "jax.jit"), 800, 3)]


@pytest.mark.parametrize("backends, first, count", SLICES, ids=["numpy", "torch", "jax"])
def test_fuzz_slice_agrees_with_enumeration(backends, first, count):
    pytest.importorskip(backends[0].split(".")[0])
    failures = []
    for seed in range(first, first + count):
        failures += fuzz.check_case(fuzz.random_case(seed), backends=backends)
    assert not failures, "\n".join(failures[:10])


def test_fuzz_trees_agree_with_opt_einsum():
    # Trees of 8-20 variables against opt_einsum in linear space; odd seeds' log cases carry
    # terms of +-600 (float64) or +-80 (float32) that cancel only in the products.
    failures = []
    for seed in (0, 1, 4, 9, 11, 14, 38):  # linear, log, and adversarial in both dtypes
        failures += fuzz.check_case(fuzz.random_tree_case(seed), backends=("numpy",))
    assert not failures, "\n".join(failures[:10])


def test_fuzz_slice_covers_what_it_claims():
    # The numpy slice has every semiring and dtype, adversarial ranges, -inf entries, kept
    # names, the minor (PlateError) and graphs without plates.
    cases = [fuzz.random_case(seed) for seed in range(SLICES[0][2])]
    assert {c.semiring for c in cases} == set(fuzz.SEMIRINGS)
    assert {c.dtype for c in cases} == {"float32", "float64"}
    assert any(np.nanmax(np.abs(np.where(np.isinf(a), np.nan, a)), initial=0) > 600
               for c in cases for a in c.arrays if np.isfinite(a).any())
    assert any(np.isneginf(a).any() for c in cases for a in c.arrays)
    assert any(c.kept for c in cases) and any(not c.plates for c in cases)
    assert any(fuzz.oracle(c) is fuzz.PlateError for c in cases)


def test_enumeration_oracle_agrees_with_the_plated_graphs_oracle():
    # The fuzzer's enumeration against test_plated_graphs' brute force (written apart).
    for factors, sizes, _, seed in GRAPHS[:20]:
        rng = np.random.default_rng(seed)
        arrays = [rng.normal(size=tuple(sizes[n] for n in tuple(fp) + names))
                  for names, fp in factors]
        for name in ("log", "max", "linear"):
            data = [np.exp(a) for a in arrays] if name == "linear" else arrays
            np.testing.assert_allclose(fuzz._enumerate(factors, data, sizes, name),
                                       brute_force(factors, data, sizes, name), rtol=1e-12)


# Found by the fuzzer: (add, add) is no semiring, and a plate of one member still makes
# sum_product sum a variable inside it before a factor outside it multiplies the sum.
def test_non_semiring_with_a_plate_of_one_member_raises():
    rng = np.random.default_rng(0)
    a = fc.Tensor(rng.normal(size=3), {"a": fc.Bint[3]})
    pab = fc.Tensor(rng.normal(size=(1, 3, 2)), {"p": fc.Bint[1], "a": fc.Bint[3],
                                                 "b": fc.Bint[2]})
    with pytest.raises(ValueError, match="'b' .summed inside plate 'p'. cannot be summed "
                                         "before the factor with inputs \\['a'\\]"):
        sum_product(ops.add, ops.add, [a, pab], frozenset("abp"), frozenset("p"))
    # Without the plate the factors are multiplied first: the sum over every assignment.
    actual = sum_product(ops.add, ops.add, [a, pab(p=0)], frozenset("ab"))
    expected = (a.data[:, None] + pab.data[0]).sum()
    np.testing.assert_allclose(actual.data, expected, rtol=1e-12)
    # All factors inside the plate: one contraction, no outer factor, nothing raised.
    inside = sum_product(ops.add, ops.add, [pab], frozenset("abp"), frozenset("p"))
    np.testing.assert_allclose(inside.data, pab.data.sum(), rtol=1e-12)


# Found by the fuzzer: an einsum of numbers only (",->") returned a Number funsor.
@pytest.mark.parametrize("backend, np_op", [("numpy", np.multiply), ("log", np.add),
                                            ("max", np.add)])
def test_einsum_of_numbers_gives_a_number(backend, np_op):
    x, y = np.float64(1.5), np.float64(-0.25)
    actual = einsum(",->", x, y, backend=backend)
    assert not isinstance(actual, fc.Funsor)
    assert float(actual) == np_op(x, y)
