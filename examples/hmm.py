"""A discrete hidden Markov model: log likelihood, posterior marginals and the Viterbi path.

Synthetic data: 3 hidden regimes with sticky transitions emit Gaussian observations around
-2, 0 and 2. The chain is a ``MarkovProduct`` built lazily from a shared transition matrix
and the per-step observation log likelihoods; contracting it with the initial distribution
and summing every state evaluates it as a filter (``exact`` picks the strategy: printed).
Posterior marginals and the most probable path come from the derivative of the chain's total
(``markov_marginals``, ``markov_map``: torch autograd). Every number is checked against a
forward-backward / Viterbi recursion written here in numpy.

Run: ``python examples/hmm.py`` (part of ``make demo``). Writes ``examples/out/hmm.png`` when
matplotlib is installed (``pip install -e ".[demo]"``).
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import recorded_choices
from funsor_core.sum_product import MarkovProduct, markov_map, markov_marginals
from interpretations import lazy

K, T = 3, 300
MEANS, SCALE = np.array([-2.0, 0.0, 2.0]), 0.9


def simulate(rng):
    trans = np.full((K, K), 0.05 / (K - 1)) + np.eye(K) * 0.95 - np.eye(K) * 0.05 / (K - 1)
    states, x = [], rng.integers(K)
    for _ in range(T):
        x = rng.choice(K, p=trans[x])
        states.append(x)
    states = np.array(states)
    obs = MEANS[states] + SCALE * rng.normal(size=T)
    return trans, states, obs


def numpy_forward_backward(init, log_a, log_o):
    alpha = np.empty((T + 1, K))
    alpha[0] = init
    for t in range(T):
        alpha[t + 1] = np.logaddexp.reduce(alpha[t][:, None] + log_a, axis=0) + log_o[t]
    beta = np.zeros((T + 1, K))
    for t in range(T - 1, -1, -1):
        beta[t] = np.logaddexp.reduce(log_a + (log_o[t] + beta[t + 1])[None], axis=1)
    log_z = np.logaddexp.reduce(alpha[-1])
    return log_z, np.exp(alpha[1:] + beta[1:] - log_z)  # p(x_t | y) for t = 0 .. T-1


def numpy_viterbi(init, log_a, log_o):
    delta, back = init.copy(), []
    for t in range(T):
        cand = delta[:, None] + log_a + log_o[t][None]
        back.append(cand.argmax(0))
        delta = cand.max(0)
    path = [int(delta.argmax())]
    for t in range(T - 1, 0, -1):
        path.append(int(back[t][path[-1]]))
    return path[::-1]  # x_0 .. x_{T-1}


def main():
    rng = np.random.default_rng(0)
    trans, states, obs = simulate(rng)
    log_init = np.full(K, -np.log(K))
    log_a = np.log(trans)
    log_o = -0.5 * ((obs[:, None] - MEANS) / SCALE) ** 2 - np.log(SCALE * np.sqrt(2 * np.pi))

    fc.set_backend("torch")
    init = fc.Tensor(torch.tensor(log_init), {"x_prev": fc.Bint[K]})
    a = fc.Tensor(torch.tensor(log_a), {"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})
    o = fc.Tensor(torch.tensor(log_o), {"time": fc.Bint[T], "x_curr": fc.Bint[K]})
    with lazy:  # the chain's factors stay apart: a shared matrix, a vector per step
        step = a + o
        chain = MarkovProduct(ops.logaddexp, ops.add, step, "time", {"x_prev": "x_curr"})
    t0 = time.perf_counter()
    with recorded_choices() as choices:
        log_z = (init + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
    elapsed = time.perf_counter() - t0
    chose = choices[0]
    total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "time", {"x_prev": "x_curr"},
                                    [init])
    best, path = markov_map(step, "time", {"x_prev": "x_curr"}, [init])
    fc.set_backend("numpy")

    # Posterior of the state after each step: the pair marginals summed over the prev state.
    marginals = pairs.reduce(ops.add, "x_prev").align(("time", "x_curr")).data.numpy()
    viterbi = path["x_prev"].data.numpy()[1:]  # states x_0 .. x_{T-1} (the first is x_-1)
    expected_z, expected_marg = numpy_forward_backward(log_init, log_a, log_o)
    expected_path = numpy_viterbi(log_init, log_a, log_o)

    print(f"HMM with K = {K} states, T = {T} observations (torch)")
    print(f"  log likelihood      {float(log_z.data):.6f}  (numpy forward: {expected_z:.6f}; "
          f"{elapsed * 1e3:.2f} ms, strategy {chose.strategy}: {chose.reason})")
    print(f"  posterior marginals max |error| vs forward-backward: "
          f"{np.abs(marginals - expected_marg).max():.2e}")
    print(f"  Viterbi path equals the numpy recursion: {list(viterbi) == expected_path}; "
          f"best path score {float(best.data):.4f}")
    print(f"  accuracy vs the true states: Viterbi {np.mean(viterbi == states):.3f}, "
          f"posterior mode {np.mean(marginals.argmax(1) == states):.3f}")
    assert abs(float(log_z.data) - expected_z) < 1e-8 and abs(float(total.data) - expected_z) < 1e-8
    assert np.abs(marginals - expected_marg).max() < 1e-8 and list(viterbi) == expected_path
    plot(obs, states, marginals, viterbi)


def plot(obs, states, marginals, viterbi):
    plt = pyplot()
    if plt is None:
        return
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
    top.plot(obs, ".", ms=3, color="gray", label="observation")
    top.step(range(T), MEANS[states], where="mid", color="k", lw=1, label="true regime")
    top.step(range(T), MEANS[viterbi], where="mid", color="C3", lw=1, ls="--", label="Viterbi")
    top.legend(loc="upper right", fontsize=8)
    bottom.imshow(marginals.T, aspect="auto", origin="lower", cmap="Blues",
                  extent=(-0.5, T - 0.5, -0.5, K - 0.5))
    bottom.set_yticks(range(K))
    bottom.set_ylabel("state: posterior p(x_t | y)")
    bottom.set_xlabel("time")
    fig.tight_layout()
    path = out_path("hmm.png")
    fig.savefig(path, dpi=100)
    print(f"  plot: {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
