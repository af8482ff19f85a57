"""Square-root-information Gaussian algebra against dense float64 oracles.

Every oracle is written from the dense form ``f(x) = -0.5 x'Px + i'x - 0.5 w'w`` (``P = S S'``,
``i = S w``) with numpy/scipy inverses, determinants and block (Schur) formulas, never with the
functions under test. The numpy path is tested in depth (batch shape (2, 3), ranks below, at
and above dim); torch and jax are checked against numpy, for gradients (torch gradcheck, jax
check_grads) and under ``jax.jit``.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
import scipy.stats

import backends.numpy  # noqa: F401  (registers the numpy kernels)
from funsor_core import ops
from funsor_core.atoms.gaussian import sqrt_info as gm

BACKENDS = [b for b in ("numpy", "torch", "jax") if importlib.util.find_spec(f"backends.{b}")]
AUTODIFF_BACKENDS = [b for b in BACKENDS if b != "numpy"] or ["numpy"]
BATCH = (2, 3)
LOG_2PI = math.log(2 * math.pi)


# ---------------------------------------------------------------------------------------------
# Random inputs and dense oracles (batched numpy).
def random_system(rng, batch, dim, rank):
    return rng.normal(size=batch + (rank,)), rng.normal(size=batch + (dim, rank))


def random_spd(rng, batch, dim):
    a = rng.normal(size=batch + (dim, dim))
    return a @ np.swapaxes(a, -1, -2) + dim * np.eye(dim)


def dense(w, s):
    """(precision, info_vec, constant) of f(x) = -0.5 x'Px + i'x + constant."""
    return s @ np.swapaxes(s, -1, -2), np.einsum("...ij,...j->...i", s, w), -0.5 * (w * w).sum(-1)


def dense_log_density(w, s, x):
    p, i, c = dense(w, s)
    return -0.5 * np.einsum("...i,...ij,...j->...", x, p, x) + (i * x).sum(-1) + c


def dense_log_normalizer(w, s):
    p, i, c = dense(w, s)
    dim = p.shape[-1]
    quad = np.einsum("...i,...i->...", i, np.linalg.solve(p, i[..., None])[..., 0])
    return 0.5 * dim * LOG_2PI - 0.5 * np.linalg.slogdet(p)[1] + 0.5 * quad + c


def dense_integral(w, s, b, x_a):
    """log ∫ exp f(x_a, x_b) dx_b by the block formula (needs only P_bb invertible)."""
    p, i, c = dense(w, s)
    dim = p.shape[-1]
    a = [k for k in range(dim) if k not in b]
    p_bb, p_ab, p_aa = p[..., b, :][..., b], p[..., a, :][..., b], p[..., a, :][..., a]
    p_bb_inv = np.linalg.inv(p_bb)
    k = p_ab @ p_bb_inv
    p_new = p_aa - k @ np.swapaxes(p_ab, -1, -2)
    i_new = i[..., a] - np.einsum("...ij,...j->...i", k, i[..., b])
    c_new = (c + 0.5 * len(b) * LOG_2PI - 0.5 * np.linalg.slogdet(p_bb)[1]
             + 0.5 * np.einsum("...i,...ij,...j->...", i[..., b], p_bb_inv, i[..., b]))
    return (-0.5 * np.einsum("...i,...ij,...j->...", x_a, p_new, x_a)
            + (i_new * x_a).sum(-1) + c_new)


def dense_moments(w, s):
    p, i, _ = dense(w, s)
    cov = np.linalg.inv(p)
    return np.einsum("...ij,...j->...i", cov, i), cov


def mvn_logpdf(x, m, cov):
    """scipy's logpdf, looped over batch dims."""
    out = np.empty(x.shape[:-1])
    for idx in np.ndindex(out.shape):
        out[idx] = scipy.stats.multivariate_normal.logpdf(x[idx], m[idx], cov[idx])
    return out


def assert_close(actual, expected, rtol=1e-9, atol=1e-9):
    actual = np.asarray(ops.to_numpy(actual)) if not isinstance(actual, float) else actual
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# Backend conversion.
def to_backend(x, backend):
    if backend == "torch":
        import torch

        return torch.tensor(x, dtype=torch.float64)
    if backend == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        return jax.numpy.asarray(x, dtype=jax.numpy.float64)
    return np.asarray(x, dtype=np.float64)


def to_np(x):
    return np.asarray(ops.to_numpy(x))


