"""The particle sweep shared by every sequential Monte Carlo estimator here: weights,
systematic resampling under an effective-sample-size threshold, and the running log of the
unbiased evidence estimate ``Z-hat``, as one backend ``scan`` (``lax.scan`` on jax, compiled
once per structure by the caller; a Python loop on numpy and torch).

A model supplies a fully adapted ``Proposal`` of two functions on ``state`` (a tuple of
arrays with a leading particle axis) and the step's slice ``x`` of ``xs``:

- ``weigh(state, x) -> (log_u, aux)``: the incremental log weight of every particle, which for a
  fully adapted proposal depends only on the particle's past (``log p(y_t | past)``), and
  per-particle arrays ``aux`` (e.g. the one-step posterior's log factor) for ``move``;
- ``move(state, aux, x, key) -> state``: draw the step's new values from that posterior.

The particles are weighted, resampled if the effective sample size is low, and only then
moved (the auxiliary particle filter's order): resampled duplicates draw their new values
independently, which keeps more diversity than moving first. With normalized weights ``w``,

    Z-hat = prod_t sum_m w_{t-1,m} u_{t,m}

is unbiased for Z whatever the resampling decisions (Del Moral, 2004). Resampling is decided
per step by a mask (``where``), not a branch, so the same program runs under ``jax.jit``.

Example:
    >>> step = Proposal(lambda state, x: (state[0] * 0.0 + x, ()),  # u = exp(x) for all
    ...                 lambda state, aux, x, key: state)
    >>> out = run_sweep(step, (np.zeros(4),), np.array([-1.0, -2.0]), 4, rng_key=0)
    >>> float(out.log_z), out.ess.tolist()
    (-3.0, [4.0, 4.0])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from funsor_core import ops
from funsor_core.sampling.draw import backend_and_key

__all__ = ["Proposal", "SweepResult", "ess_of", "run_sweep", "systematic_resample"]


class Proposal(NamedTuple):
    """A fully adapted proposal: ``weigh(state, x) -> (log_u, aux)`` and
    ``move(state, aux, x, key) -> state`` (see the module docstring)."""

    weigh: Callable
    move: Callable


class SweepResult(NamedTuple):
    """What ``run_sweep`` returns: ``log_z`` (a scalar array), ``ess`` (the effective sample
    size after each step's weighting, before resampling), ``resampled`` (bool per step),
    ``state`` (the particles' final state) and ``log_weights`` (their normalized log
    weights)."""

    log_z: Any
    ess: Any
    resampled: Any
    state: tuple
    log_weights: Any


def ess_of(log_w):
    """``1 / sum w^2`` of normalized log weights ``log_w`` (last axis).

    Example:
        >>> float(ess_of(np.log(np.full(4, 0.25))))
        4.0
    """
    return ops.exp(ops.neg(ops.logsumexp(ops.add(log_w, log_w), -1)))


def systematic_resample(log_w, uniform):
    """Ancestor indices by systematic resampling: particle ``m`` takes the first ``j`` whose
    cumulative weight passes ``(m + u) / M``, for one ``u ~ U(0, 1)``.

    The cumulative sum is a product with an upper-triangular matrix of ones and the search a
    count of comparisons (``O(M^2)``, no cumsum or searchsorted kernel needed on any
    backend); at a thousand particles that is a millisecond.

    Example:
        >>> systematic_resample(np.array([-0.7, -np.inf, -0.7]), np.array(0.5)).tolist()
        [0, 2, 2]
    """
    m = log_w.shape[-1]
    arange = ops.new_arange(log_w, 0, m, 1)
    upper = ops.astype(ops.le(arange[:, None], arange[None, :]), "float")
    cum = ops.matmul(ops.exp(log_w), upper)
    positions = ops.truediv(ops.add(ops.astype(arange, "float"), uniform), float(m))
    below = ops.lt(cum[None, :], positions[:, None])
    index = ops.sum(ops.astype(below, "int"), -1)
    return ops.clamp(index, 0, m - 1)


def _gather(state: tuple, index) -> tuple:
    return tuple(ops.getitem(leaf, (index,)) for leaf in state)


def run_sweep(step: Proposal, state: tuple, xs, num_particles: int, rng_key=None,
              ess_threshold: float = 0.5) -> SweepResult:
    """Run ``step`` over the leading axis of ``xs`` (an array or a tuple of arrays) with
    ``num_particles`` particles, resampling systematically whenever the effective sample size
    falls below ``ess_threshold * num_particles`` (0 never resamples: plain SIS; 1 always).

    Args:
        step: a ``Proposal`` (see the module docstring).
        state: the particles' initial arrays, each with leading axis ``num_particles``.
        xs: the per-step inputs; their backend is the sweep's backend.
        rng_key: an int seed, None, a numpy/torch Generator or a jax key.

    Returns:
        a ``SweepResult``.
    """
    if num_particles < 1:
        raise ValueError(f"num_particles must be >= 1, got {num_particles}")
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must lie in [0, 1], got {ess_threshold}")
    proto = ops.astype(state[0], "float")  # the weights' dtype and backend
    module, key = backend_and_key(proto, rng_key)
    splits = module.SPLITS_RNG_KEYS

    def draw_uniform(key_now):
        return ops.new_array(proto, module.rand((), key_now))

    def body(carry, x):
        state, log_w, log_z, key_now = carry
        if splits:
            key_now, k_step, k_res = module.split_key(key_now, 3)
        else:
            k_step = k_res = key_now
        log_u, aux = step.weigh(state, x)
        log_w = ops.add(log_w, log_u)
        inc = ops.logsumexp(log_w, -1)
        log_w = ops.sub(log_w, inc)
        ess = ess_of(log_w)
        flag = ops.lt(ess, ess_threshold * num_particles)
        ancestors = systematic_resample(log_w, draw_uniform(k_res))
        index = ops.where(flag, ancestors, ops.new_arange(ancestors, 0, num_particles, 1))
        state, aux = _gather(state, index), _gather(aux, index)
        state = step.move(state, aux, x, k_step)
        log_w = ops.where(flag, ops.full_like(log_w, -math.log(num_particles)), log_w)
        # One array per step: the loop scans of numpy and torch stack ys as one array.
        trace = ops.stack((ess, ops.astype(flag, "float")), 0)
        return (state, log_w, ops.add(log_z, inc), key_now), trace

    log_w = ops.new_full(proto, (num_particles,), -math.log(num_particles))
    log_z = ops.new_full(proto, (), 0.0)
    (state, log_w, log_z, _), trace = module.scan(body, (state, log_w, log_z, key), xs)
    return SweepResult(log_z, trace[:, 0], ops.gt(trace[:, 1], 0.5), state, log_w)
