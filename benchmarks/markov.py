"""Markov products: HMM and Kalman log likelihoods, side by side in one run, as ratios.

HMM log likelihood (K states, T steps, B sequences): funsor-core's program (a lazily built
``MarkovProduct`` contracted with its initial factor; the strategy chosen by ``auto``)
against hand-written torch and jax code (sequential and log-depth), dynamax (sequential and
parallel filters, under ``jax.jit``) and funsor 0.4.8, forward and forward+backward. Kalman
log likelihood (state 4, observations 2) against dynamax and hand-written filters. Also: the
rounds of each strategy against T, and eager jax's first call (compilation included)
against a hand-written eager jax loop, each in a fresh process.

Every program is checked against a numpy oracle before it is timed. Times are the best of
a few repeats, in milliseconds, on one thread (``make bench`` sets it; so does this file
before importing the array libraries). There is no GPU here: the crossover of the two
strategies on a GPU is not measured.

Usage: ``python benchmarks/markov.py [--quick]`` (``--quick``: a small grid, for a smoke test).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402

import markov_peers as peers  # noqa: E402
import numpy as np  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core.algorithms.chains.cost_model import (  # noqa: E402
    parallel_rounds,
    recorded_choices,
)

# Skip a run estimated above this many broadcast elements (O(T B K^3) log-depth code at
# K = 32, B = 16, T = 10^4 would take minutes).
MAX_ELEMENTS = 6e8


def chosen(fn) -> str:
    """Run ``fn`` once and return the strategy the cost model chose for its last chain."""
    with recorded_choices() as log:
        fn()
    return log[-1].strategy if log else "-"


def measure(fn, budget: float = 0.3) -> float:
    """Best mean time of ``fn()`` in ms: two warm-up calls (the first compiles a jitted
    ``fn``; the second, timed, sizes the repeats), then repeats of enough calls to fill
    ``budget`` seconds each (3 repeats; 2 of one call when a call takes over 0.3 s)."""
    fn()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    number = max(1, int(budget / max(first, 1e-6)))
    repeats = 2 if first > 0.3 else 3
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e3


def measure_row(fns: dict, budget: float = 0.3) -> dict:
    """``measure`` for the programs of one row, interleaved: each is warmed up twice, then
    the rounds run every program in turn (enough calls to fill ``budget`` seconds each), so
    that a change of the machine's load during a row reaches all its programs alike. Best
    mean time per program in ms; None stays None."""
    number, slow = {}, False
    for name, fn in fns.items():
        if fn is not None:
            fn()
            t0 = time.perf_counter()
            fn()
            first = time.perf_counter() - t0
            number[name] = max(1, int(budget / max(first, 1e-6)))
            slow = slow or first > 0.3
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(2 if slow else 3):
        for name, n in number.items():
            fn = fns[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / n)
    return {name: best[name] * 1e3 if name in number else None for name in fns}


def hmm_data(K: int, T: int, B: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(K, K)) + 2.0 * np.eye(K)
    trans = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    init = np.full(K, -np.log(K))
    obs = rng.normal(size=(T, B, K))
    return init, trans, obs


def _fmt(ms) -> str:
    return "-" if ms is None else f"{ms:.3g}"


def _ratio(a, b) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


# -- torch eager ----------------------------------------------------------------------------------
def hmm_torch(configs, check):
    import torch

    torch.set_default_dtype(torch.float64)
    fc.set_backend("torch")
    core = peers.funsor_core_hmm()
    old = peers.funsor_hmm("torch")
    fc.set_backend("torch")
    print("\n## HMM log likelihood, torch eager (ms; ratio = funsor-core / fastest hand-written)")
    print("| K | T | B | pass | funsor-core | auto chose | hand sequential | hand log-depth | "
          "ratio | funsor 0.4.8 | funsor-core / 0.4.8 |")
    print("|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|")
    for K, T, B in configs:
        init, trans, obs = (torch.tensor(x) for x in hmm_data(K, T, B))
        expected = peers.numpy_hmm_oracle(*hmm_data(K, T, B))
        cube = T * B * K ** 3
        progs = {"core": core, "seq": peers.torch_hmm_sequential,
                 "log": peers.torch_hmm_log_depth if cube <= MAX_ELEMENTS else None,
                 "old": old if old is not None and cube <= MAX_ELEMENTS else None}
        for name, prog in progs.items():
            if prog is not None and check:
                np.testing.assert_allclose(prog(init, trans, obs).numpy(), expected,
                                           rtol=1e-6, err_msg=name)
        for backward in (False, True):
            fns = {}
            for name, prog in progs.items():
                if prog is None:
                    fns[name] = None
                    continue
                if backward:
                    a = trans.clone().requires_grad_()
                    o = obs.clone().requires_grad_()

                    def fn(prog=prog, i=init, a=a, o=o):
                        torch.autograd.grad(prog(i, a, o).sum(), (a, o))
                else:
                    def fn(prog=prog, i=init, a=trans, o=obs):
                        prog(i, a, o)
                fns[name] = fn
            chose = chosen(fns["core"])
            row = measure_row(fns)
            hand = min(x for x in (row["seq"], row["log"]) if x is not None)
            print(f"| {K} | {T} | {B} | {'fwd+bwd' if backward else 'fwd'} | "
                  f"{_fmt(row['core'])} | {chose} | {_fmt(row['seq'])} | {_fmt(row['log'])} | "
                  f"{_ratio(row['core'], hand)} | {_fmt(row['old'])} | "
                  f"{_ratio(row['core'], row['old'])} |", flush=True)


# -- jax.jit --------------------------------------------------------------------------------------
def hmm_jax(configs, check):
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    core = peers.funsor_core_hmm()
    old = peers.funsor_hmm("jax")
    fc.set_backend("jax")
    names = {"core": core, "seq": peers.jax_hmm_sequential,
             "scaled": peers.jax_hmm_sequential_scaled, "log": peers.jax_hmm_log_depth,
             "dyn": peers.dynamax_hmm(False), "dynpar": peers.dynamax_hmm(True), "old": old}
    print("\n## HMM log likelihood, jax.jit (ms; hand = fastest hand-written jax)")
    print("| K | T | B | pass | funsor-core | auto chose | hand seq (log) | hand seq (scaled) "
          "| hand log-depth | dynamax | dynamax parallel | core / hand | core / dynamax | "
          "funsor 0.4.8 |")
    print("|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for K, T, B in configs:
        data = hmm_data(K, T, B)
        expected = peers.numpy_hmm_oracle(*data)
        init, trans, obs = (jnp.asarray(x) for x in data)
        cube = T * B * K ** 3
        for backward in (False, True):
            fns = {}
            for name, prog in names.items():
                if prog is None or (name in ("log", "dynpar", "old") and cube > MAX_ELEMENTS):
                    fns[name] = None
                    continue
                if backward:
                    fn = jax.jit(jax.grad(lambda a, o, prog=prog, i=init: prog(i, a, o).sum(),
                                          argnums=(0, 1)))
                    args = (trans, obs)
                else:
                    fn = jax.jit(prog)
                    args = (init, trans, obs)
                if check and not backward:
                    np.testing.assert_allclose(np.asarray(fn(*args)), expected, rtol=1e-5,
                                               err_msg=name)
                fns[name] = lambda fn=fn, args=args: jax.block_until_ready(fn(*args))
                if name == "core":
                    # traced here: the strategy is chosen at trace time
                    chose = chosen(fns[name])
            row = measure_row(fns)
            hand = min(x for x in (row["seq"], row["scaled"], row["log"]) if x is not None)
            print(f"| {K} | {T} | {B} | {'fwd+bwd' if backward else 'fwd'} | "
                  f"{_fmt(row['core'])} | {chose} | {_fmt(row['seq'])} | "
                  f"{_fmt(row['scaled'])} | {_fmt(row['log'])} | {_fmt(row['dyn'])} | "
                  f"{_fmt(row['dynpar'])} | {_ratio(row['core'], hand)} | "
                  f"{_ratio(row['core'], row['dyn'])} | {_fmt(row['old'])} |", flush=True)


# -- log depth ------------------------------------------------------------------------------------
def rounds_table(quick):
    import torch

    fc.set_backend("torch")
    core_par = peers.funsor_core_hmm("parallel")
    core_seq = peers.funsor_core_hmm("sequential")
    print("\n## Sequential rounds against T (K = 4, B = 1, torch eager)")
    print("| T | parallel rounds ceil(log2 T) | sequential rounds | parallel ms | "
          "sequential ms | auto chose |")
    print("|---:|---:|---:|---:|---:|---|")
    for T in (10, 100, 1000) if quick else (10, 100, 1000, 10000, 100000):
        data = tuple(torch.tensor(x) for x in hmm_data(4, T, 1))
        par = measure(lambda data=data: core_par(*data))
        seq = measure(lambda data=data: core_seq(*data), budget=0.1)
        chose = chosen(lambda data=data: peers.funsor_core_hmm()(*data))
        print(f"| {T} | {parallel_rounds(T)} | {T} | {par:.3g} | {seq:.3g} | "
              f"{chose} |", flush=True)


# -- eager jax, first call ------------------------------------------------------------------------
_FIRST_CALL = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {bench!r})
    import numpy as np, jax, jax.numpy as jnp
    import markov_peers as peers, markov as bench
    import funsor_core as fc
    fc.set_backend("jax")
    init, trans, obs = (jnp.asarray(x) for x in bench.hmm_data(4, {T}, 1))
    prog = {prog}
    for label in ("first", "second"):
        t0 = time.perf_counter()
        jax.block_until_ready(prog(init, trans, obs))
        print(label, time.perf_counter() - t0)
""")


