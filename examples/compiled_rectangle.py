"""Compiled variable elimination on the rectangle model (Darwiche 2020, section 5.1).

An n x n image shows a rectangle: its corner (``row``, ``col``), ``height`` and ``width`` have
n values each, and a binary ``label`` says tall or wide. ``r_i`` (row i is covered) is a
function of ``row, height``, ``c_j`` of ``col, width``, and pixel ``p_i_j`` is noisy given
``r_i, c_j``. Declaring ``r_i`` and ``c_j`` functional lets the jointree planner replicate
them and shrink separators:

1. Table 1's structural columns: network nodes and the largest cluster (rank, binary rank)
   of a classical jointree against the replicated and shrunk one;
2. the posterior of ``label`` for a batch of noisy images: compiled once, run on the whole
   batch, checked against the uncompiled ``sum_product`` on one image.

Run: ``python examples/compiled_rectangle.py [--sizes 8 10 12 14 16 20]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled.jointree import build_jointree
from funsor_core.algorithms.compiled.models import rectangle_structure as structure
from interpretations.lazy import lazy


def table_1(sizes_n):
    print("image  nodes  rank  binary rank   |  nodes  rank  binary rank  (functional CPTs)")
    for n in sizes_n:
        scopes, outs, sizes = structure(n)
        plain = build_jointree(scopes, [None] * len(scopes), sizes, keep=("label",)).stats()
        t0 = time.perf_counter()
        shrunk = build_jointree(scopes, outs, sizes, keep=("label",)).stats()
        ms = (time.perf_counter() - t0) * 1e3
        print(f"{n:2d}x{n:<2d} {plain['nodes']:6d} {plain['max_rank']:5d} "
              f"{plain['max_binary_rank']:12.1f}   | {shrunk['nodes']:6d} "
              f"{shrunk['max_rank']:5d} {shrunk['max_binary_rank']:12.1f}  "
              f"(planned in {ms:.0f} ms)")


def cpts(n):
    """The model's tables; extent k has index k - 1; tall: height >= n/2 > width."""
    half = n // 2
    size = np.arange(1, n + 1)
    fits = size[None, :] <= n - np.arange(n)[:, None]  # [corner, extent]
    height = np.zeros((2, n, n))
    width = np.zeros((2, n, n))
    for label, (tall_h, tall_w) in enumerate([(size >= half, size < half),
                                              (size < half, size >= half)]):
        for t, mask in ((height, tall_h), (width, tall_w)):
            ok = fits & mask[None, :]
            ok = np.where(ok.any(1, keepdims=True), ok, fits)  # nothing fits: any extent
            t[label] = ok / ok.sum(1, keepdims=True)
    corner = np.arange(n)
    covered = (corner[:, None, None] <= corner[None, None, :]) & \
        (corner[None, None, :] < corner[:, None, None] + size[None, :, None])  # [c, e, i]
    cover = np.stack([~covered, covered], -1).astype(float)  # [corner, extent, i, on?]
    noise = np.array([[[0.95, 0.05], [0.95, 0.05]], [[0.95, 0.05], [0.1, 0.9]]])
    return height, width, cover, noise


def model_terms(n, batch):
    """Tensors for the CPTs and a parameter per pixel for its batched evidence."""
    height, width, cover, noise = cpts(n)
    B = fc.Bint
    terms = [fc.Tensor(np.full(2, 0.5), {"label": B[2]}),
             fc.Tensor(np.full(n, 1 / n), {"row": B[n]}),
             fc.Tensor(np.full(n, 1 / n), {"col": B[n]}),
             fc.Tensor(height, {"label": B[2], "row": B[n], "height": B[n]}),
             fc.Tensor(width, {"label": B[2], "col": B[n], "width": B[n]})]
    declared = {}
    for i in range(n):
        for name, corner, extent in ((f"r{i}", "row", "height"), (f"c{i}", "col", "width")):
            t = fc.Tensor(cover[:, :, i], {corner: B[n], extent: B[n], name: B[2]})
            declared[name] = t
            terms.append(t)
    for i in range(n):
        for j in range(n):
            p = f"p{i}_{j}"
            terms.append(fc.Tensor(noise, {f"r{i}": B[2], f"c{j}": B[2], p: B[2]}))
            terms.append(fc.Variable(f"e{i}_{j}", fc.Reals[batch, 2])["b", p])
    return terms, declared


def sample_images(n, batch, rng):
    height, width, cover, noise = cpts(n)
    labels = rng.integers(0, 2, size=batch)
    images = np.zeros((batch, n, n), dtype=int)
    for k, label in enumerate(labels):
        row, col = rng.integers(0, n, size=2)
        h = rng.choice(n, p=height[label, row])
        w = rng.choice(n, p=width[label, col])
        on = cover[row, h, :, 1][:, None] * cover[col, w, :, 1][None, :]
        images[k] = rng.random((n, n)) < noise[1, 1, 1] * on + noise[0, 0, 1] * (1 - on)
    return labels, images


def classify(n, batch, seed=0):
    rng = np.random.default_rng(seed)
    labels, images = sample_images(n, batch, rng)
    terms, declared = model_terms(n, batch)
    with lazy:
        expr = fc.sum_product(ops.add, ops.mul, terms,
                              frozenset(structure(n)[2]) - {"label"})
    t0 = time.perf_counter()
    program = fc.compile(expr, functional=declared)
    t1 = time.perf_counter()
    evidence = {f"e{i}_{j}": np.eye(2)[images[:, i, j]] for i in range(n) for j in range(n)}
    joint = program(**evidence)
    t2 = time.perf_counter()
    joint = np.transpose(joint, [program.output.index(k) for k in ("b", "label")])
    posterior = joint / joint.sum(1, keepdims=True)
    accuracy = float((posterior.argmax(1) == labels).mean())
    stats = program.stats()
    print(f"{n}x{n}: compiled in {1e3 * (t1 - t0):.0f} ms (max binary rank "
          f"{stats['max_binary_rank']:.1f}, {stats['flops']:.2g} flops); {batch} images in "
          f"{1e3 * (t2 - t1):.0f} ms; accuracy of the posterior's label {accuracy:.2f}")
    check_one(n, terms, images[0], posterior[0])


def check_one(n, terms, image, posterior):
    # The uncompiled sum_product (opt_einsum's path, no functional licences), image 0.
    fixed = []
    for t in terms:
        if isinstance(t, fc.Tensor):
            fixed.append(t)
        else:
            p = next(k for k in t.inputs if k.startswith("p"))
            i, j = map(int, p[1:].split("_"))
            fixed.append(fc.Tensor(np.eye(2)[image[i, j]], {p: fc.Bint[2]}))
    names = frozenset(structure(n)[2]) - {"label"}
    expected = fc.sum_product(ops.add, ops.mul, fixed, names).data
    assert np.allclose(posterior, expected / expected.sum(), rtol=1e-9), (posterior, expected)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[8, 10])
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    table_1(args.sizes)
    classify(6, args.batch)


if __name__ == "__main__":
    main()