# ---------------------------------------------------------------------------------------------
# Constructors and conversions.
def test_from_mean_covariance_is_scipy_logpdf_up_to_normalizer():
    rng = np.random.default_rng(0)
    m, cov = rng.normal(size=BATCH + (3,)), random_spd(rng, BATCH, 3)
    x = rng.normal(size=(4,) + BATCH + (3,))
    expected = np.stack([mvn_logpdf(xi, m, cov) for xi in x])
    precision = np.linalg.inv(cov)
    for w, s in [gm.from_mean_covariance(m, cov),
                 gm.from_mean_scale_tril(m, np.linalg.cholesky(cov)),
                 gm.from_mean_precision(m, precision)]:
        assert w.shape == BATCH + (3,) and s.shape == BATCH + (3, 3)
        assert_close(gm.log_density(w, s, x) - gm.log_normalizer(w, s), expected)
        assert_close(gm.log_density(w, s, m), np.zeros(BATCH), atol=1e-12)
        info, prec = gm.to_info(w, s)
        assert_close(prec, precision)
        assert_close(info, np.einsum("...ij,...j->...i", precision, m))


def test_from_info_round_trip_and_constant():
    rng = np.random.default_rng(1)
    info, precision = rng.normal(size=BATCH + (3,)), random_spd(rng, BATCH, 3)
    w, s = gm.from_info(info, precision)
    info2, precision2 = gm.to_info(w, s)
    assert_close(info2, info)
    assert_close(precision2, precision)
    x = rng.normal(size=BATCH + (3,))
    quad = np.einsum("...i,...i->...", info, np.linalg.solve(precision, info[..., None])[..., 0])
    expected = (-0.5 * np.einsum("...i,...ij,...j->...", x, precision, x)
                + (info * x).sum(-1) - 0.5 * quad)
    assert_close(gm.log_density(w, s, x), expected)


def test_constructors_broadcast_batch():
    rng = np.random.default_rng(2)
    w, s = gm.from_mean_covariance(rng.normal(size=(3,)), random_spd(rng, BATCH, 3))
    assert w.shape == BATCH + (3,) and s.shape == BATCH + (3, 3)


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_log_density_matches_dense(rank):
    rng = np.random.default_rng(3)
    w, s = random_system(rng, BATCH, 3, rank)
    x = rng.normal(size=BATCH + (3,))
    assert_close(gm.log_density(w, s, x), dense_log_density(w, s, x))


# ---------------------------------------------------------------------------------------------
# Sums, embeddings, compression.
def test_concat_is_sum():
    rng = np.random.default_rng(4)
    w1, s1 = random_system(rng, BATCH, 3, 2)
    w2, s2 = random_system(rng, (3,), 3, 4)  # broadcasts against BATCH
    w, s = gm.concat(w1, s1, w2, s2)
    assert w.shape == BATCH + (6,) and s.shape == BATCH + (3, 6)
    x = rng.normal(size=BATCH + (3,))
    assert_close(gm.log_density(w, s, x),
                 dense_log_density(w1, s1, x) + dense_log_density(w2, s2, x))
    with pytest.raises(ValueError, match="embed both into one x"):
        gm.concat(w1, s1, w2, s2[..., :2, :])


def test_embed_and_pad_dims():
    rng = np.random.default_rng(5)
    w, s = random_system(rng, BATCH, 2, 3)
    x = rng.normal(size=BATCH + (5,))
    w2, s2 = gm.embed(w, s, [4, 1], 5)  # old x[0] -> new x[4], old x[1] -> new x[1]
    assert s2.shape == BATCH + (5, 3)
    assert_close(gm.log_density(w2, s2, x), dense_log_density(w, s, x[..., [4, 1]]))
    w3, s3 = gm.embed(w, s, [1, 0], 2)  # a permutation
    assert_close(gm.log_density(w3, s3, x[..., :2]), dense_log_density(w, s, x[..., [1, 0]]))
    w4, s4 = gm.pad_dims(w, s, before=1, after=2)
    assert_close(gm.log_density(w4, s4, x), dense_log_density(w, s, x[..., 1:3]))
    with pytest.raises(ValueError, match="distinct ints"):
        gm.embed(w, s, [1, 1], 5)


