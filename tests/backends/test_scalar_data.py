"""Scalars and foreign arrays at every public entry, on every backend (h64).

One rule: a number (a Python number or any numpy scalar, ``np.bool_`` included) combines with
any backend's arrays at every entry (``+``, ``.reduce``, ``sum_product``, ``einsum``,
``to_funsor``, substitution); an array (a 0-d numpy array too) keeps its backend, and arrays of
two backends in one term raise the same ``TypeError`` naming both at every entry. Before,
``np.bool_`` was taken for a 0-d array (kept as a numpy scalar under torch and jax, where
``np.float64`` was converted; ``Tensor(np.bool_(True), {}, 2)`` raised on torch), and einsum
refused numbers. Oracles: numpy float64 arithmetic and ``opt_einsum.contract``."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum
from funsor_core.sum_product import sum_product
from tests.backend_values import as_backend_array as _arr

X = np.array([1.0, 2.0, 3.0])
I3 = {"i": fc.Bint[3]}
MIXED = "one term must use one backend"


def _same_type(data, backend) -> bool:
    if backend == "numpy":  # (numpy reductions give numpy scalars)
        return isinstance(data, (np.ndarray, np.generic))
    return type(data) is type(_arr(np.zeros(1), backend))


@pytest.mark.parametrize("scalar", [np.float64(2.0), np.float32(2.0), 2.0, np.int64(2),
                                    np.bool_(True)], ids=lambda s: type(s).__name__)
def test_number_combines_at_every_entry(backend, scalar):
    x = fc.Tensor(_arr(X, backend), I3)
    s = float(scalar)
    t = fc.Tensor(scalar)  # a number's Tensor is built on the active backend
    assert _same_type(t.data, backend)
    cases = [
        (x + scalar, X + s), (scalar * x, s * X), (x + t, X + s),
        ((x * t).reduce(ops.add, "i"), (X * s).sum()),
        (sum_product(ops.add, ops.mul, [x, t], frozenset("i")), (X * s).sum()),
        (einsum(",i->", scalar, x), opt_einsum.contract(",i->", s, X)),
        (einsum("i,->i", x, scalar, backend="funsor.einsum.numpy_log"), X + s),
    ]
    for r, expected in cases:
        assert _same_type(r.data, backend)
        np.testing.assert_allclose(np.asarray(r.data), expected, rtol=1e-6)
    raw = einsum(",i->", scalar, _arr(X, backend))  # arrays in: an array back
    assert _same_type(raw, backend)
    np.testing.assert_allclose(np.asarray(raw), s * X.sum(), rtol=1e-6)


def test_numpy_bool_is_a_number_like_true(backend):
    b = fc.Tensor(np.bool_(True), {}, 2)
    expected = fc.Tensor(True, {}, 2)  # a Python bool: the same Bint[2] value
    assert b.output == expected.output == fc.Bint[2]
    assert _same_type(b.data, backend) and b.data.dtype == expected.data.dtype
    assert int(b.data) == int(expected.data) == 1
    n = fc.to_funsor(np.bool_(True))
    assert isinstance(n, fc.Number) and n.data is True
    x = fc.Tensor(_arr(X, backend), I3)
    np.testing.assert_allclose(np.asarray((x + np.bool_(True)).data), X + 1.0)
    assert float(x(i=np.bool_(True)).data) == X[1]


def test_numpy_array_under_another_backend_is_refused_alike():
    pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        import torch

        t = fc.Tensor(torch.as_tensor(X), I3)
        n = fc.Tensor(np.array(2.0))  # a 0-d numpy array keeps its backend
        assert isinstance(n.data, np.ndarray)
        entries = [
            lambda: t + n, lambda: n * t,
            lambda: sum_product(ops.add, ops.mul, [t, n], frozenset("i")),
            lambda: einsum(",i->", n, t), lambda: einsum(",i->", np.array(2.0), t.data),
        ]
        from interpretations import lazy

        xy, ty = {"x": fc.Bint[2], "y": fc.Bint[2]}, {"t": fc.Bint[3], "y": fc.Bint[2]}

        def lazy_step():  # refused when the lazy step is built, as the eager `+` is
            with lazy:
                return fc.Tensor(np.zeros((2, 2)), xy) + fc.Tensor(torch.zeros(3, 2).double(), ty)

        entries.append(lazy_step)
        for entry in entries:
            with pytest.raises(TypeError, match=MIXED):
                entry()
        # alone, a numpy program computes in numpy whatever the backend
        np.testing.assert_allclose(n.reduce(ops.add).data, 2.0)
    finally:
        fc.set_backend("numpy")
