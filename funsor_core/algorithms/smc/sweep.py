"""The particle sweep shared by every sequential Monte Carlo estimator here: weights,
systematic resampling, and the running log of the unbiased evidence estimate ``Z-hat``, as
one backend ``scan`` (``lax.scan`` on jax, compiled once per structure by the caller; a
Python loop on numpy and torch).

A model supplies a fully adapted ``Proposal``: two functions of ``state`` (a tuple of arrays
with a leading particle axis) and the step's slice ``x`` of ``xs``:

- ``weigh(state, x) -> (log_u, log_joint[, messages])``: ``log_joint[m, v]`` is particle
  ``m``'s one-step log factor over the step's new values ``v`` (flattened), and ``log_u =
  logsumexp_v log_joint`` its incremental log weight (``log p(y_t | past)``, independent of
  ``v``); where the new values are many (an allocation model's hidden indices), ``v`` is
  only the *root* of them and ``complete`` draws the rest from ``messages`` (backward
  sampling through an elimination, ``token_plan.py``), so no joint table is formed;
- ``assign(state, v, x) -> state``: the state once each particle takes the new value ``v``;
- optionally ``move``: an MCMC kernel applied after ``assign`` (resample-move).

Two schemes share it. ``"adaptive"`` (BAM-SIS-R, Algorithm 3 of Cemgil et al.): weigh,
resample systematically when the effective sample size falls below ``ess_threshold * M``, then
draw every particle's ``v`` from its one-step posterior (Gumbel-max on ``log_joint``, the law
of the library's Tensor sampler; the auxiliary filter's order, so resampled duplicates move
independently). Eagerly, above the threshold, no resampling work is done.
``"joint"``: every step, draw ``M`` pairs ``(m, v)`` systematically from the expanded system
``w_m exp(log_joint[m, v])`` ordered by ``v`` first, which stratifies the new values across
particles (an unbiased resampling of the exhaustive expansion; far lower variance of
``log Z-hat`` for small state spaces, see benchmarks/smc.py). Either way, with normalized
weights ``w``,

    Z-hat = prod_t sum_m w_{t-1,m} u_{t,m}

is unbiased for Z whatever the resampling decisions (Del Moral, 2004). Resampling is decided
per step by a mask (``where``), not a branch, so the same program runs under ``jax.jit``.

Example:
    >>> step = Proposal(lambda state, x: (state[0] * 0.0 + x, state[0][:, None] * 0.0 + x),
    ...                 lambda state, v, x: state)  # u = exp(x) for every particle
    >>> out = run_sweep(step, (np.zeros(4),), np.array([-1.0, -2.0]), 4, rng_key=0)
    >>> float(out.log_z), out.ess.tolist()
    (-3.0, [4.0, 4.0])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.ops.op import is_array_type
from funsor_core.sampling.draw import backend_and_key
from funsor_core.sampling.keys import seed_or_key

__all__ = ["Proposal", "SCHEMES", "SweepResult", "categorical", "check_rng_key", "ess_of",
           "run_sweep", "systematic_resample"]

SCHEMES = ("adaptive", "joint")


class Proposal(NamedTuple):
    """A fully adapted proposal: ``weigh(state, x) -> (log_u, log_root[, messages])`` and
    ``assign(state, v, x) -> state`` (see the module docstring). Where the step's new values
    are more than the root ``v`` drawn from ``log_root``, ``complete(messages, index, v,
    uniforms)`` draws the rest for the particles' ancestors ``index`` from the ``messages``
    of ``weigh`` (backward sampling), given uniform arrays of the shapes ``draws``, and
    ``assign`` receives what it returns. ``move(state, x, uniforms) -> state``, applied
    ``moves`` times after ``assign`` with uniforms of the shapes ``move_draws``, is an MCMC
    kernel that leaves the step's target invariant (resample-move; the weights are not
    touched).

    Example:
        A two-state hidden Markov model whose hidden state is the particle's state; its
        transitions ignore the previous state, so every particle's ``u`` is the same and
        ``Z-hat`` is exact.

        >>> A = np.log(np.array([[0.3, 0.7], [0.3, 0.7]]))
        >>> B = np.log(np.array([[0.7, 0.3], [0.1, 0.9]]))  # emissions of y in {0, 1}
        >>> def weigh(state, y):
        ...     log_joint = A[state[0]] + B[:, y]
        ...     return np.logaddexp.reduce(log_joint, -1), log_joint
        >>> step = Proposal(weigh, lambda state, v, y: (v,))
        >>> out = run_sweep(step, (np.zeros(3, np.int64),), np.array([0, 1]), 3, rng_key=0)
        >>> bool(np.isclose(out.log_z, np.log((0.3 * 0.7 + 0.7 * 0.1) * (0.3 * 0.3 + 0.7 * 0.9))))
        True
    """

    weigh: Callable
    assign: Callable
    complete: Callable | None = None
    draws: tuple = ()
    move: Callable | None = None
    move_draws: tuple = ()
    moves: int = 0


class SweepResult(NamedTuple):
    """What ``run_sweep`` returns: ``log_z`` (a scalar array), ``ess`` (the effective sample
    size after each step's weighting, before resampling), ``resampled`` (bool per step),
    ``state`` (the particles' final state) and ``log_weights`` (their normalized log
    weights).

    Example:
        >>> A = np.log(np.array([[0.9, 0.1], [0.2, 0.8]]))  # transitions
        >>> B = np.log(np.array([[0.7, 0.3], [0.1, 0.9]]))  # emissions of y in {0, 1}
        >>> def weigh(state, y):
        ...     log_joint = A[state[0]] + B[:, y]
        ...     return np.logaddexp.reduce(log_joint, -1), log_joint
        >>> step = Proposal(weigh, lambda state, v, y: (v,))
        >>> out = run_sweep(step, (np.arange(100) % 2,), np.array([0, 1, 1]), 100, rng_key=0,
        ...                 scheme="joint")
        >>> out.resampled.tolist(), out.ess.shape, out.state[0].shape  # "joint": every step
        ([True, True, True], (3,), (100,))
        >>> bool(np.isclose(np.logaddexp.reduce(out.log_weights), 0.0))
        True
    """

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


def _cumsum(x):
    """Inclusive cumulative sum over the last axis of a float array, as two matmuls by an
    upper-triangular ``b x b`` ones matrix (``b = ceil(sqrt n)``): the sums within blocks of
    ``b``, then the blocks' running totals. There is no cumsum kernel on every backend; this
    is O(n sqrt n) flops in a fixed number of array calls (log-depth doubling took
    ``4 log2 n``), with static shapes, so it traces under ``jax.jit``.

    Example:
        >>> _cumsum(np.arange(5.0)).tolist()
        [0.0, 1.0, 3.0, 6.0, 10.0]
    """
    n = x.shape[-1]
    if n <= 1:
        return x
    lead = tuple(x.shape[:-1])
    b = math.isqrt(n - 1) + 1
    if b * b > n:
        x = ops.cat((x, ops.new_zeros(x, lead + (b * b - n,))), -1)
    arange = ops.new_arange(ops.astype(x, "int"), 0, b, 1)
    # In x's dtype: a bool matrix cast to the default float would not match a float32 x.
    upper = ops.mul(ops.new_full(x, (b, b), 1.0), ops.ge(arange[None, :], arange[:, None]))
    within = ops.matmul(ops.reshape(x, lead + (b, b)), upper)
    totals = within[..., -1]
    before = ops.sub(ops.matmul(totals, upper), totals)  # exclusive: the blocks before
    out = ops.reshape(ops.add(within, before[..., None]), lead + (b * b,))
    return out[..., :n]


def systematic_resample(log_w, uniform, num: int | None = None):
    """``num`` (default: as many as weights) indices into the normalized log weights
    ``log_w`` by systematic resampling: draw ``k`` takes the first index whose cumulative
    weight ``c`` passes ``(k + u) / num`` for one ``u ~ U(0, 1)``. A 2-d ``log_w`` is read in
    row-major order (its flat indices are returned).

    No search: ``N_j = ceil(num * c_j - u)`` draws fall below ``c_j``, so draw ``k`` takes index
    ``#{j : N_j <= k}``, a histogram of the ``N_j`` (``scatter_add``) and its cumulative sum.

    Example:
        >>> systematic_resample(np.array([-0.7, -np.inf, -0.7]), np.array(0.5)).tolist()
        [0, 2, 2]
    """
    cum = _cumsum(ops.reshape(ops.exp(log_w), (-1,)))
    size = cum.shape[0]
    num = size if num is None else num
    # ceil(y) = -floor(-y), with floor as float floordiv by one.
    ceil = ops.neg(ops.floordiv(ops.sub(uniform, ops.mul(cum, float(num))), 1.0))
    below = ops.clamp(ops.astype(ceil, "int"), 0, num)
    hist = ops.scatter_add(ops.new_zeros(cum, (num + 1,)), below, ops.full_like(cum, 1.0))
    # The counts are exact in floating point (below 2^24), and round to ints.
    index = ops.astype(ops.add(_cumsum(hist[:num]), 0.5), "int")
    return ops.clamp(index, 0, size - 1)


def categorical(log_p, uniform):
    """One draw per row of the log weights ``log_p`` ``(rows, values)`` (unnormalized), by
    the Gumbel-max trick ``argmax(log_p - log(-log U))`` (the law of the library's Tensor
    sampler, ``sampling.draw.sample_tensor``), with ``uniform`` of the same shape.

    Example:
        >>> categorical(np.array([[0.0, -np.inf], [-np.inf, 0.0]]), np.full((2, 2), 0.5))
        array([0, 1])
    """
    gumbel = ops.neg(ops.log(ops.neg(ops.log(uniform))))
    return ops.argmax(ops.add(log_p, gumbel), -1)


def _gather(state: tuple, index) -> tuple:
    return tuple(ops.getitem(leaf, (index,)) for leaf in state)


def check_rng_key(rng_key, what: str = "run_sweep"):
    """Raise a ``TypeError`` naming ``rng_key`` unless it is None, an int seed, a numpy or
    torch Generator or a backend's key array (a float or a string failed deep in the
    sampler, as an AttributeError or "no backend for arrays of type str"); return it, a 0-d
    integer array read as a seed (``seed_or_key``: an int seed traced under ``jax.jit``).

    Example:
        >>> check_rng_key(1.5, "smc")
        Traceback (most recent call last):
        ...
        TypeError: smc: rng_key must be an int seed, None, a numpy or torch Generator ...
    """
    if rng_key is None or isinstance(rng_key, (numbers.Integral, np.random.Generator)) or \
            is_array_type(type(rng_key)) or hasattr(rng_key, "manual_seed"):
        return seed_or_key(rng_key)
    raise TypeError(f"{what}: rng_key must be an int seed, None, a numpy or torch Generator "
                    f"or a jax key; got {type(rng_key).__name__} {rng_key!r}")


def check_counts(what: str, num_particles, ess_threshold) -> None:
    """Raise, naming the argument, unless ``num_particles`` is an int >= 1 and
    ``ess_threshold`` a number in [0, 1], both concrete (a ``ValueError``; a threshold that is
    no number, a ``TypeError``): they fix the sweep's shapes and branches and key its
    compiled program, so a value traced under ``jax.jit`` is refused, saying so.

    Example:
        >>> check_counts("hmm_smc", 8, 1.5)
        Traceback (most recent call last):
        ...
        ValueError: hmm_smc: ess_threshold must lie in [0, 1], got 1.5
    """
    def traced(value) -> str:
        return (" (a traced value: it fixes the sweep's shapes and branches; pass a Python "
                "number, or close over it under jax.jit)"
                if is_array_type(type(value)) and not ops.is_concrete(value) else "")

    if isinstance(num_particles, bool) or not isinstance(num_particles, numbers.Integral) \
            or num_particles < 1:
        raise ValueError(f"{what}: num_particles must be >= 1 (an int), got "
                         f"{num_particles!r}{traced(num_particles)}")
    if isinstance(ess_threshold, bool) or not isinstance(ess_threshold, numbers.Real):
        raise TypeError(f"{what}: ess_threshold must be a number in [0, 1], got "
                        f"{ess_threshold!r}{traced(ess_threshold)}")
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"{what}: ess_threshold must lie in [0, 1], got {ess_threshold}")


def run_sweep(step: Proposal, state: tuple, xs, num_particles: int, rng_key=None,
              ess_threshold: float = 0.5, scheme: str = "adaptive") -> SweepResult:
    """Run ``step`` over the leading axis of ``xs`` with ``num_particles`` particles.

    Args:
        step: a ``Proposal`` (see the module docstring).
        state: the particles' initial arrays, each with leading axis ``num_particles``.
        xs: the per-step inputs (an array); the state's backend is the sweep's backend.
        rng_key: an int seed, None, a numpy/torch Generator or a jax key.
        ess_threshold: ``"adaptive"`` resamples when ESS < ``ess_threshold * num_particles``
            (0 never: plain SIS; 1 always).
        scheme: ``"adaptive"`` or ``"joint"`` (see the module docstring).

    Returns:
        a ``SweepResult``.

    Example:
        A two-state hidden Markov model, the particles' state its hidden state (half of them
        in each at the start): ``log Z-hat`` against the forward algorithm.

        >>> A = np.log(np.array([[0.9, 0.1], [0.2, 0.8]]))  # transitions
        >>> B = np.log(np.array([[0.7, 0.3], [0.1, 0.9]]))  # emissions of y in {0, 1}
        >>> def weigh(state, y):
        ...     log_joint = A[state[0]] + B[:, y]
        ...     return np.logaddexp.reduce(log_joint, -1), log_joint
        >>> step = Proposal(weigh, lambda state, v, y: (v,))
        >>> ys = np.array([0, 1, 1, 0])
        >>> out = run_sweep(step, (np.arange(1000) % 2,), ys, 1000, rng_key=0)
        >>> alpha = np.full(2, 0.5)
        >>> for y in ys:
        ...     alpha = (alpha @ np.exp(A)) * np.exp(B[:, y])
        >>> bool(abs(out.log_z - np.log(alpha.sum())) < 0.05)
        True
    """
    if num_particles < 1:
        raise ValueError(f"num_particles must be >= 1, got {num_particles}")
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must lie in [0, 1], got {ess_threshold}")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    rng_key = check_rng_key(rng_key)
    proto = ops.astype(state[0], "float")  # the weights' dtype and backend
    module, key = backend_and_key(proto, rng_key)
    splits = module.SPLITS_RNG_KEYS
    full_log_m = -math.log(num_particles)

    arange = ops.new_arange(ops.astype(proto, "int"), 0, num_particles, 1)
    move_draws = step.move_draws if step.move is not None and step.moves > 0 else ()

    def body(carry, x):
        state, log_w, log_z, key_now = carry
        if splits:
            key_now, k_move, k_res, *k_fill = module.split_key(
                key_now, 3 + len(step.draws) + len(move_draws))
        else:
            k_move = k_res = key_now
            k_fill = [key_now] * (len(step.draws) + len(move_draws))
        uniform = ops.new_array(proto, module.rand((), k_res))
        log_u, log_root, *messages = step.weigh(state, x)
        log_w = ops.add(log_w, log_u)
        inc = ops.logsumexp(log_w, -1)
        # Evidence of probability zero (every particle's u is 0): Z-hat is 0 from here on.
        # Normalizing would make the weights NaN (-inf - -inf) and the estimate NaN after
        # the next step; uniform weights keep log Z-hat at -inf (a NaN input stays NaN).
        dead = ops.eq(inc, -math.inf)
        log_w = ops.where(dead, ops.full_like(log_w, full_log_m),
                          ops.sub(log_w, ops.where(dead, 0.0, inc)))
        ess = ess_of(log_w)
        if scheme == "joint":
            # (value, particle) grid, value-major: the systematic draw stratifies the values.
            # (safesub: where evidence has probability zero, log_root and log_u are both -inf,
            # and -inf - -inf would be NaN; the weights are uniform then, above)
            grid = ops.transpose(ops.add(ops.safesub(log_root, log_u[:, None]), log_w[:, None]),
                                 0, 1)
            flat = systematic_resample(grid, uniform, num_particles)
            index = ops.mod(flat, num_particles)
            value = ops.floordiv(flat, num_particles)
            flag = ops.ge(ess, 0.0)  # resampled at every step
            log_w = ops.full_like(log_w, full_log_m)
        else:
            flag = ops.lt(ess, ess_threshold * num_particles)
            if ops.is_concrete(flag) and not bool(flag):
                index = arange  # eager and above the threshold: no ancestors to draw
            else:
                ancestors = systematic_resample(log_w, uniform)
                index = ops.where(flag, ancestors, arange)
                log_w = ops.where(flag, ops.full_like(log_w, full_log_m), log_w)
            noise = ops.new_array(proto, module.rand(tuple(log_root.shape), k_move))
            value = categorical(ops.getitem(log_root, (index,)), noise)
        if index is not arange:
            state = _gather(state, index)
        if step.complete is not None:
            uniforms = [ops.new_array(proto, module.rand(shape, k))
                        for shape, k in zip(step.draws, k_fill)]
            value = step.complete(messages[0], index, value, uniforms)
        state = step.assign(state, value, x)
        if move_draws:
            stacks = tuple(ops.new_array(proto, module.rand((step.moves,) + tuple(shape), k))
                           for shape, k in zip(move_draws, k_fill[len(step.draws):]))
            state, _ = module.scan(lambda s, u: (step.move(s, x, list(u)), None), state, stacks)
        # One array per step: the loop scans of numpy and torch stack ys as one array.
        trace = ops.stack((ess, ops.astype(flag, "float")), 0)
        return (state, log_w, ops.add(log_z, inc), key_now), trace

    log_w = ops.new_full(proto, (num_particles,), full_log_m)
    log_z = ops.new_full(proto, (), 0.0)
    (state, log_w, log_z, _), trace = module.scan(body, (state, log_w, log_z, key), xs)
    return SweepResult(log_z, trace[:, 0], ops.gt(trace[:, 1], 0.5), state, log_w)
