"""numpy's traced array for ``funsor_core.ops.tracer``: an ndarray subclass that names the
program value it holds (``trace_node``).

Every op's kernel for it is the tracer's recording kernel. Anything else computed from it (a
numpy function or ufunc, a view such as ``x.reshape`` or ``x[0]``) is an *untracked* traced
array (``trace_node`` None): the tracer refuses to build a program whose output needs one.

Example:
    >>> x = TracedNdarray.trace_wrap(np.ones(2), "x")
    >>> x.trace_node, np.exp(x).trace_node, x.reshape(2, 1).trace_node
    ('x', None, None)
"""

from __future__ import annotations

import numpy as np

__all__ = ["TracedNdarray"]


class TracedNdarray(np.ndarray):
    """An ndarray that ``trace_function`` follows through ops (see the module docstring).

    Example:
        >>> TracedNdarray.trace_wrap(np.float64(2.0), "y").trace_plain()
        array(2.)
    """

    trace_node = None  # a new view (numpy makes them for any result) starts untracked
    trace_scalar_types = (np.generic,)

    @classmethod
    def trace_wrap(cls, value, node) -> TracedNdarray:
        # A copy that owns its memory: then any plain view of it (np.asarray(t)) has it as its
        # base, and trace_is_view tells such a view from a constant.
        value = np.asarray(value)
        out = np.ndarray.__new__(cls, value.shape, value.dtype)
        out.view(np.ndarray)[...] = value
        out.trace_node = node
        return out

    def trace_plain(self) -> np.ndarray:
        return self.view(np.ndarray)

    @staticmethod
    def trace_is_view(x) -> bool:
        """Whether the plain array ``x`` is a view of a traced one (``np.asarray(t)``)."""
        base = getattr(x, "base", None)
        while base is not None:
            if isinstance(base, TracedNdarray):
                return True
            base = getattr(base, "base", None)
        return False

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return _untracked(getattr(ufunc, method)(*map(_plain, inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return _untracked(func(*_plain(args), **_plain(kwargs)))


def _plain(x):
    if isinstance(x, TracedNdarray):
        return x.view(np.ndarray)
    if type(x) in (tuple, list):
        return type(x)(map(_plain, x))
    if type(x) is dict:
        return {k: _plain(v) for k, v in x.items()}
    return x


def _untracked(x):
    # numpy scalars too: a reduction's float64 must not pass for a constant of the program
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x).view(TracedNdarray)
    if type(x) in (tuple, list):
        return type(x)(map(_untracked, x))
    return x
