"""Interleaved A/B of the eager per-op overhead between two checkouts of funsor-core.

    python benchmarks/overhead_ab.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 3] [--callgrind]

Each round runs ``overhead.py``'s three eager ops (``Tensor + Tensor``,
``.reduce(ops.logaddexp, "i")``, ``t(i=0)`` on 3x3 arrays, numpy and torch) in a fresh
process per checkout, alternating, so that load on the machine hits both alike; it prints the
best time of each. With ``--callgrind`` it also counts the instructions per op with valgrind's
callgrind (repeatable whatever else the machine does): the count of a loop of 20,000 ops minus
that of the same script doing none. One thread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

CHILD = r'''
import json, sys, timeit
import numpy as np
import torch
torch.set_num_threads(1)
import funsor_core as fc
from funsor_core import ops
mode = sys.argv[1]
out = {}
for bk, make in (("numpy", np.random.randn), ("torch", torch.randn)):
    a, b = make(3, 3), make(3, 3)
    inputs = {"i": fc.Bint[3], "j": fc.Bint[3]}
    x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
    cases = {"add": lambda: x + y, "reduce": lambda: x.reduce(ops.logaddexp, "i"),
             "subs": lambda: x(i=0)}
    for name, fn in cases.items():
        key = f"{bk} {name}"
        if mode == "time":
            fn()
            out[key] = min(timeit.repeat(fn, number=5000, repeat=15)) / 5000 * 1e6
        elif mode == key:
            for _ in range(20000):
                fn()
print(json.dumps(out))
'''

ENV = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def _run(checkout: str, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], cwd=checkout, env=ENV,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _instructions(checkout: str, mode: str) -> int:
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, "-c", CHILD, mode], cwd=checkout, env=ENV,
                          capture_output=True, text=True, check=True)
    return int(re.search(r"refs:\s+([\d,]+)", proc.stderr).group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--callgrind", action="store_true")
    args = parser.parse_args()
    checkouts = (args.old, args.new)
    times: dict = {c: {} for c in checkouts}
    for _ in range(args.rounds):
        for c in checkouts:
            for key, us in _run(c, "time").items():
                times[c].setdefault(key, []).append(us)
    keys = list(times[args.old])
    print(f"{'op':16} {'old best us':>12} {'new best us':>12} {'new/old':>8}")
    for key in keys:
        old, new = min(times[args.old][key]), min(times[args.new][key])
        print(f"{key:16} {old:12.2f} {new:12.2f} {new / old:8.3f}")
    if args.callgrind:
        print(f"\n{'op':16} {'old instr/op':>13} {'new instr/op':>13} {'new/old':>8}")
        base = {c: _instructions(c, "none") for c in checkouts}
        for key in keys:
            per = [(_instructions(c, key) - base[c]) / 20000 for c in checkouts]
            print(f"{key:16} {per[0]:13.0f} {per[1]:13.0f} {per[1] / per[0]:8.3f}")


if __name__ == "__main__":
    main()