@pytest.mark.parametrize("rank", [1, 3, 4, 7])
def test_compress_keeps_density(rank):
    rng = np.random.default_rng(6)
    w, s = random_system(rng, BATCH, 3, rank)
    w2, s2, shift = gm.compress(w, s)
    assert s2.shape == BATCH + (3, min(rank, 3)) and shift.shape == BATCH
    x = rng.normal(size=(5,) + BATCH + (3,))
    assert_close(gm.log_density(w2, s2, x) + shift, dense_log_density(w, s, x))
    if rank > 3:  # lower triangular, and the shift is f at its maximum
        assert_close(np.triu(s2, 1), np.zeros_like(s2), atol=0)
        m, _ = dense_moments(w, s)
        assert_close(shift, dense_log_density(w, s, m))


def test_compress_consistent_system():
    # Two densities with the same mean: white_vec lies in the span, the shift is exactly 0.
    rng = np.random.default_rng(7)
    m = rng.normal(size=BATCH + (3,))
    w1, s1 = gm.from_mean_covariance(m, random_spd(rng, BATCH, 3))
    w2, s2 = gm.from_mean_covariance(m, random_spd(rng, BATCH, 3))
    w, s, shift = gm.compress(*gm.concat(w1, s1, w2, s2))
    assert_close(shift, np.zeros(BATCH), atol=1e-12)
    assert_close(gm.mean(w, s), m)


# ---------------------------------------------------------------------------------------------
# Conditioning.
def test_condition_is_substitution_and_schur_complement():
    rng = np.random.default_rng(8)
    m, cov = rng.normal(size=BATCH + (4,)), random_spd(rng, BATCH, 4)
    w, s = gm.from_mean_covariance(m, cov)
    b, a = [3, 1], [0, 2]
    value = rng.normal(size=BATCH + (2,))
    w_a, s_a = gm.condition(w, s, b, value)
    assert s_a.shape == BATCH + (2, 4)
    x = np.zeros(BATCH + (4,))
    x[..., a] = rng.normal(size=BATCH + (2,))
    x[..., b] = value
    assert_close(gm.log_density(w_a, s_a, x[..., a]), dense_log_density(w, s, x))
    # Schur complement: conditional mean and covariance of x_a given x_b.
    c_ab, c_bb = cov[..., a, :][..., b], cov[..., b, :][..., b]
    gain = c_ab @ np.linalg.inv(c_bb)
    cond_mean = m[..., a] + np.einsum("...ij,...j->...i", gain, value - m[..., b])
    cond_cov = cov[..., a, :][..., a] - gain @ np.swapaxes(c_ab, -1, -2)
    assert_close(gm.mean(w_a, s_a), cond_mean)
    assert_close(gm.covariance(s_a), cond_cov)


def test_condition_broadcasts_value_and_checks_shape():
    rng = np.random.default_rng(9)
    w, s = random_system(rng, (), 3, 2)
    value = rng.normal(size=BATCH + (1,))
    w_a, s_a = gm.condition(w, s, [0], value)
    assert w_a.shape == BATCH + (2,) and s_a.shape == BATCH + (2, 2)
    x = np.concatenate([value, rng.normal(size=BATCH + (2,))], -1)
    assert_close(gm.log_density(w_a, s_a, x[..., 1:]), dense_log_density(w, s, x))
    with pytest.raises(ValueError, match="value_b must end in"):
        gm.condition(w, s, [0, 1], value)


# ---------------------------------------------------------------------------------------------
# Marginalization and normalization.
@pytest.mark.parametrize("rank", [4, 5, 9])
@pytest.mark.parametrize("b", [[2], [3, 0], [1, 2, 3], [0, 1, 2, 3]])
def test_marginalize_full_rank(rank, b):
    rng = np.random.default_rng(10)
    w, s = random_system(rng, BATCH, 4, rank)
    a = [k for k in range(4) if k not in b]
    w_a, s_a, c = gm.marginalize(w, s, b)
    assert s_a.shape == BATCH + (len(a), len(a)) and c.shape == BATCH
    x_a = rng.normal(size=BATCH + (len(a),))
    assert_close(gm.log_density(w_a, s_a, x_a) + c, dense_integral(w, s, b, x_a))
    # The marginal of a normalized Gaussian is the sub-block of its mean and covariance.
    log_z = dense_log_normalizer(w, s)
    if a:
        m, cov = dense_moments(w, s)
        expected = mvn_logpdf(x_a, m[..., a], cov[..., a, :][..., a])
        assert_close(gm.log_density(w_a, s_a, x_a) + c - log_z, expected)
        assert_close(gm.mean(w_a, s_a), m[..., a])
        assert_close(gm.covariance(s_a), cov[..., a, :][..., a])
    assert_close(gm.log_normalizer(w_a, s_a) + c, log_z)


