"""``funsor.compat.ops``'s array constructors: the ``ops`` of ``pyroapi``'s ``"funsor"``
backend (``ops.tensor``, ``ops.zeros``, ``ops.ones``, ``ops.randn``, ``ops.allclose``), on
the active backend's arrays; every other name there is one of ``funsor_core.ops``.

Example:
    >>> tensor([1.0, 2.0]).shape, zeros(2, 3).shape, bool(allclose(ones(2), tensor([1.0, 1.0])))
    ((2,), (2, 3), True)
"""

from __future__ import annotations

import numpy as np

from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.backend import backend_module

__all__ = ["tensor", "zeros", "ones", "randn", "allclose"]


def _shape(shape: tuple) -> tuple:
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def tensor(data, dtype=None):
    """An array of the active backend holding ``data``.

    Example:
        >>> tensor(3.0).shape
        ()
    """
    return backend_module().asarray(data, dtype)


def zeros(*shape):
    """Zeros of ``shape`` (given as sizes or one tuple) in the default float dtype.

    Example:
        >>> zeros((2,)).tolist()
        [0.0, 0.0]
    """
    return backend_module().asarray(np.zeros(_shape(shape)), "real")


def ones(*shape):
    """Ones of ``shape`` (given as sizes or one tuple) in the default float dtype.

    Example:
        >>> ones(2).tolist()
        [1.0, 1.0]
    """
    return backend_module().asarray(np.ones(_shape(shape)), "real")


def randn(*shape):
    """Standard normal draws of ``shape`` (the backend's global generator).

    Example:
        >>> randn(4).shape
        (4,)
    """
    return backend_module().randn(_shape(shape))


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08) -> bool:
    """Whether two arrays of the same shape (or two ``Tensor`` funsors of the same inputs and
    output) agree within ``atol + rtol * |b|`` everywhere.

    Example:
        >>> allclose(tensor([1.0]), tensor([1.0 + 1e-9])), allclose(zeros(1), ones(1))
        (True, False)
    """
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            return False
        if a.inputs != b.inputs or a.output != b.output:
            return False
        a, b = a.data, b.data
    a, b = (np.asarray(x.detach() if hasattr(x, "detach") else x) for x in (a, b))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))
