"""funsor-core demo: one model, several interpretations and backends.

A hidden Markov model with 3 hidden states and 20 observations:
1. exact forward algorithm with named tensors (eager);
2. the same expression recorded under ``lazy`` and evaluated later;
3. checked against brute-force enumeration on a short prefix;
4. gradients with torch autograd, and a ``jax.jit`` function that takes and returns funsors.

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
    print("demo finished")


if __name__ == "__main__":
    main()
