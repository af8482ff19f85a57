"""funsor-core demo: one model, several interpretations and backends.

A hidden Markov model with 3 hidden states and 20 observations:
1. exact forward algorithm with named tensors (eager);
2. the same expression recorded under ``lazy`` and evaluated later;
3. checked against brute-force enumeration on a short prefix;
4. gradients with torch autograd, and a ``jax.jit`` function that takes and returns funsors;
5. Gaussians: a 2-d tracking model (Kalman filter) written with affine substitutions, its log
   likelihood and predictive mean checked against a hand-written Kalman filter.

Run: ``make demo``.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

import funsor_core as fc
from funsor_core import ops
from interpretations import lazy

S, T = 3, 20
rng = np.random.default_rng(0)
init = np.log(rng.dirichlet(np.ones(S)))
trans = np.log(rng.dirichlet(np.ones(S), size=S))  # trans[prev, curr]
emit = np.log(rng.dirichlet(np.ones(4), size=S))  # emit[state, obs]
obs = rng.integers(0, 4, size=T)


def hmm_log_likelihood(init, trans, emit, obs, steps):
    """Forward algorithm written with funsors: names do the broadcasting."""
    x = fc.Bint[S]
    alpha = fc.Tensor(init, {"x": x}) + fc.Tensor(emit, {"x": x, "y": fc.Bint[4]})(y=int(obs[0]))
    trans_f = fc.Tensor(trans, {"x": x, "x_next": x})
    emit_f = fc.Tensor(emit, {"x_next": x, "y": fc.Bint[4]})
    for t in range(1, steps):
        alpha = (alpha + trans_f + emit_f(y=int(obs[t]))).reduce(ops.logaddexp, "x")
        alpha = alpha(x_next="x")
    return alpha.reduce(ops.logaddexp, "x")


def brute_force(steps):
    total = -np.inf
    for path in itertools.product(range(S), repeat=steps):
        lp = init[path[0]] + emit[path[0], obs[0]]
        for t in range(1, steps):
            lp += trans[path[t - 1], path[t]] + emit[path[t], obs[t]]
        total = np.logaddexp(total, lp)
    return total


def kalman_demo(steps=200):
    """Kalman filtering with Gaussian funsors; returns (ours, hand-written) log likelihoods."""
    dt = 0.1
    f_mat = np.array([[1.0, dt], [0.0, 1.0]])  # position, velocity
    q_cov = 0.05 * np.array([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
    h_mat, r_cov = np.array([[1.0, 0.0]]), np.array([[0.2]])
    x, ys = rng.multivariate_normal(np.zeros(2), np.eye(2)), []
    for _ in range(steps):
        ys.append(h_mat @ x + rng.normal(scale=np.sqrt(r_cov[0]), size=1))
        x = f_mat @ x + rng.multivariate_normal(np.zeros(2), q_cov)

    def log_normal(name, cov):
        dim = cov.shape[0]
        g = fc.Gaussian(mean=np.zeros(dim), covariance=cov, inputs={name: fc.Reals[dim]})
        return g - g.log_normalizer

    x_cur, x_next = fc.Variable("x", fc.Reals[2]), fc.Variable("x_next", fc.Reals[2])
    y = fc.Variable("y", fc.Reals[1])
    # log N(x_next; F x, Q) and log N(y; H x, R), built by substituting affine expressions.
    trans = log_normal("d", q_cov)(d=x_next - x_cur @ fc.Tensor(f_mat.T))
    obs = log_normal("e", r_cov)(e=y - x_cur @ fc.Tensor(h_mat.T))
    start = time.perf_counter()
    belief = log_normal("x", np.eye(2))
    for y_t in ys:  # condition on y_t, then integrate x out of (x, x_next)
        belief = (belief + obs(y=y_t) + trans).reduce(ops.logaddexp, "x")(x_next="x")
    log_lik = belief.reduce(ops.logaddexp, "x")
    mean = fc.Integrate(belief - log_lik, x_cur, "x")  # predictive mean of the next state
    elapsed = time.perf_counter() - start

    m, p, ref = np.zeros(2), np.eye(2), 0.0
    for y_t in ys:
        s = h_mat @ p @ h_mat.T + r_cov
        r = y_t - h_mat @ m
        ref += -0.5 * (np.log(np.linalg.det(2 * np.pi * s)) + r @ np.linalg.solve(s, r))
        k = p @ h_mat.T @ np.linalg.inv(s)
        m, p = f_mat @ (m + k @ r), f_mat @ ((np.eye(2) - k @ h_mat) @ p) @ f_mat.T + q_cov
    print(f"log p(y_1:{steps}) = {log_lik.item():.8f}   hand-written {ref:.8f}   "
          f"({elapsed * 1e3:.0f} ms)")
    print(f"predictive mean {np.round(mean.data, 6)}   hand-written {np.round(m, 6)}")
    assert abs(log_lik.item() - ref) < 1e-8 * abs(ref)
    assert np.allclose(mean.data, m, atol=1e-8)


def main():
    print("== 1. exact forward algorithm")
    start = time.perf_counter()
    ll = hmm_log_likelihood(init, trans, emit, obs, T)
    print(f"log p(y_1:{T}) = {ll.item():.6f}   ({(time.perf_counter() - start) * 1e3:.1f} ms)")

    print("== 2. lazy: record now, evaluate later")
    with lazy:
        expr = hmm_log_likelihood(init, trans, emit, obs, 5)
    print(f"recorded a {type(expr).__name__} term with inputs {expr.inputs}")
    print(f"reinterpreted under exact: {fc.reinterpret(expr).item():.6f}")

    print("== 3. brute force on the first 6 steps")
    ours, oracle = hmm_log_likelihood(init, trans, emit, obs, 6).item(), brute_force(6)
    print(f"funsor-core {ours:.10f}   enumeration {oracle:.10f}   |diff| {abs(ours - oracle):.1e}")
    assert abs(ours - oracle) < 1e-9

    print("== 4a. torch autograd through the forward algorithm")
    import torch

    fc.set_backend("torch")
    trans_t = torch.tensor(trans, requires_grad=True)
    ll_t = hmm_log_likelihood(torch.tensor(init), trans_t, torch.tensor(emit), obs, T)
    ll_t.data.backward()
    print(f"log p = {ll_t.item():.6f}; d log p / d trans has norm {trans_t.grad.norm():.4f}")

    print("== 4b. jax.jit of a function taking and returning funsors")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    fc.set_backend("jax")

    @jax.jit
    def posterior_first_state(alpha0):
        # alpha0 is a Tensor funsor: it crosses the jit boundary as a pytree.
        return alpha0 - alpha0.reduce(ops.logaddexp, "x")

    alpha0 = fc.Tensor(jnp.asarray(init + emit[:, obs[0]]), {"x": fc.Bint[S]})
    post = posterior_first_state(alpha0)
    print(f"jit returned a {type(post).__name__} with inputs {post.inputs}: "
          f"{np.round(np.exp(np.asarray(post.data)), 4)}")
    fc.set_backend("numpy")

    print("== 5. Gaussians: Kalman filter by affine substitution and marginalization")
    kalman_demo()
    print("demo finished")


if __name__ == "__main__":
    main()
