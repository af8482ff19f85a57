"""A switching linear dynamical system filtered by moment matching, with windows L = 1, 3, 5.

A 2-d latent state follows one of K = 3 linear dynamics (slow rotation, fast rotation,
noisy drift); a Markov chain picks the dynamics at each step; a noisy 2-d observation is
seen. Exact filtering sums over all K^T switch paths. Under ``moment_matching``,
``windowed_filter`` keeps the last L switch states exact and collapses older ones (L = 1 is
the generalized pseudo-Bayes filter GPB2; ``method="imm"`` gives the interacting-multiple-
model filter): O(T K^(L+1)) work.

Printed: the log likelihood of T = 150 synthetic steps for each L, and on a short copy
(T = 8, 3^8 = 6561 paths) the same beside exact enumeration, computed two ways: with a window
of all T states (nothing collapsed) and by a numpy Kalman filter run on every path. The
filtered switch probabilities p(s_t | y_1..t) for L = 1 are plotted against the true
switches in ``examples/out/slds.png`` when matplotlib is installed.

Run: ``make demo`` (or ``python examples/slds.py``).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from interpretations import moment_matching

K, D = 3, 2
STEP = {"s_prev": "s_curr", "x_prev": "x_curr"}


def rotation(angle, scale):
    c, s = np.cos(angle), np.sin(angle)
    return scale * np.array([[c, -s], [s, c]])


PARAMS = {
    "pi0": np.array([0.6, 0.2, 0.2]),
    "trans": np.array([[0.90, 0.05, 0.05], [0.05, 0.90, 0.05], [0.10, 0.10, 0.80]]),
    "A": np.stack([rotation(0.1, 0.99), rotation(0.6, 0.95), np.eye(2) * 0.9]),
    "Q": np.stack([np.eye(2) * 0.01, np.eye(2) * 0.02, np.eye(2) * 0.3]),
    "C": np.eye(2),
    "R": np.eye(2) * 0.05,
    "m0": np.array([1.0, 0.0]),
    "P0": np.eye(2) * 0.1,
}


def simulate(T, seed):
    rng = np.random.default_rng(seed)
    p = PARAMS
    s = rng.choice(K, p=p["pi0"])
    x = rng.multivariate_normal(p["m0"], p["P0"])
    ss, ys = [], []
    for t in range(T):
        if t:
            s = rng.choice(K, p=p["trans"][s])
            x = p["A"][s] @ x + rng.multivariate_normal(np.zeros(D), p["Q"][s])
        ss.append(s)
        ys.append(p["C"] @ x + rng.multivariate_normal(np.zeros(D), p["R"]))
    return np.array(ss), np.array(ys)


def factors(y):
    """init(s, x) and trans(time, s, s', x, x') as funsors, observations included."""
    p, T = PARAMS, len(y)
    ri = np.linalg.inv(np.linalg.cholesky(p["R"])).T  # R^{-1} = ri ri'
    obs_const = -0.5 * np.linalg.slogdet(2 * np.pi * p["R"])[1]

    def obs(times, name):  # log N(y_t; C x, R) as a Gaussian in x
        return fc.Gaussian(white_vec=y[times] @ ri,
                           prec_sqrt=np.broadcast_to(p["C"].T @ ri, (len(times), D, D)),
                           inputs={"time": fc.Bint[len(times)], name: fc.Reals[D]}) + obs_const

    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in p["Q"]])
    dyn = fc.Gaussian(white_vec=np.zeros((K, D)),  # log N(x'; A_s x, Q_s) over (x, x')
                      prec_sqrt=np.concatenate([-np.swapaxes(p["A"], -1, -2) @ qi, qi], -2),
                      inputs={"s_curr": fc.Bint[K], "x_prev": fc.Reals[D],
                              "x_curr": fc.Reals[D]})
    dyn = dyn + fc.Tensor(np.array([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1] for q in p["Q"]]),
                          {"s_curr": fc.Bint[K]})
    switch = fc.Tensor(np.log(p["trans"]), {"s_prev": fc.Bint[K], "s_curr": fc.Bint[K]})
    trans = switch + dyn + obs(np.arange(1, T), "x_curr")
    pi = np.linalg.inv(np.linalg.cholesky(p["P0"])).T
    prior = fc.Gaussian(white_vec=p["m0"] @ pi, prec_sqrt=pi, inputs={"x_prev": fc.Reals[D]})
    prior = prior - 0.5 * np.linalg.slogdet(2 * np.pi * p["P0"])[1]
    init = fc.Tensor(np.log(p["pi0"]), {"s_prev": fc.Bint[K]}) + prior + obs(np.arange(1), "x_prev")
    return init(time=0), trans


def filter_slds(y, window, record=False):
    """log p(y) and (optionally) p(s_t | y_1..t) for t >= 1, by moment matching."""
    init, trans = factors(y)
    probs = []

    def record_step(t, msg):  # the message over (s, x) of step t: sum x out, normalize
        marginal = msg.reduce(ops.logaddexp, "x_curr")
        probs.append(np.exp(marginal.data - marginal.reduce(ops.logaddexp).data))

    with moment_matching:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, window,
                              each_step=record_step if record else None)
        log_lik = float(msg.reduce(ops.logaddexp).data)
    return log_lik, np.array(probs)


def kalman_enumeration(y):
    """log p(y) by a Kalman filter on every switch path (numpy), and the number of paths."""
    p = PARAMS
    totals = []
    for path in itertools.product(range(K), repeat=len(y)):
        m, P, total = p["m0"], p["P0"], np.log(p["pi0"][path[0]])
        for t, s in enumerate(path):
            if t:
                total += np.log(p["trans"][path[t - 1], s])
                m, P = p["A"][s] @ m, p["A"][s] @ P @ p["A"][s].T + p["Q"][s]
            S = p["C"] @ P @ p["C"].T + p["R"]
            gain = P @ p["C"].T @ np.linalg.inv(S)
            r = y[t] - p["C"] @ m
            total += -0.5 * (r @ np.linalg.solve(S, r) + np.linalg.slogdet(2 * np.pi * S)[1])
            m, P = m + gain @ r, P - gain @ p["C"] @ P
        totals.append(total)
    totals = np.array(totals)
    top = totals.max()
    return top + np.log(np.exp(totals - top).sum()), len(totals)


def plot(states, probs):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(8, 3))
    ts = np.arange(1, len(states))
    ax.stackplot(ts, probs.T, labels=[f"p(s_t = {k} | y_1..t)" for k in range(K)], alpha=0.7)
    ax.plot(ts, (states[1:] + 0.5) / K, "k.", ms=3, label="true switch (scaled)")
    ax.set_xlabel("t")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    path = out_path("slds.png")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main():
    print("== switching linear dynamical system, moment-matching filter (K = 3, state 2-d)")
    states, y = simulate(150, seed=0)
    probs = None
    for window in (1, 3, 5):
        start = time.perf_counter()
        log_lik, p = filter_slds(y, window, record=window == 1)
        probs = p if window == 1 else probs
        print(f"T = {len(y)}, window L = {window}: log p(y) = {log_lik:.6f}   "
              f"({time.perf_counter() - start:.2f} s)")
    accuracy = (probs.argmax(1) == states[1:]).mean()
    print(f"L = 1: the most probable filtered switch is the true one at {accuracy:.0%} of steps")

    short = y[:8]
    exact_kf, paths = kalman_enumeration(short)
    print(f"short copy, T = {len(short)} ({paths} switch paths):")
    for window in (1, 3, 5, len(short)):
        log_lik, _ = filter_slds(short, window)
        label = "all states: exact" if window == len(short) else f"window L = {window}"
        print(f"  {label:>18}: log p(y) = {log_lik:.9f}   (minus exact: {log_lik - exact_kf:+.2e})")
    print(f"  {'numpy enumeration':>18}: log p(y) = {exact_kf:.9f}")
    plot(states, probs)


if __name__ == "__main__":
    main()
