"""Markov products of Tensors over a sharded time axis: the three-phase scan.

The product ``M_1 M_2 ... M_T`` (in the semiring ``(sum_op, prod_op)``) is associative, so
with the steps split into ``P`` contiguous blocks ``B_1..B_P`` it is ``S_1 S_2 ... S_P`` with
``S_p`` the product of block ``p``. Each device computes its ``S_p`` with the library's chain
kernel (``chains.discrete.chain_product``, parallel or sequential as the cost model picks),
ONE all-gather brings the ``P`` summaries (``P x batch x K x K``, never a time-length array)
to every device, and each multiplies them in order (a scan of ``P`` steps). A ``T`` not
divisible by ``P`` gives the last devices padded blocks, whose padding each masks with
identity matrices (``prod_op``'s unit on the diagonal, ``sum_op``'s unit elsewhere), which
leave the product unchanged.

The fix-up phase (each device's prefixes times the product of the blocks before it) is what
filtering and smoothing marginals need; ``markov_marginals`` and ``markov_map`` get them as
the derivative of this program, whose backward pass jax runs per device.

Example:
    >>> identity_steps(np.zeros((1, 2, 2)), ops.logaddexp, ops.add, 2, ()).tolist()
    [[[0.0, -inf], [-inf, 0.0]], [[0.0, -inf], [-inf, 0.0]]]
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.discrete import chain_product
from funsor_core.algorithms.chains.discrete_plan import chain_operands
from funsor_core.algorithms.sharding.plates import block_mask
from funsor_core.atoms.tensor import Tensor

__all__ = ["identity_steps", "shard_markov_tensor"]


def identity_steps(proto, sum_op, prod_op, count: int, batch: tuple):
    """``count`` identity matrices of the semiring, shaped ``(count, *batch, K, K)`` like
    ``proto``'s last two dims.

    Example:
        >>> identity_steps(np.zeros((1, 2, 2)), ops.add, ops.mul, 1, ()).tolist()
        [[[1.0, 0.0], [0.0, 1.0]]]
    """
    k = proto.shape[-1]
    eye = ops.new_eye(proto, (k,))
    ident = ops.where(eye > 0.5, ops.new_full(proto, (k, k), ops.UNITS[prod_op]),
                      ops.new_full(proto, (k, k), ops.UNITS[sum_op]))
    return ops.expand(ident, (count, *batch, k, k))


def _steps(plan, prod_op, arrays):
    # The step matrices ``(T, *batch, K, K)``: the prod_op-product of the factors' operands.
    mats = arrays[0]
    for a in arrays[1:]:
        mats = prod_op(mats, a)
    return ops.expand(mats, (plan.duration, *plan.bshape, plan.states, plan.states))


def shard_markov_tensor(interp, sum_op, prod_op, factors: list, time, step: tuple,
                        step_names: tuple, strategy) -> Tensor | None:
    """The Markov product of a discrete chain (its step the product of ``factors``) with its
    time split over the mesh of ``interp`` (a ``Sharded``); None where the time is not
    sharded or no factor varies with it (repeated squaring needs no devices).

    Example:
        >>> shard_markov_tensor(None, ops.add, ops.mul, [], fc.Variable("t", fc.Bint[2]),
        ...                     (), (), None) is None
        True
    """
    if interp is None or time.name not in interp.time or not factors:
        return None
    plan, arrays = chain_operands(factors, time, step, step_names)
    if not plan.has_time or plan.power is not None:
        return None
    proto = next(f.data for f in factors if type(f) is Tensor)
    backend, (shards,) = interp.spmd(proto, [time.name])
    mats = _steps(plan, prod_op, arrays)
    size = plan.duration
    block = math.ceil(size / shards)
    kernel = plan.strategy(strategy, sum_op, prod_op, factors, proto, False)
    axes = interp.mesh_axes(time.name)

    def local(index, steps):
        if block * shards != size:  # the padding of the last blocks: identity steps
            keep = block_mask(steps, index, block, size, 0, len(steps.shape))
            steps = ops.where(keep, steps, identity_steps(steps, sum_op, prod_op, block,
                                                          plan.bshape))
        return chain_product(sum_op, prod_op, (steps,), kernel)

    def combine(summaries):
        return chain_product(sum_op, prod_op, (summaries,), "sequential")

    out = backend.shard_all_gather(interp.mesh, local, combine, [mats], [0], axes)
    if tuple(out.shape) != plan.out_shape:
        out = ops.reshape(out, plan.out_shape)
    return Tensor.make(out, plan.out_inputs, "real", ikey=plan.out_ikey)

