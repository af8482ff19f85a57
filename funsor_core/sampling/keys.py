"""A stream of random keys from one seed, for a sequence of draws (``MonteCarlo``'s state).

``KeyStream(rng_key).next(term)`` returns the key for the next draw on the backend of
``term``'s arrays, in the form that ``funsor_core.sampling.draw.sample`` takes:

- ``None``: None every time (each backend's global random state);
- an int seed, or a seed array (funsor's tests pass ``np.array([0, 0], dtype=np.uint32)`` on
  every backend): one generator per backend, made on first use and advanced by every draw
  (numpy ``Generator``, torch ``Generator``), or on jax a key split for every draw;
- a numpy or torch ``Generator``: used as it is (it advances itself);
- a jax PRNG key, concrete or traced (under ``jax.jit``): split for every draw, so a key is
  never used twice.

The same seed gives the same sequence of draws on each backend, eagerly and under
``jax.jit`` (jax's keys are the same traced or not).

Example:
    >>> keys = KeyStream(0)
    >>> t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
    >>> keys.next(t) is keys.next(t)  # one numpy Generator, advancing
    True
"""

from __future__ import annotations

import numbers
from types import ModuleType
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import is_array
from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.terms.backend_check import deep_array_backend
from funsor_core.terms.base import Funsor

__all__ = ["KeyStream", "seed_or_key"]


class KeyStream:
    """Keys for a sequence of draws from one ``rng_key`` (see the module docstring).

    Args:
        rng_key: None, an int seed, a seed array, a numpy or torch ``Generator``, or a jax
            PRNG key (possibly traced).

    Example:
        >>> KeyStream(None).next(fc.Number(0.0)) is None
        True
    """

    def __init__(self, rng_key: Any = None) -> None:
        if isinstance(rng_key, numbers.Integral) and not isinstance(rng_key, bool):
            rng_key = int(rng_key)  # numpy integers too
            if rng_key < 0:
                raise ValueError(f"rng_key must be a non-negative int seed, got {rng_key}")
        elif is_array(rng_key):
            rng_key = seed_or_key(rng_key)  # a 0-d int array is a seed; other arrays keys
        elif not (rng_key is None or is_array(rng_key)
                  or type(rng_key).__name__ == "Generator"):
            raise TypeError(f"rng_key must be None, an int seed, a generator or a jax key, got "
                            f"{type(rng_key).__name__}")
        self.rng_key = rng_key
        self._made: dict = {}

    def next(self, term) -> Any:
        """The key for the next draw on the backend of ``term`` (a funsor or an array)."""
        key = self.rng_key
        if key is None:
            return None
        module = _backend_of(term)
        name = module.NAME
        if not isinstance(key, int):
            own = backend_of(key)
            if own is module and module.SPLITS_RNG_KEYS:
                self.rng_key, sub = module.split_key(key, 2)
                return sub
            if own is module and not is_array(key):
                return key  # a numpy or torch Generator advances itself
            if not is_array(key):
                raise TypeError(f"a {own.NAME} Generator cannot seed draws from {name} arrays: "
                                f"pass an int seed (the same draws on every backend) or a {name} "
                                "generator")
            if own.SPLITS_RNG_KEYS and not ops.is_concrete(key):
                raise TypeError(f"a traced {own.NAME} key cannot seed a {name} generator: pass "
                                f"an int seed, or use the {own.NAME} backend under "
                                f"{own.NAME}.jit")
        made = self._made.get(name)
        if made is None:
            made = _new_key(module, key)
        if module.SPLITS_RNG_KEYS:
            made, sub = module.split_key(made, 2)
            self._made[name] = made
            return sub
        self._made[name] = made
        return made


def seed_or_key(rng_key: Any) -> Any:
    """``rng_key`` with a 0-d integer array read as a seed, as an int is: concrete, that int;
    traced (an int seed passed through ``jax.jit``), its backend's key made from it. Any
    other value as it is.

    Example:
        >>> seed_or_key(np.array(3)), seed_or_key(None)
        (3, None)
    """
    if not (is_array(rng_key) and _is_int_scalar(rng_key)):
        return rng_key
    if ops.is_concrete(rng_key):
        return int(rng_key)
    return backend_of(rng_key).new_rng_key(rng_key)


def _is_int_scalar(array) -> bool:
    """Whether ``array`` is 0-d with an integer dtype (a typed jax key is 0-d but no int)."""
    dtype = getattr(array, "dtype", None)
    return getattr(array, "ndim", None) == 0 and dtype is not None and (
        "int" in str(dtype) and "key" not in str(dtype))


def _backend_of(term) -> ModuleType:
    """The backend of ``term``'s arrays (the active backend for a term without arrays)."""
    if is_array(term):
        return backend_of(term)
    name = deep_array_backend(term) if isinstance(term, Funsor) else None
    return backend_module(name)


def _new_key(module: ModuleType, seed):
    """A generator (numpy, torch) or key (jax) from an int seed or a seed array."""
    if isinstance(seed, int):
        return module.new_rng_key(seed)
    values = backend_of(seed).seed_values(seed)
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"a seed array must hold integers, got {values.dtype}: pass an int "
                        "seed or a jax key")
    if module.is_raw_key(values):
        return module.asarray(values)  # already a raw key of this backend
    # Any other seed array: its entries, combined into one integer seed (64 bits).
    combined = 0
    for v in values.ravel().tolist():
        combined = (combined * 4294967291 + int(v)) % (1 << 63)
    return module.new_rng_key(combined)
