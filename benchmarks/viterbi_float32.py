"""The best path's score of an HMM (the sequential max-plus kernel that Viterbi decoding
differentiates) in float32 against float64, on numpy and torch eagerly and under
``jax.jit``, beside a hand-written max-plus loop of each.

funsor-core's program: the chain built lazily (a shared transition matrix plus observations
per step), ``MarkovProduct(ops.max, ops.add, ..., strategy="sequential")`` contracted with its
initial factor by ``max``. Observations are near -1e4 per step (a long float32 chain, where
the carry must keep its digits: issue #28, h69/h80). Every program is checked against a
float64 numpy recursion before it is timed. CPU time (``time.process_time``), best of
``--repeats`` calls, the programs of a row interleaved, one thread.

Usage: ``python benchmarks/viterbi_float32.py [--repeats N] [--json]`` (``--json``: one line of
``{cell: ms}``, for before/after runs in alternating processes).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

CONFIGS = ((4, 1000), (16, 1000))


def data(k: int, t: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(k, k)) + 2.0 * np.eye(k)
    trans = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return np.full(k, -np.log(k)), trans, rng.normal(size=(t, k)) - 1e4


def oracle(init, trans, obs) -> float:
    v = init.astype(np.float64)
    for o in obs.astype(np.float64):
        v = (v[:, None] + trans).max(0) + o
    return float(v.max())


def core_program(backend: str):
    import funsor_core as fc
    from funsor_core import ops
    from interpretations import lazy

    def run(init, trans, obs):
        t, k = obs.shape
        i = fc.Tensor(init, {"x": fc.Bint[k]})
        a = fc.Tensor(trans, {"x": fc.Bint[k], "y": fc.Bint[k]})
        o = fc.Tensor(obs, {"t": fc.Bint[t], "y": fc.Bint[k]})
        with lazy:
            chain = fc.MarkovProduct(ops.max, ops.add, a + o, "t", {"x": "y"},
                                     strategy="sequential")
        return (i + chain).reduce(ops.max, {"x", "y"}).data

    if backend == "jax":
        import jax
        return jax.jit(run)
    return run


def hand_program(backend: str):
    if backend == "numpy":
        def run(init, trans, obs):
            v = init
            for o in obs:
                v = (v[:, None] + trans).max(0) + o
            return v.max()
        return run
    if backend == "torch":
        import torch

        def run(init, trans, obs):
            v = init
            for o in torch.unbind(obs, 0):
                v = torch.amax(v[:, None] + trans, 0) + o
            return v.max()
        return run
    import jax

    @jax.jit
    def run(init, trans, obs):
        def step(v, o):
            return (v[:, None] + trans).max(0) + o, None
        return jax.lax.scan(step, init, obs)[0].max()
    return run


def convert(backend: str, x, dtype: str):
    x = x.astype(dtype)
    if backend == "torch":
        import torch
        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    return x


def best_ms(fn, repeats: int) -> float:
    import jax
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        jax.block_until_ready(fn())
        best = min(best, time.process_time() - t0)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import jax
    import torch

    jax.config.update("jax_enable_x64", True)
    torch.set_num_threads(1)
    import funsor_core as fc

    cells = {}
    for backend in ("numpy", "torch", "jax"):
        fc.set_backend(backend)
        for k, t in CONFIGS:
            raw = data(k, t)
            expected = oracle(*raw)
            fns = {}
            for dtype in ("float64", "float32"):
                args_ = tuple(convert(backend, x, dtype) for x in raw)
                for name, make in (("core", core_program), ("hand", hand_program)):
                    fn = make(backend)
                    value = float(fn(*args_))
                    # float32: funsor-core's score to a few ulps of its magnitude (shifts
                    # summed apart); the hand loop rounds its carry near -1e4 t every step
                    rel = 1e-9 if dtype == "float64" else 4e-7 if name == "core" else 1e-4
                    tol = rel * abs(expected)
                    assert abs(value - expected) <= tol, (backend, k, dtype, name, value)
                    fns[f"{name} {dtype}"] = (lambda f=fn, a=args_: f(*a))
            for fn in fns.values():  # warm-up (jax.jit compiles)
                jax.block_until_ready(fn())
            times = {name: float("inf") for name in fns}
            for _ in range(3):  # interleaved rounds
                for name, fn in fns.items():
                    times[name] = min(times[name], best_ms(fn, max(1, args.repeats // 3)))
            for name, ms in times.items():
                cells[f"{backend} K={k} T={t} {name}"] = ms
    fc.set_backend("numpy")
    if args.json:
        print(json.dumps(cells))
        return
    print("| backend | K | T | core f64 | core f32 | f32 / f64 | hand f64 | hand f32 | "
          "core / hand f32 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for backend in ("numpy", "torch", "jax"):
        for k, t in CONFIGS:
            c = {n: cells[f"{backend} K={k} T={t} {n}"] for n in
                 ("core float64", "core float32", "hand float64", "hand float32")}
            print(f"| {backend if backend != 'jax' else 'jax.jit'} | {k} | {t:,} | "
                  f"{c['core float64']:.3g} | {c['core float32']:.3g} | "
                  f"{c['core float32'] / c['core float64']:.2f}x | {c['hand float64']:.3g} | "
                  f"{c['hand float32']:.3g} | {c['core float32'] / c['hand float32']:.2f}x |")


if __name__ == "__main__":
    main()
