"""The short paths of a Categorical's density (Pyro's enumerated HMM steps convert K^2 T
probabilities each): the probability check by three reductions, the plain log where every
probability is positive, no support mask where every value is in the support. Each against
numpy (the rule and the density written out entry by entry), in both branches of each
path: the short one and the guarded one it skips."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.distribution.constraints import PROBS
from funsor_core.domains import Bint

torch = pytest.importorskip("torch")


def _rule(x):
    # The constraint entry by entry: every weight nonnegative and finite, the sum positive.
    rows = x.reshape(-1, x.shape[-1])
    ok = [all(0 <= w < np.inf for w in r) and sum(r) > 0 for r in rows]
    return np.array(ok).reshape(x.shape[:-1])


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_probs_check_agrees_with_the_rule_entry_by_entry(lib):
    x = np.array([[0.2, 0.8], [0.0, 0.0], [-0.1, 1.1], [np.inf, 1.0], [np.nan, 1.0],
                  [0.0, 3.0], [-0.0, 1e-300]])
    got = PROBS.check(x if lib == "numpy" else torch.tensor(x))
    np.testing.assert_array_equal(np.asarray(got), _rule(x))


@pytest.mark.parametrize("bad, where", [(-0.5, "i=1"), (np.inf, "i=1"), (np.nan, "i=1")])
def test_bad_probs_still_raise_naming_the_entry(bad, where):
    probs = np.full((3, 2), 0.5)
    probs[1, 0] = bad
    with pytest.raises(ValueError, match=where):
        D.Categorical(fc.Tensor(torch.tensor(probs), {"i": Bint[3]}), value=0)


def _density_oracle(probs, value):
    # log(probs[..., v] / sum(probs[...])) entry by entry; -inf for a zero weight or a value
    # outside 0 .. K - 1.
    out = np.empty(probs.shape[:-1] + value.shape)
    for idx in np.ndindex(*probs.shape[:-1]):
        for jdx in np.ndindex(*value.shape):
            v = value[jdx]
            p = probs[idx][v] / probs[idx].sum() if 0 <= v < probs.shape[-1] else 0.0
            out[idx + jdx] = np.log(p) if p > 0 else -np.inf
    return out


@pytest.mark.parametrize("zero", [False, True])
@pytest.mark.parametrize("outside", [False, True])
def test_density_and_gradient_in_each_branch(zero, outside):
    # positive / with a zero weight (the guarded log) x values in / outside the support
    rng = np.random.default_rng(int(zero) + 2 * int(outside))
    probs = rng.uniform(0.1, 1.0, size=(3, 4))
    if zero:
        probs[1, 2] = 0.0
    value = np.array([0, 2, 3, -1 if outside else 1, 4 if outside else 2])
    p = torch.tensor(probs, requires_grad=True)
    f = D.Categorical(fc.Tensor(p, {"i": Bint[3]}),
                      value=fc.Tensor(torch.tensor(value), {"j": Bint[5]}, 4))
    got = f.align(("i", "j")).data
    np.testing.assert_allclose(got.detach().numpy(), _density_oracle(probs, value),
                               rtol=1e-12)
    finite = torch.isfinite(got)
    (grad,) = torch.autograd.grad(got[finite].sum(), p)
    # d/dp of sum over finite entries of log p[i, v] - log sum p[i]: count / p - n_i / sum
    counts = np.zeros_like(probs)
    rows = np.zeros(3)
    for i, j in zip(*np.nonzero(finite.numpy())):
        counts[i, value[j]] += 1
        rows[i] += 1
    safe = np.where(probs > 0, probs, 1.0)
    expected = np.where(counts > 0, counts / safe, 0.0) - rows[:, None] / probs.sum(-1,
                                                                                    keepdims=True)
    assert torch.isfinite(grad).all()
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-10)


def test_nan_value_stays_nan_beside_values_in_support():
    # Real values: a NaN is in no support yet its density stays NaN, not -inf.
    f = D.Bernoulli(probs=fc.Tensor(np.array([0.3, 0.6]), {"i": Bint[2]}),
                    value=fc.Tensor(np.array([1.0, np.nan, 0.0]), {"j": Bint[3]}))
    got = f.align(("i", "j")).data
    expected = np.log(np.array([[0.3, np.nan, 0.7], [0.6, np.nan, 0.4]]))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
