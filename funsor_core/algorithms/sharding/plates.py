"""Reductions over sharded plates: the local reduction on each device's block, then one
collective (``kind``'s module docstring says which).

``red_V prod(terms)`` splits over the blocks ``B_1..B_P`` of a plate ``i`` in ``V`` because
``red`` is associative and commutative: ``red_V = red_{p} red_{V, i in B_p}``. Each device
evaluates the same Contraction on its block (the plate's domain becomes ``Bint[n / P]``)
with the interpretations below ``sharded``, and the collective applies ``red`` over ``p``.
A plate of ``n`` not divisible by ``P`` is padded to ``P * ceil(n / P)`` with the unit of
``red``, which is exact when the padded entries' product is that unit: one term, or a
semiring whose zero absorbs (``-inf + x``, ``0 * x``), or ``red = prod`` with the plate in
every term (``0 + 0``); otherwise the reduction is left to the next interpretation.

Example:
    >>> _pad_exact(ops.logaddexp, ops.add, [True, False])
    True
    >>> _pad_exact(ops.add, ops.add, [True, False])  # sum_i (a_i + b): padding adds b
    False
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.terms.base import Number
from funsor_core.terms.contraction import Contraction

__all__ = ["ALL_REDUCE_OPS", "GATHER_OPS", "shard_plate_reduction"]

# Reductions with an all-reduce of their own, and those combined after one all-gather.
ALL_REDUCE_OPS = (ops.add, ops.max, ops.min)
GATHER_OPS = {ops.logaddexp: ops.logsumexp, ops.mul: ops.prod}
# (red, bin) pairs whose reduction unit absorbs under bin: red's unit padded in any term
# makes the padded product that unit.
_ABSORBING = frozenset({(ops.logaddexp, ops.add), (ops.add, ops.mul), (ops.max, ops.add),
                        (ops.min, ops.add)})


class _NotLocal(Exception):
    """The local evaluation did not give a Tensor (a lazy chain below ``sharded``)."""


def _pad_exact(red_op, bin_op, has_plate: list) -> bool:
    return (len(has_plate) == 1 or (red_op, bin_op) in _ABSORBING
            or (red_op is bin_op and all(has_plate)))


def _pad(data, axis: int, size: int, value):
    # ``data`` grown along ``axis`` to ``size`` with ``value``.
    missing = size - data.shape[axis]
    if not missing:
        return data
    shape = tuple(missing if d == axis else s for d, s in enumerate(data.shape))
    return ops.cat([data, ops.new_full(data, shape, value)], axis)


def _layout(tensors, padded, shards, interp, unit):
    # Per Tensor: its array padded with ``unit``, the mesh axes of each dim, its local inputs.
    arrays, specs, local_inputs = [], [], []
    for t in tensors:
        data, spec, inputs = t.data, [None] * len(t.data.shape), {}
        for d, (k, dom) in enumerate(t.inputs.items()):
            if k in padded:
                data = _pad(data, d, padded[k], unit)
                spec[d] = interp.mesh_axes(k)
                inputs[k] = Bint[padded[k] // shards[k]]
            else:
                inputs[k] = dom
        arrays.append(data)
        specs.append(tuple(spec))
        local_inputs.append(inputs)
    return arrays, specs, local_inputs


def shard_plate_reduction(interp, red_op, bin_op, reduced_vars: frozenset, terms: tuple):
    """``Contraction(red_op, bin_op, reduced_vars, terms)`` with its sharded plates split over
    the mesh of ``interp`` (a ``Sharded``); None where it does not apply (no sharded plate
    reduced, a term that is not a Tensor or Number, a reduction with no collective, padding
    that would change the value).

    Example:
        >>> shard_plate_reduction(None, ops.add, None, frozenset(), ()) is None  # nothing sharded
        True
    """
    if interp is None or (red_op not in ALL_REDUCE_OPS and red_op not in GATHER_OPS):
        return None
    if not all(type(t) in (Tensor, Number) for t in terms):
        return None
    tensors = [t for t in terms if type(t) is Tensor]
    names = sorted(n for n in reduced_vars & interp.plates.keys()
                   if any(n in t.inputs for t in tensors))
    if not names:
        return None
    backend, counts = interp.spmd(tensors[0].data, names)
    shards = dict(zip(names, counts))
    sizes = {n: next(t.inputs[n].size for t in tensors if n in t.inputs) for n in names}
    padded = {n: shards[n] * math.ceil(sizes[n] / shards[n]) for n in names}
    if padded != sizes and not _pad_exact(red_op, bin_op,
                                         [bool(t.inputs.keys() & padded) for t in terms]):
        return None
    arrays, specs, local_inputs = _layout(tensors, padded, shards, interp, ops.UNITS[red_op])
    out: list = []

    def local(*blocks):
        it = iter(zip(blocks, local_inputs, tensors))
        local_terms = tuple(t if type(t) is Number else _local_tensor(next(it)) for t in terms)
        with interp.rest():
            result = Contraction(red_op, bin_op, reduced_vars, local_terms)
        if type(result) is not Tensor:
            raise _NotLocal
        out.append(result)
        return result.data

    axes = tuple(a for n in names for a in interp.mesh_axes(n))
    try:
        if red_op in ALL_REDUCE_OPS:
            data = backend.shard_all_reduce(interp.mesh, local, arrays, specs, axes, red_op)
        else:
            combine = GATHER_OPS[red_op]
            data = backend.shard_all_gather(interp.mesh, local, lambda s: combine(s, 0), arrays,
                                            specs, axes)
    except _NotLocal:
        return None
    return Tensor(data, dict(out[0].inputs), out[0].dtype)


def _local_tensor(item) -> Tensor:
    block, inputs, t = item
    return Tensor(block, inputs, t.dtype)

