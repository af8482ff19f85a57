"""Host data into jax without compiling: eager jax compiles a kernel per op and new shape,
also for ``jnp.asarray`` of a numpy array (jax 0.10: ``jit(stage)``; a convert for numpy
scalars) and for ``jnp.zeros`` / ``jnp.full`` (``broadcast_in_dim``), 0.03-0.1 s each on a
program's first call; ``jax.device_put`` compiles nothing.

Example:
    >>> on_host([1.0, np.ones(2)]), on_host(jnp.ones(2))
    (True, False)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp  # noqa: F401  (the doctests use it)
import numpy as np

from funsor_core.engine.cache import cached

__all__ = ["SMALL_CONSTANT", "from_host", "host_arange", "on_host", "small_constant"]

# Host data goes in through device_put, and small constant arrays of an untraced prototype are
# made once on the host and shared (jax arrays are immutable). Traced prototypes keep the
# jnp calls: inside a program a broadcast costs nothing and embeds no constant.
SMALL_CONSTANT = 4096  # entries; larger constants are not cached


def from_host(data):
    """A jax array of host ``data`` (numpy arrays, numbers, nested lists), in jax's canonical
    dtype (32-bit unless x64 is enabled), moved by ``jax.device_put``: no compilation.

    Example:
        >>> from_host(np.ones(2)).shape
        (2,)
    """
    data = np.asarray(data)
    dtype = jax.dtypes.canonicalize_dtype(data.dtype)
    return jax.device_put(data if dtype == data.dtype else data.astype(dtype))


@cached("backends.jax.constants", maxsize=256, fast=True)
def _constant(shape, dtype, value, device):
    # made concrete even when asked for inside a trace (a concrete prototype closed over by a
    # jitted function): a cached tracer would leak out of its trace
    with jax.ensure_compile_time_eval():
        return jax.device_put(np.full(shape, value, dtype=dtype), device)


def small_constant(proto, shape: tuple, value):
    """A shared array of ``shape`` full of ``value`` in ``proto``'s dtype, made on the host
    once, when ``proto`` is untraced and the array small; None otherwise (the caller then
    calls ``jnp.zeros`` / ``jnp.full``).

    Example:
        >>> z = small_constant(jnp.ones(1), (2,), 0)
        >>> z.tolist(), small_constant(jnp.ones(1), (2,), 0) is z
        ([0.0, 0.0], True)
    """
    if isinstance(proto, jax.core.Tracer) or math.prod(shape) > SMALL_CONSTANT:
        return None
    key = (tuple(shape), proto.dtype, value, jax.config.jax_default_device)
    out = _constant(*key)
    # a shared buffer a user's jit donated is gone: a fresh one (still no compilation)
    return jax.device_put(np.full(shape, value, proto.dtype), key[3]) if out.is_deleted() else out


def host_arange(start: int, stop: int, step: int, dtype):
    """``jnp.arange(start, stop, step, dtype=dtype)`` made on the host, concrete even while a
    program is traced, and shared when small. Under ``jax.jit`` ``jnp.arange`` is a traced
    ``iota``: an index Tensor built from it cannot be read, so substituting it into a Tensor
    was a gather over a full index array (and the derivative a scatter-add) where a concrete
    progression is a strided slice (``tensor_checks.progression_slices``); it also costs
    ~0.1 ms eagerly against a lookup here.

    Example:
        >>> host_arange(1, 7, 2, np.int32).tolist(), host_arange(1, 7, 2, np.int32) is (
        ...     host_arange(1, 7, 2, np.int32))
        ([1, 3, 5], True)
    """
    dtype, device = np.dtype(dtype), jax.config.jax_default_device
    if len(range(start, stop, step)) > SMALL_CONSTANT:
        return _arange(start, stop, step, dtype, device)
    out = _shared_arange(start, stop, step, dtype, device)
    # a shared buffer a user's jit donated is gone: a fresh one
    return _arange(start, stop, step, dtype, device) if out.is_deleted() else out


def _arange(start, stop, step, dtype, device):
    with jax.ensure_compile_time_eval():
        return jax.device_put(np.arange(start, stop, step, dtype=dtype), device)


@cached("backends.jax.aranges", maxsize=256, fast=True)
def _shared_arange(start, stop, step, dtype, device):
    return _arange(start, stop, step, dtype, device)


def on_host(data) -> bool:
    """Whether ``data`` is numpy data, a Python number, or lists of them (no jax arrays or
    tracers inside): what ``from_host`` converts.

    Example:
        >>> on_host(np.float64(1.0)), on_host([jnp.ones(2)])
        (True, False)
    """
    if isinstance(data, (np.ndarray, np.generic, int, float, bool)):
        return True
    if isinstance(data, (list, tuple)):
        return all(on_host(x) for x in data)
    return False
