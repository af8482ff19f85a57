"""funsor_core.pyro.hmm's Gaussian chains: GaussianHMM, GaussianMRF, SwitchingLinearHMM.

Oracles: pyro's own ``pyro.distributions.GaussianHMM`` / ``GaussianMRF`` (an independent
implementation), and closed-form Gaussian algebra in float64 numpy: the observations of a
linear Gaussian chain are a linear map of independent Gaussians (the first state and every
noise), so their joint is one MVN (scipy's density); an MRF's factors multiply into one joint
precision; a switching chain is a sum over every switch path of such MVNs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

import funsor_core as fc

torch = pytest.importorskip("torch")
pyro_dist = pytest.importorskip("pyro.distributions")
MVN = torch.distributions.MultivariateNormal
H, OBS, T = 2, 2, 3  # hidden dim, observed dim, steps


@pytest.fixture(autouse=True)
def _torch64():
    fc.set_backend("torch")
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(old)
    fc.set_backend("numpy")


def _mvn(batch_shape: tuple, dim: int):
    tril = torch.randn(batch_shape + (dim, dim)).tril(-1) * 0.3
    tril = tril + torch.diag_embed(torch.rand(batch_shape + (dim,)) + 0.5)
    return MVN(torch.randn(batch_shape + (dim,)), scale_tril=tril)


def _np(x):
    return x.detach().numpy()


def _chain_moments(init, trans_mats, trans_noise, obs_mats, obs_noise):
    """Mean and covariance of (x_1 .. x_T, z_T) for z_t = z_t-1 A_t + e_t, x_t = z_t C_t + f_t:
    each is a linear map of w = (z_0, e_1 .. e_T, f_1 .. f_T), whose parts are independent.
    Arguments are lists of (mean, cov) pairs and matrices, one per step, in numpy."""
    parts = [init, *trans_noise, *obs_noise]
    sizes = [len(m) for m, _ in parts]
    offsets = np.cumsum([0, *sizes])
    select = [np.eye(offsets[-1])[offsets[i]:offsets[i + 1]] for i in range(len(parts))]
    mean_w = np.concatenate([m for m, _ in parts])
    cov_w = np.zeros((offsets[-1], offsets[-1]))
    for i, (_, cov) in enumerate(parts):
        cov_w[offsets[i]:offsets[i + 1], offsets[i]:offsets[i + 1]] = cov
    z, rows = select[0], []
    steps = len(trans_mats)
    for t in range(steps):
        z = trans_mats[t].T @ z + select[1 + t]
        rows.append(obs_mats[t].T @ z + select[1 + steps + t])
    lin = np.concatenate([*rows, z])
    return lin @ mean_w, lin @ cov_w @ lin.T


def _chain_log_prob_and_mean(x, *chain):
    """log p(x_1..T) and E[z_T | x], by conditioning the joint MVN."""
    mean, cov = _chain_moments(*chain)
    n = x.size
    xx, zx = cov[:n, :n], cov[n:, :n]
    log_p = multivariate_normal(mean[:n], xx).logpdf(x.reshape(-1))
    return log_p, mean[n:] + zx @ np.linalg.solve(xx, x.reshape(-1) - mean[:n])


def _mvn_np(d, *index):
    return _np(d.loc[index]), _np(d.covariance_matrix[index])


def test_gaussian_hmm_log_prob_vs_pyro_and_joint_mvn():
    from funsor_core.pyro.hmm import GaussianHMM

    init, trans_noise, obs_noise = _mvn((2,), H), _mvn((T,), H), _mvn((), OBS)
    trans_mat, obs_mat = torch.randn(T, H, H) * 0.7, torch.randn(H, OBS)  # obs: homogeneous
    value = torch.randn(2, T, OBS)
    hmm = GaussianHMM(init, trans_mat, trans_noise, obs_mat, obs_noise)
    assert hmm.batch_shape == (2,) and hmm.event_shape == (T, OBS)
    actual = hmm.log_prob(value)
    expected = pyro_dist.GaussianHMM(init, trans_mat, trans_noise, obs_mat, obs_noise)
    np.testing.assert_allclose(_np(actual), _np(expected.log_prob(value)), rtol=1e-10)
    for b in range(2):
        chain = (_mvn_np(init, b), list(_np(trans_mat)),
                 [_mvn_np(trans_noise, t) for t in range(T)], [_np(obs_mat)] * T,
                 [_mvn_np(obs_noise)] * T)
        log_p, _ = _chain_log_prob_and_mean(_np(value[b]), *chain)
        assert abs(actual[b].item() - log_p) < 1e-8
    wide = hmm.expand((3, 2))  # new batch dims broadcast the same numbers
    assert wide.batch_shape == (3, 2)
    np.testing.assert_allclose(_np(wide.log_prob(value)), _np(actual.expand(3, 2)), rtol=1e-12)


def test_gaussian_mrf_log_prob_vs_pyro_and_joint_precision():
    from funsor_core.pyro.hmm import GaussianMRF

    init, trans, obs = _mvn((), H), _mvn((T,), 2 * H), _mvn((T,), H + OBS)
    value = torch.randn(T, OBS)
    actual = GaussianMRF(init, trans, obs).log_prob(value)
    expected = pyro_dist.GaussianMRF(init, trans, obs).log_prob(value)
    np.testing.assert_allclose(_np(actual), _np(expected), rtol=1e-10)
    # y = (z_0 .. z_T, x_1 .. x_T); each factor N(P y; m, S) adds P' S^-1 P to the precision
    # and P' S^-1 m to the information vector; p(x) is a marginal of the normalized joint.
    n = H * (T + 1) + OBS * T
    eye = np.eye(n)
    z = [eye[H * t:H * (t + 1)] for t in range(T + 1)]
    x = [eye[H * (T + 1) + OBS * t:H * (T + 1) + OBS * (t + 1)] for t in range(T)]
    factors = [(z[0], _mvn_np(init))]
    factors += [(np.concatenate([z[t], z[t + 1]]), _mvn_np(trans, t)) for t in range(T)]
    factors += [(np.concatenate([z[t + 1], x[t]]), _mvn_np(obs, t)) for t in range(T)]
    prec, info = np.zeros((n, n)), np.zeros(n)
    for select, (m, s) in factors:
        prec += select.T @ np.linalg.solve(s, select)
        info += select.T @ np.linalg.solve(s, m)
    cov = np.linalg.inv(prec)
    obs_idx = slice(H * (T + 1), n)
    expected = multivariate_normal((cov @ info)[obs_idx], cov[obs_idx, obs_idx])
    assert abs(actual.item() - expected.logpdf(_np(value).reshape(-1))) < 1e-8


def _slhmm_args(k: int):
    def log_norm(x):
        return x - x.logsumexp(-1, keepdim=True)

    return (torch.randn(k), _mvn((k,), H), torch.randn(T, k, k), torch.randn(T, k, H, H) * 0.7,
            _mvn((T, k), H), torch.randn(T, k, H, OBS), _mvn((T, k), OBS)), log_norm


def test_switching_linear_hmm_exact_vs_enumeration_of_switch_paths():
    from funsor_core.pyro.hmm import SwitchingLinearHMM

    k = 2
    args, log_norm = _slhmm_args(k)
    init_logits, init_mvn, trans_logits, trans_mat, trans_mvn, obs_mat, obs_mvn = args
    value = torch.randn(T, OBS)
    slds = SwitchingLinearHMM(*args, exact=True)
    assert slds.batch_shape == () and slds.event_shape == (T, OBS)
    # p(x) = sum over s_0..s_T of p(s) p(x | s); p(x | s) is a linear Gaussian chain.
    log_w, means = {}, {}
    for path in itertools.product(range(k), repeat=T + 1):
        log_s = log_norm(init_logits)[path[0]] + sum(
            log_norm(trans_logits)[t, path[t], path[t + 1]] for t in range(T))
        chain = (_mvn_np(init_mvn, path[0]),
                 [_np(trans_mat[t, path[t + 1]]) for t in range(T)],
                 [_mvn_np(trans_mvn, t, path[t + 1]) for t in range(T)],
                 [_np(obs_mat[t, path[t + 1]]) for t in range(T)],
                 [_mvn_np(obs_mvn, t, path[t + 1]) for t in range(T)])
        log_p, means[path] = _chain_log_prob_and_mean(_np(value), *chain)
        log_w[path] = log_s.item() + log_p
    total = logsumexp(list(log_w.values()))
    assert abs(slds.log_prob(value).item() - total) < 1e-8
    # filter: p(s_T | x) and E[z_T | x, s_T], summed over the paths ending in s_T.
    cat, mvn = slds.filter(value)
    for last in range(k):
        ends = [p for p in log_w if p[-1] == last]
        log_last = logsumexp([log_w[p] for p in ends])
        assert abs(cat.logits[last].item() - (log_last - total)) < 1e-8
        mean = sum(np.exp(log_w[p] - log_last) * means[p] for p in ends)
        np.testing.assert_allclose(_np(mvn.loc[last]), mean, atol=1e-8)


def test_switching_linear_hmm_approx_is_exact_when_classes_share_dynamics():
    from funsor_core.pyro.hmm import GaussianHMM, SwitchingLinearHMM

    k = 2
    (init_logits, _, trans_logits, *_), _ = _slhmm_args(k)
    init_mvn, trans_mvn, obs_mvn = _mvn((), H), _mvn((T, 1), H), _mvn((), OBS)
    trans_mat, obs_mat = torch.randn(T, 1, H, H) * 0.7, torch.randn(H, OBS)
    value = torch.randn(T, OBS)
    slds = SwitchingLinearHMM(init_logits, init_mvn, trans_logits, trans_mat, trans_mvn,
                              obs_mat, obs_mvn)
    trans_noise = MVN(trans_mvn.loc[:, 0], scale_tril=trans_mvn.scale_tril[:, 0])
    hmm = GaussianHMM(init_mvn, trans_mat[:, 0], trans_noise, obs_mat, obs_mvn)
    np.testing.assert_allclose(_np(slds.log_prob(value)), _np(hmm.log_prob(value)), rtol=1e-10)
    # The switch is then independent of x: p(s_T | x) = p(s_0) prod_t p(s_t | s_t-1) (matrix
    # products of probabilities), and each class's state is the Kalman posterior of z_T.
    probs = torch.softmax(init_logits, -1)
    for t in range(T):
        probs = probs @ torch.softmax(trans_logits[t], -1)
    chain = (_mvn_np(init_mvn), list(_np(trans_mat[:, 0])), [_mvn_np(trans_noise, t)
             for t in range(T)], [_np(obs_mat)] * T, [_mvn_np(obs_mvn)] * T)
    _, mean = _chain_log_prob_and_mean(_np(value), *chain)
    cat, mvn = slds.filter(value)
    np.testing.assert_allclose(_np(cat.probs), _np(probs), atol=1e-10)
    np.testing.assert_allclose(_np(mvn.loc), np.stack([mean] * k), atol=1e-8)


def test_bad_inputs_name_the_argument_and_shapes():
    from funsor_core.pyro.hmm import GaussianHMM, SwitchingLinearHMM

    init, noise = _mvn((), H), _mvn((), H)
    obs_mat, obs_noise = torch.randn(H, OBS), _mvn((), OBS)
    with pytest.raises(ValueError, match=r"transition_matrix has shape \(3, 2\)"):
        GaussianHMM(init, torch.randn(3, H), noise, obs_mat, obs_noise)
    with pytest.raises(ValueError, match=r"observation_dist has event_shape \(3,\)"):
        GaussianHMM(init, torch.randn(H, H), noise, obs_mat, _mvn((), 3))
    with pytest.raises(ValueError, match=r"transition_dist.batch_shape \(4,\).*"
                                         r"observation_dist.batch_shape \(5,\)"):
        GaussianHMM(init, torch.randn(H, H), _mvn((4,), H), obs_mat, _mvn((5,), OBS))
    hmm = GaussianHMM(init, torch.randn(T, H, H), noise, obs_mat, obs_noise)
    with pytest.raises(ValueError, match=r"value has 4 steps but .* event_shape is \(3, 2\)"):
        hmm.log_prob(torch.randn(4, OBS))
    (init_logits, *rest), _ = _slhmm_args(2)
    with pytest.raises(ValueError, match=r"transition_logits has shape \(3, 2, 3\)"):
        SwitchingLinearHMM(init_logits, rest[0], torch.randn(T, 2, 3), *rest[2:])
