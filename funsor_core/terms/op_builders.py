"""How an op applied to funsors builds a term: ``ops.exp(f)`` a ``Unary``, ``ops.add(f, g)`` a
``Binary``, ``ops.sum(f, axis=0)`` a reduction of the output, ``ops.reshape(f, shape)`` a
reshape of the output. Ops with positional parameters acting on the output are in
``output_ops``; importing ``funsor_core.terms`` registers both.

Example:
    >>> x = fc.Variable("x", fc.Reals[2, 3])
    >>> type(ops.sum(x, axis=0)).__name__, ops.reshape(x, (3, 2)).output
    ('Unary', Reals[3, 2])
"""

from __future__ import annotations

import math
import operator

from funsor_core import ops
from funsor_core.engine.fast_path import eager_programs, eager_rules
from funsor_core.ops.op import register_funsor_builder
from funsor_core.terms.base import Binary, Funsor, Unary, to_funsor

__all__: list = []

_EAGER_BINARY = eager_programs("eager_binary")


def _build_unary(op, arg, **params):
    arg = to_funsor(arg)
    if params:
        op = op.bind(**params)
    return Unary(op, arg)


_AXIS_NOT_OUTPUT = (
    "ops.{op} of a funsor reduces its output dims, and {axis!r} is no axis of its output {out} "
    "(a funsor's .sum()/.max()/.argmax() act on the output, as in funsor). To reduce over an "
    "input such as {name!r} of {inputs}, name it: f.reduce(ops.add, {name!r}) (or ops.max, "
    "ops.logaddexp, ...).")


def _checked_axes(op, arg, axes: tuple) -> tuple:
    # A name where an axis belongs is the usual slip: inputs are reduced by .reduce(op, name).
    ndim, out = len(arg.shape), []
    for a in axes:
        try:
            index = None if isinstance(a, bool) else operator.index(a)  # numpy ints too
        except TypeError:
            index = None
        if index is None or not -ndim <= index < ndim:
            name = a if isinstance(a, str) else next(iter(arg.inputs), "i")
            raise (TypeError if index is None else ValueError)(_AXIS_NOT_OUTPUT.format(
                op=op.name, axis=a, out=arg.output, name=name, inputs=dict(arg.inputs)))
        out.append(index)
    return tuple(out)


def _build_reduction(op, arg, axis=None, keepdims=False, ddof=0):
    arg = to_funsor(arg)
    ndim = len(arg.shape)
    if axis is not None:
        axes = _checked_axes(op, arg, tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))
        axes = tuple(sorted(a - ndim if a >= 0 else a for a in axes))
        axis = axes[0] if op in (ops.argmax, ops.argmin) else axes
    if ddof and op in (ops.std, ops.var):
        # The ddof-corrected variance of n values is n / (n - ddof) times the plain one, so
        # the term keeps one form (ddof=0) and the correction is a scale.
        n = math.prod(arg.shape[a] for a in (range(-ndim, 0) if axis is None else axis))
        var = Unary(ops.var.bind(axis=axis, keepdims=keepdims), arg) * (n / (n - ddof))
        return var.sqrt() if op is ops.std else var
    return Unary(op.bind(axis=axis, keepdims=keepdims), arg)


def _build_moment(op, arg, axis=None, ddof=0, keepdims=False):
    # std and var take ``ddof`` before ``keepdims``, as numpy's and funsor's do.
    return _build_reduction(op, arg, axis=axis, keepdims=keepdims, ddof=ddof)


def _build_reshape(op, arg, shape, ndim=None):
    # Only the output is reshaped: ``ndim`` tells the kernel how many rightmost dims that is,
    # so a Tensor's batch dims (its inputs) stay as they are.
    arg = to_funsor(arg)
    if ndim is not None:
        raise TypeError("ops.reshape of a funsor reshapes its whole output; give only a shape")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = arg.output.num_elements
    if shape.count(-1) == 1:
        known = math.prod(s for s in shape if s != -1)
        if known and size % known == 0:
            shape = tuple(size // known if s == -1 else s for s in shape)
    if math.prod(shape) != size or any(s < 0 for s in shape):
        raise ValueError(f"cannot reshape a funsor of output {arg.output!r} to shape {shape}: "
                         f"the shape must have {size} elements")
    if shape == arg.shape:
        return arg
    return Unary(op.bind(shape=shape, ndim=len(arg.shape)), arg)


def _build_binary(op, lhs, rhs, **params):
    if params:
        op = op.bind(**params)
    lhs, rhs = to_funsor(lhs), to_funsor(rhs)
    # ``ops.logaddexp(f, g)`` takes the eager operators' one-frame case (terms/operators.py).
    rules = eager_rules((Binary, type(op), type(lhs), type(rhs)))
    fast = _EAGER_BINARY.get(rules[0]) if rules else None
    if fast is not None and (result := fast(op, lhs, rhs)) is not None:
        return result
    return Binary(op, lhs, rhs)


def _build_array_op(op, *args, **kwargs):
    raise TypeError(f"ops.{op.name} acts on arrays, not funsors")


register_funsor_builder(ops.UnaryOp, _build_unary, Funsor)
register_funsor_builder(ops.ReductionOp, _build_reduction, Funsor)
register_funsor_builder(type(ops.reshape), _build_reshape, Funsor)
register_funsor_builder(type(ops.std), _build_moment, Funsor)
register_funsor_builder(type(ops.var), _build_moment, Funsor)
register_funsor_builder(ops.BinaryOp, _build_binary, Funsor)
register_funsor_builder(ops.ArrayOp, _build_array_op, Funsor)