@pytest.mark.parametrize("dim, rank, b", [
    (4, 3, [3, 1]), (4, 2, [0, 2]), (5, 3, [4]), (4, 2, [1]), (3, 1, [2]), (4, 3, [0, 1, 2]),
])
def test_marginalize_rank_deficient(dim, rank, b):
    # A joint of rank < dim (e.g. a conditional density): the block integral stays finite.
    rng = np.random.default_rng(11)
    w, s = random_system(rng, BATCH, dim, rank)
    w_a, s_a, c = gm.marginalize(w, s, b)
    d_a = dim - len(b)
    assert s_a.shape == BATCH + (d_a, min(rank - len(b), d_a))
    x_a = rng.normal(size=(3,) + BATCH + (d_a,))
    assert_close(gm.log_density(w_a, s_a, x_a) + c, dense_integral(w, s, b, x_a))


def test_marginalize_conditional_integrates_to_one():
    # p(y | x) = N(y; A x + m, L L') seen as a joint over (x, y): integrating y gives 0.
    rng = np.random.default_rng(12)
    a_mat, m = rng.normal(size=BATCH + (2, 3)), rng.normal(size=BATCH + (2,))
    scale = np.linalg.cholesky(random_spd(rng, BATCH, 2))
    w_y, s_y = gm.from_mean_scale_tril(m, scale)
    s = np.concatenate([-np.swapaxes(a_mat, -1, -2) @ s_y, s_y], -2)  # rows: x (3), y (2)
    w_x, s_x, c = gm.marginalize(w_y, s, [3, 4])
    assert s_x.shape == BATCH + (3, 0)
    log_det = np.log(np.abs(np.diagonal(scale, axis1=-2, axis2=-1))).sum(-1)
    assert_close(c - LOG_2PI - log_det, np.zeros(BATCH), atol=1e-12)


def test_marginalize_too_little_information_is_infinite():
    rng = np.random.default_rng(13)
    w, s = random_system(rng, BATCH, 4, 2)
    _, s_a, c = gm.marginalize(w, s, [0, 1, 2])  # rank 2 < 3 coordinates: decided by shapes
    assert np.all(c == np.inf) and s_a.shape == BATCH + (1, 0)
    assert np.all(gm.log_normalizer(w, s) == np.inf)
    for rank in (2, 6):
        w, s = random_system(rng, BATCH, 4, rank)
        s[..., 1, :] = 0.0  # x[1] has no information at all
        with np.errstate(divide="ignore"):
            assert np.all(gm.marginalize(w, s, [0, 1])[2] == np.inf)


def test_check_full_rank_messages():
    rng = np.random.default_rng(14)
    _, s = random_system(rng, BATCH, 4, 5)
    gm.check_full_rank(s, [0, 1, 2, 3])  # full rank: no error
    s[1, 2, 2, :] = 0.0
    with pytest.raises(ValueError, match=r"cannot marginalize x: its precision block has rank "
                                         r"2 < 3; .* at batch index \(1, 2\)\. .*: x\[2\]\."):
        gm.check_full_rank(s, [0, 2, 3])
    gm.check_full_rank(s, [0, 1, 3])
    s[0, 0, 3, :] = 2 * s[0, 0, 0, :]  # x[3] carries the same information as x[0]
    with pytest.raises(ValueError, match=r"rank 1 < 2; .* information: pos\[1\]"):
        gm.check_full_rank(s, [0, 3], names="pos")
    with pytest.raises(ValueError, match=r"cannot marginalize u, v: .*rank 2 < 3.*: v\[1\]"):
        gm.check_full_rank(s[..., :2], [0, 1, 3], names=["u[0]", "v[0]", "v[1]"])


def test_log_normalizer_matches_dense_and_scipy():
    rng = np.random.default_rng(15)
    for rank in (3, 6):
        w, s = random_system(rng, BATCH, 3, rank)
        log_z = gm.log_normalizer(w, s)
        assert log_z.shape == BATCH
        assert_close(log_z, dense_log_normalizer(w, s))
        m, cov = dense_moments(w, s)
        x = rng.normal(size=BATCH + (3,))
        assert_close(gm.log_density(w, s, x) - log_z, mvn_logpdf(x, m, cov))


