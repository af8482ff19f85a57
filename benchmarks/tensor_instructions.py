"""Instructions per ``Tensor(array, inputs)`` (callgrind), as the 1,000-variable tree builds them.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --dump-before=os_getppid \\
        --callgrind-out-file=/tmp/cg.%p python benchmarks/tensor_instructions.py numpy
    python benchmarks/tensor_instructions.py --parse /tmp/cg.<pid>

Each case builds a list of 2,000 Tensors from arrays and input dicts made beforehand and drops
it (so each round's Tensors die, their cons entries with them, as in ``contraction.py``'s rows),
5 rounds to warm up, then 5 rounds between two ``os.getppid()`` calls (callgrind's dump points).
``--parse`` prints the instructions per Tensor with the same loop building ``(array, inputs)``
pairs subtracted. Cases: the tree's 2,000 signatures (one dict each: 1,000 of one input over
(4,) arrays, 999 of two over (4, 4) arrays, as ``contraction.tree``), and one signature of two
inputs over 2,000 (4, 4) arrays. Counts do not depend on the load of the machine.
"""

from __future__ import annotations

import os
import re
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
N = 2000
ROUNDS = 5
NAMES = ("empty (pairs)", "tree: 2,000 signatures", "one signature, 2 inputs")


def cases(backend: str) -> list:
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import funsor_core as fc

    rng = np.random.default_rng(0)
    names = [f"v{k}" for k in range(N)]
    tree_domains = [{names[k]: fc.Bint[4]} for k in range(N // 2)] + [
        {names[k - 1]: fc.Bint[4], names[k]: fc.Bint[4]} for k in range(1, N // 2 + 1)]
    tree_arrays = [rng.normal(size=(4,) * len(d)) for d in tree_domains]
    one = {"i": fc.Bint[4], "j": fc.Bint[4]}
    one_domains = [one] * N
    one_arrays = [rng.normal(size=(4, 4)) for _ in range(N)]
    if backend == "torch":
        import torch

        torch.set_num_threads(1)
        tree_arrays = [torch.tensor(a) for a in tree_arrays]
        one_arrays = [torch.tensor(a) for a in one_arrays]
    fc.set_backend(backend)
    Tensor = fc.Tensor
    tree_pairs = list(zip(tree_arrays, tree_domains))
    one_pairs = list(zip(one_arrays, one_domains))
    return [lambda: [(a, d) for a, d in tree_pairs],
            lambda: [Tensor(a, d) for a, d in tree_pairs],
            lambda: [Tensor(a, d) for a, d in one_pairs]]


def parse(prefix: str) -> None:
    def total(k: int) -> int:
        with open(f"{prefix}.{k}") as f:
            return int(re.search(r"^(?:totals|summary):\s+(\d+)", f.read(), re.M).group(1))

    base = total(2)  # dump 1 is the start-up; dump 2 + 2i is the loop of case i
    for i, name in enumerate(NAMES):
        print(f"{name:28s} {(total(2 + 2 * i) - base) / (ROUNDS * N):10,.0f}")


def main() -> None:
    if sys.argv[1] == "--parse":
        parse(sys.argv[2])
        return
    marker = os.getppid
    for fn in cases(sys.argv[1]):
        for _ in range(ROUNDS):
            fn()
        marker()
        for _ in range(ROUNDS):
            fn()
        marker()


if __name__ == "__main__":
    main()
