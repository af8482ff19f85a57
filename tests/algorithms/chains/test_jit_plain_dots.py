"""The jitted derivative of a batched log-space chain as plain matrix products.

jax's own transpose of ``a @ b`` contracts ``b``'s last and ``a``'s first matrix dim in place,
which XLA's CPU ran 4-7x slower than a plain product for batches of small matrices (funsor's
``sequential_sum_product`` K = 4, T = 100, batch 16 under ``jax.jit(jax.value_and_grad)``:
0.84 ms against funsor 0.4.8's 0.17). ``backends/jax_matmul.py`` writes the tangents around
explicit transposes, so every product in the gradient program contracts one operand's last
dim with the other's first matrix dim; forward mode and ``vmap`` still work.

Oracles: numpy float64 closed forms for the matrix product's derivatives (``W b^T``,
``a^T W``, ``ta b + a tb``), and a float64 forward-backward pass in numpy per batch member for
the chain's log Z and its derivative (the pairwise marginals).
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from funsor_core.sum_product import sequential_sum_product
from tests.algorithms.chains.test_jit_chain_grad import _forward_backward

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _dot_generals(jaxpr, shapes: bool = False) -> list:
    from jax.extend import core

    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            found.append((eqn.params["dimension_numbers"], eqn.invars[0].aval.ndim) +
                         ((eqn.invars[0].aval.shape,) if shapes else ()))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, core.ClosedJaxpr):
                    found += _dot_generals(sub.jaxpr, shapes)
                elif isinstance(sub, core.Jaxpr):
                    found += _dot_generals(sub, shapes)
    return found


def _plain(dims, ndim: int) -> bool:
    # A matrix product contracts one operand's last dim with the other's first matrix dim
    # (either way round: XLA swaps the operands); jax's own transposes contract both last
    # dims or both first ones.
    (lc, rc), (lb, rb) = dims
    nb = len(lb)
    return tuple(lb) == tuple(rb) == tuple(range(nb)) and {tuple(lc), tuple(rc)} == {
        (ndim - 1,), (nb,)}


def test_matmul_derivatives_are_plain_products():
    from backends.jax_matmul import matmul

    rng = np.random.default_rng(0)
    a, b, w, ta, tb = (rng.normal(size=(3, 2, 4, 4)) for _ in range(5))

    def f(x, y):
        return (matmul(x, y) * jnp.asarray(w)).sum()

    da, db = jax.jit(jax.grad(f, (0, 1)))(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(np.asarray(da), w @ np.swapaxes(b, -1, -2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(db), np.swapaxes(a, -1, -2) @ w, rtol=1e-12)
    _, tangent = jax.jvp(matmul, (jnp.asarray(a), jnp.asarray(b)),
                         (jnp.asarray(ta), jnp.asarray(tb)))
    np.testing.assert_allclose(np.asarray(tangent), ta @ b + a @ tb, rtol=1e-12)
    per_member = jax.vmap(jax.grad(lambda x, y, v: (matmul(x, y) * v).sum()))(
        jnp.asarray(a), jnp.asarray(b), jnp.asarray(w))
    np.testing.assert_allclose(np.asarray(per_member), w @ np.swapaxes(b, -1, -2), rtol=1e-12)
    dots = _dot_generals(jax.make_jaxpr(jax.grad(f, (0, 1)))(jnp.asarray(a), jnp.asarray(b))
                         .jaxpr)
    assert len(dots) == 3 and all(_plain(d, n) for d, n in dots), dots


# A batch of one: the step matrices are (T, 1, K, K), and with the unit dim in the products
# XLA's CPU formed the gradient's transposed products again (K = 4, T = 100: 81 against 28 us
# without it), so the products drop unit batch dims.
@pytest.mark.parametrize("batch,duration", [(8, 32), (1, 160)])
@pytest.mark.parametrize("dtype", [np.float32])  # NumPyro's dtype; the suite's default is float64
def test_jitted_batched_chain_gradient_by_plain_products(dtype, batch, duration):
    k = 4  # past the sizes whose derivative is the exact tree's (T x batch x K^2 > 2048)
    rng = np.random.default_rng(1)
    logf = rng.normal(size=(duration, k, k, batch)).astype(dtype)

    def total(d):
        f = fc.Tensor(d, {"time": Bint[duration], "prev": Bint[k], "curr": Bint[k],
                          "b": Bint[batch]})
        r = sequential_sum_product(ops.logaddexp, ops.add, f, "time", {"prev": "curr"})
        return r.reduce(ops.logaddexp, frozenset({"prev", "curr"})).data.sum()

    fc.set_backend("jax")
    try:
        value, grad = jax.jit(jax.value_and_grad(total))(jnp.asarray(logf))
        dots = _dot_generals(jax.make_jaxpr(jax.value_and_grad(total))(jnp.asarray(logf)).jaxpr,
                             shapes=True)
    finally:
        fc.set_backend("numpy")
    want = [_forward_backward(logf[..., i].astype(np.float64)) for i in range(batch)]
    rtol = 1e-9 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(float(value), sum(z for z, _ in want), rtol=rtol)
    np.testing.assert_allclose(np.asarray(grad), np.stack([g for _, g in want], -1),
                               rtol=rtol, atol=10 * rtol)
    assert dots and all(_plain(d, n) for d, n, _ in dots), [d for d in dots if not _plain(*d[:2])]
    unit = [shape for (_, (lb, _)), _, shape in dots if any(shape[i] == 1 for i in lb)]
    assert not unit, unit