# ---------------------------------------------------------------------------------------------
# Moments, samples, expectations.
def test_mean_covariance_match_dense():
    rng = np.random.default_rng(16)
    for rank in (3, 5):
        w, s = random_system(rng, BATCH, 3, rank)
        m, cov = dense_moments(w, s)
        assert_close(gm.mean(w, s), m)
        assert_close(gm.covariance(s), cov)
    with pytest.raises(ValueError, match="a mean needs a full-rank precision"):
        gm.mean(*random_system(rng, BATCH, 3, 2))


def test_sample_moments():
    rng = np.random.default_rng(17)
    n = 100_000
    w, s = random_system(rng, (2,), 3, 4)
    m, cov = dense_moments(w, s)
    x = gm.sample(w, s, rng.normal(size=(n, 2, 3)))
    assert x.shape == (n, 2, 3)
    se_mean = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1) / n)
    assert np.all(np.abs(x.mean(0) - m) < 3 * se_mean)
    var = np.diagonal(cov, axis1=-2, axis2=-1)
    se_cov = np.sqrt((var[..., :, None] * var[..., None, :] + cov ** 2) / n)
    sample_cov = np.einsum("n...i,n...j->...ij", x - m, x - m) / n
    assert np.all(np.abs(sample_cov - cov) < 3 * se_cov)


@pytest.mark.parametrize("rank_p", [1, 3, 5])
def test_expected_log_density(rank_p):
    rng = np.random.default_rng(18)
    w_q, s_q = random_system(rng, BATCH, 3, 4)
    w_p, s_p = random_system(rng, BATCH, 3, rank_p)
    m, cov = dense_moments(w_q, s_q)
    p, i, c = dense(w_p, s_p)
    expected = (-0.5 * (np.einsum("...ij,...ji->...", p, cov)
                        + np.einsum("...i,...ij,...j->...", m, p, m)) + (i * m).sum(-1) + c)
    assert_close(gm.expected_log_density(w_q, s_q, w_p, s_p), expected)


def test_kl_divergence_textbook():
    rng = np.random.default_rng(19)
    w_q, s_q = random_system(rng, BATCH, 3, 3)
    w_p, s_p = random_system(rng, BATCH, 3, 5)
    m_q, c_q = dense_moments(w_q, s_q)
    m_p, c_p = dense_moments(w_p, s_p)
    p_p = np.linalg.inv(c_p)
    d = m_p - m_q
    expected = 0.5 * (np.einsum("...ij,...ji->...", p_p, c_q)
                      + np.einsum("...i,...ij,...j->...", d, p_p, d) - 3
                      + np.linalg.slogdet(c_p)[1] - np.linalg.slogdet(c_q)[1])
    assert_close(gm.kl_divergence(w_q, s_q, w_p, s_p), expected)
    assert_close(gm.kl_divergence(w_q, s_q, w_q, s_q), np.zeros(BATCH), atol=1e-10)
    # p of rank 2 < 3 cannot be normalized: KL is +inf, not a wrong finite number.
    assert np.all(gm.kl_divergence(w_q, s_q, *random_system(rng, BATCH, 3, 2)) == np.inf)


# ---------------------------------------------------------------------------------------------
# A Kalman filter as repeated concat + marginalize + condition + compress.
def kalman_log_likelihood_gm(a_mat, q_tril, h_mat, r_tril, m0, c0, ys):
    dx, dy = a_mat.shape[0], h_mat.shape[0]
    # p(x' | x) and p(y | x) as rank-deficient joints over (x, x') and (x, y).
    w_t, s_t = gm.from_mean_scale_tril(np.zeros(dx), q_tril)
    s_trans = np.concatenate([-a_mat.T @ s_t, s_t], 0)
    trans_const = -0.5 * dx * LOG_2PI - np.log(np.abs(np.diag(q_tril))).sum()
    w_o, s_o = gm.from_mean_scale_tril(np.zeros(dy), r_tril)
    s_obs = np.concatenate([-h_mat.T @ s_o, s_o], 0)
    obs_const = -0.5 * dy * LOG_2PI - np.log(np.abs(np.diag(r_tril))).sum()
    w, s = gm.from_mean_covariance(m0, c0)
    total = -gm.log_normalizer(w, s)
    max_rank = 0
    for t, y in enumerate(ys):
        if t:  # predict: x_t -> x_{t+1}
            w, s = gm.concat(*gm.embed(w, s, range(dx), 2 * dx), w_t, s_trans)
            w, s, c = gm.marginalize(w, s, range(dx))
            total = total + c + trans_const
        w_y, s_y = gm.condition(w_o, s_obs, range(dx, dx + dy), y)
        w, s, shift = gm.compress(*gm.concat(w, s, w_y, s_y))
        total = total + shift + obs_const
        max_rank = max(max_rank, s.shape[-1])
    return total + gm.log_normalizer(w, s), max_rank


