"""Random keys and array facts of the jax backend, which the core asks for instead of
naming the backend; ``backends.jax`` re-exports them.

Example:
    >>> SPLITS_RNG_KEYS, tracks_gradients(jnp.zeros(2))
    (True, True)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp  # noqa: F401  (the doctests use it)
import numpy as np

__all__ = ["BROADCAST_SMALL_MATMUL", "LOGSUMEXP_GRAD_FINITE",
           "FUNSOR_DISTRIBUTIONS_MODULE", "FUNSOR_EINSUM_BACKEND",
           "FUNSOR_LOGSUMEXP_BACKEND", "FUNSOR_MAP_BACKEND", "PYRO_EINSUM_DIMS",
           "SPLITS_RNG_KEYS", "array_literal", "as_rng_key",
           "broadcast_axes", "expand_dense", "distributions", "host_view",
           "is_raw_key",
           "seed_values",
           "tracks_gradients", "as_float32"]

# A key is a value, split for every draw so that no key is used twice (also under jit).
SPLITS_RNG_KEYS = True
# ops.logsumexp differentiates to 0, not NaN, on a slice that is all -inf (a custom jvp).
LOGSUMEXP_GRAD_FINITE = True
# XLA:CPU hands even a small dot to a slower library: a small batched matmul is faster as a
# broadcast product (the size limit is the core's, ``small_linalg.SMALL_PRODUCT``).
BROADCAST_SMALL_MATMUL = True
# Pyro's einsum reads operands' dim names from a ``_pyro_dims`` attribute (torch only).
PYRO_EINSUM_DIMS = False
# funsor's einsum backend strings of this backend (``funsor.cnf.BACKEND_TO_*_BACKEND``).
FUNSOR_EINSUM_BACKEND = "jax.numpy"
FUNSOR_LOGSUMEXP_BACKEND = "funsor.einsum.numpy_log"
FUNSOR_MAP_BACKEND = "funsor.einsum.numpy_map"
# funsor's module of distribution wrappers (``funsor.distribution``'s table), as faces here.
FUNSOR_DISTRIBUTIONS_MODULE = "funsor_core.jax.distributions"


def as_rng_key(key):
    """The key jax's samplers take, from a key the caller passed (as it is).

    Example:
        >>> k = jax.random.PRNGKey(0)
        >>> as_rng_key(k) is k
        True
    """
    return key


def seed_values(seed) -> np.ndarray:
    """The entries of a seed array or a key, on the host (a typed key gives its key data).

    Example:
        >>> seed_values(jax.random.key(0)).shape
        (2,)
    """
    try:
        return np.asarray(seed)
    except TypeError:  # a typed key (jax.random.key) converts only through its data
        return np.asarray(jax.random.key_data(seed))


def is_raw_key(values: np.ndarray) -> bool:
    """Whether host ``values`` already are a raw jax key (two ``uint32``s).

    Example:
        >>> is_raw_key(np.zeros(2, dtype=np.uint32)), is_raw_key(np.zeros(2, dtype=np.int64))
        (True, False)
    """
    return values.dtype == np.uint32 and values.shape == (2,)


def host_view(x) -> np.ndarray | None:
    """A numpy view of ``x`` when it is an untraced jax array on one CPU device (no copy),
    else None: small eager work on it may run in numpy (``atoms.gaussian.host``) instead of
    compiling a kernel per op.

    Example:
        >>> traced = jax.jit(lambda x: host_view(x) is None)(jnp.ones(2))
        >>> host_view(jnp.ones(2)).tolist(), bool(traced)
        ([1.0, 1.0], True)
    """
    if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
        return None
    devices = x.devices()
    if len(devices) != 1 or next(iter(devices)).platform != "cpu":
        return None
    try:
        return np.asarray(x)
    except TypeError:  # a typed key has no numpy form
        return None


def broadcast_axes(x) -> tuple[int, ...]:
    """The dims along which ``x`` repeats one slice in memory: none that can be read (a jax
    array shows no strides; XLA fuses broadcasts itself).

    Example:
        >>> broadcast_axes(jnp.broadcast_to(jnp.ones((3, 1)), (3, 4)))
        ()
    """
    return ()


def expand_dense(x, shape: tuple):
    """``x`` broadcast to ``shape`` (XLA decides the layout).

    Example:
        >>> expand_dense(jnp.ones((1, 2)), (3, 2)).shape
        (3, 2)
    """
    return jnp.broadcast_to(x, shape)


def tracks_gradients(x) -> bool:
    """Whether derivatives may flow through ``x``: always, as any array may be traced.

    Example:
        >>> tracks_gradients(jnp.ones(2))
        True
    """
    return True


def array_literal(x) -> str:
    """Source text that rebuilds ``x``.

    Example:
        >>> array_literal(jnp.zeros(2, dtype=jnp.float32))
        'jnp.array([0.0, 0.0], dtype=jnp.float32)'
    """
    data = np.asarray(x)
    return f"jnp.array({data.tolist()!r}, dtype=jnp.{data.dtype})"


def distributions():
    """``numpyro.distributions``, the library of distribution objects on jax that
    ``to_funsor`` and ``to_data`` convert (numpyro is optional: an ImportError names it).

    Example:
        >>> distributions().Normal.__name__
        'Normal'
    """
    try:
        import numpyro.distributions
    except ImportError as e:  # jax has no distribution objects of its own
        raise ImportError("converting distribution objects on jax needs numpyro "
                          "(pip install numpyro)") from e
    return numpyro.distributions


def as_float32(a):
    """``a`` as float32 (a 16-bit float array widened for kernels that need 32 bits).

    Example:
        >>> as_float32(jnp.ones(2, jnp.bfloat16)).dtype
        dtype('float32')
    """
    return a.astype(jnp.float32)