def first_call(T: int = 32):
    bench = os.path.dirname(os.path.abspath(__file__))
    results = {}
    for name, prog in (("hand-written eager jax loop",
                        "lambda i, a, o: peers.jax_hmm_eager_loop(i, a, o[:, 0])"),
                       ("funsor-core, eager jax", "peers.funsor_core_hmm()")):
        code = _FIRST_CALL.format(bench=bench, T=T, prog=prog)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ), check=True).stdout
        results[name] = dict(line.split() for line in out.strip().splitlines())
    print(f"\n## Eager jax, HMM K = 4, T = {T}: first call (compilation included), fresh "
          "process (s)")
    print("| program | first call | second call |")
    print("|---|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {float(r['first']):.3g} | {float(r['second']):.3g} |")
    hand = float(results["hand-written eager jax loop"]["first"])
    core = float(results["funsor-core, eager jax"]["first"])
    print(f"first-call ratio funsor-core / hand-written: {core / hand:.2f}x")


# -- Kalman ---------------------------------------------------------------------------------------
def kalman(steps_list, check):
    import jax
    import jax.numpy as jnp
    import torch

    print("\n## Kalman log likelihood, state 4, observations 2 (ms)")
    print("| T | backend | funsor-core | auto chose | hand-written | dynamax | "
          "dynamax parallel | core / hand | core / dynamax |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|")
    for T in steps_list:
        model = peers.kalman_model(np.random.default_rng(T), steps=T)
        expected = peers.numpy_kalman(**model)
        hand_np = measure(lambda model=model: peers.numpy_kalman(**model))
        for backend in ("numpy", "torch"):
            fc.set_backend(backend)
            arrays = model if backend == "numpy" else {
                k: torch.tensor(v) for k, v in model.items()}
            if check:
                np.testing.assert_allclose(float(peers.funsor_core_kalman(**arrays)), expected,
                                           rtol=1e-8)
            core = measure(lambda arrays=arrays: peers.funsor_core_kalman(**arrays))
            chose = chosen(lambda arrays=arrays: peers.funsor_core_kalman(**arrays))
            print(f"| {T} | {backend} eager | {core:.3g} | {chose} | {hand_np:.3g} (numpy) | "
                  f"- | - | {_ratio(core, hand_np)} | - |", flush=True)
        fc.set_backend("jax")
        arrays = {k: jnp.asarray(v) for k, v in model.items()}
        fns = {}
        for name, prog in (("core", peers.funsor_core_kalman), ("hand", peers.jax_kalman),
                           ("dyn", peers.dynamax_kalman(False)),
                           ("dynpar", peers.dynamax_kalman(True))):
            if prog is None:
                fns[name] = None
                continue
            fn = jax.jit(prog)
            if check:
                np.testing.assert_allclose(float(fn(**arrays)), expected, rtol=1e-6,
                                           err_msg=name)
            fns[name] = lambda fn=fn, a=arrays: jax.block_until_ready(fn(**a))
            if name == "core":
                chose = chosen(fns[name])
        row = measure_row(fns)
        print(f"| {T} | jax.jit | {row['core']:.3g} | {chose} | {_fmt(row['hand'])} | "
              f"{_fmt(row['dyn'])} | {_fmt(row['dynpar'])} | {_ratio(row['core'], row['hand'])}"
              f" | {_ratio(row['core'], row['dyn'])} |", flush=True)


