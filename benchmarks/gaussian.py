"""Add two batched Gaussians over ``x: Reals[dim]`` and integrate ``x`` out (logaddexp).

Compares funsor-core with hand-written Cholesky code computing the same number on the same
backend, and with funsor 0.4.8 (numpy backend) when installed:

- numpy and torch: eager calls;
- jax: both sides under ``jax.jit`` (funsor-core terms are pytrees, so the jitted function
  takes and returns Gaussians; the hand-written function takes the arrays).

Run with one thread: ``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/gaussian.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import numpy as np  # noqa: E402
from timing import best_us, peer_columns  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402

BATCH = 4
DIMS = (2, 8)


def make_arrays(dim, rng):
    w1, w2 = rng.normal(size=(BATCH, dim)), rng.normal(size=(BATCH, dim))
    s1 = np.eye(dim) * 1.5 + 0.3 * rng.normal(size=(BATCH, dim, dim))
    s2 = np.eye(dim) * 1.5 + 0.3 * rng.normal(size=(BATCH, dim, dim))
    return w1, s1, w2, s2


def hand_written(xp, cholesky, solve_lower, w1, s1, w2, s2):
    # log ∫ exp(-0.5||x S1 - w1||^2 - 0.5||x S2 - w2||^2) dx via the precision's Cholesky.
    p = s1 @ s1.swapaxes(-1, -2) + s2 @ s2.swapaxes(-1, -2)
    i = (s1 @ w1[..., None] + s2 @ w2[..., None])[..., 0]
    chol = cholesky(p)
    z = solve_lower(chol, i[..., None])[..., 0]
    dim = p.shape[-1]
    return (0.5 * dim * np.log(2 * np.pi) - xp.log(xp.diagonal(chol, 0, -2, -1)).sum(-1)
            + 0.5 * (z * z).sum(-1) - 0.5 * (w1 * w1).sum(-1) - 0.5 * (w2 * w2).sum(-1))


def ours(g1, g2):
    return (g1 + g2).reduce(ops.logaddexp, "x")


def gaussians(arrays, dim):
    w1, s1, w2, s2 = arrays
    inputs = {"i": fc.Bint[BATCH], "x": fc.Reals[dim]}
    return (fc.Gaussian(white_vec=w1, prec_sqrt=s1, inputs=inputs),
            fc.Gaussian(white_vec=w2, prec_sqrt=s2, inputs=inputs))


def run_numpy(arrays, dim):
    hand = lambda a=arrays: hand_written(np, np.linalg.cholesky, np.linalg.solve, *a)  # noqa: E731
    g1, g2 = gaussians(arrays, dim)
    np.testing.assert_allclose(ours(g1, g2).data, hand(), rtol=1e-8)
    return best_us(hand), best_us(lambda: ours(g1, g2))


def run_torch(arrays, dim):
    import torch

    torch.set_num_threads(1)
    t = [torch.tensor(a) for a in arrays]

    def solve_lower(a, b):
        return torch.linalg.solve_triangular(a, b, upper=False)

    hand = lambda: hand_written(torch, torch.linalg.cholesky, solve_lower, *t)  # noqa: E731
    g1, g2 = gaussians(t, dim)
    np.testing.assert_allclose(ours(g1, g2).data.numpy(), hand().numpy(), rtol=1e-8)
    return best_us(hand), best_us(lambda: ours(g1, g2))


def run_jax(arrays, dim):
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", True)
    j = [jnp.asarray(a) for a in arrays]

    def solve_lower(a, b):
        return jsl.solve_triangular(a, b, lower=True)

    hand = jax.jit(lambda *a: hand_written(jnp, jnp.linalg.cholesky, solve_lower, *a))
    ours_jit = jax.jit(ours)
    g1, g2 = gaussians(j, dim)
    np.testing.assert_allclose(np.asarray(ours_jit(g1, g2).data), np.asarray(hand(*j)),
                               rtol=1e-8)
    return (best_us(lambda: hand(*j).block_until_ready()),
            best_us(lambda: ours_jit(g1, g2).data.block_until_ready()))


def run_funsor(arrays, dim, expected):
    try:
        from collections import OrderedDict

        import funsor
    except ImportError:
        return None
    funsor.set_backend("numpy")
    w1, s1, w2, s2 = arrays
    inputs = tuple(OrderedDict(i=funsor.Bint[BATCH], x=funsor.Reals[dim]).items())
    f1 = funsor.gaussian.Gaussian(white_vec=w1, prec_sqrt=s1, inputs=inputs)
    f2 = funsor.gaussian.Gaussian(white_vec=w2, prec_sqrt=s2, inputs=inputs)
    fn = lambda: (f1 + f2).reduce(funsor.ops.logaddexp, "x")  # noqa: E731
    np.testing.assert_allclose(fn().data, expected, rtol=1e-8)
    return best_us(fn, number=500)


def main() -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for dim in DIMS:
        arrays = make_arrays(dim, rng)
        expected = hand_written(np, np.linalg.cholesky, np.linalg.solve, *arrays)
        peer = run_funsor(arrays, dim, expected)
        for backend, run in (("numpy", run_numpy), ("torch", run_torch), ("jax.jit", run_jax)):
            hand_us, our_us = run(arrays, dim)
            rows.append(dict(backend=backend, dim=dim, hand_us=hand_us, ours_us=our_us,
                             funsor_us=peer if backend == "numpy" else None))
    print(f"Gaussian + Gaussian, logaddexp over x, batch {BATCH} (microseconds per call)")
    print(f"{'backend':8} {'dim':>4} {'hand-written':>13} {'funsor-core':>12} {'ratio':>6} "
          f"{'funsor 0.4.8':>13} {'ratio':>6}")
    for r in rows:
        fs = peer_columns(r["funsor_us"], r["hand_us"])
        print(f"{r['backend']:8} {r['dim']:>4} {r['hand_us']:13.1f} {r['ours_us']:12.1f} "
              f"{r['ours_us'] / r['hand_us']:6.1f} {fs}")
    return rows


if __name__ == "__main__":
    main()
