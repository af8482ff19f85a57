"""to_funsor of distribution objects from libraries built on torch.distributions: subclasses
(by inheritance) and wrappers (masks, expansions, point masses, by their attributes). The
oracle is the object's own ``log_prob``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as td

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.domains import Bint, Real
from funsor_core.engine.backend import backend_of
from interpretations import lazy

torch.manual_seed(0)


class MyNormal(td.Normal):
    """A subclass defined outside torch.distributions, under another name."""


class SlowNormal(td.Normal):
    has_rsample = False  # draws without reparameterization (as Pyro's fake does)


class Masked(td.Distribution):
    """A mask wrapper known only by its attributes (as Pyro's MaskedDistribution)."""

    def __init__(self, base_dist, mask):
        self.base_dist, self._mask = base_dist, mask
        super().__init__(base_dist.batch_shape, base_dist.event_shape, validate_args=False)

    def log_prob(self, value):
        lp = self.base_dist.log_prob(value)
        return torch.where(torch.as_tensor(self._mask), lp, torch.zeros_like(lp))


def _log_prob(f, value, names):
    """The funsor's log density at ``value`` (batch dims named ``names``), as an array."""
    inputs = {n: Bint[s] for n, s in zip(names, value.shape)}
    out = fc.reinterpret(f)(value=fc.Tensor(value, inputs, f.inputs["value"].dtype))
    return out.align(tuple(names)).data if out.inputs else out.data


def test_backend_of_a_subclass_is_its_base_libraries():
    assert backend_of(MyNormal(0.0, 1.0)).NAME == "torch"
    assert backend_of(Masked(td.Poisson(torch.tensor(1.0)), True)).NAME == "torch"


def test_subclass_converts_as_its_torch_base():
    raw = MyNormal(torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5)
    with lazy:
        f = fc.to_funsor(raw, Real, {-1: "i"})
    assert type(f) is D.Normal
    value = raw.sample()
    np.testing.assert_allclose(_log_prob(f, value, "i"), raw.log_prob(value), rtol=1e-12)


def test_nonreparameterized_subclass_keeps_it():
    raw = SlowNormal(torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))
    with lazy:
        f = fc.to_funsor(raw, Real, {-1: "i"})
    assert type(f) is D.NonreparameterizedNormal
    value = raw.sample()
    np.testing.assert_allclose(_log_prob(f, value, "i"), raw.log_prob(value), rtol=1e-12)


@pytest.mark.parametrize("mask", [torch.tensor([True, False, True]), True, False])
def test_masked_wrapper_is_zero_where_masked(mask):
    raw = Masked(td.Poisson(torch.rand(3, dtype=torch.float64) + 0.5), mask)
    f = fc.to_funsor(raw, Real, {-1: "i"})
    value = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    actual = _log_prob(f, value, "i")
    expected = raw.log_prob(value)
    np.testing.assert_allclose(np.broadcast_to(actual, expected.shape), expected, rtol=1e-12)


def test_unknown_wrapper_error_names_its_class():
    class Odd(td.Distribution):
        pass

    with pytest.raises(NotImplementedError, match=r"cannot convert .*\.Odd to a funsor"):
        fc.to_funsor(Odd(validate_args=False), Real)


# -- Pyro's own objects, where pyro is installed ---------------------------------------------
def _pyro_cases():
    dist = pytest.importorskip("pyro.distributions")
    fakes = pytest.importorskip("pyro.distributions.testing.fakes")
    from pyro.distributions.torch_distribution import ExpandedDistribution
    p = torch.rand(2, 3, dtype=torch.float64) + 0.1
    p = p / p.sum(-1, keepdim=True)
    loc = torch.randn(2, dtype=torch.float64)
    return {
        "categorical": (dist.Categorical(p), D.Categorical, torch.tensor([0, 2])),
        "bernoulli": (dist.Bernoulli(p[:, 0]), None, torch.tensor([1.0, 0.0])),
        "normal": (dist.Normal(loc, 1.5), None, torch.randn(2, dtype=torch.float64)),
        "nonreparam": (fakes.NonreparameterizedNormal(loc, 1.5), D.NonreparameterizedNormal,
                       torch.randn(2, dtype=torch.float64)),
        "masked": (dist.Categorical(p).mask(torch.tensor([True, False])), None,
                   torch.tensor([1, 2])),
        "expanded": (dist.Normal(torch.tensor(0.5, dtype=torch.float64), 2.0).expand([2]),
                     None, torch.randn(2, dtype=torch.float64)),
        "expanded_wrapper": (ExpandedDistribution(dist.Poisson(torch.tensor(
            1.5, dtype=torch.float64)), torch.Size([2])), None, torch.tensor([0.0, 3.0])),
        "independent": (dist.Normal(loc, 1.5).expand([3, 2]).to_event(1), None,
                        torch.randn(3, 2, dtype=torch.float64)),
        "delta": (dist.Delta(loc, torch.tensor([0.3, -0.2], dtype=torch.float64)), D.Delta,
                  loc.clone()),
        "delta_event": (dist.Delta(torch.randn(2, 3, dtype=torch.float64), event_dim=1),
                        D.Delta, None),
    }


