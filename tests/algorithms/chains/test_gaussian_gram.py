"""The eager Gaussian chain tree in Gram form (``algorithms.chains.gaussian_gram``).

Oracles: dense Gaussian algebra in float64 numpy (the chain's joint precision over every
state, the inner states integrated by one Schur complement); for ``GaussianHMM.log_prob``, a
hand-written float64 Kalman filter (torch, so that its gradient comes from autograd) and
pyro's own ``pyro.distributions.GaussianHMM``. Each case also checks which route ran: the
Gram tree where its checks pass, the QR path where they must fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.chains import gaussian_gram as gg
from funsor_core.algorithms.chains import gaussian_scan as gs
from funsor_core.algorithms.chains.cost_model import markov_strategy


def _steps(rng, steps, batch, dp, dg, scale=1.0):
    dim = 2 * dp + dg
    s = rng.normal(size=(steps, *batch, dim, dim)) * 0.5 + np.eye(dim) * scale
    return rng.normal(size=(steps, *batch, dim)), s, rng.normal(size=(steps, *batch))


def _dense(w, s, k, dp, dg):
    """``(P, b, c)`` of ``-0.5 x P x + b x + c`` over ``[first prev, glob, last curr]``: every
    step embedded in the joint over all states, the inner ones integrated in closed form."""
    steps, dim = w.shape[0], 2 * dp + dg
    size = dg + dp * (steps + 1)
    prec = np.zeros(w.shape[1:-1] + (size, size))
    info = np.zeros(w.shape[1:-1] + (size,))
    const = np.zeros(w.shape[1:-1])
    for t in range(steps):
        rows = [*range(dg + t * dp, dg + (t + 1) * dp), *range(dg),
                *range(dg + (t + 1) * dp, dg + (t + 2) * dp)]
        ix = np.ix_(rows, rows)
        prec[(...,) + ix] += s[t] @ s[t].swapaxes(-1, -2)
        info[..., rows] += (s[t] @ w[t][..., None])[..., 0]
        const += k[t] - 0.5 * (w[t] ** 2).sum(-1)
    outer = [*range(dg, dg + dp), *range(dg), *range(size - dp, size)]
    inner = [i for i in range(size) if i not in outer]
    p_ii = prec[(...,) + np.ix_(inner, inner)]
    p_oi = prec[(...,) + np.ix_(outer, inner)]
    solved = np.linalg.solve(p_ii, np.concatenate([p_oi.swapaxes(-1, -2),
                                                   info[..., inner, None]], -1))
    p = prec[(...,) + np.ix_(outer, outer)] - p_oi @ solved[..., :-1]
    b = info[..., outer] - (p_oi @ solved[..., -1:])[..., 0]
    c = (const + 0.5 * (info[..., inner] * solved[..., -1]).sum(-1)
         + 0.5 * len(inner) * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(p_ii)[1])
    assert p.shape[-1] == dim
    return p, b, c


def _as_dense(w, s, k):
    w, s, k = (np.asarray(x, np.float64) for x in (w, s, k))
    return s @ s.swapaxes(-1, -2), (s @ w[..., None])[..., 0], k - 0.5 * (w ** 2).sum(-1)


@pytest.mark.parametrize("steps, batch, dp, dg", [(2, (3,), 2, 0), (7, (2, 3), 2, 0),
                                                  (8, (2,), 1, 1), (5, (), 3, 0)])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-10), (np.float32, 2e-5)])
@pytest.mark.parametrize("rounds", ["entries", "matrices"])
def test_gram_tree_matches_dense_algebra(steps, batch, dp, dg, dtype, rtol, rounds,
                                         monkeypatch):
    if rounds == "matrices":  # the route of larger states
        monkeypatch.setattr(gg, "ENTRYWISE_MAX", 0)
    rng = np.random.default_rng(steps + dp)
    w, s, k = _steps(rng, steps, batch, dp, dg)
    expected = _dense(w, s, k, dp, dg)
    out = gg.gram_tree(*(x.astype(dtype) for x in (w, s, k)), dp, dg)
    assert out is not None and {x.dtype for x in out} == {np.dtype(dtype)}
    for actual, want in zip(_as_dense(*out), expected):
        scale = np.abs(want).max()
        np.testing.assert_allclose(actual, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype, weak", [(np.float64, 0.0), (np.float32, 0.0),
                                         (np.float32, 1e-7)])
def test_gram_tree_declines_where_an_inner_state_has_no_information(dtype, weak):
    """State 3 is seen by steps 2 and 3 only, through rows set to zero (or, in float32, to
    a roundoff-sized remainder): the Gram tree declines, and the chain's result is the QR
    path's: the integral diverges, and the error names the inner states."""
    rng = np.random.default_rng(1)
    w, s, k = _steps(rng, 6, (2,), 2, 0)
    s[2, :, 2:, :] *= weak  # step 2's curr rows
    s[3, :, :2, :] *= weak  # step 3's prev rows
    assert gg.gram_tree(*(x.astype(dtype) for x in (w, s, k)), 2, 0) is None
    g = fc.Gaussian(white_vec=w.astype(dtype), prec_sqrt=s.astype(dtype),
                    inputs={"t": fc.Bint[6], "b": fc.Bint[2], "x": fc.Reals[2],
                            "y": fc.Reals[2]})
    with markov_strategy("parallel"), pytest.raises(ValueError, match="diverges"):
        fc.MarkovProduct(fc.ops.logaddexp, fc.ops.add, g, fc.Variable("t", fc.Bint[6]),
                         {"x": "y"})


