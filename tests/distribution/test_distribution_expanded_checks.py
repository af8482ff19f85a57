"""Parameters that repeat in memory (stride 0, as ``expand`` and Pyro's broadcasting leave an
HMM site's scale and probs over its T steps) are checked once per distinct entry: the same
verdicts and the same errors (naming a bad entry) as a check of every entry, and the same
densities (torch's ``log_prob``, the oracle). And a distribution object of batch shape ()
converted with and without enclosing dims (Pyro's two conversions of an initial state) is
converted once."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.distribution.array_math import distinct_entries
from funsor_core.domains import Bint

torch = pytest.importorskip("torch")
td = torch.distributions


def test_distinct_entries_keeps_event_dims_and_unrepeated_dims():
    base = np.arange(6.0).reshape(2, 1, 3)
    x = np.broadcast_to(base, (2, 5, 3))
    np.testing.assert_array_equal(distinct_entries(x, 1), base)
    np.testing.assert_array_equal(distinct_entries(x, 0), base)
    row = np.broadcast_to(np.array([[1.0], [2.0]]), (2, 4))  # repeats along its event dim
    assert distinct_entries(row, 1) is row
    dense = np.ones((2, 3))
    assert distinct_entries(dense, 0) is dense


def test_expanded_normal_same_density_as_torch():
    loc = torch.tensor([0.5, -1.0], dtype=torch.float64).reshape(2, 1).expand(2, 7)
    scale = torch.tensor(0.7, dtype=torch.float64).expand(2, 7)
    raw = td.Normal(loc, scale)
    y = torch.linspace(-2, 2, 14, dtype=torch.float64).reshape(2, 7)
    f = fc.to_funsor(raw, fc.Real, {-2: "i", -1: "t"})
    got = f(value=fc.Tensor(y, {"i": Bint[2], "t": Bint[7]})).align(("i", "t")).data
    np.testing.assert_allclose(got.numpy(), raw.log_prob(y).numpy(), rtol=1e-13)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_expanded_bad_scale_raises_naming_an_entry(lib):
    base = np.array([[1.0], [-2.0], [3.0]])
    scale = np.broadcast_to(base, (3, 5))
    scale = scale if lib == "numpy" else torch.tensor(base).expand(3, 5)
    with pytest.raises(ValueError, match=r"'scale' must be positive.*-2.*i=1"):
        D.Normal(0.0, fc.Tensor(scale, {"i": Bint[3], "t": Bint[5]}), value=0.0)


def test_expanded_probs_checked_per_row():
    # Rows repeat over t; the bad weight sits inside a row (the event dim is never thinned).
    base = torch.tensor([[[0.2, 0.8]], [[0.5, -0.5]]], dtype=torch.float64)
    probs = base.expand(2, 4, 2)
    with pytest.raises(ValueError, match=r"'probs'.*i=1"):
        D.Categorical(fc.Tensor(probs, {"i": Bint[2], "t": Bint[4]}), value=0)
    good = base.abs().expand(2, 4, 2)
    raw = td.Categorical(good)
    table = fc.to_funsor(raw, fc.Real, {-2: "i", -1: "t"})(value="v").align(("v", "i", "t"))
    values = torch.arange(2).reshape(2, 1, 1)
    np.testing.assert_allclose(table.data.numpy(), raw.log_prob(values).numpy(), rtol=1e-13)


def test_batchless_object_converted_once_whatever_the_enclosing_dims():
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    raw = td.Categorical(probs)
    first = fc.to_funsor(raw, fc.Real, {})
    second = fc.to_funsor(raw, fc.Real, {-5: "x", -1: "tones"})
    assert second is first
    np.testing.assert_allclose(first(value="v").align(("v",)).data.numpy(),
                               raw.log_prob(torch.arange(4)).numpy(), rtol=1e-13)
    batched = td.Categorical(probs.expand(3, 4))  # a dim inside the batch still counts
    named = fc.to_funsor(batched, fc.Real, {-1: "i"})
    assert set(named.inputs) == {"i", "value"}
    assert set(fc.to_funsor(batched, fc.Real, {-1: "j"}).inputs) == {"j", "value"}


def test_expanded_scale_density_and_gradient_as_torch():
    # The normalizer and 1 / scale are computed once per distinct scale entry and broadcast
    # back: the densities and the scale's and loc's gradients are torch's own.
    base = torch.tensor([[0.7], [1.9]], dtype=torch.float64, requires_grad=True)
    locs = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    loc, scale = locs.reshape(1, 3).expand(2, 3), base.expand(2, 3)
    raw = td.Normal(loc, scale)
    y = torch.linspace(-2, 2, 6, dtype=torch.float64).reshape(2, 3)
    f = fc.to_funsor(raw, fc.Real, {-2: "i", -1: "t"})
    got = f(value=fc.Tensor(y, {"i": Bint[2], "t": Bint[3]})).align(("i", "t")).data
    want = raw.log_prob(y)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-13)
    ours = torch.autograd.grad(got.sum(), (base, locs))
    theirs = torch.autograd.grad(want.sum(), (base, locs))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_expanded_numpy_scale_density_as_closed_form():
    scale = np.broadcast_to(np.array([[0.5], [2.0]]), (2, 4))  # read-only, stride 0
    s = fc.Tensor(scale, {"i": Bint[2], "t": Bint[4]})
    y = np.linspace(-1.0, 1.5, 8).reshape(2, 4)
    got = D.Normal(0.25, s, value="v")(v=fc.Tensor(y, {"i": Bint[2], "t": Bint[4]}))
    want = -0.5 * ((y - 0.25) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(got.align(("i", "t")).data, want, rtol=1e-13)
