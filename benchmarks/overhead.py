"""Per-operation overhead of eager funsors on tiny arrays, as ratios to the raw array op.

Measures ``Tensor + Tensor`` (the same inputs, and the same inputs in another order),
``.reduce(ops.logaddexp, "i")`` and ``t(i=0)`` on 3x3 arrays with numpy and torch (and jax
eagerly, for information), each beside the raw array op it stands for (``a + b``, ``a + b.T``,
a hand-written logsumexp over axis 0, ``a[0]``) in the same run, beside the floor of any
funsor op (the raw op inside one Python call that wraps its array in a new Tensor, as
``Tensor.make`` does), and beside funsor 0.4.8 doing the same op on numpy and torch, in a
subprocess of its own python (``FUNSOR_PYTHON``, default the clients' virtualenv) that times
the raw ops again, so that each peer ratio compares times taken in the same window of a shared
machine. Issue #29's target: every funsor-core ratio within 3x.

Run with one thread: ``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/overhead.py``);
``--quick`` times fewer calls.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402

FUNSOR_PYTHON = os.environ.get("FUNSOR_PYTHON",
                               "/root/.cache/funsor-core-clients/venv/bin/python")
OPS = ("Tensor + Tensor", "Tensor + Tensor (order)", "reduce(logaddexp, i)", "t(i=0)")


def np_logsumexp0(a):
    m = a.max(0)
    return np.log(np.exp(a - m).sum(0)) + m


def raw_cases(backend: str):
    """The arrays and the raw array ops, by op name."""
    if backend == "numpy":
        a, b = np.random.randn(3, 3), np.random.randn(3, 3)
        lse = lambda: np_logsumexp0(a)  # noqa: E731
    elif backend == "torch":
        import torch

        torch.set_num_threads(1)
        a, b = torch.randn(3, 3), torch.randn(3, 3)
        lse = lambda: torch.logsumexp(a, 0)  # noqa: E731
    else:
        import jax
        import jax.numpy as jnp

        a, b = jnp.asarray(np.random.randn(3, 3)), jnp.asarray(np.random.randn(3, 3))
        lse = lambda: jax.nn.logsumexp(a, 0)  # noqa: E731
    bt = b.T  # the other order's operand (y's data below is b.T, named (j, i))
    return a, b, dict(zip(OPS, (lambda: a + b, lambda: a + bt.T, lse, lambda: a[0])))


def our_cases(backend: str, a, b) -> dict:
    import funsor_core as fc
    from funsor_core import ops

    fc.set_backend(backend)
    inputs = {"i": fc.Bint[3], "j": fc.Bint[3]}
    x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
    yt = fc.Tensor(b.T, {"j": fc.Bint[3], "i": fc.Bint[3]})
    return dict(zip(OPS, (lambda: x + y, lambda: x + yt,
                          lambda: x.reduce(ops.logaddexp, "i"), lambda: x(i=0))))


def floor_cases(raw: dict) -> dict:
    """Each raw op inside one Python call that returns its array as a new Tensor."""
    import funsor_core as fc
    from funsor_core.atoms.tensor import Tensor

    inputs = {"i": fc.Bint[3], "j": fc.Bint[3]}
    ikey = tuple(inputs.items())

    def floor(fn):
        return lambda: Tensor.make(fn(), inputs, "real", ikey, fc.Real)

    return {name: floor(fn) for name, fn in raw.items()}


def funsor_cases(backend: str, a, b) -> dict:
    from collections import OrderedDict

    import funsor

    funsor.set_backend(backend)
    inputs = OrderedDict(i=funsor.Bint[3], j=funsor.Bint[3])
    x, y = funsor.Tensor(a, inputs), funsor.Tensor(b, inputs)
    yt = funsor.Tensor(b.T, OrderedDict(j=funsor.Bint[3], i=funsor.Bint[3]))
    return dict(zip(OPS, (lambda: x + y, lambda: x + yt,
                          lambda: x.reduce(funsor.ops.logaddexp, "i"), lambda: x(i=0))))


def measure(cases: dict, number: int, repeat: int) -> dict:
    from timing import best_us

    return {name: best_us(fn, number, repeat) for name, fn in cases.items()}


def peer_rows(quick: bool) -> dict | None:
    """funsor 0.4.8's times and the raw times of its process, per backend; None if absent."""
    if not os.path.exists(FUNSOR_PYTHON):
        return None
    args = [FUNSOR_PYTHON, os.path.abspath(__file__), "--peer"] + (["--quick"] if quick else [])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1200,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    if done.returncode:
        print("funsor 0.4.8 failed:", done.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls per timing")
    parser.add_argument("--peer", action="store_true", help="(internal) funsor 0.4.8's rows")
    args = parser.parse_args()
    number, repeat = (2000, 5) if args.quick else (20000, 7)
    if args.peer:
        out = {}
        for backend in ("numpy", "torch"):
            a, b, raw = raw_cases(backend)
            out[backend] = dict(raw=measure(raw, number, repeat),
                                funsor=measure(funsor_cases(backend, a, b), number // 10,
                                               repeat))
        print(json.dumps(out))
        return []
    # This checkout's funsor_core, not whichever one the virtualenv installed.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    peer = peer_rows(args.quick)
    rows = []
    for backend in ("numpy", "torch", "jax"):
        try:
            a, b, raw = raw_cases(backend)
        except ImportError:
            continue
        n = number // 20 if backend == "jax" else number  # eager jax ops take 10-700 us
        raw_us = measure(raw, n, repeat)
        our_us = measure(our_cases(backend, a, b), n, repeat)
        floor_us = measure(floor_cases(raw), n, repeat)
        for name in OPS:
            row = dict(backend=backend, op=name, raw_us=raw_us[name], ours_us=our_us[name],
                       ratio=our_us[name] / raw_us[name], floor_us=floor_us[name])
            if peer is not None and backend in peer:
                p = peer[backend]
                row.update(funsor_us=p["funsor"][name],
                           funsor_ratio=p["funsor"][name] / p["raw"][name])
            rows.append(row)
    print(f"{'backend':8} {'op':24} {'raw us':>8} {'floor us':>8} {'ours us':>8} {'ratio':>6} "
          f"{'/floor':>6} {'funsor us':>10} {'funsor ratio':>12}")
    for r in rows:
        peer_cols = (f"{r['funsor_us']:10.2f} {r['funsor_ratio']:12.1f}" if "funsor_us" in r
                     else f"{'-':>10} {'-':>12}")
        print(f"{r['backend']:8} {r['op']:24} {r['raw_us']:8.2f} {r['floor_us']:8.2f} "
              f"{r['ours_us']:8.2f} {r['ratio']:6.1f} {r['ours_us'] / r['floor_us']:6.1f} "
              f"{peer_cols}")
    return rows


if __name__ == "__main__":
    main()
