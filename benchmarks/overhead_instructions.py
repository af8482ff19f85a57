"""Instructions per eager op on 3x3 arrays (callgrind), beside the raw array op and the floor.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --dump-before=os_getppid \\
        --callgrind-out-file=/tmp/cg.%p python benchmarks/overhead_instructions.py numpy
    python benchmarks/overhead_instructions.py --parse /tmp/cg.<pid>

Each op runs 50 times to warm up, then 500 times between two ``os.getppid()`` calls, which
callgrind takes as dump points (``--dump-before``), so each loop is one dump; ``--parse``
prints the instructions per call with the same loop of an empty lambda subtracted. Counts do
not depend on the load of the machine (what ``overhead.py``'s timings do). One thread.
"""

from __future__ import annotations

import os
import re
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
CALLS = 500
NAMES = ("empty", "raw a + b", "raw a[0]", "floor Tensor.make(a[0])", "x + y",
         "x + y (other order)", "ops.logaddexp(x, y)", "x.reduce(logaddexp, i)", "x(i=0)",
         "x(j=2)", "x * 2.0", "x.reduce(add, {i, j})")


def cases(backend: str) -> list:
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.atoms.tensor import Tensor

    if backend == "torch":
        import torch

        torch.set_num_threads(1)
        a, b = torch.randn(3, 3), torch.randn(3, 3)
    else:
        a, b = np.random.randn(3, 3), np.random.randn(3, 3)
    fc.set_backend(backend)
    inputs = {"i": fc.Bint[3], "j": fc.Bint[3]}
    x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
    yt = fc.Tensor(b.T, {"j": fc.Bint[3], "i": fc.Bint[3]})
    ikey = tuple(inputs.items())
    return [lambda: None, lambda: a + b, lambda: a[0],
            lambda: Tensor.make(a[0], inputs, "real", ikey, fc.Real), lambda: x + y,
            lambda: x + yt, lambda: ops.logaddexp(x, y), lambda: x.reduce(ops.logaddexp, "i"),
            lambda: x(i=0), lambda: x(j=2), lambda: x * 2.0,
            lambda: x.reduce(ops.add, {"i", "j"})]


def parse(prefix: str) -> None:
    def total(k: int) -> int:
        with open(f"{prefix}.{k}") as f:
            return int(re.search(r"^(?:totals|summary):\s+(\d+)", f.read(), re.M).group(1))

    base = total(2)  # dump 1 is the start-up; dump 2 + 2i is the loop of case i
    for i, name in enumerate(NAMES):
        print(f"{name:28s} {(total(2 + 2 * i) - base) / CALLS:10,.0f}")


def main() -> None:
    if sys.argv[1] == "--parse":
        parse(sys.argv[2])
        return
    marker = os.getppid
    for fn in cases(sys.argv[1]):
        for _ in range(50):
            fn()
        marker()
        for _ in range(CALLS):
            fn()
        marker()


if __name__ == "__main__":
    main()
