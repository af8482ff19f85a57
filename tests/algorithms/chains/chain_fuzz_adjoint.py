"""Fuzzing the backward pass through a discrete ``MarkovProduct``: posterior path samples
(``forward_backward(ops.sample, ...)``) against the exact posterior of every path, each
path's frequency within 5 binomial standard deviations, and the MAP path
(``argmax_approximate``) scoring the brute-force best; random K, T, -inf transitions,
both strategies, numpy and torch.

Run long: ``python -m tests.algorithms.chains.chain_fuzz_adjoint 0 300``.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
from scipy.stats import binom

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import argmax_approximate, forward_backward
from funsor_core.sum_product import MarkovProduct
from interpretations import lazy
from tests.algorithms.chains.chain_fuzz import run_cases

N = 4000


def draw_adjoint(seed: int) -> dict:
    """A random small chain for the backward pass.

    Example:
        >>> draw_adjoint(0)["K"] in (1, 2, 3)
        True
    """
    r = np.random.default_rng(seed)
    return dict(seed=seed, K=int(r.integers(1, 4)), T=int(r.integers(1, 5)),
                backend=str(r.choice(["numpy", "torch"])), ninf=bool(r.random() < 0.4),
                strategy=str(r.choice(["parallel", "sequential"])))


def _paths(init, tr):
    # every path x_0..x_T and its log score (float64)
    K, T = init.shape[0], tr.shape[0]
    paths = list(itertools.product(range(K), repeat=T + 1))
    scores = np.array([init[p[0]] + sum(tr[t, p[t], p[t + 1]] for t in range(T))
                       for p in paths])
    return paths, scores


def _root(c, init, tr, sum_op):
    arr = (lambda a: a) if c["backend"] == "numpy" else __import__("torch").tensor
    trans = fc.Tensor(arr(tr), {"t": fc.Bint[c["T"]], "x": fc.Bint[c["K"]],
                                "y": fc.Bint[c["K"]]})
    i = fc.Tensor(arr(init), {"x": fc.Bint[c["K"]]})
    with lazy:
        mp = MarkovProduct(sum_op, ops.add, trans, "t", {"x": "y"}, strategy=c["strategy"])
        root = (i + mp).reduce(sum_op, frozenset({"x", "y"}))
    return trans, i, root


def _path(adj, trans, init, T):
    pts = fc.extract_samples(adj[trans])
    xs = np.asarray(ops.to_numpy(pts["x"].align(("t",) + tuple(
        n for n in pts["x"].inputs if n != "t")).data))
    ys = np.asarray(ops.to_numpy(pts["y"].align(tuple(pts["x"].align(("t",) + tuple(
        n for n in pts["x"].inputs if n != "t")).inputs)).data))
    return np.concatenate([xs, ys[-1:]], 0).reshape(T + 1, -1)


def check_adjoint(c: dict) -> list:
    """Disagreements of sampled and MAP paths with enumeration.

    Example:
        >>> check_adjoint(dict(seed=0, K=2, T=2, backend="numpy", ninf=False,
        ...                    strategy="parallel"))
        []
    """
    r = np.random.default_rng(40_000 + c["seed"])
    init, tr = r.normal(size=c["K"]), r.normal(size=(c["T"], c["K"], c["K"]))
    if c["ninf"]:
        tr[r.random(tr.shape) < 0.3] = -np.inf
    paths, scores = _paths(init, tr)
    if not np.isfinite(scores).any():
        return []  # no posterior: the backward pass raises elsewhere
    p = np.exp(scores - np.logaddexp.reduce(scores))
    previous = fc.get_backend()
    fc.set_backend(c["backend"])
    fails = []
    try:
        trans, i, root = _root(c, init, tr, ops.logaddexp)
        _, adj = forward_backward(ops.sample, ops.add, root, rng_key=c["seed"],
                                  sample_inputs={"particle": fc.Bint[N]})
        drawn = _path(adj, trans, i, c["T"])
        index = {q: k for k, q in enumerate(paths)}
        counts = np.zeros(len(paths))
        for col in drawn.T:
            k = index.get(tuple(int(v) for v in col))
            if k is None:
                fails.append(f"sample: path {col} out of range")
                break
            counts[k] += 1
        # Exact binomial tails, not a normal approximation: for a path with N * p << 1 a
        # normal band of 5 sd + 1 / N is under 2 counts, while 2 draws of it happen with
        # probability ~ (N p)^2 / 2 (seed 12600386: p = 6.4e-6, 2 of 4000, 3 of 160,000 over
        # 40 keys). 1e-7 each side is about 5.2 standard deviations.
        low = binom.cdf(counts, N, p) < 1e-7
        high = binom.sf(counts - 1, N, p) < 1e-7
        bad = low | high
        if bad.any():
            freq = counts / N
            fails.append(f"sample: frequencies {freq[bad][:3]} posterior {p[bad][:3]}")
        trans, i, root = _root(c, init, tr, ops.max)
        with argmax_approximate:
            _, adj = forward_backward(ops.max, ops.add, root)
        best = _path(adj, trans, i, c["T"])[:, 0]
        s = scores[paths.index(tuple(int(v) for v in best))]
        if not np.isclose(s, scores.max(), rtol=1e-12, atol=1e-12):
            fails.append(f"map: path {best} scores {s}, best {scores.max()}")
    except Exception as e:  # noqa: BLE001 (a fuzzer reports every failure)
        fails.append(f"raised {type(e).__name__}: {e}")
    finally:
        fc.set_backend(previous)
    return fails


def main(argv) -> int:
    """Run ``count`` adjoint cases from seed ``first``."""
    return run_cases(draw_adjoint, check_adjoint, argv, "adjoint ")

if __name__ == "__main__":
    sys.exit(main(sys.argv))
