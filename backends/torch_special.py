"""The torch backend's kernels of two arguments that take Python numbers, and of the special
functions of distribution log densities (issue #17), whose integer arguments are real (torch
has no integer kernels for them); ``backends.torch`` puts them in its kernel table.

Example:
    >>> float(logaddexp(torch.tensor(0), torch.tensor(0)))  # integers, in floats
    0.6931471805599453
"""

from __future__ import annotations

import torch

from funsor_core import ops

__all__ = ["SPECIAL", "as_tensors", "binary", "logaddexp"]


def as_tensors(x, y) -> tuple:
    """``(x, y)`` with a Python number among them a tensor of their promoted dtype, on the
    other's device.

    Example:
        >>> as_tensors(1.5, torch.ones(2))[0]
        tensor(1.5000)
    """
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x, dtype=torch.result_type(x, y), device=y.device)
    elif not isinstance(y, torch.Tensor):
        y = torch.as_tensor(y, dtype=torch.result_type(x, y), device=x.device)
    return x, y


def binary(fn):
    """The kernel ``fn(*as_tensors(x, y))``.

    Example:
        >>> binary(torch.maximum)(torch.zeros(2), 1.0)
        tensor([1., 1.])
    """
    def kernel(x, y):
        return fn(*as_tensors(x, y))

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def logaddexp(x, y):
    """``log(exp(x) + exp(y))``; integer tensors in the default float (torch has no integer
    kernel, found by its error: the float case, the hot one, pays no dtype test).

    Example:
        >>> logaddexp(torch.zeros(1), 0.0)
        tensor([0.6931])
    """
    x, y = as_tensors(x, y)
    try:
        return torch.logaddexp(x, y)
    except RuntimeError:
        if x.dtype.is_floating_point or y.dtype.is_floating_point:
            raise
        return torch.logaddexp(x.to(torch.get_default_dtype()), y)


def _real(fn):
    def kernel(x):
        if not x.dtype.is_floating_point:
            x = x.to(torch.get_default_dtype())
        return fn(x)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


def _xlog(fn):
    def kernel(x, y):
        x, y = as_tensors(x, y)
        if not (x.dtype.is_floating_point or y.dtype.is_floating_point):
            x = x.to(torch.get_default_dtype())
        return fn(x, y)

    kernel.__name__ = f"_{fn.__name__}"
    return kernel


_lgamma = _real(torch.lgamma)
# The special functions' kernels by op.
SPECIAL = {ops.lgamma: _lgamma, ops.digamma: _real(torch.digamma),
           ops.i0e: _real(torch.special.i0e), ops.xlogy: _xlog(torch.xlogy),
           ops.xlog1py: _xlog(torch.special.xlog1py), ops.cos: _real(torch.cos),
           ops.acos: _real(torch.acos),  # torch has no betaln: Pyro's BetaBinomial's sum
           ops.betaln: binary(lambda x, y: _lgamma(x) + _lgamma(y) - _lgamma(x + y))}
