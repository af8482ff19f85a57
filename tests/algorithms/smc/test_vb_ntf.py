"""Variational Bayes (Appendix D) and KL-NTF multiplicative updates.

Oracles: the golden VB bounds of Figure 9 (best of restarts), the exact evidence (a bound
stays below it; at K = 1 it is exact), the ascent property, hand-written Lee-Seung updates
(numpy), and the KL divergence written with scipy.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import rel_entr

from funsor_core import ops
from funsor_core.algorithms.smc.ntf import kl_divergence, kl_ntf
from funsor_core.algorithms.smc.vb import vb
from funsor_core.allocation import AllocationModel

NMF = {"k": (), "i": ("k",), "j": ("k",)}
X1 = np.array([[2, 1, 1, 0], [0, 0, 1, 2], [0, 0, 1, 1]])
X2 = np.array([[4, 3, 0], [0, 0, 3], [0, 0, 3]])


def test_vb_golden_figure_9_and_bound():
    golden = [-20.227, -21.406, -23.681, -25.315]  # X1, a = 1, b = a / T, best of restarts
    for K, value in zip((1, 2, 3, 4), golden):
        model = AllocationModel(NMF, {"i": 3, "j": 4, "k": K}, ("i", "j"), 1.0, 1.0 / 9)
        result = vb(model, X1, num_restarts=20, rng_key=0)
        assert round(result.elbo, 3) == value
        if K <= 2:  # the enumerator is the slow part
            assert result.elbo <= model.log_marginal_exact(X1) + 1e-9
        # The expected statistics keep the visible marginals: E S_{i+} = X_{i+}.
        np.testing.assert_allclose(result.stats["i"].sum(1), X1.sum(1), atol=1e-9)


def test_vb_elbo_non_decreasing():
    model = AllocationModel(NMF, {"i": 3, "j": 3, "k": 3}, ("i", "j"), 0.01, 0.01 / 16)
    trace = vb(model, X2, num_iters=150, rng_key=3, tol=-1.0).trace
    assert len(trace) == 150
    assert np.all(np.diff(trace) >= -1e-9)


def _lee_seung(X, W, H, iters):
    for _ in range(iters):
        W = W * ((X / (W @ H)) @ H.T) / H.sum(1)
        H = H * (W.T @ (X / (W @ H))) / W.sum(0)[:, None]
    return W, H


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_kl_ntf_matches_lee_seung(backend):
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(5, 6)).astype(float)
    W0, H0 = rng.uniform(0.5, 1.5, (5, 2)), rng.uniform(0.5, 1.5, (2, 6))
    if backend == "torch":
        import torch
        conv = torch.as_tensor
    else:
        conv = np.asarray
    (W, H), trace = kl_ntf(conv(X), "ik,kj->ij", {"k": 2}, num_iters=30,
                           factors=[conv(W0), conv(H0)])
    W_ref, H_ref = _lee_seung(X, W0, H0, 30)
    np.testing.assert_allclose(ops.to_numpy(W), W_ref, rtol=1e-9)
    np.testing.assert_allclose(ops.to_numpy(H), H_ref, rtol=1e-9)
    assert np.all(np.diff(trace) <= 1e-9)
    expected = (rel_entr(X, W_ref @ H_ref) - X + W_ref @ H_ref).sum()
    np.testing.assert_allclose(trace[-1], expected, rtol=1e-10)


def test_kl_ntf_cp_and_tucker_decrease():
    rng = np.random.default_rng(1)
    X = rng.poisson(2.0, size=(4, 5, 3)).astype(float)
    for spec, ranks in (("ir,jr,kr->ijk", {"r": 2}), ("ia,jb,kc,abc->ijk",
                                                     {"a": 2, "b": 2, "c": 2})):
        _, trace = kl_ntf(X, spec, ranks, num_iters=20, rng_key=0)
        assert np.all(np.diff(trace) <= 1e-9) and trace[-1] < trace[0]
    assert float(kl_divergence(X, X)) == 0.0
    with pytest.raises(ValueError, match="ranks"):
        kl_ntf(X, "ir,jr,kr->ijk", {}, num_iters=1)
