"""Conversion between distribution funsors and torch.distributions objects, and the faces at
funsor's module paths."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
import torch.distributions as td

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.domains import Bint, Real, Reals
from interpretations import lazy

torch.manual_seed(0)
B = (2, 3)  # batch shape of the torch distributions: dims -2 and -1
DIM_TO_NAME = {-2: "i", -1: "j"}
NAME_TO_DIM = {"i": -2, "j": -1}


def _pos(*shape):
    return torch.rand(shape, dtype=torch.float64) + 0.5


def _simplex(*shape):
    p = _pos(*shape)
    return p / p.sum(-1, keepdim=True)


def _tril(*shape):
    return torch.tril(0.3 * torch.randn(shape, dtype=torch.float64), -1) + torch.diag_embed(
        _pos(*shape[:-1]))


RAW = [
    (D.Normal, lambda: td.Normal(torch.randn(B, dtype=torch.float64), _pos(*B))),
    (D.LogNormal, lambda: td.LogNormal(torch.randn(B, dtype=torch.float64), _pos(*B))),
    (D.MultivariateNormal, lambda: td.MultivariateNormal(
        torch.randn(B + (3,), dtype=torch.float64), scale_tril=_tril(*B, 3, 3))),
    (D.Gamma, lambda: td.Gamma(_pos(*B), _pos(*B))),
    (D.Beta, lambda: td.Beta(_pos(*B), _pos(*B))),
    (D.Dirichlet, lambda: td.Dirichlet(_pos(*B, 4))),
    (D.Exponential, lambda: td.Exponential(_pos(*B))),
    (D.Laplace, lambda: td.Laplace(torch.randn(B, dtype=torch.float64), _pos(*B))),
    (D.StudentT, lambda: td.StudentT(_pos(*B), torch.randn(B, dtype=torch.float64), _pos(*B))),
    (D.Uniform, lambda: td.Uniform(-_pos(*B), _pos(*B))),
    (D.VonMises, lambda: td.VonMises(torch.randn(B, dtype=torch.float64), _pos(*B))),
    (D.Categorical, lambda: td.Categorical(probs=_simplex(*B, 4))),
    (D.CategoricalLogits, lambda: td.Categorical(logits=torch.randn(B + (4,),
                                                                     dtype=torch.float64))),
    (D.BernoulliProbs, lambda: td.Bernoulli(probs=_simplex(*B, 2)[..., 0])),
    (D.BernoulliLogits, lambda: td.Bernoulli(logits=torch.randn(B, dtype=torch.float64))),
    (D.Binomial, lambda: td.Binomial(torch.full(B, 5.0, dtype=torch.float64),
                                     _simplex(*B, 2)[..., 0])),
    (D.Multinomial, lambda: td.Multinomial(6, _simplex(*B, 3))),
    (D.Poisson, lambda: td.Poisson(_pos(*B))),
]
IDS = [r[0].__name__ for r in RAW]


@pytest.mark.parametrize("family, make", RAW, ids=IDS)
def test_to_funsor_of_torch_distributions(family, make):
    raw = make()
    with lazy:
        f = fc.to_funsor(raw, Real, DIM_TO_NAME)
    assert type(f) is family
    assert f.inputs == {**{k: Bint[n] for k, n in zip("ij", B)},
                        "value": f.value.output}
    value = raw.sample()
    dtype = f.value.output.dtype
    expected = raw.log_prob(value)
    actual = fc.reinterpret(f)(value=fc.Tensor(value, {"i": Bint[2], "j": Bint[3]}, dtype))
    # torch's von Mises normalizer is a polynomial approximation good to about 1e-8.
    rtol = 1e-7 if family is D.VonMises else 1e-10
    np.testing.assert_allclose(actual.align(("i", "j")).data.numpy(), expected.numpy(),
                               rtol=rtol)


@pytest.mark.parametrize("family, make", RAW, ids=IDS)
def test_to_data_round_trip(family, make):
    raw = make()
    with lazy:
        f = fc.to_funsor(raw, Real, DIM_TO_NAME)
    back = fc.to_data(f, NAME_TO_DIM)
    assert type(back) is type(raw) and back.batch_shape == raw.batch_shape
    for name in family.params:
        a, b = getattr(back, name), getattr(raw, name)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    assert f.dist_class is type(raw)


def test_independent_dims_become_batch_output_dims():
    raw = td.Independent(td.Normal(torch.randn(2, 3, dtype=torch.float64), _pos(2, 3)), 1)
    with lazy:
        f = fc.to_funsor(raw, Real, {-1: "i"})
    assert isinstance(f, D.Normal) and f.inputs == {"i": Bint[2], "value": Reals[3]}
    value = raw.sample()
    actual = fc.reinterpret(f)(value=fc.Tensor(value, {"i": Bint[2]}))
    np.testing.assert_allclose(actual.data.numpy(), raw.log_prob(value).numpy(), rtol=1e-12)
    back = fc.to_data(f, {"i": -1})
    assert isinstance(back, td.Independent) and back.event_shape == (3,)
    np.testing.assert_allclose(back.log_prob(value).numpy(), raw.log_prob(value).numpy())


def test_conversion_errors_are_clear():
    with pytest.raises(NotImplementedError,
                       match="cannot convert torch.distributions.Kumaraswamy"):
        fc.to_funsor(td.Kumaraswamy(torch.tensor(1.0), torch.tensor(2.0)), Real)
    with lazy:
        f = D.Normal(fc.Tensor(np.zeros(2), {"i": Bint[2]}), 1.0)
    with pytest.raises(TypeError, match="needs torch arrays, but its parameters hold"):
        fc.to_data(f, {"i": -1})
    with lazy:
        g = D.Normal(fc.Tensor(torch.zeros(2), {"i": Bint[2]}), 1.0, value=0.5)
    with pytest.raises(NotImplementedError, match="distribution object has a free value"):
        fc.to_data(g, {"i": -1})
    with pytest.raises(NotImplementedError, match="no torch.distributions counterpart"):
        _ = D.GammaPoisson(1.0, fc.Variable("r", Real)).dist_class


def test_faces_at_funsor_module_paths():
    for backend, module in D.BACKEND_TO_DISTRIBUTIONS_BACKEND.items():
        face = importlib.import_module(module)
        assert face.Normal is D.Normal and face.Dirichlet is D.Dirichlet, backend
    assert importlib.import_module("funsor_core.torch.distributions").dist is td
    assert fc.distribution is D
