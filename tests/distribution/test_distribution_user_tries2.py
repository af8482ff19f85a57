"""A new user's tries of the distribution families with values and parameters at infinity:
log densities are -inf outside the support and exact at the support's limits, never NaN."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import funsor_core as fc
from funsor_core.distribution import Bernoulli, Beta, Uniform

INF = np.inf


@pytest.fixture(autouse=True)
def _numpy_backend():
    # Numbers become arrays of the active backend; a test before may leave another active.
    old = fc.get_backend()
    fc.set_backend("numpy")
    yield
    fc.set_backend(old)


def test_uniform_is_minus_inf_at_infinite_values():
    # The out-of-support fill was 0 * value: NaN at +-inf, and the NaN leaked out.
    xs = np.array([-INF, -1.0, 0.25, 1.0, 3.0, INF])
    low = fc.Tensor(np.array([0.0, -2.0]), {"j": fc.Bint[2]})
    got = Uniform(low, 2.0, value=fc.Tensor(xs, {"i": fc.Bint[6]})).data
    expected = [stats.uniform.logpdf(xs, lo, 2.0 - lo) for lo in (0.0, -2.0)]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_bernoulli_logits_at_infinity_is_the_limit_of_probs_0_and_1():
    # logits = +-inf are probs 1 and 0: value * logits - softplus(logits) was inf - inf = NaN.
    logits = fc.Tensor(np.array([-INF, -800.0, 0.3, 800.0, INF]), {"j": fc.Bint[5]})
    got = Bernoulli(logits=logits, value=fc.Tensor(np.array([0.0, 1.0]), {"v": fc.Bint[2]}))
    probs = np.array([0.0, 0.0, 1 / (1 + np.exp(-0.3)), 1.0, 1.0])
    with np.errstate(divide="ignore"):
        expected = np.stack([np.log1p(-probs), np.log(probs)])  # float64 closed form
    expected[:, 1] = [0.0, -800.0]  # probs underflow there; log(sigmoid(-+800)) = -800
    expected[:, 3] = [-800.0, 0.0]
    np.testing.assert_allclose(got.align(("v", "j")).data, expected, rtol=1e-12)


def test_bernoulli_logits_gradient_matches_finite_differences_on_torch():
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    logits = torch.tensor([-2.0, 0.3, 1.5], dtype=torch.float64, requires_grad=True)
    value = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)

    def log_prob(lg):
        return Bernoulli(logits=fc.Tensor(lg, {"i": fc.Bint[3]}),
                         value=fc.Tensor(value, {"i": fc.Bint[3]})).data.sum()

    (grad,) = torch.autograd.grad(log_prob(logits), logits)
    eps = 1e-6
    fd = [(log_prob(logits.detach() + eps * e) - log_prob(logits.detach() - eps * e)) / (2 * eps)
          for e in torch.eye(3, dtype=torch.float64)]
    np.testing.assert_allclose(grad.numpy(), torch.stack(fd).numpy(), rtol=1e-7)


def test_beta_takes_a_bool_value_as_its_float():
    # Observed coins as bools: -value raised numpy's "boolean negative" TypeError.
    flips = np.array([True, False])
    got = Beta(2.0, 1.0, value=fc.Tensor(flips, {"i": fc.Bint[2]})).data
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(got, stats.beta.logpdf(flips.astype(float), 2.0, 1.0))
