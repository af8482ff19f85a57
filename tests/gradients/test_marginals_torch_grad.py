"""``markov_marginals`` on torch arrays that require grad: the total and the pairs stay in
the caller's graph (they came back detached: a loss on them had no gradient, or only the
part through the boundary factor).

Oracle: a float64 numpy forward-backward pass (scipy's logsumexp) for log Z and the pairs,
and its central finite differences for the derivative of a loss on both."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_marginals

torch = pytest.importorskip("torch")


def _forward_backward(init: np.ndarray, mats: np.ndarray) -> tuple[float, np.ndarray]:
    from scipy.special import logsumexp

    T = mats.shape[0]
    alpha, beta = [init], [np.zeros(init.shape)]
    for t in range(T):
        alpha.append(logsumexp(alpha[-1][:, None] + mats[t], axis=0))
        beta.insert(0, logsumexp(mats[T - 1 - t] + beta[0][None, :], axis=1))
    log_z = float(logsumexp(alpha[-1]))
    pairs = np.exp(np.stack([alpha[t][:, None] + mats[t] + beta[t + 1][None, :]
                             for t in range(T)]) - log_z)
    return log_z, pairs


@pytest.mark.parametrize("strategy", [None, "parallel", "sequential"])
def test_loss_on_total_and_pairs_has_the_gradient(strategy):
    rng = np.random.default_rng(0)
    T, K = 5, 3
    init, mats, w = rng.normal(size=K), rng.normal(size=(T, K, K)), rng.normal(size=(T, K, K))

    def loss_np(i, m):
        log_z, pairs = _forward_backward(i, m)
        return log_z + float((pairs * w).sum())

    ti = torch.tensor(init, requires_grad=True)
    tm = torch.tensor(mats, requires_grad=True)
    inputs = {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]}
    total, pairs = markov_marginals(ops.logaddexp, ops.add, fc.Tensor(tm, inputs), "t",
                                    {"x": "y"}, factors=[fc.Tensor(ti, {"x": fc.Bint[K]})],
                                    strategy=strategy)
    log_z, expect_pairs = _forward_backward(init, mats)
    np.testing.assert_allclose(total.data.detach().numpy(), log_z, rtol=1e-10)
    np.testing.assert_allclose(pairs.data.detach().numpy(), expect_pairs, atol=1e-10)
    (total.data + (pairs.data * torch.tensor(w)).sum()).backward()
    h = 1e-5
    for x, g, name in ((mats, tm.grad, "m"), (init, ti.grad, "i")):
        d = rng.uniform(-1, 1, size=x.shape)
        args = {"i": init, "m": mats}
        plus = loss_np(**{**args, name: x + h * d})
        minus = loss_np(**{**args, name: x - h * d})
        assert float((g.numpy() * d).sum()) == pytest.approx((plus - minus) / (2 * h),
                                                             rel=1e-6, abs=1e-7)


def test_no_graph_without_requires_grad():
    trans = fc.Tensor(torch.zeros(3, 2, 2), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    total, pairs = markov_marginals(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert not total.data.requires_grad and not pairs.data.requires_grad
