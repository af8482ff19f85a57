"""funsor's ``ops.WrappedTransformOp``: an op applying a distribution library's transform
object (``torch.distributions.transforms``, ``numpyro.distributions.transforms``), so that a
funsor user can map a term through ``fn(x)`` and get its inverse and its log-Jacobian as ops.

One op per transform object, for as long as someone holds the op: ``WrappedTransformOp(t) is
WrappedTransformOp(t)``, and the op does not keep itself alive (a weak table, keyed by the
object's id; the op holds the object, so the id is not reused while the op lives).

Example:
    >>> class Double:  # a stand-in for a library transform
    ...     def __call__(self, x):
    ...         return 2 * x
    ...     def log_abs_det_jacobian(self, x, y):
    ...         return 0 * x + np.log(2.0)
    >>> t = Double()
    >>> op = WrappedTransformOp(fn=t)
    >>> op is WrappedTransformOp(fn=t), float(op(np.array(1.5)))
    (True, 3.0)
    >>> round(float(op.log_abs_det_jacobian(np.array(1.5), np.array(3.0))), 4)
    0.6931
"""

from __future__ import annotations

import weakref
from typing import Any

from funsor_core.ops.op import _BY_NAME, BinaryOp, Op, TransformOp, _is_funsor

__all__ = ["WrappedTransformOp", "LogAbsDetJacobianOp"]

_TRANSFORMS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_JACOBIANS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class _SelfBase:
    """``op.base`` is the op itself, read without storing it: a stored self-reference is a
    cycle, which keeps an unused op alive until the cyclic collector runs."""

    def __get__(self, op, cls=None):
        return self if op is None else op

    def __set__(self, op, value) -> None:
        pass


def _interned(cls: type, table: weakref.WeakValueDictionary, name: str, fn: Any) -> Op:
    op = table.get(id(fn))
    if op is not None and op.fn is fn:
        return op
    op = object.__new__(cls)
    Op.__init__(op, name)
    if _BY_NAME.get(name) is op:  # not one op of this name: unpickling goes by ``fn``
        del _BY_NAME[name]
    op.fn = fn
    table[id(fn)] = op
    return op


class WrappedTransformOp(TransformOp):
    """The op ``x -> fn(x)`` of a transform object ``fn`` (interned per object).

    ``op.inv`` is the op of ``fn.inv``; ``op.log_abs_det_jacobian(x, y)`` is the op of
    ``fn.log_abs_det_jacobian``. On funsors it builds a ``Unary`` term as other ops do.

    Example:
        >>> class Neg:
        ...     def __call__(self, x):
        ...         return -x
        >>> WrappedTransformOp(fn=Neg())(np.array([1.0, 2.0])).tolist()
        [-1.0, -2.0]
    """

    __slots__ = ("fn",)
    base = _SelfBase()

    def __new__(cls, fn: Any) -> WrappedTransformOp:
        return _interned(cls, _TRANSFORMS, "wrapped_transform", fn)

    def __init__(self, fn: Any) -> None:  # set up once, by __new__
        pass

    def __call__(self, x, *args, **kwargs):
        if _is_funsor(x):
            return self._funsor_builder()(x, *args, **kwargs)
        return self.fn(x)

    @property
    def inv(self) -> WrappedTransformOp:
        return WrappedTransformOp(self.fn.inv)

    @property
    def log_abs_det_jacobian(self) -> LogAbsDetJacobianOp:
        return LogAbsDetJacobianOp(self.fn)

    def __repr__(self) -> str:
        return f"ops.WrappedTransformOp(fn={self.fn!r})"

    def __reduce__(self):
        return WrappedTransformOp, (self.fn,)


class LogAbsDetJacobianOp(BinaryOp):
    """The op ``(x, y) -> fn.log_abs_det_jacobian(x, y)`` of a transform object ``fn``.

    Example:
        >>> class Scale:
        ...     def log_abs_det_jacobian(self, x, y):
        ...         return 0 * x + np.log(3.0)
        >>> t = Scale()
        >>> LogAbsDetJacobianOp(t) is LogAbsDetJacobianOp(t)
        True
    """

    __slots__ = ("fn",)
    base = _SelfBase()

    def __new__(cls, fn: Any) -> LogAbsDetJacobianOp:
        return _interned(cls, _JACOBIANS, "log_abs_det_jacobian", fn)

    def __init__(self, fn: Any) -> None:
        pass

    def __call__(self, x, y, *args, **kwargs):
        if _is_funsor(x) or _is_funsor(y):
            return self._funsor_builder()(x, y, *args, **kwargs)
        return self.fn.log_abs_det_jacobian(x, y)

    def __repr__(self) -> str:
        return f"ops.WrappedTransformOp(fn={self.fn!r}).log_abs_det_jacobian"

    def __reduce__(self):
        return LogAbsDetJacobianOp, (self.fn,)
