"""Tensor variable elimination and Markov-chain sums against brute-force enumeration."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import PlateError


def _t(data, names, sizes):
    return fc.Tensor(data, {n: fc.Bint[sizes[n]] for n in names})


def test_sum_product_plated_vs_enumeration(backend):
    rng = np.random.default_rng(0)
    sizes = {"a": 2, "p": 3, "b": 2}
    fa, fab = rng.uniform(size=2), rng.uniform(size=(2, 3, 2))
    f1 = _t(fc.to_data(fc.Tensor(fa)), "a", sizes)
    f2 = _t(fc.to_data(fc.Tensor(fab)), "apb", sizes)
    r = fc.sum_product(ops.add, ops.mul, [f1, f2], frozenset("apb"), frozenset("p"))
    expected = sum(fa[a] * np.prod([fab[a, p].sum() for p in range(3)]) for a in range(2))
    assert np.allclose(ops.to_numpy(r.data), expected)


def test_forbidden_plate_minor_names_plates_and_variables():
    sizes = {"x": 2, "y": 2, "p": 2, "q": 2}
    fx = _t(np.ones((2, 2)), "px", sizes)
    fy = _t(np.ones((2, 2)), "qy", sizes)
    fxy = _t(np.ones((2, 2, 2, 2)), "pqxy", sizes)
    with pytest.raises(PlateError, match="'x'.*plate 'p'.*'y'.*plate 'q'"):
        fc.sum_product(ops.add, ops.mul, [fx, fy, fxy], frozenset("xypq"), frozenset("pq"))


@pytest.mark.parametrize("duration", [1, 2, 5, 8])
def test_sequential_sum_product_vs_matrix_power(duration):
    rng = np.random.default_rng(duration)
    mats = rng.uniform(size=(duration, 3, 3))
    trans = fc.Tensor(mats, {"t": fc.Bint[duration], "x": fc.Bint[3], "y": fc.Bint[3]})
    expected = mats[0]
    for k in range(1, duration):
        expected = expected @ mats[k]
    for fn in (fc.sequential_sum_product, fc.naive_sequential_sum_product):
        r = fn(ops.add, ops.mul, trans, fc.Variable("t", fc.Bint[duration]), {"x": "y"})
        assert np.allclose(r.align(("x", "y")).data, expected)


def test_sequential_sum_product_log_semiring():
    rng = np.random.default_rng(9)
    logs = rng.normal(size=(6, 2, 2))
    trans = fc.Tensor(logs, {"t": fc.Bint[6], "x": fc.Bint[2], "y": fc.Bint[2]})
    expected = np.exp(logs[0])
    for k in range(1, 6):
        expected = expected @ np.exp(logs[k])
    r = fc.sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert np.allclose(np.exp(r.align(("x", "y")).data), expected)
