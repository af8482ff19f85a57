"""Gaussian Markov products over a sharded time axis: the three-phase scan of ``chains``
with Gaussian steps in square-root form, in either semiring: ``(logaddexp, add)`` integrates
the inner states, ``(max, add)`` maximizes them (the same QR elimination less the integral's
``0.5 d log 2 pi - log |R|``), so the summary and the one all-gather are the same size.

Each device composes its block of steps (``chains.gaussian_scan.block_product``: each step
of rank exactly ``D = 2 dp + dg``, so every product has rank ``D``) into one summary
``(w, s, k)`` over ``[first prev, globals, last curr]``; ONE all-gather brings the ``P``
summaries, packed into one array of ``P x batch x (D + D^2 + 2)`` numbers, to every device,
which composes them in order. A Gaussian chain has no identity step (it would be a point
mass), so a ``T`` not divisible by ``P`` is not padded with one: each device composes its
``ceil(T / P)``-long block in a scan that keeps its carry at the padded steps (filled with a
standard normal, so that the discarded branch stays finite and its gradient zero), and a
flag marks a device whose block is all padding, which the final composition skips.

Example:
    >>> _pack((np.zeros(2), np.eye(2), np.zeros(())), np.ones(()))[0].tolist()
    [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import chain_problem, resolve_strategy
from funsor_core.algorithms.chains.gaussian_scan import (
    GaussianChain,
    block_product,
    canonical_rank,
    compose,
    gaussian_result,
)

__all__ = ["shard_markov_gaussian"]


def _pack(summary: tuple, flag) -> tuple:
    # (w, s, k) and a validity flag as one array (*batch, D + D^2 + 2), for one all-gather.
    w, s, k = summary
    batch, dim = tuple(w.shape[:-1]), w.shape[-1]
    flat = ops.reshape(s, batch + (dim * dim,))
    flag = ops.expand(ops.reshape(flag, (1,) * len(batch)), batch)
    return (ops.cat([w, flat, k[..., None], flag[..., None]], -1),)


def _unpack(packed, dim: int) -> tuple:
    batch = tuple(packed.shape[:-1])
    w = packed[..., :dim]
    s = ops.reshape(packed[..., dim:dim + dim * dim], batch + (dim, dim))
    return (w, s, packed[..., -2]), packed[..., -1] > 0.5


def _masked_product(steps: tuple, keep, mm, scan) -> tuple:
    # The product of the steps where ``keep`` (a bool per step), in order: a scan whose
    # carry stays put at the other steps. The first step must be kept (or the result unused).
    def body(carry, x):
        *step, valid = x
        new = mm(carry, tuple(step))
        return tuple(ops.where(_along(valid, c), n, c) for n, c in zip(new, carry)), None

    first = tuple(x[0] for x in steps)
    rest = tuple(x[1:] for x in steps) + (keep[1:],)
    return scan(body, first, rest)[0]


def _along(flag, x):
    # ``flag`` (batch-free, or batch-shaped) broadcast against the step array ``x``.
    return ops.reshape(flag, tuple(flag.shape) + (1,) * (len(x.shape) - len(flag.shape)))


def _fill(steps: tuple, keep, dim: int) -> tuple:
    # Padded steps replaced by a standard normal over all rows: w = 0, s = I, k = 0.
    w, s, k = steps
    eye = ops.new_eye(s, (dim,))
    keep_w = ops.reshape(keep, (keep.shape[0],) + (1,) * (len(w.shape) - 1))
    keep_s = ops.reshape(keep, (keep.shape[0],) + (1,) * (len(s.shape) - 1))
    keep_k = ops.reshape(keep, (keep.shape[0],) + (1,) * (len(k.shape) - 1))
    return (ops.where(keep_w, w, ops.new_zeros(w, tuple(w.shape))),
            ops.where(keep_s, s, ops.expand(eye, tuple(s.shape))),
            ops.where(keep_k, k, ops.new_zeros(k, tuple(k.shape))))


def shard_markov_gaussian(interp, chain: GaussianChain, time, step: tuple, step_names: tuple,
                          strategy, maximize: bool = False):
    """The Markov product of the Gaussian ``chain`` (from ``gaussian_chain_parts``) with its
    time split over the mesh of ``interp`` (a ``Sharded``): ``Gaussian + Tensor`` as
    ``markov_gaussian`` gives; None for a chain whose one step repeats (``power``).
    ``maximize``: the max-plus product (Viterbi: ``max`` over the inner states instead of
    the integral; ``compose(maximize=True)``), each block composed by the masked scan.

    Example:
        >>> shard_markov_gaussian(None, None, fc.Variable("t", fc.Bint[2]), (), (), None)
    """
    if interp is None or chain is None or chain.power is not None:
        return None
    backend, (shards,) = interp.spmd(chain.w, [time.name])
    dp, dg, size = chain.dp, chain.dg, chain.duration
    dim = 2 * dp + dg
    w, s, k = canonical_rank(chain.w, chain.s, chain.k, dim, dim)
    block = math.ceil(size / shards)
    batch = math.prod(d.size for d in chain.batch.values())
    kernel = resolve_strategy(strategy, chain_problem(w, dp, batch, size, False, True))
    sizes = {"p": dp, "g": dg, "m": dp, "c": dp}

    def mm(a, b):
        return compose(a, ("p", "g", "m"), b, ("m", "g", "c"), ("p", "g", "c"), sizes, None,
                       maximize=maximize)

    def local(index, w, s, k):
        if block * shards == size and not maximize:  # (block_product integrates)
            return _pack(block_product(w, s, k, dp, dg, kernel), ops.new_full(k, (), 1.0))[0]
        keep = ops.new_arange(k, block) < size - index * block
        summary = _masked_product(_fill((w, s, k), keep, dim), keep, mm, backend.scan)
        return _pack(summary, ops.where(keep[0], 1.0, 0.0))[0]

    def combine(stack):
        summaries, flags = _unpack(stack, dim)
        return ops.cat(_pack(_masked_product(summaries, flags, mm, backend.scan),
                             ops.new_full(stack, (), 1.0)), -1)

    packed = backend.shard_all_gather(interp.mesh, local, combine, [w, s, k], [0, 0, 0],
                                      interp.mesh_axes(time.name))
    (w2, s2, k2), _ = _unpack(packed, dim)
    free = {}
    for (p, c), (fp, fcurr) in zip(step, step_names):
        free[p], free[c] = fp, fcurr
    reals = {free.get(n, n): d for n, d in chain.reals.items()}
    return gaussian_result(w2, s2, k2, chain.batch, reals)
