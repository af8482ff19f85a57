"""Eager jax runs a discrete chain as one compiled kernel whose shape holds ``T``: a chain of
a new length would compile anew (0.5-1.3 s for the parallel tree of NumPyro's ``scan``).
Its time axis is padded to the next power of two instead, so every ``T`` in ``(2^(k-1),
2^k]`` runs the same program (a new ``T`` compiles only the padding's concatenation).

The padded steps pass through the tree untouched: a round pairs steps ``(2i, 2i + 1)``, and
where the right one is padding the left one is selected as it is (``passed``), which is what
the unpadded tree does with an odd round's last step. Padding is a suffix, so the real steps
pair and round exactly as in the unpadded tree: the value is the same to the last bit, and
the linear-space trees' checks for lost digits (``real_min``) see the same products. The
padded rows hold zeros (any finite number does: no result reads them, and their derivative
is multiplied by a zero cotangent).

Every other chain of eager jax (a boundary, a ragged mask, another semiring, the filters
and the sequential fold) is padded as a masked chain instead (``masked_padding``): False
mask rows in front, each a step that keeps the carry (the semiring's identity transition),
so the kernels for ragged chains run it; the scan filter keeps its carry through them bit
for bit and reads its real last step as before.

Only for concrete arrays (``value_known``): under ``jax.jit`` the caller's program is
compiled per shape anyway, and the padding would only add work. Only the tree kernel of a
``(logaddexp, add)`` chain without boundaries (``funsor.sum_product.sequential_sum_product``
as NumPyro calls it), and only while the padded steps hold at most ``PAD_ELEMENTS`` numbers:
past that, a compilation costs less than twice the chain's work.

Example:
    >>> pad = np.array([False, False, False, True])
    >>> a, q = np.zeros((2, 1, 1)), np.ones((2, 1, 1))
    >>> out, pad = passed(pad, a, q)
    >>> out.ravel().tolist(), pad.tolist()
    ([1.0, 0.0], [False, False])
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.engine.cache import cached

__all__ = ["PAD_ELEMENTS", "has_identity", "masked_padding", "padded_chain", "passed", "real_min",
           "zero_padded"]

# The largest padded chain (T x batch x K^2 numbers): as h74's einsum stacks.
PAD_ELEMENTS = 1 << 20


def padded_chain(backend, sum_op, prod_op, factors: tuple, strategy: str,
                 rounding_limit: int) -> tuple | None:
    """``(factors, pad)``: the chain's time-varying factors padded with zero steps to the next
    power of two and the boolean ``(T_pad,)`` array of the padded steps (a ``T`` that is a
    power of two gets an array of False: the same program as the shorter chains padded to
    it); or None where the chain runs as it is (see the module docstring).
    ``rounding_limit``: the size up to which a float32 tree rounds as funsor's
    (``FUNSOR_ROUNDING``), a decision of the padded shape that must be the real one's too.

    Example:
        >>> import jax.numpy as jnp
        >>> from funsor_core.engine.backend import backend_of
        >>> x = jnp.zeros((5, 2, 2))
        >>> fs, pad = padded_chain(backend_of(x), ops.logaddexp, ops.add, (x,), "parallel",
        ...                        1 << 14)
        >>> fs[0].shape, pad.tolist()
        ((8, 2, 2), [False, False, False, False, False, True, True, True])
    """
    duration = max(f.shape[0] for f in factors)
    if (not backend.COMPILES or strategy == "sequential" or duration < 2
            or sum_op is not ops.logaddexp or prod_op is not ops.add):
        return None
    size = 1 << (duration - 1).bit_length()
    states = max(max(f.shape[-2], f.shape[-1]) for f in factors)
    batch = np.broadcast_shapes(*(tuple(f.shape[1:-2]) for f in factors))
    per_step = math.prod(batch) * states * states
    if (size * per_step > PAD_ELEMENTS
            or (duration * per_step <= rounding_limit) != (size * per_step <= rounding_limit)
            or not all(backend.value_known(f) for f in factors)):
        return None
    pad = np.arange(size) >= duration
    timed = [i for i, f in enumerate(factors) if f.shape[0] == duration < size]
    if not timed:
        return factors, pad
    # One compiled call per new T (its concatenations), the pad returned on the device: the
    # eager ops themselves (concatenate, a host array per call) cost 5x a kernel's dispatch.
    rows, pad = _padder(backend)(tuple(factors[i] for i in timed), pad)
    out = list(factors)
    for i, f in zip(timed, rows):
        out[i] = f
    return tuple(out), pad


def has_identity(sum_op, prod_op, factors: tuple, backend=None) -> bool:
    """Whether a masked step (``masked_padding``, ``chains.masks``) keeps the chain's value.
    ``backend``: its ``value_known`` decides which factors' signs can be read (default
    ``ops.is_concrete``).

    Example:
        >>> from funsor_core.engine.backend import backend_of
        >>> x = np.ones((3, 2, 2))
        >>> has_identity(ops.add, ops.mul, (x,), backend_of(x)), has_identity(
        ...     ops.mul, ops.mul, (x,), backend_of(x))
        (True, False)
    """
    # A padding step is the identity transition (sum_op's zero off the diagonal, prod_op's
    # unit on it), which only a semiring over these factors has: (mul, mul), (add, add) and
    # (logaddexp, mul) chains are left folds with none, and (max, mul) keeps it only for
    # nonnegative factors (max(-inf * -2, .) is +inf). Those chains run unpadded.
    pair = (sum_op, prod_op)
    if pair not in ops.DISTRIBUTIVE_OPS:
        return False
    if pair in ops.NONNEGATIVE_DISTRIBUTIVE_OPS:
        # (min, mul) would need +inf off the diagonal, and a zero factor times +inf is NaN
        known = ops.is_concrete if backend is None else backend.value_known
        return sum_op is not ops.min and all(
            known(f) and bool(np.all(ops.to_numpy(f) >= 0)) for f in factors)
    return True


def masked_padding(backend, factors: tuple, mask, boundaries: tuple, rounding_limit: int,
                   pair: tuple) -> tuple | None:
    """``(factors, mask)``: any other chain of eager jax (boundaries, a ragged ``mask``,
    another semiring, the sequential kernels) padded to the next power of two as a masked
    chain, the padding in front: a masked step is the semiring's identity transition (the
    carry kept, ``chains.masks``), exact in every semiring and for factors without time
    alike, and the real steps, last included, run as unpadded (the scan filter reads its
    last step apart). The mask ``(T_pad, *batch)`` is the caller's (if any) after False
    rows. None where the chain runs as it is: not eager jax, ``T <= 2``, past
    ``PAD_ELEMENTS``, where float32 rounding as funsor's would change, or where ``pair``
    (the chain's ``(sum_op, prod_op)``) has no identity transition (``has_identity``).

    Example:
        >>> import jax.numpy as jnp
        >>> from funsor_core.engine.backend import backend_of
        >>> x = jnp.zeros((5, 2, 2))
        >>> fs, mask = masked_padding(backend_of(x), (x,), None, (), 1, (ops.add, ops.mul))
        >>> fs[0].shape, mask.tolist()
        ((8, 2, 2), [False, False, False, True, True, True, True, True])
    """
    duration = max(f.shape[0] for f in factors)
    if not backend.COMPILES or duration <= 2 or not has_identity(*pair, factors, backend):
        return None
    size = 1 << (duration - 1).bit_length()
    states = max(max(f.shape[-2], f.shape[-1]) for f in factors)
    batch = tuple(np.broadcast_shapes(*(tuple(f.shape[1:-2]) for f in factors)))
    per_step = math.prod(batch) * states * states
    arrays = [x for x in (*factors, mask, *boundaries) if x is not None and not isinstance(x, str)]
    if (size * per_step > PAD_ELEMENTS
            or (duration * per_step <= rounding_limit) != (size * per_step <= rounding_limit)
            or not all(backend.value_known(x) for x in arrays)):
        return None
    timed = [i for i, f in enumerate(factors) if f.shape[0] == duration]
    # One compiled call per new T (as ``padded_chain``'s), the mask made on the device.
    rows, mask = _mask_padder(backend)(factors, np.arange(size) >= size - duration, mask)
    out = list(factors)
    for i, f in zip(timed, rows):
        out[i] = f
    return tuple(out), mask


@cached("chains.discrete_padding.padders", maxsize=8)
def _padder(backend):
    return backend.jit(_pad_rows)


@cached("chains.discrete_padding.mask_padders", maxsize=8)
def _mask_padder(backend):
    return backend.jit(_mask_rows)


def _pad_rows(timed: tuple, pad):
    # Zero rows appended to each time-varying factor, up to the pad's length.
    size = pad.shape[0]
    return tuple(ops.cat([f, ops.new_zeros(f, (size - f.shape[0],) + tuple(f.shape[1:]))], 0)
                 for f in timed), pad


def _mask_rows(factors: tuple, keep, mask):
    # The time-varying factors after zero rows up to the length of ``keep``, and the mask
    # over the factors' batch dims: ``keep`` broadcast, or the caller's after False rows.
    duration, size = max(f.shape[0] for f in factors), keep.shape[0]
    rows = tuple(ops.cat([ops.new_zeros(f, (size - duration,) + tuple(f.shape[1:])), f], 0)
                 for f in factors if f.shape[0] == duration)
    if mask is not None:
        shape = (size - mask.shape[0],) + tuple(mask.shape[1:])
        return rows, ops.cat([ops.new_zeros(mask, shape) > 0, mask], 0)
    batch = tuple(np.broadcast_shapes(*(tuple(f.shape[1:-2]) for f in factors)))
    return rows, ops.expand(ops.reshape(keep, (size,) + (1,) * len(batch)), (size,) + batch)


def passed(pad, a, q):
    """A round of a padded tree: ``q`` (the products of the pairs ``(a, b)``, ``a`` the even
    steps), with ``a`` itself where ``b`` is padding; and the padding of the next round.

    Example:
        >>> out, nxt = passed(np.array([False, True]), np.zeros((1, 2)), np.ones((1, 2)))
        >>> out.tolist(), nxt.tolist()
        ([[0.0, 0.0]], [False])
    """
    skip = pad[1::2]
    skip = ops.reshape(skip, tuple(skip.shape) + (1,) * (len(q.shape) - 1))
    return ops.where(skip, a, q), pad[0::2]


def real_min(pad, q):
    """The smallest entry of the products ``q`` of a round whose right operand is not
    padding (the products that the unpadded tree computes), ``inf`` where none is.

    Example:
        >>> float(real_min(np.array([False, True]), np.zeros((1, 2))))
        inf
    """
    skip = pad[1::2]
    skip = ops.reshape(skip, tuple(skip.shape) + (1,) * (len(q.shape) - 1))
    return ops.amin(ops.where(skip, ops.full_like(q, math.inf), q))


def zero_padded(pad, mats):
    """The step matrices ``mats`` ``(T_pad, ...)`` with the padded steps' entries 0: a factor
    without time (shared by all steps) broadcast into them, where the trees' shifts (each
    step's maximum, added back to the total) must see 0.

    Example:
        >>> zero_padded(np.array([False, True]), np.ones((2, 1, 1))).ravel().tolist()
        [1.0, 0.0]
    """
    keep = ops.reshape(pad, tuple(pad.shape) + (1,) * (len(mats.shape) - 1))
    return ops.where(keep, ops.full_like(mats, 0.0), mats)
