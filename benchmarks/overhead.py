"""Per-operation overhead of eager funsors on tiny arrays, as ratios to the raw array op.

Measures ``Tensor + Tensor``, ``.reduce(ops.logaddexp, "i")`` and ``t(i=0)`` on 3x3 arrays
with numpy and torch, beside funsor 0.4.8 (numpy backend) when it is installed.
Run with one thread: ``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/overhead.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from timing import best_us  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402


def np_logsumexp0(a):
    m = a.max(0)
    return np.log(np.exp(a - m).sum(0)) + m


def cases_numpy():
    a, b = np.random.randn(3, 3), np.random.randn(3, 3)
    inputs = {"i": fc.Bint[3], "j": fc.Bint[3]}
    x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
    return [
        ("Tensor + Tensor", lambda: a + b, lambda: x + y),
        ("reduce(logaddexp, i)", lambda: np_logsumexp0(a), lambda: x.reduce(ops.logaddexp, "i")),
        ("t(i=0)", lambda: a[0], lambda: x(i=0)),
    ]


def cases_torch():
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    inputs = {"i": fc.Bint[3], "j": fc.Bint[3]}
    x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
    return [
        ("Tensor + Tensor", lambda: a + b, lambda: x + y),
        ("reduce(logaddexp, i)", lambda: torch.logsumexp(a, 0),
         lambda: x.reduce(ops.logaddexp, "i")),
        ("t(i=0)", lambda: a[0], lambda: x(i=0)),
    ]


def cases_funsor_numpy():
    try:
        import funsor
    except ImportError:
        return None
    from collections import OrderedDict

    funsor.set_backend("numpy")
    a, b = np.random.randn(3, 3), np.random.randn(3, 3)
    inputs = OrderedDict(i=funsor.Bint[3], j=funsor.Bint[3])
    x, y = funsor.Tensor(a, inputs), funsor.Tensor(b, inputs)
    return [
        lambda: x + y,
        lambda: x.reduce(funsor.ops.logaddexp, "i"),
        lambda: x(i=0),
    ]


def main() -> list[dict]:
    rows = []
    peer = cases_funsor_numpy()
    for backend, cases in (("numpy", cases_numpy()), ("torch", cases_torch())):
        for k, (name, raw, ours) in enumerate(cases):
            raw_us, our_us = best_us(raw, 20000, 7), best_us(ours, 20000, 7)
            row = dict(backend=backend, op=name, raw_us=raw_us, ours_us=our_us,
                       ratio=our_us / raw_us)
            if backend == "numpy" and peer is not None:
                peer_us = best_us(peer[k], number=2000, repeat=7)
                row.update(funsor_us=peer_us, funsor_ratio=peer_us / raw_us)
            rows.append(row)
    print(f"{'backend':8} {'op':22} {'raw us':>8} {'ours us':>8} {'ratio':>6} "
          f"{'funsor us':>10} {'funsor ratio':>12}")
    for r in rows:
        peer_cols = (f"{r['funsor_us']:10.2f} {r['funsor_ratio']:12.1f}" if "funsor_us" in r
                     else f"{'-':>10} {'-':>12}")
        print(f"{r['backend']:8} {r['op']:22} {r['raw_us']:8.2f} {r['ours_us']:8.2f} "
              f"{r['ratio']:6.1f} {peer_cols}")
    return rows


if __name__ == "__main__":
    main()
