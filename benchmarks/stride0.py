"""Stride-0 (expanded) torch operands in the chain and contraction kernels, forward + backward.

A shared transition matrix broadcast over time (``A.expand(T, K, K)``, stride 0 along ``t``)
fed to ``MarkovProduct`` (parallel and sequential) and to ``sum_product`` with per-step
observations, against the same values made dense by the caller (``.contiguous()``), which is
what densifying at the kernel boundary would cost. Also the raw ``torch.bmm`` backward with
one expanded operand. Process time, best of ``--repeat``, alternating dense/expanded, one
thread; the ratio expanded / dense says whether densifying would pay (it would below 1/1).

    OMP_NUM_THREADS=1 python benchmarks/stride0.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import sum_product


def _chain(a, obs, strategy, with_obs):
    def run(dense):
        data = a.expand(obs.shape[0], *a.shape)
        if dense:
            data = data.contiguous()
        t, k = obs.shape
        inputs = {"t": fc.Bint[t], "x": fc.Bint[k], "y": fc.Bint[k]}
        trans = fc.Tensor(data, inputs)
        if with_obs:
            trans = trans + fc.Tensor(obs, {"t": fc.Bint[t], "y": fc.Bint[k]})
        z = fc.MarkovProduct(ops.logaddexp, ops.add, trans, "t", {"x": "y"}, (("x", "y"),),
                             strategy)
        z.reduce(ops.logaddexp).data.backward()
    return run


def _sum_product(a, obs):
    def run(dense):
        t, k = obs.shape
        data = a.expand(t, k, k)
        if dense:
            data = data.contiguous()
        f = fc.Tensor(data, {"t": fc.Bint[t], "x": fc.Bint[k], "y": fc.Bint[k]})
        g = fc.Tensor(obs, {"t": fc.Bint[t], "y": fc.Bint[k]})
        r = sum_product(ops.logaddexp, ops.add, [f, g], frozenset("ty"))
        r.reduce(ops.logaddexp).data.backward()
    return run


def _bmm(a, n, side):
    x = torch.randn(n, *a.shape, dtype=a.dtype, requires_grad=True)

    def run(dense):
        e = a.expand(n, *a.shape)
        if dense:
            e = e.contiguous()
        (torch.bmm(e, x) if side == "left" else torch.bmm(x, e)).sum().backward()
    return run


def _best(fn, repeat):
    fn(True)
    fn(False)
    best = {True: float("inf"), False: float("inf")}
    for _ in range(repeat):
        for dense in (True, False):
            t0 = time.process_time()
            fn(dense)
            best[dense] = min(best[dense], time.process_time() - t0)
    return best[True], best[False]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter chains")
    args = parser.parse_args()
    torch.set_num_threads(1)
    fc.set_backend("torch")
    repeat, t, k = (3, 199, 16) if args.quick else (15, 999, 16)
    torch.manual_seed(0)
    a = torch.randn(k, k, dtype=torch.float64, requires_grad=True)
    obs = torch.randn(t, k, dtype=torch.float64)
    cases = [
        ("MarkovProduct parallel", _chain(a, obs, "parallel", False)),
        ("MarkovProduct sequential", _chain(a, obs, "sequential", False)),
        ("MarkovProduct parallel + obs", _chain(a, obs, "parallel", True)),
        ("sum_product over t, y", _sum_product(a, obs)),
        ("torch.bmm(expanded, x)", _bmm(a, t - 1, "left")),
        ("torch.bmm(x, expanded)", _bmm(a, t - 1, "right")),
    ]
    print(f"stride-0 operands, torch {torch.__version__}, T={t} K={k}, fwd + bwd (ms)")
    print(f"{'case':<32}{'dense':>10}{'expanded':>10}{'exp / dense':>13}")
    for name, fn in cases:
        dense, expanded = _best(fn, repeat)
        print(f"{name:<32}{1e3 * dense:>10.2f}{1e3 * expanded:>10.2f}"
              f"{expanded / dense:>13.2f}")


if __name__ == "__main__":
    main()
