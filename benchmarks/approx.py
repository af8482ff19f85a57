"""Approximate inference: moment-matching SLDS filtering and a Monte Carlo ELBO step.

1. A switching linear dynamical system (K = 3 switch values, 4-d state, 2-d observations,
   T = 1,000 steps) filtered with a window of one switch state (the interacting-multiple-model
   / GPB filter): ``windowed_filter`` under ``moment_matching``, against the same filter
   hand-written with batched array calls over the K x K (previous, next) switch pairs, in
   numpy and torch, and in jax under ``jax.jit`` (a ``lax.scan``; funsor-core's step, built
   from funsor terms, runs inside the same ``lax.scan``; and ``windowed_filter`` itself under
   ``jax.jit``, which runs its repeating steps as its own ``lax.scan``). All give the same log
   likelihood (checked).
2. One Monte Carlo ELBO step (estimate and gradient) of a Bayesian logistic regression (10
   weights, 1,000 data points, 1,000 particles, Gaussian guide): ``Integrate(q, p - q, "w")``
   under ``MonteCarlo`` against the same estimator written by hand (the prior and entropy
   terms in closed form, the likelihood averaged over reparameterized draws), in torch, and
   in jax under ``jax.jit``.

Run with one thread: ``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/approx.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import math  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402
from funsor_core.algorithms.filter.windowed import windowed_filter  # noqa: E402
from funsor_core.atoms.gaussian.algebra import split_gaussian_sum  # noqa: E402
from interpretations import MonteCarlo, moment_matching  # noqa: E402

K, D, OBS, T = 3, 4, 2, 1000


def interleaved(hand, ours, rounds: int, number: int = 1) -> tuple[float, float]:
    """Best-of-``rounds`` microseconds of ``hand`` and ``ours``, measured alternately (so that
    load on a shared machine hits both alike), after a warm-up call of each."""
    hand(), ours()
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, fn in enumerate((hand, ours)):
            best[k] = min(best[k], timeit.timeit(fn, number=number) / number * 1e6)
    return best[0], best[1]
STEP = {"s_prev": "s_curr", "x_prev": "x_curr"}


def slds_params(seed=0):
    rng = np.random.default_rng(seed)
    A = np.stack([np.linalg.qr(rng.normal(size=(D, D)))[0] * s for s in (0.98, 0.9, 0.7)])
    p = {"pi0": np.full(K, 1.0 / K), "trans": np.full((K, K), 0.05) + np.eye(K) * 0.85,
         "A": A, "Q": np.stack([np.eye(D) * q for q in (0.01, 0.05, 0.3)]),
         "C": rng.normal(size=(OBS, D)), "R": np.eye(OBS) * 0.1, "m0": np.zeros(D), "P0": np.eye(D)}
    p["trans"] /= p["trans"].sum(1, keepdims=True)
    s, x, ys = 0, rng.normal(size=D), []
    for t in range(T):
        if t:
            s = rng.choice(K, p=p["trans"][s])
            x = A[s] @ x + rng.multivariate_normal(np.zeros(D), p["Q"][s])
        ys.append(p["C"] @ x + rng.multivariate_normal(np.zeros(OBS), p["R"]))
    p["y"] = np.array(ys)
    return p


# ---------------------------------------------------------------------------------------------
# The IMM / GPB filter by hand: one batched predict-update over the K x K switch pairs and a
# collapse over the previous switch per step. ``xp`` is numpy, torch or jax.numpy.
def imm_step(xp, logdet, p, lw, m, P, y):
    A, Q, C, R = p["A"], p["Q"], p["C"], p["R"]
    mp = xp.einsum("jab,ib->ija", A, m)  # A_j m_i
    Pp = xp.einsum("jab,ibc,jdc->ijad", A, P, A) + Q[None]
    S = xp.einsum("ab,ijbc,dc->ijad", C, Pp, C) + R
    PCt = xp.einsum("ijab,cb->ijac", Pp, C)
    gain = xp.linalg.solve(S, xp.swapaxes(PCt, -1, -2))  # S^{-1} C P
    r = y - xp.einsum("ab,ijb->ija", C, mp)
    Sr = xp.linalg.solve(S, r[..., None])[..., 0]
    ll = -0.5 * ((r * Sr).sum(-1) + logdet(2 * math.pi * S))
    mu = mp + xp.einsum("ijba,ijb->ija", gain, r)
    Pu = Pp - xp.einsum("ijba,ijbc->ijac", gain, xp.einsum("ab,ijbc->ijac", C, Pp))
    lw = lw[:, None] + p["logtrans"] + ll  # (i, j)
    top = getattr(lw, "amax", lw.max)(0)  # torch's max(0) also returns indices
    w = xp.exp(lw - top)
    total = w.sum(0)
    pr = w / total
    m = (pr[..., None] * mu).sum(0)
    diff = mu - m[None]
    P = (pr[..., None, None] * (Pu + diff[..., :, None] * diff[..., None, :])).sum(0)
    return top + xp.log(total), m, P


def imm_init(xp, logdet, p):
    C, R = p["C"], p["R"]
    S = C @ p["P0"] @ C.T + R
    gain = p["P0"] @ C.T @ xp.linalg.inv(S)
    r = p["y"][0] - C @ p["m0"]
    ll = -0.5 * (r @ xp.linalg.solve(S, r) + logdet(2 * math.pi * S))
    m = p["m0"] + gain @ r
    P = p["P0"] - gain @ C @ p["P0"]
    return (xp.log(p["pi0"]) + ll, xp.stack([m] * K), xp.stack([P] * K))


def imm(xp, logdet, p):
    lw, m, P = imm_init(xp, logdet, p)
    for t in range(1, T):
        lw, m, P = imm_step(xp, logdet, p, lw, m, P, p["y"][t])
    top = lw.max()
    return top + xp.log(xp.exp(lw - top).sum())


def numpy_logdet(x):
    return np.linalg.slogdet(x)[1]


# ---------------------------------------------------------------------------------------------
# funsor-core: the SLDS as factors, filtered under moment_matching.
def slds_factors(p, a):
    """init(s, x) and trans(time, s, s', x, x'); ``a`` converts numpy arrays."""
    ri = np.linalg.inv(np.linalg.cholesky(p["R"])).T
    obs_c = -0.5 * np.linalg.slogdet(2 * np.pi * p["R"])[1]

    def obs(y, name, batch):
        n = y.shape[0]
        return fc.Gaussian(white_vec=y @ a(ri), prec_sqrt=a(np.tile(p["C"].T @ ri, (n, 1, 1))),
                           inputs={**batch, name: fc.Reals[D]}) + obs_c

    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in p["Q"]])
    dyn = fc.Gaussian(white_vec=a(np.zeros((K, D))),
                      prec_sqrt=a(np.concatenate([-np.swapaxes(p["A"], -1, -2) @ qi, qi], -2)),
                      inputs={"s_curr": fc.Bint[K], "x_prev": fc.Reals[D], "x_curr": fc.Reals[D]})
    dyn = dyn + fc.Tensor(a(np.array([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1]
                                      for q in p["Q"]])), {"s_curr": fc.Bint[K]})
    switch = fc.Tensor(a(np.log(p["trans"])), {"s_prev": fc.Bint[K], "s_curr": fc.Bint[K]})
    y = a(p["y"])
    trans = switch + dyn + obs(y[1:], "x_curr", {"time": fc.Bint[T - 1]})
    pi = np.linalg.inv(np.linalg.cholesky(p["P0"])).T
    prior = fc.Gaussian(white_vec=a(p["m0"] @ pi), prec_sqrt=a(pi), inputs={"x_prev": fc.Reals[D]})
    prior = prior - 0.5 * np.linalg.slogdet(2 * np.pi * p["P0"])[1]
    init = fc.Tensor(a(np.log(p["pi0"])), {"s_prev": fc.Bint[K]}) + prior
    init = init + obs(y[:1], "x_prev", {"time": fc.Bint[1]})(time=0)
    return init, trans, (switch, dyn, obs)


def funsor_filter(p, a):
    init, trans, _ = slds_factors(p, a)

    def run():
        with moment_matching:
            msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1)
            return msg.reduce(ops.logaddexp).data

    return run


# ---------------------------------------------------------------------------------------------
# jax.jit: the hand-written step and funsor-core's step, each inside one lax.scan.
def jax_filters(p):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # float64, as on numpy and torch
    fc.set_backend("jax")
    pj = {k: jnp.asarray(v) for k, v in p.items()}
    pj["logtrans"] = jnp.log(pj["trans"])

    def jax_logdet(x):
        return jnp.linalg.slogdet(x)[1]

    @jax.jit
    def hand(y):
        q = dict(pj, y=y)
        carry = imm_init(jnp, jax_logdet, q)

        def body(carry, y_t):
            return imm_step(jnp, jax_logdet, q, *carry, y_t), None

        (lw, _, _), _ = jax.lax.scan(body, carry, y[1:])
        return jax.nn.logsumexp(lw)

    init, trans, (switch, dyn, obs) = slds_factors(p, jnp.asarray)

    def funsor_step(msg, y_t):
        factor = switch + dyn + obs(y_t[None], "x_curr", {"time": fc.Bint[1]})(time=0)
        with moment_matching:
            new = (msg + factor).reduce(ops.logaddexp, {"s_prev", "x_prev"})
        return new(s_curr="s_prev", x_curr="x_prev")

    def arrays(msg):  # the carry of the scan: one Gaussian (rank D) and one Tensor
        (g,), (t,) = split_gaussian_sum(msg)
        g = g.align(("s_prev", "x_prev"))
        return g.white_vec, g.prec_sqrt, t.align(("s_prev",)).data

    def funsor_msg(white_vec, prec_sqrt, log_weights):
        g = fc.Gaussian(white_vec=white_vec, prec_sqrt=prec_sqrt,
                        inputs={"s_prev": fc.Bint[K], "x_prev": fc.Reals[D]})
        return g + fc.Tensor(log_weights, {"s_prev": fc.Bint[K]})

    @jax.jit
    def ours(y):
        first = funsor_step(init, y[1])  # the first step makes the carry's structure

        def body(carry, y_t):
            return arrays(funsor_step(funsor_msg(*carry), y_t)), None

        carry, _ = jax.lax.scan(body, arrays(first), y[2:])
        return funsor_msg(*carry).reduce(ops.logaddexp).data

    @jax.jit
    def windowed(y):  # the library's own loop: a lax.scan of the fused steps
        init, trans, _ = slds_factors(dict(p, y=y), jnp.asarray)
        with moment_matching:
            msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1)
            return msg.reduce(ops.logaddexp).data

    y = pj["y"]
    return ((lambda: hand(y).block_until_ready()), (lambda: ours(y).block_until_ready()),
            (lambda: windowed(y).block_until_ready()))


def slds_rows():
    p = slds_params()
    p_np = dict(p, logtrans=np.log(p["trans"]))
    expected = imm(np, numpy_logdet, p_np)
    rows = []
    ours = funsor_filter(p, np.asarray)
    np.testing.assert_allclose(ours(), expected, rtol=1e-8)
    rows.append(("numpy, eager", *interleaved(lambda: imm(np, numpy_logdet, p_np), ours, 5)))
    import torch

    torch.set_default_dtype(torch.float64)
    fc.set_backend("torch")
    pt = {k: torch.as_tensor(v) for k, v in p_np.items()}
    torch_logdet = lambda x: torch.linalg.slogdet(x)[1]  # noqa: E731
    ours = funsor_filter(p, torch.as_tensor)
    np.testing.assert_allclose(float(ours()), expected, rtol=1e-8)
    np.testing.assert_allclose(float(imm(torch, torch_logdet, pt)), expected, rtol=1e-8)
    rows.append(("torch, eager", *interleaved(lambda: imm(torch, torch_logdet, pt), ours, 5)))
    hand, ours, windowed = jax_filters(p)
    np.testing.assert_allclose(float(hand()), expected, rtol=1e-8)
    np.testing.assert_allclose(float(ours()), expected, rtol=1e-8)
    np.testing.assert_allclose(float(windowed()), expected, rtol=1e-8)
    rows.append(("jax, jax.jit", *interleaved(hand, ours, 7, 3)))
    rows.append(("windowed_filter", *interleaved(hand, windowed, 7, 3)))
    fc.set_backend("numpy")
    return rows


# ---------------------------------------------------------------------------------------------
# Monte Carlo ELBO step: Bayesian logistic regression.
W_DIM, N_DATA, PARTICLES = 10, 1000, 1000


def logistic_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N_DATA, W_DIM))
    y = (rng.random(N_DATA) < 1 / (1 + np.exp(-x @ rng.normal(size=W_DIM)))).astype(float)
    return x * (2 * y - 1)[:, None]  # s_n x_n: the likelihood is sum_n log sigmoid(s_n x_n . w)


def funsor_elbo(xs, mean, raw_scale, key, a):
    w = fc.Variable("w", fc.Reals[W_DIM])
    prior = fc.Gaussian(mean=a(np.zeros(W_DIM)), covariance=a(np.eye(W_DIM)),
                        inputs={"w": fc.Reals[W_DIM]})
    prior = prior - prior.log_normalizer
    lik = (fc.Tensor(xs, {"n": fc.Bint[N_DATA]}) @ w).sigmoid().log().reduce(ops.add, "n")
    scale = ops.tril(raw_scale, -1) + ops.diag_embed(ops.log1p(ops.exp(ops.diagonal(raw_scale))))
    q = fc.Gaussian(mean=mean, scale_tril=scale, inputs={"w": fc.Reals[W_DIM]})
    q = q - q.log_normalizer
    with MonteCarlo(rng_key=key, particle=fc.Bint[PARTICLES]):
        elbo = fc.Integrate(q, prior + lik - q, "w")
    return elbo.reduce(ops.mean, "particle").data


def hand_elbo(xp, xs, mean, raw_scale, noise, sigmoid):
    """The same estimator by hand: E_q[log prior] and the entropy in closed form, the
    likelihood averaged over w = mean + L eps, with the same formula log(sigmoid(.)) as the
    funsor program."""
    diag = xp.log1p(xp.exp(xp.diagonal(raw_scale)))
    scale = xp.tril(raw_scale, -1) + xp.diag(diag)
    w = mean + noise @ scale.T
    lik = xp.log(sigmoid(w @ xs.T)).sum(-1).mean()
    prior = -0.5 * ((mean ** 2).sum() + (scale ** 2).sum()) - 0.5 * W_DIM * math.log(2 * math.pi)
    entropy = 0.5 * W_DIM * (1 + math.log(2 * math.pi)) + xp.log(diag).sum()
    return lik + prior + entropy


def elbo_rows():
    import torch

    torch.set_default_dtype(torch.float64)
    xs_np = logistic_data()
    rows = []
    fc.set_backend("torch")
    xs = torch.as_tensor(xs_np)
    mean = torch.zeros(W_DIM, requires_grad=True)
    raw = torch.zeros(W_DIM, W_DIM, requires_grad=True)
    generator = torch.Generator().manual_seed(0)

    def ours():
        value = funsor_elbo(xs, mean, raw, 0, torch.as_tensor)
        torch.autograd.grad(value, (mean, raw))
        return value

    def hand():  # fresh draws every step, as funsor-core's (and a training loop's)
        noise = torch.randn(PARTICLES, W_DIM, generator=generator)
        value = hand_elbo(torch, xs, mean, raw, noise, torch.sigmoid)
        torch.autograd.grad(value, (mean, raw))
        return value

    # The same estimator with different draws: the estimates agree to their noise (~1%).
    a, b = float(ours().detach()), float(hand().detach())
    assert abs(a - b) < 0.02 * abs(b), (a, b)
    rows.append(("torch, eager", *interleaved(hand, ours, 7, 10)))

    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    xs = jnp.asarray(xs_np)
    params = (jnp.zeros(W_DIM), jnp.zeros((W_DIM, W_DIM)))
    ours_jit = jax.jit(jax.value_and_grad(
        lambda prm, key: funsor_elbo(xs, prm[0], prm[1], key, jnp.asarray)))

    def hand_j(prm, key):
        noise = jax.random.normal(key, (PARTICLES, W_DIM))
        return hand_elbo(jnp, xs, prm[0], prm[1], noise, jax.nn.sigmoid)

    hand_jit = jax.jit(jax.value_and_grad(hand_j))
    key = jax.random.PRNGKey(0)
    a, b = float(ours_jit(params, key)[0]), float(hand_jit(params, key)[0])
    assert abs(a - b) < 0.02 * abs(b), (a, b)
    rows.append(("jax, jax.jit", *interleaved(
        lambda: jax.block_until_ready(hand_jit(params, key)),
        lambda: jax.block_until_ready(ours_jit(params, key)), 7, 20)))
    fc.set_backend("numpy")
    return rows


def main():
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 on every backend
    print(f"1. SLDS filtering by moment matching (K = {K}, window 1, T = {T:,}, state {D}, "
          f"obs {OBS}), milliseconds per filter")
    print(f"{'backend':>14} {'hand-written':>13} {'funsor-core':>12} {'ratio':>6}")
    for name, hand, ours in slds_rows():
        print(f"{name:>14} {hand / 1e3:13.2f} {ours / 1e3:12.2f} {ours / hand:6.2f}", flush=True)
    print(f"2. Monte Carlo ELBO step, value and gradient ({PARTICLES:,} particles, "
          f"{W_DIM} weights, {N_DATA:,} points), milliseconds per step")
    print(f"{'backend':>14} {'hand-written':>13} {'funsor-core':>12} {'ratio':>6}")
    for name, hand, ours in elbo_rows():
        print(f"{name:>14} {hand / 1e3:13.2f} {ours / 1e3:12.2f} {ours / hand:6.2f}")


if __name__ == "__main__":
    main()
