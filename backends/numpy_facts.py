"""Random keys and array facts of the numpy backend, which the core asks for instead of
naming the backend; ``backends.numpy`` re-exports them.

Example:
    >>> SPLITS_RNG_KEYS, tracks_gradients(np.zeros(2))
    (False, False)
"""

from __future__ import annotations

import numpy as np

__all__ = ["BROADCAST_SMALL_MATMUL", "LOGSUMEXP_GRAD_FINITE",
           "FUNSOR_EINSUM_BACKEND", "FUNSOR_LOGSUMEXP_BACKEND",
           "FUNSOR_MAP_BACKEND", "PYRO_EINSUM_DIMS", "SPLITS_RNG_KEYS", "array_literal",
           "as_rng_key", "broadcast_axes", "expand_dense",
           "is_raw_key", "seed_values", "tracks_gradients", "as_float32"]

# A key is a Generator that advances itself (jax's keys are values, split for every draw).
SPLITS_RNG_KEYS = False
# numpy has no derivatives; the fact is read with tracks_gradients, always False here.
LOGSUMEXP_GRAD_FINITE = False
# Whether a small batched matmul is faster as a broadcast product (XLA:CPU only).
BROADCAST_SMALL_MATMUL = False
# Pyro's einsum reads operands' dim names from a ``_pyro_dims`` attribute (torch only).
PYRO_EINSUM_DIMS = False
# funsor's einsum backend strings of this backend (``funsor.cnf.BACKEND_TO_*_BACKEND``).
FUNSOR_EINSUM_BACKEND = "numpy"
FUNSOR_LOGSUMEXP_BACKEND = "funsor.einsum.numpy_log"
FUNSOR_MAP_BACKEND = "funsor.einsum.numpy_map"


def as_rng_key(key):
    """The key numpy's samplers take, from a key the caller passed: a seed array (funsor
    allows jax-style ``uint32`` keys) seeds a Generator; a Generator stays as it is.

    Example:
        >>> type(as_rng_key(np.array([0, 0], dtype=np.uint32))).__name__
        'Generator'
    """
    return np.random.default_rng(key) if hasattr(key, "dtype") else key


def seed_values(seed) -> np.ndarray:
    """The entries of a seed array, on the host.

    Example:
        >>> seed_values(np.array([1, 2])).tolist()
        [1, 2]
    """
    return np.asarray(seed)


def is_raw_key(values: np.ndarray) -> bool:
    """Whether host ``values`` already are a key of this backend (never: keys are Generators).

    Example:
        >>> is_raw_key(np.zeros(2, dtype=np.uint32))
        False
    """
    return False


def broadcast_axes(x) -> tuple[int, ...]:
    """The dims along which ``x`` repeats one slice in memory (stride 0, size above 1), as
    ``np.broadcast_to`` leaves them: work along them can be done once and broadcast.

    Example:
        >>> broadcast_axes(np.broadcast_to(np.ones((3, 1)), (3, 4)))
        (1,)
    """
    strides = getattr(x, "strides", ())
    return tuple(i for i, (s, n) in enumerate(zip(strides, x.shape)) if s == 0 and n > 1)


def expand_dense(x, shape: tuple):
    """``x`` broadcast to ``shape`` in memory of its own (writable, as any computed array).

    Example:
        >>> expand_dense(np.ones((1, 2)), (3, 2)).strides
        (16, 8)
    """
    return np.ascontiguousarray(np.broadcast_to(x, shape))


def tracks_gradients(x) -> bool:
    """Whether derivatives may flow through ``x`` (numpy has no autograd).

    Example:
        >>> tracks_gradients(np.ones(2))
        False
    """
    return False


def array_literal(x) -> str:
    """Source text that rebuilds ``x``.

    Example:
        >>> array_literal(np.zeros(2))
        'np.array([0.0, 0.0], dtype=np.float64)'
    """
    data = np.asarray(x)
    return f"np.array({data.tolist()!r}, dtype=np.{data.dtype})"


def as_float32(a):
    """``a`` as float32 (a 16-bit float array widened for kernels that need 32 bits).

    Example:
        >>> as_float32(np.ones(2, np.float16)).dtype
        dtype('float32')
    """
    return a.astype(np.float32)