def test_gram_tree_declines_on_traced_arrays():
    """Under jax tracing nothing is read: it declines, and the compiled kernels run."""
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    w, s, k = _steps(rng, 4, (), 1, 0)
    seen = []

    def traced(w):
        seen.append(gg.gram_tree(w, s, k, 1, 0))
        return w

    jax.make_jaxpr(traced)(w)
    assert seen == [None]


def _jax64():
    jax = pytest.importorskip("jax")
    if not jax.config.jax_enable_x64:
        pytest.skip("the traced Gram tree needs float64 (jax_enable_x64)")
    return jax, jax.numpy


def test_gram_tree_traced_matches_dense_algebra_and_its_gradient():
    """Under jax.jit: the values of the dense oracle (not the fallback's NaN), and the
    gradient of the constant by central differences of it."""
    jax, jnp = _jax64()
    rng = np.random.default_rng(3)
    w, s, k = _steps(rng, 5, (2,), 1, 0)

    def constant(w):  # the density at x = 0: k - 0.5 ||w||^2
        nan = (jnp.full((2, 2), jnp.nan), jnp.full((2, 2, 2), jnp.nan), jnp.full(2, jnp.nan))
        out = gg.gram_tree_traced(w, jnp.asarray(s), jnp.asarray(k), 1, 0, lambda: nan)
        return (out[2] - 0.5 * (out[0] ** 2).sum(-1)).sum(), out

    (value, out), grad = jax.jit(jax.value_and_grad(constant, has_aux=True))(jnp.asarray(w))
    for actual, want in zip(_as_dense(*out), _dense(w, s, k, 1, 0)):
        np.testing.assert_allclose(actual, want, rtol=1e-10, atol=1e-10)
    step, fd = 1e-6, np.zeros_like(w)
    for index in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[index] += step
        down[index] -= step
        fd[index] = (_dense(up, s, k, 1, 0)[2].sum() - _dense(down, s, k, 1, 0)[2].sum()) / (
            2 * step)
    np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-6, atol=1e-7)


def test_gram_tree_traced_takes_the_fallback_where_a_check_fails():
    """An inner state without information: the cond runs the fallback (here a marker), and
    the failed factorization's NaN reaches neither the value nor the gradient."""
    jax, jnp = _jax64()
    rng = np.random.default_rng(4)
    w, s, k = _steps(rng, 4, (), 1, 0)
    s[1, 1:, :] = 0.0  # step 1's curr row
    s[2, :1, :] = 0.0  # step 2's prev row

    def total(w, k):
        out = gg.gram_tree_traced(w, jnp.asarray(s), k, 1, 0,
                                  lambda: (w[0] * 2.0, jnp.asarray(s[0]), k.sum() * 3.0))
        return out[2] + out[0].sum()

    value, (dw, dk) = jax.jit(jax.value_and_grad(total, (0, 1)))(jnp.asarray(w), jnp.asarray(k))
    assert float(value) == pytest.approx(3.0 * k.sum() + 2.0 * w[0].sum())
    np.testing.assert_allclose(np.asarray(dk), np.full(4, 3.0))
    np.testing.assert_allclose(np.asarray(dw), np.concatenate([np.full((1, 2), 2.0),
                                                               np.zeros((3, 2))]))


# -- GaussianHMM.log_prob, the users' path -----------------------------------------------------
torch = pytest.importorskip("torch")


