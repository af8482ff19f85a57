"""A seeded gradient fuzzer: derivatives of library programs against finite differences.

``check(seed)`` draws a program (``grad_programs.draw``), runs it with torch autograd, eager
``jax.grad``, ``jax.jit(jax.grad(f))`` and (every third seed) ``jax.grad(jax.jit(f))``, and
compares the gradient's directional derivative along a few random directions with the
oracle: central finite differences of the SAME program run on numpy in float64, Richardson
extrapolated (error O(h^4)), directions zero at -inf entries. Where the value is finite it
must match the float64 value and every gradient entry must be finite (at -inf entries too);
a value of -inf is not checked further.

Run long: ``python -m tests.gradients.grad_fuzz 0 2000`` (first seed, count[, family]; the
environment variable ``GRAD_FUZZ_ONLY=torch,jax_jit_grad`` picks the runners);
``tests/gradients/test_grad_fuzz.py`` keeps a seeded slice.
"""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np

import funsor_core as fc
from tests.gradients.grad_programs import Program, draw

TOL = {"float64": 2e-6, "float32": 3e-3}


def _numpy_value(p: Program, xs: dict) -> float:
    fc.set_backend("numpy")
    with np.errstate(all="ignore"):
        return float(np.asarray(p.run(xs)))


def oracle(p: Program, dirs: list) -> tuple[float, list]:
    """The float64 value and the directional derivatives along ``dirs``.

    Example:
        >>> p = draw(0, "contract"); v, ds = oracle(p, directions(p, 1)); len(ds)
        1
    """
    value = _numpy_value(p, p.xs)
    scale = max(1.0, max(float(np.max(np.abs(np.where(np.isfinite(x), x, 0))))
                         for x in p.xs.values()))
    h = 1e-3 * (1.0 if p.family != "chain" else min(1.0, scale ** 0.5 / 10 + 0.1))
    out = []
    for d in dirs:
        def fd(step, d=d):
            plus = {k: x + step * d[k] for k, x in p.xs.items()}
            minus = {k: x - step * d[k] for k, x in p.xs.items()}
            return (_numpy_value(p, plus) - _numpy_value(p, minus)) / (2 * step)
        out.append((4 * fd(h / 2) - fd(h)) / 3)
    return value, out


def directions(p: Program, n: int) -> list:
    r = np.random.default_rng(99_991 + p.seed)
    dirs = []
    for _ in range(n):
        dirs.append({k: np.where(p.free[k], r.uniform(-1, 1, x.shape), 0.0)
                     for k, x in p.xs.items()})
    return dirs


def _torch(p: Program):
    import torch

    fc.set_backend("torch")
    dt = torch.float32 if p.dtype == "float32" else torch.float64
    xs = {k: torch.tensor(x, dtype=dt, requires_grad=True) for k, x in p.xs.items()}
    out = p.run(xs)
    out.backward()
    return float(out.detach()), {k: (x.grad.double().numpy() if x.grad is not None
                                     else np.zeros(x.shape)) for k, x in xs.items()}


def _jax(p: Program, mode: str):
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    dt = jnp.float32 if p.dtype == "float32" else jnp.float64
    xs = {k: jnp.asarray(x, dtype=dt) for k, x in p.xs.items()}

    def f(a):
        return jnp.asarray(p.run(a)).reshape(())

    if mode == "eager":
        v, g = jax.value_and_grad(f)(xs)
    elif mode == "jit_grad":
        v, g = jax.jit(jax.value_and_grad(f))(xs)
    else:
        v, g = jax.value_and_grad(jax.jit(f))(xs)
    return float(v), {k: np.asarray(x, dtype=np.float64) for k, x in g.items()}


RUNNERS = {"torch": _torch, "jax": lambda p: _jax(p, "eager"),
           "jax_jit_grad": lambda p: _jax(p, "jit_grad"),
           "jax_grad_jit": lambda p: _jax(p, "grad_jit")}