# -- ragged batches -------------------------------------------------------------------------------
def _ragged_lengths(T: int, B: int):
    # Lengths 1..T, one sequence of length 1 and one full.
    n = np.random.default_rng(1).integers(1, T + 1, size=B)
    n[0], n[-1] = 1, T
    return n


def _core_ragged(init, trans, obs, lengths):
    from funsor_core import ops
    from funsor_core.sum_product import markov_product
    from interpretations import lazy

    T, B, K = obs.shape
    i = fc.Tensor(init, {"x_prev": fc.Bint[K]})
    a = fc.Tensor(trans, {"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})
    o = fc.Tensor(obs, {"time": fc.Bint[T], "b": fc.Bint[B], "x_curr": fc.Bint[K]})
    n = fc.Tensor(lengths, {"b": fc.Bint[B]}, dtype=T + 1)
    with lazy:  # kept whole, so that exact contracts it with init as a filter
        chain = markov_product(ops.logaddexp, ops.add, a + o, "time", {"x_prev": "x_curr"},
                               lengths=n)
    return (i + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"}).data


def _torch_ragged(init, trans, obs, lengths):
    # Hand-written: the forward recursion keeping the carried alpha past each length.
    import torch

    alpha = init.expand(obs.shape[1], -1)
    for t in range(obs.shape[0]):
        new = torch.logsumexp(alpha[:, :, None] + trans, dim=-2) + obs[t]
        alpha = torch.where((t < lengths)[:, None], new, alpha)
    return torch.logsumexp(alpha, dim=-1)


def _jax_ragged(init, trans, obs, lengths):
    import jax
    import jax.numpy as jnp

    def step(alpha, xs):
        t, o = xs
        new = jax.nn.logsumexp(alpha[:, :, None] + trans, axis=-2) + o
        return jnp.where((t < lengths)[:, None], new, alpha), None

    alpha0 = jnp.broadcast_to(init, (obs.shape[1], init.shape[0]))
    alpha, _ = jax.lax.scan(step, alpha0, (jnp.arange(obs.shape[0]), obs))
    return jax.nn.logsumexp(alpha, axis=-1)


def _funsor_ragged(backend: str):
    # funsor 0.4.8 has no lengths: what practitioners wrote, steps padded by hand with the
    # log-identity (0 on the diagonal, -inf elsewhere) past each length.
    if peers.funsor_hmm(backend) is None:
        return None
    from collections import OrderedDict

    import funsor
    import torch
    from funsor.sum_product import MarkovProduct

    def padded(init, trans, obs, lengths):
        T, B, K = obs.shape
        eye = torch.where(torch.eye(K) > 0, 0.0, -torch.inf)
        keep = (torch.arange(T)[:, None] < lengths[None])[:, :, None, None]
        steps = torch.where(keep, trans + obs[:, :, None, :], eye)
        i = funsor.Tensor(init, OrderedDict(x_prev=funsor.Bint[K]))
        s = funsor.Tensor(steps, OrderedDict(time=funsor.Bint[T], b=funsor.Bint[B],
                                             x_prev=funsor.Bint[K], x_curr=funsor.Bint[K]))
        chain = MarkovProduct(funsor.ops.logaddexp, funsor.ops.add, s, "time",
                              {"x_prev": "x_curr"}).reduce(funsor.ops.logaddexp, "x_curr")
        return (i + chain).reduce(funsor.ops.logaddexp, "x_prev").data

    return padded


def ragged(configs, check):
    """The cost of a mask: a ragged batch (lengths 1..T) against the same batch unmasked,
    torch eager, with the hand-written masked recursion and funsor 0.4.8's hand padding."""
    import torch

    torch.set_default_dtype(torch.float64)
    fc.set_backend("torch")
    core = peers.funsor_core_hmm()
    old = _funsor_ragged("torch")
    fc.set_backend("torch")
    print("\n## Ragged HMM batches, torch eager (ms): lengths= against the unmasked batch")
    print("| K | T | B | core unmasked | core ragged | mask cost | hand ragged | core / hand | "
          "funsor 0.4.8 padded by hand | core / 0.4.8 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for K, T, B in configs:
        args = tuple(torch.tensor(x) for x in hmm_data(K, T, B))
        n = torch.tensor(_ragged_lengths(T, B))
        progs = {"core": _core_ragged, "hand": _torch_ragged, "old": old}
        if check:
            ni, nt, no = hmm_data(K, T, B)
            expected = [peers.numpy_hmm_oracle(ni, nt, no[:int(n[b]), b:b + 1])[0]
                        for b in range(B)]
            for name, prog in progs.items():
                if prog is not None:
                    np.testing.assert_allclose(prog(*args, n).numpy(), expected, rtol=1e-9,
                                               err_msg=name)
        fns = {"full": lambda a=args: core(*a)}
        fns.update((name, None if prog is None else lambda p=prog, a=args, n=n: p(*a, n))
                   for name, prog in progs.items())
        row = measure_row(fns)
        print(f"| {K} | {T} | {B} | {_fmt(row['full'])} | {_fmt(row['core'])} | "
              f"{_ratio(row['core'], row['full'])} | {_fmt(row['hand'])} | "
              f"{_ratio(row['core'], row['hand'])} | {_fmt(row['old'])} | "
              f"{_ratio(row['core'], row['old'])} |", flush=True)
    ragged_jax(configs, check)


def ragged_jax(configs, check):
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    core = jax.jit(peers.funsor_core_hmm())
    ragged_core = jax.jit(_core_ragged)
    hand = jax.jit(_jax_ragged)
    print("\n## Ragged HMM batches, jax.jit (ms), traced lengths")
    print("| K | T | B | core unmasked | core ragged | mask cost | hand ragged | core / hand |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for K, T, B in configs:
        args = tuple(jnp.asarray(x) for x in hmm_data(K, T, B))
        n = jnp.asarray(_ragged_lengths(T, B))
        if check:
            np.testing.assert_allclose(np.asarray(ragged_core(*args, n)),
                                       np.asarray(hand(*args, n)), rtol=1e-9)
        fns = {"full": lambda a=args: jax.block_until_ready(core(*a)),
               "core": lambda a=args, n=n: jax.block_until_ready(ragged_core(*a, n)),
               "hand": lambda a=args, n=n: jax.block_until_ready(hand(*a, n))}
        row = measure_row(fns)
        print(f"| {K} | {T} | {B} | {_fmt(row['full'])} | {_fmt(row['core'])} | "
              f"{_ratio(row['core'], row['full'])} | {_fmt(row['hand'])} | "
              f"{_ratio(row['core'], row['hand'])} |", flush=True)
    fc.set_backend("numpy")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a small grid (smoke test)")
    ap.add_argument("--only", default="", help="comma-separated sections: rounds, torch, "
                    "jax, first, kalman, ragged")
    args = ap.parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.quick:
        configs = [(4, 100, 1), (32, 100, 16)]
        steps = (100,)
    else:
        configs = [(k, t, b) for k in (4, 32) for t in (100, 1000, 10000) for b in (1, 16)]
        steps = (100, 1000)
    only = set(filter(None, args.only.split(",")))
    print("funsor-core Markov product benchmark (float64, one thread; no GPU: the GPU crossover "
          "of the strategies is not measured)")
    if not only or "rounds" in only:
        rounds_table(args.quick)
    if not only or "torch" in only:
        hmm_torch(configs, check=True)
    if not only or "jax" in only:
        hmm_jax(configs, check=True)
    if not only or "first" in only:
        first_call()
    if not only or "kalman" in only:
        kalman(steps, check=True)
    if not only or "ragged" in only:
        ragged([(4, 100, 16)] if args.quick else [(4, 100, 16), (4, 1000, 16), (32, 1000, 16)],
               check=True)


if __name__ == "__main__":
    main()