def kalman_log_likelihood_dense(a_mat, q_tril, h_mat, r_tril, m0, c0, ys):
    q, r = q_tril @ q_tril.T, r_tril @ r_tril.T
    m, c, total = m0, c0, 0.0
    for t, y in enumerate(ys):
        if t:
            m, c = a_mat @ m, a_mat @ c @ a_mat.T + q
        s = h_mat @ c @ h_mat.T + r
        total += scipy.stats.multivariate_normal.logpdf(y, h_mat @ m, s)
        gain = c @ h_mat.T @ np.linalg.inv(s)
        m, c = m + gain @ (y - h_mat @ m), c - gain @ s @ gain.T
    return total


def test_kalman_chain_matches_dense_filter():
    rng = np.random.default_rng(20)
    dx, dy, steps = 2, 3, 2000  # 10^4 steps agree as well (about 1 s more)
    theta = 0.1
    a_mat = 0.99 * np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    q_tril = np.linalg.cholesky(0.1 * random_spd(rng, (), dx))
    h_mat = rng.normal(size=(dy, dx))
    r_tril = np.linalg.cholesky(0.5 * random_spd(rng, (), dy))
    x, ys = rng.normal(size=dx), []
    for _ in range(steps):
        x = a_mat @ x + q_tril @ rng.normal(size=dx)
        ys.append(h_mat @ x + r_tril @ rng.normal(size=dy))
    args = (a_mat, q_tril, h_mat, r_tril, np.zeros(dx), np.eye(dx), np.array(ys))
    actual, max_rank = kalman_log_likelihood_gm(*args)
    assert max_rank <= dx
    expected = kalman_log_likelihood_dense(*args)
    assert np.isfinite(actual)
    assert abs(actual - expected) < 1e-9 * abs(expected)


# ---------------------------------------------------------------------------------------------
# Other backends: same numbers as numpy, gradients, jit.
def _cases():
    rng = np.random.default_rng(21)
    w_q, s_q = random_system(rng, BATCH, 3, 4)
    return {
        "full": random_system(rng, BATCH, 4, 6),
        "square": random_system(rng, BATCH, 4, 4),
        "deficient": random_system(rng, BATCH, 4, 3),
        "q": (w_q, s_q),
        "p": random_system(rng, BATCH, 3, 5),
        "p_deficient": random_system(rng, BATCH, 3, 2),
        "noise": rng.normal(size=(5,) + BATCH + (3,)),
        "value": rng.normal(size=BATCH + (2,)),
    }


def _compute_all(cases):
    out = {}
    for key in ("full", "square", "deficient"):
        w, s = cases[key]
        out[key + "_marg"] = gm.marginalize(w, s, [3, 1])
        out[key + "_cond"] = gm.condition(w, s, [0, 2], cases["value"])
        out[key + "_compress"] = gm.compress(w, s)
        out[key + "_info"] = gm.to_info(w, s)
    w, s = cases["full"]
    out["log_z"] = gm.log_normalizer(w, s)
    out["mean"], out["cov"] = gm.mean(w, s), gm.covariance(s)
    w_q, s_q = cases["q"]
    out["sample"] = gm.sample(w_q, s_q, cases["noise"])
    for key in ("p", "p_deficient"):
        w_p, s_p = cases[key]
        out[key + "_kl"] = gm.kl_divergence(w_q, s_q, w_p, s_p)  # +inf for p_deficient
        out[key + "_eld"] = gm.expected_log_density(w_q, s_q, w_p, s_p)
    return out


def _convert(value, backend):
    if isinstance(value, tuple):
        return tuple(to_backend(v, backend) for v in value)
    return to_backend(value, backend)


