"""Compiled variable elimination on seven-segment digits (Darwiche 2020, section 5.2).

A digit (10 values) sits in a 7 x 4 box whose upper-left corner is (``row``, ``col``) of an
n x n image. Seven segments, each a thin rectangle of the box: segment ``s`` is active
(``a_s``) as a function of the digit; ``sr_s_i`` (segment s covers image row i) is a function
of ``row``, ``sc_s_j`` of ``col``; the segment pixel ``q_s_i_j = a_s and sr_s_i and sc_s_j``
is a function of those three; image pixel ``p_i_j`` is a noisy OR of the segment pixels that
can reach it (segment pixels that never can are pruned, as the paper's footnote 12 does).
Every node but the pixels and the three roots is functional, so the planner replicates them
and shrinks separators:

1. Table 3's trend: the largest cluster (rank and binary rank) of a classical jointree
   against the replicated and shrunk one (the paper: 33.3 -> 12.6 at 8x8, 140 -> 19.3 at
   16x16; our model and elimination order differ, the direction is the point);
2. noisy digits classified by the compiled program, all images in one batched call,
   checked on one image against enumeration of (digit, row, col).

Run: ``python examples/compiled_digits.py [--sizes 8 10 12 14 16] [--batch 100]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled.jointree import build_jointree
from interpretations.lazy import lazy

# Segments as (rows, cols) of the 7 x 4 box: a top, b upper right, c lower right, d bottom,
# e lower left, f upper left, g middle.
SEGMENTS = {"a": ((0,), range(4)), "b": (range(4), (3,)), "c": (range(3, 7), (3,)),
            "d": ((6,), range(4)), "e": (range(3, 7), (0,)), "f": (range(4), (0,)),
            "g": ((3,), range(4))}
DIGITS = ["abcdef", "bc", "abdeg", "abcdg", "bcfg", "acdfg", "acdefg", "abc", "abcdefg",
          "abcdfg"]
NOISE = (0.05, 0.9)  # P(pixel on | no segment on it), P(pixel on | some segment on it)


def covers(n, axis):
    """Per segment, ``[corner, i, on?]``: whether image line i is covered (axis 0 rows)."""
    corners = n - (7 if axis == 0 else 4) + 1
    out = {}
    for s, lines in SEGMENTS.items():
        t = np.zeros((corners, n, 2))
        for corner in range(corners):
            hit = {corner + k for k in lines[axis]}
            for i in range(n):
                t[corner, i, int(i in hit)] = 1.0
        out[s] = t
    return out


def structure(n):
    """``(tables, functional outs)``: one ``(names, array)`` per node of the network."""
    rows, cols = covers(n, 0), covers(n, 1)
    nr, nc = rows["a"].shape[0], cols["a"].shape[0]
    tables = [(("digit",), np.full(10, 0.1)), (("row",), np.full(nr, 1 / nr)),
              (("col",), np.full(nc, 1 / nc))]
    outs = [None, None, None]
    for s in SEGMENTS:
        act = np.zeros((10, 2))
        act[np.arange(10), [int(s in d) for d in DIGITS]] = 1.0
        tables.append((("digit", f"a_{s}"), act))
        outs.append(f"a_{s}")
        for i in range(n):
            if rows[s][:, i, 1].any():
                tables.append((("row", f"sr_{s}_{i}"), rows[s][:, i]))
                outs.append(f"sr_{s}_{i}")
            if cols[s][:, i, 1].any():
                tables.append((("col", f"sc_{s}_{i}"), cols[s][:, i]))
                outs.append(f"sc_{s}_{i}")
    and3 = np.zeros((2, 2, 2, 2))
    and3[..., 0] = 1.0
    and3[1, 1, 1] = (0.0, 1.0)
    for i in range(n):
        for j in range(n):
            parents = []
            for s in SEGMENTS:
                if rows[s][:, i, 1].any() and cols[s][:, j, 1].any():
                    q = f"q_{s}_{i}_{j}"
                    tables.append(((f"a_{s}", f"sr_{s}_{i}", f"sc_{s}_{j}", q), and3))
                    outs.append(q)
                    parents.append(q)
            tables.append((tuple(parents) + (f"p{i}_{j}",), noisy_or(len(parents))))
            outs.append(None)
    return tables, outs


def noisy_or(k):
    """``[q_1, ..., q_k, p]``: the pixel is on with NOISE[1] if any parent is on."""
    on = np.zeros((2,) * k, dtype=bool)
    for idx in np.ndindex(*on.shape):
        on[idx] = any(idx)
    prob = np.where(on, NOISE[1], NOISE[0])
    return np.stack([1 - prob, prob], -1)


def table_3(sizes_n):
    print("image  nodes  rank  binary rank   |  nodes  rank  binary rank  (functional CPTs)")
    for n in sizes_n:
        tables, outs = structure(n)
        scopes = [names for names, _ in tables]
        sizes = {k: d for names, t in tables for k, d in zip(names, t.shape)}
        plain = build_jointree(scopes, [None] * len(scopes), sizes, keep=("digit",)).stats()
        t0 = time.perf_counter()
        shrunk = build_jointree(scopes, outs, sizes, keep=("digit",)).stats()
        ms = (time.perf_counter() - t0) * 1e3
        print(f"{n:2d}x{n:<2d} {plain['nodes']:6d} {plain['max_rank']:5d} "
              f"{plain['max_binary_rank']:12.1f}   | {shrunk['nodes']:6d} "
              f"{shrunk['max_rank']:5d} {shrunk['max_binary_rank']:12.1f}  "
              f"(planned in {ms:.0f} ms)")


def sample_images(n, batch, rng):
    """Clean digits at random places, each pixel flipped by the model's noise."""
    rows, cols = covers(n, 0), covers(n, 1)
    digits = rng.integers(0, 10, size=batch)
    images = np.zeros((batch, n, n), dtype=int)
    for k, d in enumerate(digits):
        r = rng.integers(0, rows["a"].shape[0])
        c = rng.integers(0, cols["a"].shape[0])
        on = np.zeros((n, n), dtype=bool)
        for s in DIGITS[d]:
            on |= (rows[s][r, :, 1][:, None] * cols[s][c, :, 1][None, :]).astype(bool)
        images[k] = rng.random((n, n)) < np.where(on, NOISE[1], NOISE[0])
    return digits, images


