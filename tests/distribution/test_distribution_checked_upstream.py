"""A torch distribution built with ``validate_args`` had its parameters' constraints checked
by torch: converting it skips our check of the same condition (Pyro's HMM sites, issue #28),
and an observed Normal of Tensor parameters is built by the converted-Normal fast path. The
oracles: torch's ``log_prob`` and its autograd derivatives. Where torch's check no longer
answers for the arrays (changed in place after construction, ``validate_args=False``), ours
runs and raises as before; and the mark never reaches another construction."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.distribution import fast_normal
from funsor_core.distribution.constraints import CHECKED_UPSTREAM
from funsor_core.domains import Bint

torch = pytest.importorskip("torch")
td = torch.distributions


def _pyro_like_normal(validate: bool):
    # Pyro's observed HMM site: loc gathered per state, scale a number broadcast by torch.
    locs = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    loc = locs[torch.arange(3).reshape(3, 1, 1)].expand(3, 5, 2)
    return locs, td.Normal(loc, 0.7, validate_args=validate)


def test_converted_normal_density_and_gradient_as_torch(monkeypatch):
    hits = []
    original = fast_normal._converted_normal
    monkeypatch.setattr(fast_normal, "_converted_normal",
                        lambda *a: hits.append(original(*a)) or hits[-1])
    locs, raw = _pyro_like_normal(validate=True)
    y = torch.linspace(-2.0, 3.0, 10, dtype=torch.float64).reshape(5, 2)
    f = fc.to_funsor(raw, fc.Real, {-3: "x", -2: "t", -1: "k"})
    assert hits and hits[-1] is not None  # the fast path built it
    obs = fc.Tensor(y, {"t": Bint[5], "k": Bint[2]})
    got = f(value=obs).align(("x", "t", "k")).data
    want = raw.log_prob(y)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-13)
    (g_got,) = torch.autograd.grad(got.sum(), locs, retain_graph=True)
    (g_want,) = torch.autograd.grad(want.sum(), locs)
    np.testing.assert_allclose(g_got.numpy(), g_want.numpy(), rtol=1e-13, atol=1e-12)


def test_scale_changed_in_place_after_construction_is_checked_again():
    scale = torch.full((3, 5, 2), 0.7, dtype=torch.float64)
    raw = td.Normal(torch.zeros(3, 5, 2, dtype=torch.float64), scale, validate_args=True)
    scale[1, 2, 0] = -0.7  # torch checked the old values; the version counter says so
    with pytest.raises(ValueError, match=r"Normal: parameter 'scale' must be positive.*x=1, t=2"):
        fc.to_funsor(raw, fc.Real, {-3: "x", -2: "t", -1: "k"})


def test_unvalidated_object_is_checked_by_us():
    loc = torch.zeros(2, dtype=torch.float64)
    raw = td.Normal(loc, torch.tensor([1.0, -1.0], dtype=torch.float64), validate_args=False)
    with pytest.raises(ValueError, match=r"'scale' must be positive.*i=1"):
        fc.to_funsor(raw, fc.Real, {-1: "i"})


def test_categorical_probs_trusted_same_table_bad_probs_still_raise():
    base = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype=torch.float64)
    raw = td.Categorical(base.reshape(2, 1, 3).expand(2, 4, 3), validate_args=True)
    table = fc.to_funsor(raw, fc.Real, {-2: "i", -1: "t"})(value="v").align(("v", "i", "t"))
    values = torch.arange(3).reshape(3, 1, 1)  # every value: enumeration against torch
    np.testing.assert_allclose(table.data.numpy(), raw.log_prob(values).numpy(), rtol=1e-13)
    fresh = td.Categorical(base.reshape(2, 1, 3).expand(2, 4, 3), validate_args=True)
    fresh.probs[1, 0, 0] = -0.1  # in place (before log_prob caches logits): checked by us
    with pytest.raises(ValueError, match=r"'probs'.*i=1, t=0"):
        fc.to_funsor(fresh, fc.Real, {-2: "i", -1: "t"})


def test_mark_is_gone_after_conversion_and_never_reaches_other_builds():
    _, raw = _pyro_like_normal(validate=True)
    fc.to_funsor(raw, fc.Real, {-3: "x", -2: "t", -1: "k"})
    assert CHECKED_UPSTREAM.get() == (None, frozenset())
    bad = fc.Tensor(torch.tensor([1.0, -1.0], dtype=torch.float64), {"i": Bint[2]})
    with pytest.raises(ValueError, match=r"'scale' must be positive.*i=1"):
        D.Normal(fc.Tensor(torch.zeros(2, dtype=torch.float64), {"i": Bint[2]}), bad)
    token = CHECKED_UPSTREAM.set((D.Gamma, frozenset({"rate", "concentration"})))
    try:  # marked for another family: Normal still checks its scale
        with pytest.raises(ValueError, match=r"'scale' must be positive"):
            D.Normal(fc.Tensor(torch.zeros(2, dtype=torch.float64), {"i": Bint[2]}), bad)
    finally:
        CHECKED_UPSTREAM.reset(token)
