"""``ops.matmul`` on jax, with a derivative XLA's CPU runs as plain matrix products.

jax transposes a product ``a @ b`` (reverse mode) into ``ct @ b^T`` and ``a^T @ ct`` written
as dot_generals that contract ``b``'s last and ``a``'s first matrix dim in place. XLA's CPU
runs such a batched product of small matrices several times slower than a plain one (the
gradient of funsor's jitted ``sequential_sum_product`` at K = 4, T = 100, batch 16: 1.8 ms
against 0.27 ms; at K = 8 it was 2x funsor 0.4.8's time, whose einsum moves its batch dims
first and so transposes explicitly). Here the tangent is written as ``ta . b^T`` (contracting
the last dims of both) and ``a^T . tb`` (the first dims), around ``b^T`` and ``a^T``
transposed explicitly: jax transposes them into plain products with ``b^T`` and ``a^T``.
The value is ``jnp.matmul``'s; the derivative is the same sum of the same products, and
forward mode, ``vmap`` and higher orders go through ordinary jax operations.

Example:
    >>> a, b = jnp.ones((3, 2, 2)), jnp.full((3, 2, 2), 2.0)
    >>> jax.grad(lambda x: matmul(x, b).sum())(a)[0].tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["SMALL_MATRIX", "matmul"]

# The largest matrix dim whose products take the derivative below: at K = 32 jax's own
# transposed products ran as fast or faster (funsor's chain, T = 100: 0.75 against 0.92 ms).
SMALL_MATRIX = 16


def _swap(x):
    return jnp.swapaxes(x, -1, -2)


@jax.custom_jvp
def _same_batch_matmul(a, b):
    return jnp.matmul(a, b)


@_same_batch_matmul.defjvp
def _same_batch_matmul_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    nb = a.ndim - 2
    batch = (tuple(range(nb)), tuple(range(nb)))
    # (ta b)[m, n] = sum_k ta[m, k] bT[n, k];  (a tb)[m, n] = sum_k aT[k, m] tb[k, n]:
    # jax transposes them into ct bT (a plain product) and aT ct (a plain product of
    # the swapped operands, which XLA runs as one).
    d_left = lax.dot_general(ta, _swap(b), (((nb + 1,), (nb + 1,)), batch))
    d_right = lax.dot_general(_swap(a), tb, (((nb,), (nb,)), batch))
    return jnp.matmul(a, b), d_left + d_right


def matmul(a, b):
    """``jnp.matmul(a, b)``; traced two matrices or two batches of one batch shape (the chain
    kernels' rounds, a Gaussian's products) with dims up to ``SMALL_MATRIX`` take the
    derivative above, other shapes (vectors, broadcast batches, integers) and concrete
    operands ``jnp.matmul``'s.

    Example:
        >>> matmul(jnp.eye(2), jnp.ones((2, 3))).shape
        (2, 3)
    """
    # Concrete operands have no derivative to take: jax's own call (an eager custom_jvp call
    # costs ~100 us against ~8 us).
    if not (isinstance(a, jax.core.Tracer) or isinstance(b, jax.core.Tracer)):
        return jnp.matmul(a, b)
    if (a.ndim >= 2 and a.ndim == b.ndim and a.shape[:-2] == b.shape[:-2]
            and max(a.shape[-2:] + b.shape[-1:]) <= SMALL_MATRIX
            and jnp.issubdtype(a.dtype, jnp.floating) and a.dtype == b.dtype):
        # Unit batch dims go first: with them XLA's CPU turns the gradient's products back
        # into the slow transposed form (a chain K = 4, T = 100, batch 1, shaped (T, 1, K, K):
        # value and gradient 81 against 28 us).
        kept = tuple(n for n in a.shape[:-2] if n != 1)
        if len(kept) < a.ndim - 2:
            out = _same_batch_matmul(jnp.reshape(a, kept + a.shape[-2:]),
                                     jnp.reshape(b, kept + b.shape[-2:]))
            return jnp.reshape(out, a.shape[:-2] + out.shape[-2:])
        return _same_batch_matmul(a, b)
    return jnp.matmul(a, b)
