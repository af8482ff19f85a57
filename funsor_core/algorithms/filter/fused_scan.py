"""The fused moment-matching steps of ``windowed_filter`` as one compiled scan (the backend's
``scan`` and ``jit``: ``lax.scan`` under ``jax.jit`` on jax).

``filtering_fused`` runs the steps of a filter whose every step is the same moment-matching
collapse as array programs. On jax a Python loop over them would be traced step by step
under ``jax.jit`` (a program that grows with the chain: tens of seconds to compile a hundred
steps) and dispatched op by op eagerly. Once the steps repeat with the filter's period (the
same layouts every ``period`` steps), the rest of the chain is one ``lax.scan`` over blocks
of ``period`` steps, compiled once per structure and cached: the step atoms' arrays are its
arguments (never baked in), the message is the carry.

Eagerly, the rank tests inside the compiled loop are the traced ones (a component without
moments gives an infinite constant, no error); so where the result is not finite the caller
runs the steps again in Python, which raises the error naming the coordinates, as the term
fold does. (``tests/algorithms/filter/test_fused.py`` runs it against the numpy filter, eagerly and
under ``jax.jit``; ``scan_steps``' example builds two steps by hand, on numpy.)
"""

from __future__ import annotations

from typing import Any

from funsor_core import ops
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import Cache

__all__ = ["scan_steps"]

# One compiled program per structure of a block of steps (and number of blocks).
_COMPILED = Cache("filter.fused_scan.programs", maxsize=64)


def _plan_key(plan) -> tuple:
    return (plan.gaussians, plan.kshape, plan.n, plan.rank, plan.dim, plan.index,
            plan.dense, plan.dense_full, plan.g_ikey, plan.t_ikey)


def _split(step) -> tuple[tuple, tuple]:
    """A step's structure (hashable) and its arrays (a pytree)."""
    static = (_plan_key(step.plan),
              tuple(None if g is None else g[2] for g in step.gaussians),
              step.msg_weights, step.timed_weights is None, step.static_weights is None,
              None if step.gram is None else step.gram[1])
    arrays = (tuple(None if g is None else (g[0], g[1]) for g in step.gaussians),
              step.timed_weights, step.static_weights,
              None if step.gram is None else step.gram[0])
    return static, arrays


def _compiled(statics: tuple, cycle: tuple, blocks: int, backend):
    key = (statics, blocks, backend)
    fn = _COMPILED.get(key)
    if fn is not None:
        return fn

    kinds = [(type(step), step.plan, step.msg_weights,
              tuple(None if g is None else g[2] for g in step.gaussians),
              None if step.gram is None else step.gram[1]) for step in cycle]

    def run(carry, arrays, t0):
        steps = [kind(plan, tuple(None if a is None else (a[0], a[1], timed)
                                  for a, timed in zip(gs, flags)), weights, tw, sw,
                      None if gram_timed is None else (gram, gram_timed))
                 for (kind, plan, weights, flags, gram_timed), (gs, tw, sw, gram)
                 in zip(kinds, arrays)]
        state_type = cycle[0].state_type

        def body(carry, i):
            state = state_type(None, None, *carry)
            t = t0 + i * len(steps)
            for k, step in enumerate(steps):
                state = step(state, t + k)
            return (state.white_vec, state.prec_sqrt, state.log_const), None

        carry, _ = backend.scan(body, carry, ops.new_arange(carry[0], blocks))
        return carry

    fn = _COMPILED[key] = backend.jit(run)
    return fn


def scan_steps(state, t: int, blocks: int, cycle: tuple) -> Any:
    """The message after ``blocks * len(cycle)`` steps from step ``t``, the steps of each
    block being ``cycle`` (``filtering_fused`` steps), run by a compiled ``lax.scan``.

    Returns the new ``(white_vec, prec_sqrt, log_const)``.

    Example:
        A cycle of two steps (``x -> y``, then ``y -> x``), each ``y = x + noise`` of variance
        1 or 3 with probability 1/2, the two components collapsed (second moments match
        exactly): from ``x ~ N(0, 1)``, 2 blocks of the cycle leave variance ``1 + 4 * 2``
        and the mass ``sqrt(2 pi)`` of the first message (the steps are normalized).

        >>> from funsor_core.algorithms.filter.fused import _State, _Step
        >>> from funsor_core.atoms.gaussian.moments import (
        ...     align_system, align_weights, collapse_layout)
        >>> def step(a, b):  # a fused step and its message over a
        ...     msg = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={a: fc.Real})
        ...     var = np.array([1.0, 3.0])
        ...     noise = fc.Gaussian(white_vec=np.zeros((2, 1)),
        ...                         prec_sqrt=var[:, None, None] ** -0.5 * [[1.0], [-1.0]],
        ...                         inputs={"k": fc.Bint[2], a: fc.Real, b: fc.Real})
        ...     w = fc.Tensor(np.log(0.5) - 0.5 * np.log(2 * np.pi * var), {"k": fc.Bint[2]})
        ...     plan = collapse_layout((msg, noise), (fc.Tensor(np.array(0.0)), w),
        ...                            frozenset("k"), frozenset(a))
        ...     ws, ps = align_system(noise.white_vec, noise.prec_sqrt, plan.gaussians[1], plan)
        ...     weights = align_weights(w.data, plan.dense[1])
        ...     return _Step(plan, (None, (ws, ps, False)), plan.dense[0], None, weights), msg
        >>> (xy, msg), (yx, _) = step("x", "y"), step("y", "x")
        >>> start = _State(msg._ikey, (), msg.white_vec, msg.prec_sqrt, np.zeros(()))
        >>> white_vec, prec_sqrt, log_const = scan_steps(start, 0, 2, (xy, yx))
        >>> np.allclose(1 / (prec_sqrt @ prec_sqrt.T), 9.0)
        True
        >>> mass = log_const + 0.5 * np.log(2 * np.pi * 9.0)  # + log of the Gaussian's integral
        >>> bool(np.isclose(mass, 0.5 * np.log(2 * np.pi)))
        True
    """
    statics, arrays = zip(*(_split(step) for step in cycle))
    fn = _compiled(tuple(statics), cycle, blocks, backend_of(state.white_vec))
    return fn((state.white_vec, state.prec_sqrt, state.log_const), tuple(arrays), t)
