"""Reductions over sharded plates: the local reduction on each device's block, then one
collective (``kind``'s module docstring says which).

``red_V prod(terms)`` splits over the blocks ``B_1..B_P`` of a plate ``i`` in ``V`` because
``red`` is associative and commutative: ``red_V = red_{p} red_{V, i in B_p}``. Each device
evaluates the same Contraction on its block (the plate's domain becomes ``Bint[ceil(n/P)]``)
with the interpretations below ``sharded``, and the collective applies ``red`` over ``p``.
Several sharded plates reduced in one Contraction are split at once, each over its own mesh
axes (a block per device of each), and the one collective runs over all their axes.

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


def _local_inputs(tensors, blocks: dict) -> list:
    return [{k: Bint[blocks[k]] if k in blocks else d for k, d in t.inputs.items()}
            for t in tensors]


def _masked(x, dims: tuple, index: tuple, splits: list, unit):
    # ``x`` with the padded entries of every unevenly split plate set to the reduction's unit;
    # ``splits``: (block, size, uneven) per plate, ``dims``: x's dim of each (None: absent).
    keep = None
    for d, i, (block, size, uneven) in zip(dims, index, splits):
        if d is not None and uneven:
            mask = block_mask(x, i, block, size, d, len(x.shape))
            keep = mask if keep is None else keep & mask
    return x if keep is None else ops.where(keep, x, ops.new_full(x, tuple(x.shape), unit))


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
    """``Contraction(red_op, bin_op, reduced_vars, terms)`` with its sharded plates split over
    the mesh of ``interp`` (a ``Sharded``), each over its own mesh axes, and one collective
    over all of them; None where it does not apply (no sharded plate reduced, a term that is
    not a Tensor or Number, a reduction with no collective, uneven blocks whose masking
    would change the value).

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
    sizes = [next(t.inputs[n].size for t in tensors if n in t.inputs) for n in names]
    blocks = [math.ceil(size / count) for size, count in zip(sizes, counts)]
    uneven = [b * c != size for b, size, c in zip(blocks, sizes, counts)]
    splits = list(zip(blocks, sizes, uneven))
    if not all(_mask_exact(red_op, bin_op, [n in t.inputs for t in terms])
               for n, u in zip(names, uneven) if u):
        return None
    dims = [tuple(list(t.inputs).index(n) if n in t.inputs else None for n in names)
            for t in tensors]
    local_inputs = _local_inputs(tensors, dict(zip(names, blocks)))
    unit = ops.UNITS[red_op]
    several = len(names) > 1
    out: list = []

    def local(index, *parts):
        index = index if several else (index,)
        if any(uneven):
            parts = [_masked(x, d, index, splits, unit) for x, d in zip(parts, dims)]
        local_terms = _local_terms(terms, iter(zip(parts, local_inputs)))
        with interp.rest():
            result = Contraction(red_op, bin_op, reduced_vars, local_terms)
        if type(result) is not Tensor:
            raise _NotLocal
        out.append(result)
        return result.data

    arrays = [t.data for t in tensors]
    axes = [interp.mesh_axes(n) for n in names] if several else interp.mesh_axes(names[0])
    split_dims = dims if several else [d[0] for d in dims]
    try:
        if red_op in ALL_REDUCE_OPS:
            data = backend.shard_all_reduce(interp.mesh, local, arrays, split_dims, axes,
                                            red_op)
        else:
            combine = GATHER_OPS[red_op]
            data = backend.shard_all_gather(interp.mesh, local, lambda s: combine(s, 0), arrays,
                                            split_dims, axes)
    except _NotLocal:
        return None
    return Tensor(data, dict(out[0].inputs), out[0].dtype)