def backends_for(p: Program) -> list:
    names = ["torch", "jax", "jax_jit_grad"]
    if p.seed % 3 == 0:
        names.append("jax_grad_jit")
    return names


def check(seed: int, family: str | None = None, n_dirs: int = 2,
          only: list | None = None) -> tuple[Program, dict]:
    """Run one program on every backend: ``{backend: None (agrees) or a message}``.

    Example:
        >>> p, res = check(1, "contract", only=["torch"]); sorted(res)
        ['torch']
    """
    p = draw(seed, family)
    dirs = directions(p, n_dirs)
    value, dds = oracle(p, dirs)
    tol = TOL[p.dtype]
    # A float32 result of size |v| is rounded to |v| 2^-24: a chain's product of steps near
    # -1e4 (entries near -3e6) returned as a Tensor carries its entries' differences, hence
    # the softmax that is the derivative of a reduction of it, only to that absolute
    # precision (0.2 at -3e6: 20% on the derivative). Such a case is ill-conditioned in its
    # dtype: its value and finiteness are checked, not the derivative's digits.
    conditioned = p.dtype == "float64" or abs(value) * 2.0 ** -24 < 1e-3
    res = {}
    for name in only or backends_for(p):
        try:
            v, g = RUNNERS[name](p)
        except Exception as e:  # noqa: BLE001  (a crash is a finding)
            res[name] = f"raised {type(e).__name__}: {str(e)[:300]}"
            continue
        finally:
            fc.set_backend("numpy")
        msgs = []
        if np.isfinite(value):
            if not np.isclose(v, value, rtol=tol, atol=tol * 10):
                msgs.append(f"value {v!r} != {value!r}")
            bad = [k for k, x in g.items() if not np.all(np.isfinite(x))]
            if bad:
                msgs.append(f"non-finite gradient in {bad}")
            elif p.smooth and conditioned:
                for d, dd in zip(dirs, dds):
                    got = sum(float(np.sum(g[k] * d[k])) for k in g)
                    mag = sum(float(np.sum(np.abs(g[k] * d[k]))) for k in g)
                    if not np.isfinite(dd) or abs(got - dd) > tol * (1 + mag + abs(dd)) * 5:
                        msgs.append(f"directional {got!r} != finite difference {dd!r}")
                        break
        # a value of -inf (mass zero) has no derivative: NaN there is log 0's, not a bug
        res[name] = "; ".join(msgs) or None
    return p, res


def main(argv: list) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    first, count = int(argv[0]), int(argv[1])
    family = argv[2] if len(argv) > 2 else None
    only = os.environ.get("GRAD_FUZZ_ONLY")
    only = only.split(",") if only else None
    counts: dict = {}
    try:
        _loop(first, count, family, only, counts)
    except KeyboardInterrupt:  # a long run stopped by hand still reports its counts
        print("-- interrupted", flush=True)
    fails = sum(n - ok for ok, n in counts.values())
    for (fam, name), (ok, n) in sorted(counts.items()):
        print(f"{fam:10s} {name:14s} {ok}/{n}")
    return 1 if fails else 0


def _loop(first: int, count: int, family, only, counts: dict) -> None:
    fails = 0
    for seed in range(first, first + count):
        if (seed - first) % 20 == 19:
            print(f"-- {seed - first + 1} seeds, {fails} failures", flush=True)
        try:
            p, res = check(seed, family, only=only)
        except Exception:  # noqa: BLE001
            print(f"seed {seed}: oracle failed\n{traceback.format_exc()[-600:]}", flush=True)
            continue
        for name, msg in res.items():
            key = (p.family, name)
            ok, n = counts.get(key, (0, 0))
            counts[key] = (ok + (msg is None), n + 1)
            if msg:
                fails += 1
                print(f"seed {seed} {name} [{p.desc}]: {msg}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
