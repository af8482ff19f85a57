"""Marginals of a hidden Markov model (K=16 states, T=1,000 steps) by the adjoint, against
autograd of the log partition function.

The model is a chain of T transition factors ``f_t(prev, curr)`` (log potentials that include
the emissions). Every method computes the pair marginals ``p(x_t = i, x_{t+1} = j)`` of all
T steps (the gradient of log Z with respect to the factors), and all agree (checked):

- funsor-core: ``sequential_sum_product`` (a parallel scan, log2(T) rounds) recorded on an
  ``AdjointTape``, then the backward pass (``tape.adjoint``);
- autograd of the same funsor-core forward pass (torch tensors with ``requires_grad``);
- autograd of a hand-written parallel scan in torch (log-space matrix products, as
  torch-struct computes log Z), and of a hand-written sequential forward algorithm;
- funsor 0.4.8's adjoint of the same program, when installed (``make bench`` installs it).

Timings are interleaved (each round runs every method once) and the best round is kept, so
that the load of a shared machine affects every method alike. One thread:
``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/adjoint.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

T, K = 1000, 16
ROUNDS = 15


def main() -> None:
    import torch

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.adjoint import AdjointTape
    from funsor_core.sum_product import sequential_sum_product

    fc.set_backend("torch")
    logits = torch.tensor(np.random.default_rng(0).normal(size=(T, K, K)))
    inputs = {"time": fc.Bint[T], "prev": fc.Bint[K], "curr": fc.Bint[K]}

    def log_z(trans):
        z = sequential_sum_product(ops.logaddexp, ops.add, trans, "time", {"prev": "curr"})
        return z.reduce(ops.logaddexp)

    def adjoint():
        trans = fc.Tensor(logits, inputs)
        with AdjointTape() as tape:
            z = log_z(trans)
        adj = tape.adjoint(ops.logaddexp, ops.add, z, (trans,))[trans]
        return (adj + trans - z).exp().align(("time", "prev", "curr")).data

    def autograd_same_forward():
        x = logits.detach().requires_grad_()
        z = log_z(fc.Tensor(x, inputs))
        return torch.autograd.grad(z.data, [x])[0]

    def autograd_scan():
        x = logits.detach().requires_grad_()
        m, tails = x, []
        while m.shape[0] > 1:
            if m.shape[0] % 2:
                tails.append(m[-1])
                m = m[:-1]
            m = torch.logsumexp(m[0::2].unsqueeze(-1) + m[1::2].unsqueeze(-3), -2)
        r = m[0]
        for tail in reversed(tails):
            r = torch.logsumexp(r.unsqueeze(-1) + tail.unsqueeze(-3), -2)
        return torch.autograd.grad(torch.logsumexp(r.reshape(-1), 0), [x])[0]

    def autograd_loop():
        x = logits.detach().requires_grad_()
        alpha = torch.logsumexp(x[0], 0)
        for t in range(1, T):
            alpha = torch.logsumexp(alpha[:, None] + x[t], 0)
        return torch.autograd.grad(torch.logsumexp(alpha, 0), [x])[0]

    methods = {
        "funsor-core adjoint": adjoint,
        "autograd, funsor-core forward": autograd_same_forward,
        "autograd, hand-written scan": autograd_scan,
        "autograd, hand-written loop": autograd_loop,
    }
    peer = funsor_peer(logits)
    if peer is not None:
        methods["funsor 0.4.8 adjoint"] = peer
    expected = autograd_loop()
    for name, fn in methods.items():
        assert torch.allclose(fn(), expected, atol=1e-8), name
    best = dict.fromkeys(methods, float("inf"))
    for _ in range(ROUNDS):
        for name, fn in methods.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    base = best["funsor-core adjoint"]
    print(f"HMM pair marginals, K={K}, T={T}, torch, one thread (best of {ROUNDS} interleaved "
          "rounds)")
    print(f"{'method':34} {'ms':>8} {'adjoint / it':>13}")
    for name, t in best.items():
        print(f"{name:34} {t * 1e3:8.1f} {base / t:13.2f}")
    if peer is None:
        print(f"{'funsor 0.4.8 adjoint':34} {'missing':>8}")


def funsor_peer(logits):
    """funsor 0.4.8's adjoint of the same program, or None when it is not installed."""
    try:
        import funsor
        import funsor.ops as fops
        from funsor.adjoint import AdjointTape
        from funsor.sum_product import sequential_sum_product
    except ImportError:
        return None
    funsor.set_backend("torch")
    from collections import OrderedDict

    inputs = OrderedDict([("time", funsor.Bint[T]), ("prev", funsor.Bint[K]),
                          ("curr", funsor.Bint[K])])

    def run():
        trans = funsor.Tensor(logits, inputs)
        with AdjointTape() as tape:
            z = sequential_sum_product(fops.logaddexp, fops.add, trans,
                                       funsor.Variable("time", funsor.Bint[T]),
                                       {"prev": "curr"})
            z = z.reduce(fops.logaddexp)
        adj = tape.adjoint(fops.logaddexp, fops.add, z, (trans,))[trans]
        return (adj + trans - z).exp().align(("time", "prev", "curr")).data

    return run


if __name__ == "__main__":
    main()