def _hmm_args(hidden, obs, steps, batch, dtype, degenerate):
    gen = torch.Generator().manual_seed(hidden * 10 + obs)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    def mvn(*shape, dim):
        tril = randn(*shape, dim, dim).tril(-1) * 0.3 + torch.diag_embed(
            randn(*shape, dim).mul(0.2).exp())
        return torch.distributions.MultivariateNormal(randn(*shape, dim), scale_tril=tril)

    trans, obs_mat = randn(steps, hidden, hidden) * 0.5, randn(hidden, obs)
    if degenerate == "unobserved":  # a state coordinate no observation sees
        obs_mat[-1, :] = 0.0
    if degenerate == "forgetful":  # z_t[0] ignores z_t-1: the first state's precision from
        trans[..., :, 0] = 0.0  # the chain is singular, and so is the tree's result
    args = (mvn(batch, dim=hidden), trans, mvn(steps, dim=hidden), obs_mat, mvn(dim=obs))
    return args, randn(batch, steps, obs)


def _kalman(init, trans_mat, trans_noise, obs_mat, obs_noise, value):
    """log p(x_1..T) by a Kalman filter (row vectors: z_t = z_t-1 A_t + e_t, x_t = z_t C + f)."""
    mean, cov = init.loc, init.covariance_matrix
    total = value.new_zeros(value.shape[:-2])
    for t in range(value.shape[-2]):
        a = trans_mat[t]
        mean = mean @ a + trans_noise.loc[t]
        cov = a.T @ cov @ a + trans_noise.covariance_matrix[t]
        innov_cov = obs_mat.T @ cov @ obs_mat + obs_noise.covariance_matrix
        innov = value[..., t, :] - (mean @ obs_mat + obs_noise.loc)
        total = total + torch.distributions.MultivariateNormal(
            torch.zeros_like(innov), innov_cov).log_prob(innov)
        gain = torch.linalg.solve(innov_cov, obs_mat.T @ cov)
        mean = mean + (innov[..., None, :] @ gain)[..., 0, :]
        cov = cov - cov @ obs_mat @ gain
    return total


def _cast(args, dtype):
    out = []
    for a in args:
        if isinstance(a, torch.distributions.MultivariateNormal):
            a = torch.distributions.MultivariateNormal(a.loc.to(dtype),
                                                       scale_tril=a.scale_tril.to(dtype))
        else:
            a = a.to(dtype)
        out.append(a)
    return out


@pytest.mark.parametrize("hidden, obs, degenerate", [(2, 2, None), (3, 1, None),
                                                     (3, 2, "unobserved"), (3, 2, "forgetful")])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gaussian_hmm_log_prob_by_the_gram_tree(hidden, obs, degenerate, dtype, monkeypatch,
                                                torch_backend):
    from funsor_core.pyro.hmm import GaussianHMM

    pyro_dist = pytest.importorskip("pyro.distributions")
    routes = []
    original = gs.gram_tree
    monkeypatch.setattr(gs, "gram_tree", lambda *a: routes.append(original(*a)) or routes[-1])
    args, value = _hmm_args(hidden, obs, 9, 2, dtype, degenerate)
    expected = _kalman(*args, value)
    dt = getattr(torch, dtype)
    with markov_strategy("parallel"):  # at T = 9 the cost model would fold sequentially
        actual = GaussianHMM(*_cast(args, dt)).log_prob(value.to(dt))
    # A singular result has no Cholesky factor: the QR path gives it.
    assert routes and (routes[-1] is None) == (degenerate == "forgetful")
    assert actual.dtype == dt
    rtol = 1e-12 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(actual.double().numpy(), expected.numpy(), rtol=rtol)
    theirs = pyro_dist.GaussianHMM(*args).log_prob(value)
    np.testing.assert_allclose(actual.double().numpy(), theirs.numpy(), rtol=max(rtol, 1e-9))


def test_gaussian_hmm_gradient_through_the_gram_tree(monkeypatch, torch_backend):
    from funsor_core.pyro.hmm import GaussianHMM

    routes = []
    original = gs.gram_tree
    monkeypatch.setattr(gs, "gram_tree", lambda *a: routes.append(original(*a)) or routes[-1])
    args, value = _hmm_args(2, 2, 6, 2, "float64", None)
    trans = args[1].clone().requires_grad_()
    with markov_strategy("parallel"):
        GaussianHMM(args[0], trans, *args[2:]).log_prob(value).sum().backward()
    assert routes[-1] is not None
    trans2 = args[1].clone().requires_grad_()
    _kalman(args[0], trans2, *args[2:], value).sum().backward()
    np.testing.assert_allclose(trans.grad.numpy(), trans2.grad.numpy(), rtol=1e-9, atol=1e-11)
