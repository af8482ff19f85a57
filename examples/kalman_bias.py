"""A Kalman filter and smoother whose sensors share a persistent, unknown bias, marginalized
exactly (section 6.2 of "Functional Tensors for Probabilistic Programming").

An object moves in 2-d with nearly constant velocity (state: position and velocity). Three
sensors observe its position, each with its own constant bias and white noise. The bias is a
*global* latent variable: it enters every observation, so the chain over time carries it
along (a ``MarkovProduct`` whose steps share the real input ``bias``, not eliminated by the
scan); integrating it out at the end is exact. A model that ignores the bias (treating it as
extra white noise, as a naive filter must) is fitted to the same data for comparison.

Printed: the log likelihood of both models (each checked against a dense Gaussian computation
in numpy), the posterior of the biases against the truth, and the position error of the
smoothed track under both models. Smoothing: the state at time t is the product of the chain
before t and the chain after t (two Markov products), the rest integrated out.

Run: ``python examples/kalman_bias.py`` (part of ``make demo``). Writes
``examples/out/kalman_bias.png`` when matplotlib is installed.
"""

from __future__ import annotations

import math
import os

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct

T, S, DT = 60, 3, 1.0
Q_SCALE, R_SCALE, B_SCALE = 0.05, 0.6, 2.0
F = np.block([[np.eye(2), DT * np.eye(2)], [np.zeros((2, 2)), np.eye(2)]])
Q = Q_SCALE ** 2 * np.block([[DT ** 3 / 3 * np.eye(2), DT ** 2 / 2 * np.eye(2)],
                             [DT ** 2 / 2 * np.eye(2), DT * np.eye(2)]])
H = np.hstack([np.eye(2), np.zeros((2, 2))])
M0, P0 = np.zeros(4), np.diag([1.0, 1.0, 0.1, 0.1])


def simulate(rng):
    bias = B_SCALE * rng.normal(size=(S, 2))
    x = rng.multivariate_normal(M0, P0)
    xs, ys = [], []
    for _ in range(T):
        x = F @ x + rng.multivariate_normal(np.zeros(4), Q)
        xs.append(x)
        ys.append(H @ x + bias + R_SCALE * rng.normal(size=(S, 2)))
    return np.array(xs), np.array(ys), bias


def _chol_inv(c):
    return np.linalg.cholesky(np.linalg.inv(c))


def model(ys, with_bias: bool):
    """The log density of every latent and the data: prior(x_prev), the steps (a Gaussian
    over time, x_prev, x_curr, and bias when modelled) and the bias prior, plus constants."""
    d, e = 4, 2 * S
    lq = _chol_inv(Q)
    dyn_sqrt = np.vstack([-F.T @ lq, lq])  # rows: x_prev, x_curr
    r = R_SCALE ** 2 + (0.0 if with_bias else B_SCALE ** 2)  # naive: bias as white noise
    # Observations of all sensors at once: y_ts = H x + b_s + noise, so the square root has
    # rows for x_curr (H' / sqrt(r) per sensor) and for each bias b_s (I / sqrt(r)).
    obs_x = np.hstack([H.T] * S) / math.sqrt(r)  # (4, 2S)
    obs_b = np.kron(np.eye(S), np.eye(2)) / math.sqrt(r)  # (2S, 2S)
    rows = [np.zeros((d, e)), obs_x] + ([obs_b] if with_bias else [])
    obs_sqrt = np.vstack(rows)
    sqrt = np.hstack([np.vstack([dyn_sqrt] + ([np.zeros((e, d))] if with_bias else [])),
                      obs_sqrt])  # (rows: x_prev, x_curr[, bias]) x (rank d + e)
    white = np.hstack([np.zeros((T, d)), ys.reshape(T, e) / math.sqrt(r)])
    inputs = {"time": fc.Bint[T], "x_prev": fc.Reals[4], "x_curr": fc.Reals[4]}
    if with_bias:
        inputs["bias"] = fc.Reals[S, 2]
    step = fc.Gaussian(white_vec=white, prec_sqrt=np.broadcast_to(sqrt, (T,) + sqrt.shape),
                       inputs=inputs)
    prior = fc.Gaussian(mean=M0, covariance=P0, inputs={"x_prev": fc.Reals[4]})
    const = (-0.5 * T * (d + e) * math.log(2 * math.pi) - 0.5 * T * np.linalg.slogdet(Q)[1]
             - 0.5 * T * e * math.log(r) - 0.5 * d * math.log(2 * math.pi)
             - 0.5 * np.linalg.slogdet(P0)[1])
    extra = [prior]
    if with_bias:
        extra.append(fc.Gaussian(mean=np.zeros(e), covariance=B_SCALE ** 2 * np.eye(e),
                                 inputs={"bias": fc.Reals[S, 2]}))
        const += -0.5 * e * math.log(2 * math.pi) - 0.5 * e * math.log(B_SCALE ** 2)
    return step, extra, const


def log_likelihood(step, extra, const):
    chain = MarkovProduct(ops.logaddexp, ops.add, step, "time", {"x_prev": "x_curr"})
    total = chain
    for f in extra:
        total = total + f
    return float(total.reduce(ops.logaddexp).data) + const


