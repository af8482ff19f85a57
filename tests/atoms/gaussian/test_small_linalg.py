"""small_linalg: ``matmul`` against numpy's ``@`` (both of its forms on jax, with batch
broadcasting); the written-out Cholesky factor and its inverse against numpy's ``cholesky``
and ``inv``, at every size regime (written out, split into blocks once and twice, the library
call), eagerly on numpy and under ``jax.jit``; a matrix that is not positive definite gives a
non-finite inverse; derivatives equal those through jax's own Cholesky."""

from __future__ import annotations

import numpy as np
import pytest

from funsor_core.atoms.gaussian.small_linalg import (
    BLOCK,
    UNROLL,
    cholesky_inverse,
    matmul,
)

SIZES = [1, 2, UNROLL, UNROLL + 1, 9, 2 * UNROLL + 1, BLOCK, BLOCK + 1]


@pytest.mark.parametrize("backend", ["numpy", "jax", "jax.jit"])
@pytest.mark.parametrize("shapes", [((3, 9, 4), (3, 4, 9)), ((2, 1, 5, 1), (3, 1, 2)),
                                    ((3, 3, 9, 10), (3, 3, 10, 9)), ((4, 16, 16), (16, 17))])
# (the last two: more than SMALL_PRODUCT products, so ``@``)
def test_matmul_equals_numpy(backend, shapes):
    """Small products (the broadcast form on jax), batch dims broadcast, and products above
    ``SMALL_PRODUCT`` (``@`` on every backend)."""
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=s) for s in shapes)
    fn = matmul
    if backend.startswith("jax"):
        import jax
        import jax.numpy as jnp

        a, b = jnp.asarray(a), jnp.asarray(b)
        fn = jax.jit(matmul) if backend == "jax.jit" else matmul
    np.testing.assert_allclose(np.asarray(fn(a, b)), np.asarray(a) @ np.asarray(b), rtol=1e-12,
                               atol=1e-12)


def _spd(rng, batch, n):
    """Random symmetric positive definite matrices, entries on scales 1e-2 .. 1e2."""
    a = rng.normal(size=batch + (n, 2 * n))
    scale = np.logspace(-2, 2, n)[:, None]
    return (scale * a) @ (scale * a).swapaxes(-1, -2) / n


def _run(backend, g):
    if backend == "numpy":
        return cholesky_inverse(g)
    import jax
    import jax.numpy as jnp

    diag, inv = jax.jit(cholesky_inverse)(jnp.asarray(g))
    return np.asarray(diag), np.asarray(inv)


@pytest.mark.parametrize("backend", ["numpy", "jax.jit"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("batch", [(), (3, 2)])
def test_equals_numpy(backend, n, batch):
    g = _spd(np.random.default_rng(n), batch, n)
    diag, inv = _run(backend, g)
    chol = np.linalg.cholesky(g)
    assert diag.shape == batch + (n,) and inv.shape == batch + (n, n)
    np.testing.assert_allclose(diag, np.diagonal(chol, 0, -2, -1), rtol=1e-12)
    expected = np.linalg.inv(chol)
    # Normwise per matrix: an entry of the inverse is as accurate as the largest one.
    err = np.abs(inv - expected).max(axis=(-2, -1))
    assert (err <= 1e-11 * np.abs(expected).max(axis=(-2, -1))).all()
    if n <= BLOCK:  # (above, the backend's triangular_inv: numpy's is a general inverse)
        np.testing.assert_array_equal(np.triu(inv, 1), 0.0)  # lower triangular exactly


@pytest.mark.parametrize("n", [3, 9])
@pytest.mark.parametrize("where", ["first", "last"])
def test_not_positive_definite_is_not_finite(n, where):
    """A negative pivot in the first block or in the last (the Schur complement's)."""
    g = _spd(np.random.default_rng(0), (2,), n)
    k = 0 if where == "first" else n - 1
    g[1, k, k] = -1.0 if where == "first" else 0.5 * g[1, k, k] - 1e6
    for backend in ("numpy", "jax.jit"):
        with np.errstate(invalid="ignore", divide="ignore"):
            _, inv = _run(backend, g)
        assert np.isfinite(inv[0]).all()  # the other matrix of the batch is untouched
        assert not np.isfinite(inv[1]).all()


@pytest.mark.parametrize("n", [4, 9])
def test_jax_derivatives_equal_lapack(n):
    """Through ``G -> (log det L, L^{-1} b)`` with ``G = A A'``: the same function by jax's
    Cholesky and triangular solve."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    a = jnp.asarray(rng.normal(size=(3, n, n + 2)))
    b = jnp.asarray(rng.normal(size=(n,)))

    def ours(a):
        diag, inv = cholesky_inverse(a @ a.swapaxes(-1, -2))
        return jnp.log(diag).sum() + ((inv @ b) ** 2).sum()

    def lapack(a):
        chol = jnp.linalg.cholesky(a @ a.swapaxes(-1, -2))
        sol = jax.scipy.linalg.solve_triangular(chol, jnp.broadcast_to(b[:, None], (3, n, 1)),
                                               lower=True)
        return jnp.log(jnp.diagonal(chol, 0, -2, -1)).sum() + (sol ** 2).sum()

    np.testing.assert_allclose(jax.jit(jax.grad(ours))(a), jax.grad(lapack)(a), rtol=1e-9)
