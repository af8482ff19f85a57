"""``funsor.pyro.hmm.GaussianHMM.log_prob`` on funsor-core, beside pyro's own
``pyro.distributions.GaussianHMM``, a hand-written torch Kalman filter and funsor 0.4.8, in one
run (issue #28, funsor's users' path).

The model: ``z_0 ~ N(m_0, S_0)`` per batch entry, ``z_t = z_t-1 A_t + N(q_t, Q_t)``,
``x_t = z_t C + N(r, R)``; T = 1,000 steps, hidden 2, observed 2, batch 10, torch float32.
Each program computes ``log p(x_1 .. x_T)`` per batch entry from the same distribution
objects (the time to make them is not counted); the values are checked against pyro's first.

funsor 0.4.8 runs in a subprocess of its own python (``FUNSOR_PYTHON``, default the clients'
venv), which times pyro's class again so its ratio compares programs timed in the same window
of a shared machine. One thread; times are the best process CPU time of alternating rounds,
in milliseconds.

Usage: ``python benchmarks/pyro_hmm.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from timing import best_ms  # noqa: E402

FUNSOR_PYTHON = os.environ.get("FUNSOR_PYTHON",
                               "/root/.cache/funsor-core-clients/venv/bin/python")
T, HIDDEN, OBS, BATCH = 1000, 2, 2, 10
ROW = f"GaussianHMM.log_prob T={T} hidden={HIDDEN} obs={OBS} batch={BATCH} torch"


def measure(fn, repeats: int = 7) -> float:
    """Best ms of process CPU time of one ``fn()`` call over ``repeats`` calls
    (``timing.best_ms``; torch runs one thread, so CPU time is the program's own work, which
    the shared machine's load disturbs less than the wall clock)."""
    return best_ms(fn, repeats, time.process_time)


def measure_rounds(programs: dict, rounds: int = 3, repeats: int = 3) -> dict:
    """Best ms of each program over ``rounds`` alternating rounds of ``repeats`` calls: the
    programs take turns, so a change of load hits all of them."""
    times = dict.fromkeys(programs, math.inf)
    for _ in range(rounds):
        for name, fn in programs.items():
            times[name] = min(times[name], measure(fn, repeats))
    return times


def make_args():
    """The distribution objects and the data, the same in every process (a fixed seed)."""
    import pyro.distributions as dist  # funsor 0.4.8 converts pyro's classes only
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    def tensor(*shape, scale=1.0):
        return torch.tensor(rng.normal(size=shape) * scale, dtype=torch.float32)

    def mvn(*batch, dim):
        tril = torch.tril(tensor(*batch, dim, dim, scale=0.3), -1)
        tril = tril + torch.diag_embed(torch.exp(tensor(*batch, dim, scale=0.2)))
        return dist.MultivariateNormal(tensor(*batch, dim), scale_tril=tril)

    args = (mvn(BATCH, dim=HIDDEN), tensor(T, HIDDEN, HIDDEN, scale=0.5), mvn(T, dim=HIDDEN),
            tensor(HIDDEN, OBS), mvn(dim=OBS))
    return args, tensor(BATCH, T, OBS)


def kalman_log_prob(init, trans_mat, trans_noise, obs_mat, obs_noise, value):
    """A hand-written Kalman filter (row vectors): predict, then update with x_t; the
    innovation's density from one Cholesky factor of its covariance per step."""
    import torch

    mean, cov = init.loc, init.covariance_matrix
    q_loc, q_cov = trans_noise.loc, trans_noise.covariance_matrix
    r_loc, r_cov, c = obs_noise.loc, obs_noise.covariance_matrix, obs_mat
    total = value.new_zeros(value.shape[:-2])
    const = 0.5 * c.shape[-1] * math.log(2 * math.pi)
    for t in range(value.shape[-2]):
        a = trans_mat[t]
        mean = mean @ a + q_loc[t]
        cov = a.T @ cov @ a + q_cov[t]
        tril = torch.linalg.cholesky(c.T @ cov @ c + r_cov)
        innovation = value[:, t] - (mean @ c + r_loc)
        white = torch.linalg.solve_triangular(tril, innovation[..., None], upper=False)
        total = total - 0.5 * white.pow(2).sum((-1, -2)) - const
        total = total - tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        gain = torch.cholesky_solve(c.T @ cov, tril)  # S^-1 C' P: (obs, hidden)
        mean = mean + (innovation[:, None, :] @ gain)[:, 0]
        cov = cov - (cov @ c) @ gain
    return total


def pyro_log_prob(args, value):
    import pyro.distributions as dist

    hmm = dist.GaussianHMM(*args)
    return lambda: hmm.log_prob(value)


def funsor_log_prob(module, args, value):
    hmm = module.GaussianHMM(*args)
    return lambda: hmm.log_prob(value)


def peer() -> None:
    """funsor 0.4.8's row (and pyro's, timed again here), printed as JSON."""
    import funsor

    funsor.set_backend("torch")
    import funsor.pyro.hmm as funsor_hmm

    args, value = make_args()
    ours, theirs = funsor_log_prob(funsor_hmm, args, value), pyro_log_prob(args, value)
    times = measure_rounds({"ours": ours, "pyro": theirs})
    print(json.dumps({"ms": times["ours"], "pyro_ms": times["pyro"],
                      "values": ours().tolist()}))


def peer_row() -> dict | None:
    if not os.path.exists(FUNSOR_PYTHON):
        return None
    done = subprocess.run([FUNSOR_PYTHON, os.path.abspath(__file__), "--peer"],
                          capture_output=True, text=True, timeout=1800,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    if done.returncode:
        print("funsor 0.4.8 failed:", done.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    import funsor_core as fc

    fc.set_backend("torch")
    from funsor_core.pyro import hmm as core_hmm

    args, value = make_args()
    old = peer_row()
    programs = {"funsor-core": funsor_log_prob(core_hmm, args, value),
                "pyro GaussianHMM": pyro_log_prob(args, value),
                "hand Kalman loop": lambda: kalman_log_prob(*args, value)}
    expected = programs["pyro GaussianHMM"]().numpy()
    for name, fn in programs.items():
        if not np.allclose(fn().numpy(), expected, rtol=1e-3, atol=1e-2):
            print(f"MISMATCH: {name} vs pyro", file=sys.stderr)
    if old and not np.allclose(old["values"], expected, rtol=1e-3, atol=1e-2):
        print("MISMATCH: funsor 0.4.8 vs pyro", file=sys.stderr)
    times = measure_rounds(programs)
    print(f"{ROW}, one thread, best CPU time of 3 alternating rounds of 3 calls (ms); "
          "ratio = time / pyro's GaussianHMM")
    base = times["pyro GaussianHMM"]
    for name, ms in times.items():
        print(f"  {name:28} {ms:9.2f} {ms / base:6.2f}")
    if old:
        print(f"  {'funsor 0.4.8':28} {old['ms']:9.2f} {old['ms'] / old['pyro_ms']:6.2f}"
              f"  (pyro again in its process: {old['pyro_ms']:.2f} ms)")


if __name__ == "__main__":
    if "--peer" in sys.argv:
        peer()
    else:  # this checkout's funsor_core, not an installed one
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        main()
