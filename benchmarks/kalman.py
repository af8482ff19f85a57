"""A 2-d tracking Kalman filter (position, velocity; 1-d observations), 200 steps.

Each step conditions the observation factor on y_t, adds the belief, the observation and the
transition, and integrates the current state out (``reduce(ops.logaddexp, "x")``). Compared
with a hand-written numpy Kalman filter and with funsor 0.4.8 (numpy backend) running the same
funsor program, when installed. All three give the same log likelihood (checked).
Run with one thread: ``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/kalman.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from timing import best_us, peer_columns  # noqa: E402

import funsor_core as fc  # noqa: E402

STEPS = 200
DT = 0.1
F = np.array([[1.0, DT], [0.0, 1.0]])
Q = 0.05 * np.array([[DT ** 3 / 3, DT ** 2 / 2], [DT ** 2 / 2, DT]])
H, R = np.array([[1.0, 0.0]]), np.array([[0.2]])


def simulate(rng):
    x, ys = rng.multivariate_normal(np.zeros(2), np.eye(2)), []
    for _ in range(STEPS):
        ys.append(H @ x + rng.normal(scale=np.sqrt(R[0]), size=1))
        x = F @ x + rng.multivariate_normal(np.zeros(2), Q)
    return ys


def hand_written(ys):
    m, p, total = np.zeros(2), np.eye(2), 0.0
    for y in ys:
        s = H @ p @ H.T + R
        r = y - H @ m
        total += -0.5 * (np.log(np.linalg.det(2 * np.pi * s)) + r @ np.linalg.solve(s, r))
        k = p @ H.T @ np.linalg.inv(s)
        m, p = F @ (m + k @ r), F @ ((np.eye(2) - k @ H) @ p) @ F.T + Q
    return total


def funsor_program(lib, ys):
    """The filter as a funsor program; ``lib`` is funsor_core or funsor (same API)."""

    def log_normal(name, cov):
        dim = cov.shape[0]
        inputs = {name: lib.Reals[dim]}
        if lib is fc:
            g = lib.Gaussian(mean=np.zeros(dim), covariance=cov, inputs=inputs)
        else:  # funsor 0.4.8 has no mean/covariance constructor
            prec = np.linalg.inv(cov)
            from collections import OrderedDict

            g = lib.gaussian.Gaussian(info_vec=np.zeros(dim), precision=prec,
                                      inputs=OrderedDict(inputs))
        return g - g.reduce(lib.ops.logaddexp, name)

    x, x_next = lib.Variable("x", lib.Reals[2]), lib.Variable("x_next", lib.Reals[2])
    y = lib.Variable("y", lib.Reals[1])
    trans = log_normal("d", Q)(d=x_next - x @ lib.Tensor(F.T))
    obs = log_normal("e", R)(e=y - x @ lib.Tensor(H.T))

    def run():
        belief = log_normal("x", np.eye(2))
        for y_t in ys:
            belief = (belief + obs(y=lib.Tensor(y_t)) + trans).reduce(lib.ops.logaddexp, "x")
            belief = belief(x_next="x")
        return float(belief.reduce(lib.ops.logaddexp, "x").data)

    return run


def best_ms(fn, number: int = 3) -> float:
    return best_us(fn, number=number, repeat=3) / 1e3


def main() -> dict:
    ys = simulate(np.random.default_rng(0))
    expected = hand_written(ys)
    ours = funsor_program(fc, ys)
    np.testing.assert_allclose(ours(), expected, rtol=1e-9)
    row = {"hand_ms": best_ms(lambda: hand_written(ys)), "ours_ms": best_ms(ours),
           "funsor_ms": None}
    try:
        import funsor
    except ImportError:
        funsor = None
    if funsor is not None:
        funsor.set_backend("numpy")
        theirs = funsor_program(funsor, ys)
        np.testing.assert_allclose(theirs(), expected, rtol=1e-6)
        row["funsor_ms"] = best_ms(theirs, number=1)
    print(f"Kalman filter, 2-d state, {STEPS} steps (numpy, milliseconds per filter)")
    print(f"{'hand-written':>13} {'funsor-core':>12} {'ratio':>6} {'funsor 0.4.8':>13} "
          f"{'ratio':>6}")
    fs = peer_columns(row["funsor_ms"], row["hand_ms"])
    print(f"{row['hand_ms']:13.1f} {row['ours_ms']:12.1f} {row['ours_ms'] / row['hand_ms']:6.1f} "
          f"{fs}")
    return row


if __name__ == "__main__":
    main()
