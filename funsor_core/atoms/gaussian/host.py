"""Small eager Gaussian work of jax and torch, run on host views in numpy.

Eager jax compiles a kernel for every op and new shape the first time it runs (0.03-0.1 s
each; a 1-d Normal integral is a dozen ops, a 100-step chain's terms three dozen), and a
small program run a few times never earns that back; eager torch dispatches each op in 3-8
us where numpy takes 1 us on a few entries (a Gaussian integral is some 25 ops). A
Gaussian's array math (aligning, concatenating square roots, marginalizing) on small
concrete arrays of such a backend on the CPU therefore runs in numpy on views of the arrays
(no copy on the CPU), and its results go back as arrays of the backend and dtype the inputs
had (``ops.new_array``: jax's ``device_put``, which compiles nothing; torch's
``as_tensor``). The route is decided from the arrays' kind, device and sizes alone: traced
values (under ``jax.jit``, ``grad``, ``vmap``), torch tensors that carry gradients or are
traced or wrapped always take the backend's own ops (the backend's ``host_view`` or
``small_host_view`` decides), and numpy arrays are never copied.

Example:
    >>> host_copies(np.zeros(2)) is None  # numpy computes on the host already
    True
    >>> import jax.numpy as jnp
    >>> [type(a).__name__ for a in host_copies(jnp.zeros(2), jnp.ones((2, 2)))]
    ['ndarray', 'ndarray']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor, align_tensors
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import FastCache

__all__ = ["HOST_MAX", "host_add", "host_copies", "to_backend", "widest"]

# Entries in all (a 100-step scalar chain's step arrays: ~600). Past this a program is big
# enough that compiling pays off within a few calls, and numpy's single-threaded kernels
# would lose to the backend's.
HOST_MAX = 1 << 12
_VIEWS = FastCache("atoms.gaussian.host_views", 64)  # array type -> its backend's host_view
_MISSING = object()


def host_copies(*arrays) -> list | None:
    """Numpy views of ``arrays`` when they should be computed on the host: arrays of a
    backend that offers host views (concrete, on a CPU device, outside autograd for torch),
    ``HOST_MAX`` entries at most in all; None otherwise (numpy arrays, traced values,
    devices).

    Example:
        >>> host_copies(np.ones(3), np.ones(2)) is None
        True
    """
    first = arrays[0]
    view = _VIEWS.data.get(type(first), _MISSING)
    if view is _MISSING:  # a missing module attribute raises: microseconds per call, so cached
        backend = backend_of(first, None)
        view = _VIEWS.put(type(first), getattr(backend, "host_view", None)
                          or getattr(backend, "small_host_view", None))
    if view is None:
        return None
    out, total = [], 0
    for a in arrays:
        host = view(a)
        if host is None:
            return None
        total += host.size
        out.append(host)
    return out if total <= HOST_MAX else None


def to_backend(proto, arrays: Sequence) -> tuple:
    """Host ``arrays`` as arrays of ``proto``'s backend, floats in ``proto``'s dtype.

    Example:
        >>> import jax.numpy as jnp
        >>> to_backend(jnp.zeros(1, dtype=jnp.float32), [np.ones(2)])[0].dtype
        dtype('float32')
    """
    dtype = _np_dtype(proto)
    out = []
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind != "f":
            out.append(ops.new_array(proto, a))
        elif a.size:  # (a read-only broadcast view: copied, torch wants writable memory)
            a = a.astype(dtype, copy=not a.flags.writeable)
            out.append(ops.new_array(proto, a))
        else:  # (a marginal over nothing): the backend's shared constant, no transfer
            out.append(ops.new_zeros(proto, a.shape))
    return tuple(out)


def widest(*arrays):
    """The array of ``arrays`` whose float dtype is widest: the prototype whose dtype a host
    result takes, so that float32 combined with float64 is float64 as the backend's own
    promotion makes it (the traced path), not the dtype of whichever operand came first.

    Example:
        >>> widest(np.ones(1, np.float32), np.ones(1)).dtype
        dtype('float64')
    """
    return max(arrays, key=lambda a: _np_dtype(a).itemsize if _np_dtype(a).kind == "f" else 0)


def _np_dtype(array) -> np.dtype:
    # numpy's dtype of an array's (jax and numpy: their own; torch's: by name, torch.float32)
    dtype = array.dtype
    return dtype if isinstance(dtype, np.dtype) else np.dtype(str(dtype).rpartition(".")[2])


def host_add(lhs, rhs) -> Tensor | None:
    """``lhs + rhs`` for two real Tensors of one output whose small eager arrays a compiling
    backend would add with a kernel compiled for their shapes: aligned and added on the host,
    the array the exact rule computes; None for anything else (the caller adds them as terms).

    Example:
        >>> import jax.numpy as jnp
        >>> t = fc.Tensor(jnp.ones(2), {"i": fc.Bint[2]})
        >>> host_add(t, t).data.tolist(), host_add(fc.Tensor(np.ones(2)), fc.Tensor(np.ones(2)))
        ([2.0, 2.0], None)
    """
    # Rules call this below any tape (their intermediate terms are not recorded), so no
    # Binary term is missed.
    if (type(lhs) is not Tensor or type(rhs) is not Tensor or lhs.output != rhs.output
            or lhs.dtype != "real"):
        return None
    host = host_copies(lhs.data, rhs.data)
    if host is None:
        return None
    inputs, (x, y) = align_tensors(*(Tensor.make(h, t.inputs, "real", t._ikey, t.output)
                                     for h, t in zip(host, (lhs, rhs))))
    data = to_backend(widest(lhs.data, rhs.data), (ops.add(x, y),))[0]
    return Tensor.make(data, inputs, "real", output=lhs.output)
