"""Instructions per call (callgrind) of `contraction.py`'s torch rows still over target: the
plated model at 4,10,10 and the 1,000-variable tree, beside their hand code and floors.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --dump-before=os_getppid \\
        --callgrind-out-file=/tmp/cg.%p python benchmarks/contraction_instructions.py torch
    python benchmarks/contraction_instructions.py --parse /tmp/cg.<pid>

Each case runs a few times to warm up, then ``CALLS`` times between two ``os.getppid()`` calls
(callgrind's dump points); ``--parse`` prints instructions per call, the empty loop
subtracted, and the ratio to the case's hand code. The closures are ``contraction.py``'s (its
``plated_row`` and ``tree_row`` bodies, rebuilt here with the same arrays). Counts do not
depend on the load of the machine; they count the array libraries' kernels too, whose
instructions run faster per instruction than the interpreter's, so a ratio of instructions is
a lower bound of the ratio of times on a Python-heavy row.

The tree's floor cases: ``2,000 slotted objects`` builds, per factor, one instance of a class
with the Tensor's five slots (and a weak reference slot) by ``object.__new__`` and five
stores, what any Python term per factor costs at least (no checks, no cons entry).
"""

from __future__ import annotations

import os
import re
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
PLATED = ("empty", "plated: hand exact", "plated: 3 Tensors", "plated: sum_product",
          "plated: lazy terms alone", "plated: apply_optimizer")
TREE = ("tree: hand level-batched", "tree: einsum of arrays", "tree: 2,000 Tensors",
        "tree: 2,000 slotted objects", "tree: einsum of Tensors", "tree: sum_product",
        "tree: apply_optimizer")
NAMES = PLATED + TREE
CALLS = {name: 200 for name in PLATED} | {name: 3 for name in TREE}


def cases(backend: str) -> list:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(here))
    sys.path.insert(0, here)
    import contraction as C
    import numpy as np
    import torch

    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.sum_product import sum_product
    from interpretations import lazy
    from interpretations.optimize import apply_optimizer

    torch.set_num_threads(1)
    fc.set_backend(backend)
    convert = torch.tensor if backend == "torch" else np.asarray
    # The plated model, 4,10,10 (``contraction.plated_row``).
    d, ni, nj = 4, 10, 10
    arrays = [convert(x) for x in C.plated_arrays(size=(d, ni, nj))]
    B = fc.Bint
    domains = ({"z": B[d]}, {"i": B[ni], "z": B[d], "x": B[d]},
               {"i": B[ni], "j": B[nj], "x": B[d]})
    names, plates = frozenset("zxij"), frozenset("ij")
    hand = C.plated_hand(backend)["hand_exact"]
    Tensor = fc.Tensor

    def tensors():
        return [Tensor(x, dom) for x, dom in zip(arrays, domains)]

    def by_sum_product():
        return sum_product(ops.logaddexp, ops.add, tensors(), names, plates).data

    def lazy_alone():
        ts = tensors()
        with lazy:
            return sum_product(ops.logaddexp, ops.add, ts, names, plates)

    def by_optimizer():
        return apply_optimizer(lazy_alone()).data

    # The tree of 1,000 variables (``contraction.tree_row``).
    inputs, probs, parents = C.tree(1000)
    eq = ",".join(inputs) + "->"
    l_arrays = [convert(np.log(p)) for p in probs]
    t_domains = [{c: B[C.DOMAIN] for c in ins} for ins in inputs]
    t_names = frozenset(C.opt_einsum.get_symbol(k) for k in range(1000))
    level = C.level_batched(parents, backend)
    pairs = list(zip(l_arrays, t_domains))

    class Slotted:
        __slots__ = ("_args", "data", "_ikey", "inputs", "output", "__weakref__")

    new, real = object.__new__, fc.Real

    def slotted():
        out = []
        for a, dom in pairs:
            obj = new(Slotted)
            obj._args = (a, dom, "real")
            obj.data = a
            obj._ikey = dom
            obj.inputs = dom
            obj.output = real
            out.append(obj)
        return out

    def t_tensors():
        return [Tensor(a, dom) for a, dom in pairs]

    def t_optimizer():
        ts = t_tensors()
        with lazy:
            e = sum_product(ops.logaddexp, ops.add, ts, t_names)
        return apply_optimizer(e).data

    return [lambda: None, lambda: hand(*arrays), tensors, by_sum_product, lazy_alone,
            by_optimizer,
            lambda: level(l_arrays), lambda: fc.einsum(eq, *l_arrays, backend="log"),
            t_tensors, slotted,
            lambda: fc.einsum(eq, *t_tensors(), backend="log").data,
            lambda: sum_product(ops.logaddexp, ops.add, t_tensors(), t_names).data,
            t_optimizer]


def parse(prefix: str) -> None:
    def total(k: int) -> int:
        with open(f"{prefix}.{k}") as f:
            return int(re.search(r"^(?:totals|summary):\s+(\d+)", f.read(), re.M).group(1))

    # dump 1 is the start-up; dump 2 + 2i is the loop of case i
    empty = total(2) / CALLS["empty"]
    per = {name: total(2 + 2 * i) / CALLS[name] - empty for i, name in enumerate(NAMES)}
    for name in NAMES[1:]:
        ref = per["plated: hand exact"] if name in PLATED else per["tree: hand level-batched"]
        print(f"{name:30s} {per[name]:14,.0f} {per[name] / ref:7.2f}x")


def main() -> None:
    if sys.argv[1] == "--parse":
        parse(sys.argv[2])
        return
    marker = os.getppid
    for name, fn in zip(NAMES, cases(sys.argv[1])):
        for _ in range(3):
            fn()
        marker()
        for _ in range(CALLS[name]):
            fn()
        marker()


if __name__ == "__main__":
    main()
