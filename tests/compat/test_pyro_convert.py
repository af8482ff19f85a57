"""funsor_core.pyro.convert (funsor's ``funsor.pyro.convert``): Pyro's conventions between
arrays, distribution objects and funsors.

Oracles: the arrays themselves (round trips), torch.distributions' closed-form log densities,
and the parameters of the distributions that went in. torch only: the module converts torch
(and pyro) distribution objects.
"""

from __future__ import annotations

import math

import pytest

import funsor_core as fc
from funsor_core.pyro.convert import (
    dist_to_funsor,
    funsor_to_cat_and_mvn,
    funsor_to_mvn,
    funsor_to_tensor,
    matrix_and_mvn_to_funsor,
    mvn_to_funsor,
    tensor_to_funsor,
)

torch = pytest.importorskip("torch")
td = torch.distributions


@pytest.fixture(autouse=True)
def _torch64():
    fc.set_backend("torch")
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(old)


def _random_mvn(batch_shape, dim):
    a = torch.randn(batch_shape + (dim, 2 * dim))
    return td.MultivariateNormal(torch.randn(batch_shape + (dim,)),
                                 covariance_matrix=a @ a.transpose(-1, -2))


def test_tensor_round_trip_names_batch_dims_and_drops_size_one():
    t = torch.randn(2, 1, 3, 4)
    f = tensor_to_funsor(t, ("i",), 1)
    # dims -3, -2 (size 1: no input), -1 of the batch: Pyro's names left of "i".
    assert f.inputs == {"_pyro_dim_-2": fc.Bint[2], "i": fc.Bint[3]}
    assert f.output == fc.Reals[4]
    assert torch.equal(funsor_to_tensor(f, 5, ("i",)), t[None])
    with pytest.raises(ValueError, match=r"inputs \['j'\]"):
        funsor_to_tensor(fc.Tensor(torch.zeros(2), {"j": fc.Bint[2]}), 1)


def test_mvn_to_funsor_splits_the_value_into_real_inputs():
    mvn = _random_mvn((2,), 3)  # batch dim named "a"
    f = mvn_to_funsor(mvn, ("a",), {"x": fc.Real, "y": fc.Reals[2]})
    assert f.inputs == {"a": fc.Bint[2], "x": fc.Real, "y": fc.Reals[2]}
    value = torch.randn(2, 3)
    actual = f(x=fc.Tensor(value[:, 0], {"a": fc.Bint[2]}),
               y=fc.Tensor(value[:, 1:], {"a": fc.Bint[2]}))
    torch.testing.assert_close(actual.align(("a",)).data, mvn.log_prob(value))


@pytest.mark.parametrize("diagonal", [False, True])
def test_matrix_and_mvn_to_funsor_is_the_conditional_density(diagonal):
    matrix = torch.randn(4, 2, 3)  # batch 4, x of size 2, y of size 3
    loc, scale = torch.randn(4, 3), torch.rand(4, 3) + 0.5
    noise = (td.Independent(td.Normal(loc, scale), 1) if diagonal
             else td.MultivariateNormal(loc, scale_tril=torch.diag_embed(scale)))
    f = matrix_and_mvn_to_funsor(matrix, noise, ("b",), "x", "y")
    x, y = torch.randn(4, 2), torch.randn(4, 3)
    batch = {"b": fc.Bint[4]}
    actual = f(x=fc.Tensor(x, batch), y=fc.Tensor(y, batch)).align(("b",)).data
    # y - x A ~ N(loc, diag(scale^2)), by hand:
    resid = (y - (x[:, None, :] @ matrix)[:, 0] - loc) / scale
    expected = (-0.5 * resid ** 2 - scale.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    torch.testing.assert_close(actual, expected)


def test_funsor_to_mvn_and_cat_and_mvn_recover_the_parameters():
    pytest.importorskip("pyro")
    mvn = _random_mvn((2, 3), 2)  # batch (a, component)
    logits = torch.randn(2, 3)
    f = tensor_to_funsor(logits, ("a", "c")) + dist_to_funsor(mvn, ("a", "c"))(value="v")
    cat, mixture = funsor_to_cat_and_mvn(f, 2, ("a", "c"))
    assert cat.batch_shape == (1, 2) and mixture.batch_shape == (1, 2, 3)
    torch.testing.assert_close(cat.logits[0], logits - logits.logsumexp(-1, keepdim=True))
    torch.testing.assert_close(mixture.loc[0], mvn.loc)
    torch.testing.assert_close(mixture.precision_matrix[0], mvn.precision_matrix)
    single = funsor_to_mvn(dist_to_funsor(mvn, ("a", "c"))(value="v"), 2, ("a", "c"))
    torch.testing.assert_close(single.covariance_matrix, mvn.covariance_matrix)


def test_funsor_distribution_log_prob_sample_and_expand():
    pytest.importorskip("pyro")
    from funsor_core.pyro.distribution import FunsorDistribution

    logits = torch.randn(3, 4).log_softmax(-1)  # batch 3, 4 values
    d = FunsorDistribution(tensor_to_funsor(logits, ("value",)), (3,), (), 4)
    expected = td.Categorical(logits=logits)
    value = expected.sample((2,))
    torch.testing.assert_close(d.log_prob(value), expected.log_prob(value))
    draws = d.sample((5,))
    assert draws.shape == (5, 3) and bool(((draws >= 0) & (draws < 4)).all())
    wide = d.expand((2, 3))
    assert wide.batch_shape == (2, 3)
    torch.testing.assert_close(wide.log_prob(value), expected.log_prob(value))
    with pytest.raises(ValueError, match="input 'value'"):
        FunsorDistribution(tensor_to_funsor(logits, ("x",)), (3,), (), 4)
