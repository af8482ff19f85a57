"""Ops with parameters that act on a funsor's output: ``ops.transpose(f, -1, -2)``,
``ops.clamp(f, 0, 1)``, ``ops.diagonal(f, -2, -1)``, ``ops.flip(f, -1)``, ``ops.permute(f, axes)``,
``ops.expand(f, shape)``, ``ops.full_like(f, value)``, ``ops.triangular_inv(f)``, ...

funsor spells their parameters positionally, as the array libraries do. Applied to a funsor,
the parameters are read in that order, checked against its output, and normalized so that the
bound op stored in the ``Unary`` term counts dims of the output only: axes from the right
(negative), a permutation relative to the output, a full output shape for ``expand``. Batch
dims (the inputs of a Tensor) are therefore never touched.

Example:
    >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2]})
    >>> ops.flip(f, -1)(i=0).data, ops.clamp(f, 1, 4)(i=1).data
    (array([2., 1., 0.]), array([3., 4., 4.]))
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.ops.op import expand_shape, register_funsor_builder
from funsor_core.terms.base import Funsor, Unary, to_funsor

__all__ = ["POSITIONAL_PARAMS"]

# The parameters each op takes after its array, in funsor's (and numpy's) positional order.
POSITIONAL_PARAMS = {
    ops.transpose: ("dim0", "dim1"),
    ops.clamp: ("min", "max"),
    ops.diagonal: ("dim1", "dim2"),
    ops.flip: ("axis",),
    ops.triangular_inv: ("upper",),
    ops.permute: ("axes",),
    ops.expand: ("shape",),
    ops.full_like: ("fill_value",),
    ops.triu: ("k",),
    ops.tril: ("k",),
    ops.astype: ("dtype",),
}


def _negative(axis: int, ndim: int, op) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"ops.{op.name}: dim {axis} is out of range for an output of "
                         f"{ndim} dims")
    return axis - ndim if axis >= 0 else axis


def _dims(names):
    # Two dims, each counted from the right of the output (batch dims stay untouched).
    def normalize(op, shape, params):
        for name in names:
            if name in params:
                params[name] = _negative(params[name], len(shape), op)
        return params
    return normalize


def _flip_axes(op, shape, params):
    axis = params.get("axis")
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    params["axis"] = tuple(sorted(_negative(a, len(shape), op) for a in axes))
    return params


def _permute_axes(op, shape, params):
    axes = params.get("axes")
    axes = tuple(reversed(range(len(shape)))) if axes is None else tuple(axes)
    params["axes"] = tuple(a + len(shape) if a < 0 else a for a in axes)
    return params


def _expand_shape(op, shape, params):
    params["shape"] = expand_shape(shape, tuple(params["shape"]))
    return params


_NORMALIZE = {
    ops.transpose: _dims(("dim0", "dim1")),
    ops.diagonal: _dims(("dim1", "dim2")),
    ops.flip: _flip_axes,
    ops.permute: _permute_axes,
    ops.expand: _expand_shape,
}


def _build_output_op(op, arg, *args, **params):
    names = POSITIONAL_PARAMS[op.base]
    if len(args) > len(names):
        raise TypeError(f"ops.{op.name} takes at most {len(names)} parameters after the "
                        f"funsor ({', '.join(names)}), got {len(args)}")
    for name, value in zip(names, args):
        if name in params:
            raise TypeError(f"ops.{op.name} got parameter '{name}' twice")
        params[name] = value
    params = {**op.kwargs, **params}
    arg = to_funsor(arg)
    normalize = _NORMALIZE.get(op.base)
    if normalize is not None:
        params = normalize(op, arg.output.shape, params)
    return Unary(op.base.bind(**params) if params else op.base, arg)


for _op in POSITIONAL_PARAMS:
    register_funsor_builder(type(_op), _build_output_op, Funsor)
del _op