def dense_log_likelihood(ys, with_bias: bool):
    # The oracle: y is jointly Gaussian; its mean and covariance by hand.
    d = 4
    blocks = [[None] * T for _ in range(T)]
    cov_x = [None] * T
    p = P0
    trans_pow = [np.eye(d)]
    for _ in range(T):
        trans_pow.append(F @ trans_pow[-1])
    for t in range(T):  # Cov(x_t, x_u) for u <= t, states x_0 .. x_{T-1}
        p = F @ p @ F.T + Q
        cov_x[t] = p
    for t in range(T):
        for u in range(T):
            c = trans_pow[t - u] @ cov_x[u] if t >= u else (trans_pow[u - t] @ cov_x[t]).T
            blocks[t][u] = H @ c @ H.T
    cy = np.block(blocks).reshape(T, 2, T, 2)  # Cov(H x_t, H x_u): every sensor sees it
    r = R_SCALE ** 2 + (0.0 if with_bias else B_SCALE ** 2)
    e = 2 * S
    full = np.broadcast_to(cy[:, None, :, :, None, :], (T, S, 2, T, S, 2)).reshape(T * e, T * e)
    full = full + r * np.eye(T * e)
    if with_bias:  # the same bias in every observation of a sensor
        full += B_SCALE ** 2 * np.kron(np.ones((T, T)), np.eye(e))
    y = ys.reshape(-1)
    return -0.5 * (y @ np.linalg.solve(full, y) + np.linalg.slogdet(2 * np.pi * full)[1])


def gaussian_mean(g):
    info, prec = np.asarray(g.info_vec), np.asarray(g.precision)
    return np.linalg.solve(prec, info)


def smooth(step, extra):
    """Posterior means of the positions x_t and of the bias (when modelled)."""
    chain = MarkovProduct(ops.logaddexp, ops.add, step, "time", {"x_prev": "x_curr"})
    means = []
    for t in range(T):
        before = step(time=fc.Tensor(np.arange(t + 1), {"time": fc.Bint[t + 1]}, T))
        joint = MarkovProduct(ops.logaddexp, ops.add, before, "time", {"x_prev": "x_curr"})
        joint = joint(x_curr="x_t")
        if t + 1 < T:
            after = step(time=fc.Tensor(np.arange(t + 1, T), {"time": fc.Bint[T - t - 1]}, T))
            rest = MarkovProduct(ops.logaddexp, ops.add, after, "time", {"x_prev": "x_curr"})
            joint = joint + rest(x_prev="x_t")
        for f in extra:
            joint = joint + f
        names = frozenset(joint.inputs) - {"x_t"}
        means.append(gaussian_mean(_gaussian_part(joint.reduce(ops.logaddexp, names)))[:2])
    bias = None
    if "bias" in step.inputs:
        post = chain
        for f in extra:
            post = post + f
        post = post.reduce(ops.logaddexp, {"x_prev", "x_curr"})
        bias = gaussian_mean(_gaussian_part(post)).reshape(S, 2)
    return np.array(means), bias


def _gaussian_part(f):
    # A Gaussian + Tensor sum: the Gaussian term (the constant does not move the mean).
    if isinstance(f, fc.Gaussian):
        return f
    return next(t for t in f.terms if isinstance(t, fc.Gaussian))


def main():
    rng = np.random.default_rng(1)
    xs, ys, bias = simulate(rng)
    print(f"2-d tracking, T = {T} steps, {S} sensors with persistent biases (numpy)")
    results = {}
    for with_bias in (False, True):
        step, extra, const = model(ys, with_bias)
        ll = log_likelihood(step, extra, const)
        expected = dense_log_likelihood(ys, with_bias)
        assert abs(ll - expected) < 1e-6 * abs(expected), (ll, expected)
        means, bias_mean = smooth(step, extra)
        rmse = float(np.sqrt(np.mean(np.sum((means - xs[:, :2]) ** 2, -1))))
        label = "bias marginalized" if with_bias else "bias ignored"
        print(f"  {label:18s} log likelihood {ll:10.3f} (dense numpy: {expected:10.3f}); "
              f"smoothed position RMSE {rmse:.3f}")
        results[with_bias] = means
        if bias_mean is not None:
            print("  posterior bias mean per sensor:", np.round(bias_mean, 2).tolist())
            print("  true bias per sensor:          ", np.round(bias, 2).tolist())
            # A shift shared by every sensor moves the whole track instead: only the prior on
            # the first state pins it, while the differences between sensors are identified.
            print("  relative to their mean: posterior",
                  np.round(bias_mean - bias_mean.mean(0), 2).tolist(), "true",
                  np.round(bias - bias.mean(0), 2).tolist())
    plot(xs, ys, results)


def plot(xs, ys, results):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 5))
    for s in range(S):
        ax.plot(ys[:, s, 0], ys[:, s, 1], ".", ms=3, alpha=0.5, label=f"sensor {s}")
    ax.plot(xs[:, 0], xs[:, 1], "k-", lw=2, label="true track")
    ax.plot(results[False][:, 0], results[False][:, 1], "--", color="C7", label="bias ignored")
    ax.plot(results[True][:, 0], results[True][:, 1], "-", color="C3", label="bias marginalized")
    ax.legend(fontsize=8)
    ax.set_aspect("equal")
    fig.tight_layout()
    path = out_path("kalman_bias.png")
    fig.savefig(path, dpi=100)
    print(f"  plot: {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