PYRO_CASES = ["categorical", "bernoulli", "normal", "nonreparam", "masked", "expanded",
              "expanded_wrapper", "independent", "delta", "delta_event"]


@pytest.mark.parametrize("case", PYRO_CASES)
def test_pyro_distributions_convert(case):
    raw, family, value = _pyro_cases()[case]
    if value is None:  # at the point, and off it in one entry of the event
        value = raw.v.clone()
        value[1, 2] += 1.0
    batch = tuple(raw.batch_shape)
    names = "i" if batch else ""
    with lazy:
        f = fc.to_funsor(raw, Real, {-1: "i"} if batch else {})
    if family is not None:
        assert type(f) is family
    actual = _log_prob(f, value, names)
    np.testing.assert_allclose(actual, raw.log_prob(value), rtol=1e-12)


def test_pyro_masked_independent_masks_whole_events():
    dist = pytest.importorskip("pyro.distributions")
    raw = dist.Normal(torch.randn(2, 3, dtype=torch.float64), 1.0).mask(
        torch.tensor([[True], [False]])).to_event(1)
    f = fc.to_funsor(raw, Real, {-1: "i"})
    value = torch.randn(2, 3, dtype=torch.float64)
    np.testing.assert_allclose(_log_prob(f, value, "i"), raw.log_prob(value), rtol=1e-12)


def test_mask_varying_inside_an_event_raises():
    raw = td.Independent(Masked(td.Poisson(torch.ones(2, 3)), torch.tensor([True, False, True])),
                         1)
    with pytest.raises(NotImplementedError, match=r"mask varies over the 1 rightmost batch dims"):
        fc.to_funsor(raw, Real, {-1: "i"})


@pytest.mark.parametrize("name", ["Beta", "Gamma", "Dirichlet"])
def test_pyro_nonreparameterized_fakes(name):
    fakes = pytest.importorskip("pyro.distributions.testing.fakes")
    a = torch.rand(2, 3, dtype=torch.float64) + 0.5
    b = torch.rand(2, 3, dtype=torch.float64) + 0.5
    raw = getattr(fakes, "Nonreparameterized" + name)(*((a,) if name == "Dirichlet" else
                                                        (a[:, 0], b[:, 0])))
    with lazy:
        f = fc.to_funsor(raw, Real, {-1: "i"})
    assert type(f) is getattr(D, "Nonreparameterized" + name)
    value = raw.sample()
    np.testing.assert_allclose(_log_prob(f, value, "i"), raw.log_prob(value), rtol=1e-10)


class Expanded(td.Distribution):
    """An expansion wrapper known by its attributes (as Pyro's ExpandedDistribution)."""

    def __init__(self, base_dist, batch_shape):
        self.base_dist, self._expanded_sizes = base_dist, tuple(batch_shape)
        super().__init__(torch.Size(batch_shape), base_dist.event_shape, validate_args=False)

    def log_prob(self, value):
        return self.base_dist.log_prob(value).expand(self.batch_shape)


def test_expanded_wrapper_of_a_base_that_cannot_expand_itself():
    rate = torch.tensor(1.7, dtype=torch.float64)
    raw = Expanded(Masked(td.Poisson(rate), True), (3,))  # torch's expand raises for Masked
    f = fc.to_funsor(raw, Real, {-1: "i"})
    assert f.inputs["i"] == Bint[3]
    value = torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64)
    np.testing.assert_allclose(_log_prob(f, value, "i"), td.Poisson(rate).log_prob(value),
                               rtol=1e-12)
