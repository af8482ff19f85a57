"""``ops.safesub`` and ``ops.safediv``, the safe inverses of add and mul, against numpy by hand.

Found by the differential fuzzer against funsor 0.4.8 (tests/compat/funsor_diff, h87): the
divisor was clamped below at the smallest normal float, so every negative divisor divided by
``tiny`` (``safediv(1, -2)`` was ``-4.5e307``), and the adjoint of a plated ``(add, mul)``
product with a negative per-slice sum (which divides the product by that slice) was off by
300 orders of magnitude. funsor's (and now ours): ``safediv(x, y) = x / y`` for ``y != 0``,
``x * max`` at ``y = 0`` (so ``0 / 0 = 0``); ``safesub(x, y) = x - y`` with ``y = -inf``
clamped to ``-max``.
"""

from collections import OrderedDict

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, Tensor, ops
from funsor_core.algorithms.adjoint.tape import adjoint
from funsor_core.sum_product import sum_product
from interpretations import lazy
from tests.backend_values import as_backend_array, to_numpy, values_on_every_backend

FMAX = np.finfo(np.float64).max
X = np.array([1.5, -2.0, 0.0, 3.0, 0.0, 2.0, -1.0])
Y = np.array([-2.0, -0.5, 0.0, 4.0, -3.0, -np.inf, np.inf])


def test_safediv_divides_by_negative_numbers_on_every_backend():
    expected = np.array([X[i] / Y[i] if Y[i] != 0 else X[i] * FMAX for i in range(len(X))])
    for got in values_on_every_backend(lambda x, y: ops.safediv(x, y), X, Y):
        np.testing.assert_allclose(got, expected, rtol=1e-15)
    for a, b in zip(X.tolist(), Y.tolist()):  # Python numbers take the scalar kernels
        assert ops.safediv(a, b) == (a / b if b != 0 else a * FMAX)


def test_safesub_clamps_only_minus_infinity_on_every_backend():
    expected = X - np.maximum(Y, -FMAX)  # X + FMAX where Y = -inf, X - inf = -inf at +inf
    for got in values_on_every_backend(lambda x, y: ops.safesub(x, y), X, Y):
        np.testing.assert_array_equal(got, expected)
    assert ops.safesub(1.0, -np.inf) == 1.0 + FMAX
    assert ops.safesub(1.0, np.inf) == -np.inf


def test_safe_inverses_of_integer_arrays_are_real_on_torch():
    torch = pytest.importorskip("torch")
    x, y = torch.tensor([1.5, 2.0]), torch.tensor([-2, 0])  # funsor: torch raises for both
    np.testing.assert_allclose(to_numpy(ops.safediv(x, y)), [-0.75, np.inf])  # 2 * max overflows
    np.testing.assert_allclose(to_numpy(ops.safesub(x, y)), [3.5, 2.0])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_adjoint_of_a_plated_product_with_a_negative_slice(backend):
    # d/d f(i, l) of prod_l sum_i f(i, l) is prod_{l' != l} sum_i f(i, l'), independent of i.
    a = np.random.default_rng(0).normal(size=(3, 2))
    a[:, 0] -= 2.0  # the slice l = 0 sums to a negative number
    fc.set_backend(backend)
    try:
        f = Tensor(as_backend_array(a), OrderedDict(i=Bint[3], l=Bint[2]))
        with lazy:
            root = sum_product(ops.add, ops.mul, [f], frozenset("il"), frozenset("l"))
        got = adjoint(ops.add, ops.mul, root)[f]
        s = a.sum(0)
        assert s[0] < 0
        np.testing.assert_allclose(to_numpy(fc.reinterpret(root).data), s.prod())
        np.testing.assert_allclose(to_numpy(got.align(("l",)).data), [s[1], s[0]])
    finally:
        fc.set_backend("numpy")
