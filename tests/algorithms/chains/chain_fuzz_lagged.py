"""Fuzzing chains that look back one or two steps: ``sarkka_bilmes_product`` and its serial
reference against enumeration of every path in numpy (float64), in the sum and max
semirings, with batch and global names, -inf entries, on numpy, torch and jax (eager and
``jax.jit``).

Run long: ``python -m tests.algorithms.chains.chain_fuzz_lagged 0 2000``.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import naive_sarkka_bilmes_product, sarkka_bilmes_product
from tests.algorithms.chains.chain_fuzz import run_cases

LAG_NAMES = ("x", "_PREV_x", "_PREV__PREV_x")


def draw_lagged(seed: int) -> dict:
    """A random lagged case: history, K, T (``K ** (T + history) <= 4096``), names, backend.

    Example:
        >>> draw_lagged(0)["history"] in (1, 2)
        True
    """
    r = np.random.default_rng(seed)
    history = int(r.integers(1, 3))
    K = int(r.integers(1, 5))
    T = int(r.integers(1, 9))
    while T > 1 and K ** (T + history) > 4096:
        T -= 1
    backend = str(r.choice(["numpy", "torch", "jax"]))
    return dict(seed=seed, history=history, K=K, T=T, backend=backend,
                jit=backend == "jax" and bool(r.random() < 0.5),
                semiring=str(r.choice(["sum", "max"])),
                B=int(r.integers(0, 3)), G=int(r.integers(0, 3)),
                ninf=bool(r.random() < 0.3), periods=int(r.integers(1, 3)))


def lagged_data(c: dict) -> np.ndarray:
    """The steps, (T, B, G) + (K,) * (history + 1), axes (batch..., lag 0, lag 1[, lag 2]).

    Example:
        >>> lagged_data(draw_lagged(0)).ndim >= 4
        True
    """
    r = np.random.default_rng(20_000 + c["seed"])
    shape = (c["T"], max(c["B"], 1), max(c["G"], 1)) + (c["K"],) * (c["history"] + 1)
    x = r.normal(size=shape)
    if c["ninf"]:
        x[r.random(shape) < 0.15] = -np.inf
    return x


def brute_lagged(c: dict, x: np.ndarray) -> np.ndarray:
    """(B, G) + (K,) * (history + 1): axes x_{T-1}, x_{-1}[, x_{-2}], the other states
    enumerated.

    Example:
        >>> c = draw_lagged(1); brute_lagged(c, lagged_data(c)).ndim == 3 + c["history"]
        True
    """
    h, K, T = c["history"], c["K"], c["T"]
    red = np.logaddexp.reduce if c["semiring"] == "sum" else np.max
    groups: dict = {}
    for states in itertools.product(range(K), repeat=T + h):  # x_{-h} .. x_{T-1}
        s = 0.0
        for t in range(T):
            # the state at time t - k is states[t - k + h]
            s = s + x[(t, slice(None), slice(None)) + tuple(states[t - k + h]
                                                           for k in range(h + 1))]
        key = (states[-1],) + tuple(states[h - k] for k in range(1, h + 1))
        groups.setdefault(key, []).append(s)
    out = np.empty(x.shape[1:])
    for key, ss in groups.items():
        out[(slice(None), slice(None)) + key] = red(np.stack(ss), axis=0)
    return out


def check_lagged(c: dict) -> list:
    """Disagreements of ``sarkka_bilmes_product`` (and the naive one) with enumeration.

    Example:
        >>> check_lagged(dict(seed=0, history=2, K=2, T=3, backend="numpy", jit=False,
        ...                   semiring="sum", B=0, G=0, ninf=False, periods=1))
        []
    """
    x = lagged_data(c)
    expected = brute_lagged(c, x)
    h = c["history"]
    names = LAG_NAMES[:h + 1]
    batch = (("b",) if c["B"] else ()) + (("g",) if c["G"] else ())
    sl = (slice(None), slice(None) if c["B"] else 0, slice(None) if c["G"] else 0)
    data = x[sl]
    doms = {"t": fc.Bint[c["T"]], "b": fc.Bint[c["B"]], "g": fc.Bint[c["G"]]}
    inputs = {n: doms[n] for n in ("t",) + batch}
    inputs.update({n: fc.Bint[c["K"]] for n in names})
    sop = ops.logaddexp if c["semiring"] == "sum" else ops.max

    def run(arr):
        f = fc.Tensor(arr, inputs)
        gv = frozenset(batch)
        out = {"sarkka_bilmes_product": sarkka_bilmes_product(
            sop, ops.add, f, "t", gv, num_periods=c["periods"]).align(batch + names).data}
        out["naive_sarkka_bilmes_product"] = naive_sarkka_bilmes_product(
            sop, ops.add, f, "t", gv).align(batch + names).data
        return out

    previous = fc.get_backend()
    fc.set_backend(c["backend"])
    fails = []
    try:
        if c["backend"] == "torch":
            import torch
            arr = torch.tensor(data)
        elif c["backend"] == "jax":
            import jax.numpy as jnp
            arr = jnp.asarray(data)
        else:
            arr = data
        try:
            if c["jit"]:
                import jax
                out = jax.jit(run)(arr)
            else:
                out = run(arr)
        except Exception as e:  # noqa: BLE001 (a fuzzer reports every failure)
            return [f"raised {type(e).__name__}: {e}"]
        for name, a in out.items():
            a = np.asarray(ops.to_numpy(a), dtype=np.float64)
            if not c["B"]:
                a = a[None]
            if not c["G"]:
                a = np.expand_dims(a, 1)
            ok = (np.isneginf(a) == np.isneginf(expected)).all() and np.allclose(
                a[np.isfinite(expected)], expected[np.isfinite(expected)], rtol=1e-9,
                atol=1e-9)
            if not ok:
                fails.append(f"{name}: differs, max err "
                             f"{np.nanmax(np.abs(np.nan_to_num(a - expected))):.3g}")
    finally:
        fc.set_backend(previous)
    return fails


def main(argv) -> int:
    """Run ``count`` lagged cases from seed ``first``."""
    return run_cases(draw_lagged, check_lagged, argv, "lagged ")

if __name__ == "__main__":
    import jax

    jax.config.update("jax_enable_x64", True)
    sys.exit(main(sys.argv))
