"""Helpers for tests that compute one number on every backend (and under ``jax.jit``)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc


def as_backend_array(data, backend: str | None = None):
    """``data`` as an array of ``backend`` (default: the active one), converted by hand."""
    backend = backend or fc.get_backend()
    if backend == "torch":
        torch = pytest.importorskip("torch")
        return torch.as_tensor(np.asarray(data))
    if backend == "jax":
        jnp = pytest.importorskip("jax.numpy")
        return jnp.asarray(np.asarray(data))
    return np.asarray(data)


def to_numpy(x) -> np.ndarray:
    """A backend array as a numpy array (a torch tensor detached first)."""
    return np.asarray(x.detach() if hasattr(x, "detach") else x)


def values_on_every_backend(fn, *args, eager_jax: bool = True) -> list[np.ndarray]:
    """``fn`` (arrays -> array) on numpy, torch, jax, and jax under ``jax.jit``, as numpy.

    ``eager_jax=False`` leaves out eager jax (jit only), for programs whose eager run compiles
    op by op for seconds and runs the same code as the jitted one. The numpy backend is active
    again afterwards."""
    jax = pytest.importorskip("jax")
    out = []
    for name in ("numpy", "torch", "jax")[:None if eager_jax else 2]:
        fc.set_backend(name)
        try:
            out.append(to_numpy(fn(*(as_backend_array(a, name) for a in args))))
        finally:
            fc.set_backend("numpy")
    fc.set_backend("jax")
    try:
        out.append(to_numpy(jax.jit(fn)(*(as_backend_array(a, "jax") for a in args))))
    finally:
        fc.set_backend("numpy")
    return out
