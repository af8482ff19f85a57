"""Reductions over sharded plates: the local reduction on each device's block, then one
collective (``kind``'s module docstring says which).

``red_V prod(terms)`` splits over the blocks ``B_1..B_P`` of a plate ``i`` in ``V`` because
``red`` is associative and commutative: ``red_V = red_{p} red_{V, i in B_p}``. Each device
evaluates the same Contraction on its block (the plate's domain becomes ``Bint[ceil(n/P)]``)
with the interpretations below ``sharded``, and the collective applies ``red`` over ``p``.
Other sharded plates reduced in the same Contraction are reduced whole on each device.

A plate of ``n`` entries not divisible by ``P`` gives the last devices padded blocks, whose
padding each device masks with the unit of ``red`` in every term that has the plate. That is
exact when the masked entries' product is that unit: one term, a semiring whose zero absorbs
(``-inf + x``, ``0 * x``), or ``red = prod`` with the plate in every term (``0 + 0``);
otherwise the reduction is left to the next interpretation.

Example:
    >>> _mask_exact(ops.logaddexp, ops.add, [True, False])
    True
    >>> _mask_exact(ops.add, ops.add, [True, False])  # sum_i (a_i + b): padding adds b
    False
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.terms.base import Number
from funsor_core.terms.contraction import Contraction

__all__ = ["ALL_REDUCE_OPS", "GATHER_OPS", "block_mask", "shard_plate_reduction"]

# Reductions with an all-reduce of their own, and those combined after one all-gather.
ALL_REDUCE_OPS = (ops.add, ops.max, ops.min)
GATHER_OPS = {ops.logaddexp: ops.logsumexp, ops.mul: ops.prod}
# (red, bin) pairs whose reduction unit absorbs under bin: red's unit in any term makes
# the product that unit.
_ABSORBING = frozenset({(ops.logaddexp, ops.add), (ops.add, ops.mul), (ops.max, ops.add),
                        (ops.min, ops.add)})


class _NotLocal(Exception):
    """The local evaluation did not give a Tensor (a lazy chain below ``sharded``)."""


def _mask_exact(red_op, bin_op, has_plate: list) -> bool:
    return (len(has_plate) == 1 or (red_op, bin_op) in _ABSORBING
            or (red_op is bin_op and all(has_plate)))


def block_mask(proto, index, block: int, size: int, dim: int, ndim: int):
    """Which entries of device ``index``'s ``block``-long block (of ``size`` in all) are
    real, shaped to broadcast along ``dim`` of an ``ndim``-dim array.

    Example:
        >>> block_mask(np.zeros(1), 1, 3, 5, 0, 2).ravel().tolist()
        [True, True, False]
    """
    keep = ops.new_arange(proto, block) < size - index * block
    shape = [1] * ndim
    shape[dim] = block
    return ops.reshape(keep, tuple(shape))


def _local_inputs(tensors, name: str, block: int) -> list:
    return [{k: Bint[block] if k == name else d for k, d in t.inputs.items()} for t in tensors]


def _local_terms(terms: tuple, blocks) -> tuple:
    # The terms on one device: each Tensor on its block (``blocks`` yields them in order).
    out = []
    for t in terms:
        if type(t) is Tensor:
            data, inputs = next(blocks)
            t = Tensor(data, inputs, t.dtype)
        out.append(t)
    return tuple(out)


def shard_plate_reduction(interp, red_op, bin_op, reduced_vars: frozenset, terms: tuple):
    """``Contraction(red_op, bin_op, reduced_vars, terms)`` with a sharded plate split over
    the mesh of ``interp`` (a ``Sharded``); None where it does not apply (no sharded plate
    reduced, a term that is not a Tensor or Number, a reduction with no collective, uneven
    blocks whose masking would change the value).

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
    name = names[0]
    backend, (count,) = interp.spmd(tensors[0].data, [name])
    size = next(t.inputs[name].size for t in tensors if name in t.inputs)
    block = math.ceil(size / count)
    uneven = block * count != size
    if uneven and not _mask_exact(red_op, bin_op, [name in t.inputs for t in terms]):
        return None
    dims = [list(t.inputs).index(name) if name in t.inputs else None for t in tensors]
    local_inputs = _local_inputs(tensors, name, block)
    unit = ops.UNITS[red_op]
    out: list = []

    def local(index, *blocks):
        if uneven:
            blocks = [x if d is None else ops.where(
                block_mask(x, index, block, size, d, len(x.shape)), x,
                ops.new_full(x, tuple(x.shape), unit)) for x, d in zip(blocks, dims)]
        local_terms = _local_terms(terms, iter(zip(blocks, local_inputs)))
        with interp.rest():
            result = Contraction(red_op, bin_op, reduced_vars, local_terms)
        if type(result) is not Tensor:
            raise _NotLocal
        out.append(result)
        return result.data

    arrays = [t.data for t in tensors]
    axes = interp.mesh_axes(name)
    try:
        if red_op in ALL_REDUCE_OPS:
            data = backend.shard_all_reduce(interp.mesh, local, arrays, dims, axes, red_op)
        else:
            combine = GATHER_OPS[red_op]
            data = backend.shard_all_gather(interp.mesh, local, lambda s: combine(s, 0), arrays,
                                            dims, axes)
    except _NotLocal:
        return None
    return Tensor(data, dict(out[0].inputs), out[0].dtype)
