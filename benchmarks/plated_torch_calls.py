"""Torch calls and per-piece CPU time of the plated model's rows (issue #29, h52).

Counts the torch functions each row of ``contraction.py``'s plated model calls (a
``TorchFunctionMode`` counter; ``__get__`` is a tensor attribute read, not a kernel) and
times, one thread, best of many by CPU time, the pieces of the ``apply_optimizer`` row: the
Tensors, the lazy ``sum_product`` (fresh, as in the row, and with a tree of the same arrays
alive, when every term is a cons hit), the lazy build followed by the hand code (the cost of
alternating Python-heavy term building with the kernels), and ``apply_optimizer`` of a kept
term. Run: ``OMP_NUM_THREADS=1 python benchmarks/plated_torch_calls.py``.
"""
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contraction as C  # noqa: E402
import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402
from interpretations import lazy  # noqa: E402
from interpretations.optimize import apply_optimizer  # noqa: E402


class Count(TorchFunctionMode):
    """Counts torch calls by name while active."""

    def __init__(self):
        super().__init__()
        self.calls = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))


def best_us(fn, number: int = 500, rounds: int = 9) -> float:
    """The best per-call CPU time of ``fn`` in microseconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number * 1e6)
    return best


def report(d: int, ni: int, nj: int) -> None:
    """Print the torch calls per row and the pieces' times at one size."""
    if True:
        arrays = [torch.tensor(x) for x in C.plated_arrays(size=(d, ni, nj))]
        B = fc.Bint
        domains = ({"z": B[d]}, {"i": B[ni], "z": B[d], "x": B[d]},
                   {"i": B[ni], "j": B[nj], "x": B[d]})
        names, plates = frozenset("zxij"), frozenset("ij")

        def tensors():
            return [fc.Tensor(x, dom) for x, dom in zip(arrays, domains)]

        def build(ts):
            with lazy:
                return C.sum_product(ops.logaddexp, ops.add, ts, names, plates)

        def optimizer():
            return apply_optimizer(build(tensors())).data

        def eager():
            return C.sum_product(ops.logaddexp, ops.add, tensors(), names, plates).data

        def einsum():
            return fc.einsum("z,izx,ijx->", *arrays, plates="ij", backend="log")

        hand = C.plated_hand("torch")
        rows = {"hand_exact": lambda: hand["hand_exact"](*arrays),
                "hand_shifted": lambda: hand["hand_shifted"](*arrays),
                "einsum": einsum, "sum_product": eager, "optimizer": optimizer}
        for name, fn in rows.items():
            fn()
            with Count() as counter:
                fn()
            kernels = {k: v for k, v in counter.calls.items() if k != "__get__"}
            print((d, ni, nj), name, sum(kernels.values()), "kernels", kernels)
        # Fresh: no term of these arrays outlives a call, as in the row. (A Tensor is
        # cons-hashed by its array, so while one lazy tree of these arrays is alive, the next
        # call's Tensors and every lazy term are cons hits, and a build costs half as much.)
        hand_exact = rows["hand_exact"]

        def build_then_hand():
            e = build(tensors())
            hand_exact()
            return e

        fresh = {**rows, "tensors": tensors, "lazy build": lambda: build(tensors()),
                 "lazy build, then hand exact": build_then_hand}
        for name, fn in fresh.items():
            print(f"  {name:28s} {best_us(fn):7.1f} us")
        ts = tensors()
        e = build(ts)  # kept alive from here on: the cons-hit figures (h52's pieces)
        kept = {"lazy build (cons hits)": lambda: build(ts),
                "apply_optimizer(kept term)": lambda: apply_optimizer(e),
                "optimizer row (cons hits)": rows["optimizer"]}
        for name, fn in kept.items():
            print(f"  {name:28s} {best_us(fn):7.1f} us")


def main() -> None:
    torch.set_num_threads(1)
    fc.set_backend("torch")
    for size in C.PLATED_SIZES:
        report(*size)


if __name__ == "__main__":
    main()