def classify(n, batch, seed=0):
    rng = np.random.default_rng(seed)
    digits, images = sample_images(n, batch, rng)
    tables, outs = structure(n)
    terms, declared = [], {}
    for (names, t), out in zip(tables, outs):
        inputs = {k: fc.Bint[d] for k, d in zip(names, t.shape)}
        terms.append(fc.Tensor(t, inputs))
        if out is not None:
            declared[out] = terms[-1]
    evidence = {}
    for i in range(n):
        for j in range(n):
            terms.append(fc.Variable(f"e{i}_{j}", fc.Reals[batch, 2])["b", f"p{i}_{j}"])
            evidence[f"e{i}_{j}"] = np.eye(2)[images[:, i, j]]
    names = frozenset(k for names, _ in tables for k in names) - {"digit"}
    with lazy:
        expr = fc.sum_product(ops.add, ops.mul, terms, names)
    t0 = time.perf_counter()
    program = fc.compile(expr, functional=declared)
    t1 = time.perf_counter()
    joint = program(**evidence)
    t2 = time.perf_counter()
    joint = np.transpose(joint, [program.output.index(k) for k in ("b", "digit")])
    posterior = joint / joint.sum(1, keepdims=True)
    accuracy = float((posterior.argmax(1) == digits).mean())
    stats = program.stats()
    print(f"{n}x{n}: compiled in {1e3 * (t1 - t0):.0f} ms (max binary rank "
          f"{stats['max_binary_rank']:.1f}, {stats['flops']:.2g} flops); {batch} images in "
          f"{1e3 * (t2 - t1):.0f} ms; accuracy of the posterior's digit {accuracy:.2f}")
    check_one(n, images[0], posterior[0])


def check_one(n, image, posterior):
    # Enumeration, independent of the network: given (digit, row, col) every pixel's clean
    # value is fixed, so P(image | digit, row, col) is a product of NOISE terms. (The
    # uncompiled sum_product cannot run here: without the functional licences its plan needs
    # petabytes, and the memory budget says so.)
    rows, cols = covers(n, 0), covers(n, 1)
    likelihood = np.zeros(10)
    for d in range(10):
        for r in range(rows["a"].shape[0]):
            for c in range(cols["a"].shape[0]):
                on = np.zeros((n, n), dtype=bool)
                for s in DIGITS[d]:
                    on |= (rows[s][r, :, 1][:, None] * cols[s][c, :, 1][None, :]).astype(bool)
                p_on = np.where(on, NOISE[1], NOISE[0])
                likelihood[d] += np.prod(np.where(image, p_on, 1 - p_on))
    expected = likelihood / likelihood.sum()
    assert np.allclose(posterior, expected, rtol=1e-9), (posterior, expected)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[8, 10, 12])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--classify-size", type=int, default=8)
    args = parser.parse_args()
    table_3(args.sizes)
    classify(args.classify_size, args.batch)


if __name__ == "__main__":
    main()
