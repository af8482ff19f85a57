"""Products of Gaussians over a sharded plate: ``Reduce(add, g, V)`` with a sharded plate in
``V`` (and no real name in ``V``) as each device's product over its block of the plate,
then ONE all-gather of the block results.

A sum of Gaussian log densities in square-root information form concatenates their rows
(``white_vec``, ``prec_sqrt``: ``sum_i |w_i - S_i^T x|^2 = |[w_1..w_P] - [S_1..S_P]^T x|^2``),
so the sum over the plate is the concatenation of the ``P`` devices' partial sums: each
device compresses its partial sum to rank ``r <= n`` (a QR of its rows; the constant that
splits off kept), packs ``(white_vec, prec_sqrt, constant)`` into one array of
``(n + 1) r + 1`` numbers per batch entry (never the plate's length), one all-gather stacks
them, and each device lays the ``P`` blocks of rows side by side (rank ``P r``) and adds the
constants: ``Gaussian + Tensor``, the sum's normal form. Padded plate entries (a plate not
divisible by the devices) are masked to zero rows, a Gaussian with no information.

Example:
    >>> shard_plate_gaussian(None, ops.add, None, frozenset()) is None
    True
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.sharding.plates import block_mask
from funsor_core.atoms.gaussian.algebra import is_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.sqrt_info import compress
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.terms.base import Reduce

__all__ = ["shard_plate_gaussian"]


def _parts(result):
    # A local product as (its Gaussian, its constant or None): a Gaussian, or the sum
    # Gaussian + Tensor that a compressed product is (the constant over the batch inputs).
    if type(result) is Gaussian:
        return result, None
    if not is_gaussian_sum(result):
        return None, None
    gaussians = [t for t in result.terms if type(t) is Gaussian]
    rest = [t for t in result.terms if type(t) is not Gaussian]
    if len(gaussians) != 1 or any(type(t) is not Tensor for t in rest):
        return None, None
    batch = tuple(k for k, d in gaussians[0].inputs.items() if d.dtype != "real")
    const = sum(t.align(batch).data if batch else t.data for t in rest)
    return gaussians[0], const


def _pack(g: Gaussian, const):
    # (*batch, (n + 1) r + 1): the density compressed to rank r <= n (QR; the constant it
    # splits off, plus the product's own, as the last number), white vector above the
    # square root, flattened.
    w, s, shift = compress(g.white_vec, g.prec_sqrt)
    if const is not None:
        shift = shift + const
    rows = ops.cat([w[..., None, :], s], -2)
    batch = tuple(rows.shape[:-2])
    flat = ops.reshape(rows, batch + (rows.shape[-2] * rows.shape[-1],))
    return ops.cat([flat, shift[..., None]], -1)


def _combiner(dim: int):
    def side_by_side(stack):
        # (P, *batch, (n + 1) r + 1) -> (*batch, (n + 1) P r + 1): the devices' rows side by
        # side, their constants summed.
        count, batch = stack.shape[0], tuple(stack.shape[1:-1])
        rows = ops.reshape(stack[..., :-1], (count,) + batch + (dim + 1, -1))
        nd = len(rows.shape)
        moved = ops.permute(rows, tuple(range(1, nd - 1)) + (0, nd - 1))
        flat = ops.reshape(moved, batch + (-1,))
        return ops.cat([flat, ops.sum(stack[..., -1:], 0)], -1)
    return side_by_side


def shard_plate_gaussian(interp, op, arg, reduced_vars: frozenset):
    """``Reduce(op, arg, reduced_vars)`` for a Gaussian ``arg`` and ``op = add`` over plates
    only, one of them sharded, split over the mesh of ``interp`` (a ``Sharded``); None
    where it does not apply (another op, a real name reduced, no sharded plate, a local
    result that is not a Gaussian).

    Example:
        >>> shard_plate_gaussian(None, ops.logaddexp, None, frozenset()) is None
        True
    """
    if interp is None or op is not ops.add:
        return None
    if any(arg.inputs[n].dtype == "real" for n in reduced_vars if n in arg.inputs):
        return None
    names = sorted(n for n in reduced_vars & interp.plates.keys() if n in arg.inputs)
    if not names:
        return None
    name = names[0]  # (the other reduced plates are reduced whole on each device)
    backend, (count,) = interp.spmd(arg.white_vec, [name])
    size = arg.inputs[name].size
    block = math.ceil(size / count)
    batch = [k for k, d in arg.inputs.items() if d.dtype != "real"]
    dim = batch.index(name)
    local_inputs = {k: Bint[block] if k == name else d for k, d in arg.inputs.items()}
    out: list = []

    def local(index, w, s):
        if block * count != size:  # padding: zero rows, a Gaussian with no information
            w = ops.where(block_mask(w, index, block, size, dim, len(w.shape)), w, 0.0)
            s = ops.where(block_mask(s, index, block, size, dim, len(s.shape)), s, 0.0)
        with interp.rest():
            result = Reduce(op, Gaussian.make(w, s, local_inputs), reduced_vars)
        g, const = _parts(result)
        if g is None or (const is not None and tuple(const.shape) != tuple(g.white_vec.shape[
                :-1])):
            raise _NotLocal
        out.append(g)
        return _pack(g, const)

    n = arg.prec_sqrt.shape[-2]
    try:
        packed = backend.shard_all_gather(interp.mesh, local, _combiner(n),
                                          [arg.white_vec, arg.prec_sqrt], [dim, dim],
                                          interp.mesh_axes(name))
    except _NotLocal:
        return None
    batch = tuple(packed.shape[:-1])
    rows = ops.reshape(packed[..., :-1], batch + (n + 1, -1))
    inputs = dict(out[0].inputs)
    shift = Tensor(packed[..., -1], {k: d for k, d in inputs.items() if d.dtype != "real"})
    return Gaussian.make(rows[..., 0, :], rows[..., 1:, :], inputs) + shift


class _NotLocal(Exception):
    """The local product was not a Gaussian (plus a constant over its batch inputs)."""
