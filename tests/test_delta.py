"""Delta: substitution, reduction, and adding a Delta to a factor."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops


def _tensor(data, names):
    data = fc.to_data(fc.Tensor(np.asarray(data, dtype=float)))
    return fc.Tensor(data, {n: fc.Bint[s] for n, s in zip(names, data.shape)})


def test_delta_inputs_and_terms_form():
    p = _tensor([0.0, 1.0], "i")
    d = fc.Delta("x", p, 0.5)
    assert d.inputs == {"x": fc.Real, "i": fc.Bint[2]}
    d2 = fc.Delta((("x", (p, 0.5)), ("y", (fc.Number(2.0), 0.0))))
    assert set(d2.inputs) == {"x", "y", "i"}


def test_subs_at_point_and_elsewhere(backend):
    p = _tensor([0.0, 1.0, 2.0], "i")
    ld = _tensor([0.1, 0.2, 0.3], "i")
    d = fc.Delta("x", p, ld)
    value = d(x=1.0)
    # Oracle: log_density where the point equals the value, -inf elsewhere.
    expected = np.where(np.array([0.0, 1.0, 2.0]) == 1.0, [0.1, 0.2, 0.3], -np.inf)
    assert np.array_equal(ops.to_numpy(value.data), expected)
    assert d(x=p) is not None and np.allclose(ops.to_numpy(d(x=p).data), [0.1, 0.2, 0.3])


def test_subs_vector_point_and_rename():
    d = fc.Delta("x", fc.Tensor(np.array([1.0, 2.0])), 0.0)
    assert float(d(x=np.array([1.0, 2.0])).data) == 0.0
    assert float(d(x=np.array([1.0, 3.0])).data) == -np.inf
    renamed = d(x="z")
    assert isinstance(renamed, fc.Delta) and set(renamed.inputs) == {"z"}


def test_subs_into_point_inputs_rebuilds():
    d = fc.Delta("x", _tensor([0.0, 5.0], "i"), 0.0)
    e = d(i=1)
    assert isinstance(e, fc.Delta) and float(e(x=5.0).data) == 0.0


def test_reduce_over_name_leaves_log_density():
    ld = _tensor([0.1, 0.2], "i")
    d = fc.Delta("x", _tensor([0.0, 5.0], "i"), ld)
    r = d.reduce(ops.logaddexp, "x")
    assert np.allclose(r.data, [0.1, 0.2])
    both = d.reduce(ops.logaddexp, frozenset({"x", "i"}))
    assert np.allclose(both.data, np.log(np.exp(0.1) + np.exp(0.2)))


def test_delta_plus_factor_substitutes_point():
    x = fc.Variable("x", fc.Real)
    d = fc.Delta("x", fc.Number(3.0))
    f = d + x * 2.0
    # (Delta + f) reduced over x is f(x=3).
    assert float(f.reduce(ops.logaddexp, "x").data) == 6.0
    assert float((x * 2.0 + d).reduce(ops.logaddexp, "x").data) == 6.0


def test_delta_plus_delta_merges():
    d = fc.Delta("x", fc.Number(1.0)) + fc.Delta("y", fc.Number(2.0), 0.5)
    assert isinstance(d, fc.Delta) and d.fresh == {"x", "y"}
    assert float(d(x=1.0, y=2.0).data) == 0.5


def test_delta_with_tensor_reduced_over_name_and_batch():
    p = _tensor([0.0, 1.0], "i")
    t = _tensor([[1.0, 2.0], [3.0, 4.0]], "ij")
    joint = fc.Delta("x", p) + t
    r = joint.reduce(ops.logaddexp, frozenset({"x", "i", "j"}))
    assert np.allclose(r.data, np.log(np.exp([[1.0, 2.0], [3.0, 4.0]]).sum()))


def test_delta_errors():
    with pytest.raises(ValueError, match="cannot depend on 'x'"):
        fc.Delta("x", fc.Variable("x", fc.Real))
    with pytest.raises(ValueError, match="real scalar"):
        fc.Delta("x", fc.Number(1.0), fc.Tensor(np.zeros(2)))