def _flatten(value):
    if isinstance(value, tuple):
        return [y for v in value for y in _flatten(v)]
    return [to_np(value)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_agrees_with_numpy(backend):
    cases = _cases()
    expected = _compute_all(cases)
    converted = {k: _convert(v, backend) for k, v in cases.items()}
    if backend == "jax":  # under jit: one compilation instead of one per eager op and shape
        import jax

        actual = jax.jit(_compute_all)(converted)
    else:
        actual = _compute_all(converted)
    for key, value in expected.items():
        exp, act = _flatten(value), _flatten(actual[key])
        assert len(exp) == len(act), key
        for e, a in zip(exp, act):
            # Triangular factors have a nonnegative diagonal, so even they are unique.
            assert a.shape == e.shape and a.dtype == np.float64, key
            np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-9, err_msg=key)


def _marginal_density_fn(b, x_a):
    def fn(w, s):
        w_a, s_a, c = gm.marginalize(w, s, b)
        return ops.add(gm.log_density(w_a, s_a, x_a), c)

    return fn


GRAD_CASES = [  # (dim, rank, b, zero_white_vec)
    (3, 5, [0, 1, 2], False),  # log_normalizer, rank > dim
    (3, 5, [0, 1, 2], True),  # consistent system: white_vec = 0
    (3, 3, [0, 1, 2], False),  # log_normalizer, rank == dim
    (4, 6, [2, 0], False),  # marginalize, QR path
    (4, 3, [1, 3], False),  # marginalize, rank < dim: Householder path
]


@pytest.mark.parametrize("backend", AUTODIFF_BACKENDS)
@pytest.mark.parametrize("dim, rank, b, zero_w", GRAD_CASES)
def test_gradients(backend, dim, rank, b, zero_w):
    rng = np.random.default_rng(23)
    w, s = random_system(rng, (2,), dim, rank)
    if zero_w:
        w = np.zeros_like(w)
    x_a = rng.normal(size=(2, dim - len(b)))
    fn = _marginal_density_fn(b, to_backend(x_a, backend))
    if backend == "torch":
        import torch

        args = tuple(to_backend(v, "torch").requires_grad_() for v in (w, s))
        assert torch.autograd.gradcheck(fn, args)
        if len(b) == dim:
            assert torch.autograd.gradcheck(gm.log_normalizer, args)
    elif backend == "jax":
        import jax
        from jax.test_util import check_grads

        args = (to_backend(w, "jax"), to_backend(s, "jax"))
        check_grads(jax.jit(fn), args, order=1, modes=["rev"])
    else:  # numpy: no autodiff; check the function is smooth by central differences
        h, base = 1e-6, fn(w, s)
        ds = rng.normal(size=s.shape)
        slope = (fn(w, s + h * ds) - fn(w, s - h * ds)) / (2 * h)
        assert np.all(np.isfinite(slope)) and np.all(np.isfinite(base))


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b == "jax"] or BACKENDS[:1])
def test_jit_marginalize_equals_eager(backend):
    # Eager jax compiles every op for every new shape, so the cases are few and small.
    cases = _cases()
    for key, b in (("full", [3, 1]), ("deficient", [2])):
        w, s = (to_backend(v, backend) for v in cases[key])
        eager = gm.marginalize(w, s, b)
        if backend == "jax":
            import jax

            jitted = jax.jit(lambda w, s, b=b: gm.marginalize(w, s, b))(w, s)
        else:
            jitted = gm.marginalize(w, s, tuple(b))
        for e, j in zip(eager, jitted):
            np.testing.assert_allclose(to_np(j), to_np(e), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("v_shape,m_shape", [
    ((5, 3), (3, 2)),          # one matrix for a batch of vectors
    ((5, 3), (1, 3, 2)),       # the same, the matrix with a size-1 batch dim
    ((3,), (1, 1, 3, 2)),      # more matrix batch dims than vector ones
    ((4, 5, 3), (1, 1, 3, 2)),
    ((4, 5, 3), (5, 3, 2)),    # a matrix per vector: the batched path
    ((1, 3), (6, 3, 2)),
])
@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_vm_equals_einsum(v_shape, m_shape, backend_name):
    # Oracle: numpy's einsum over the broadcast batch.
    from funsor_core.atoms.gaussian import linalg as la
    from funsor_core.engine.backend import backend_module

    rng = np.random.default_rng(0)
    v, m = rng.normal(size=v_shape), rng.normal(size=m_shape)
    expected = np.einsum("...i,...ij->...j", v, m)
    a = backend_module(backend_name).asarray
    out = ops.to_numpy(la.vm(a(v), a(m)))
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-12)
