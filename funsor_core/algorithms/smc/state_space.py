"""Fully adapted sequential Monte Carlo for discrete state-space models (e.g. an HMM).

For a chain ``x_0 -> x_1 -> ...`` over ``Bint[K]`` with log transition ``log A(x', x)``,
initial ``log pi(x)`` and emission log likelihoods ``log g_t(x)``, the exact one-step
posterior ``p(x_t | x_{t-1}, y_t) ∝ A(x_{t-1}, x_t) g_t(x_t)`` is the proposal, and the
incremental weight is its normalizer ``p(y_t | x_{t-1}) = sum_x A(x_{t-1}, x) g_t(x)``. Each step
is a funsor Tensor over ``(particle, x)`` (the transition substituted at the particles'
states, plus the emission), drawn from as a Delta; ``sweep.run_sweep`` does the rest. The
weights do not depend on the drawn state, so the variance of ``log Z-hat`` comes from the
resampling alone: far below a bootstrap filter's at equal particle counts.

The initial step is a transition from an extra state ``K`` whose row is ``log pi``, so every
step is the same program (one ``lax.scan`` under ``jax.jit`` on jax).

Example:
    >>> log_a = np.log(np.full((2, 2), 0.5))
    >>> log_g = np.log(np.array([[0.9, 0.1], [0.2, 0.8]]))
    >>> r = hmm_smc(np.log(np.full(2, 0.5)), log_a, log_g, 10, rng_key=0)
    >>> round(float(r.log_z), 6) == round(float(np.log(0.5 * 0.5)), 6)  # iid states: exact
    True
"""

from __future__ import annotations

from typing import Any

from funsor_core import ops
from funsor_core.algorithms.smc.allocation_smc import SMCResult
from funsor_core.algorithms.smc.sweep import Proposal, run_sweep
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import Cache

__all__ = ["hmm_smc"]

_COMPILED = Cache("smc.state_space.programs", maxsize=32)


def _check(log_init, log_trans, log_obs) -> tuple[int, int]:
    k = log_init.shape[-1] if len(log_init.shape) == 1 else -1
    if k < 1 or tuple(log_trans.shape) != (k, k) or len(log_obs.shape) != 2 \
            or log_obs.shape[1] != k:
        raise ValueError(f"hmm_smc needs log_init (K,), log_trans (K, K) and log_obs (T, K); "
                         f"got {tuple(log_init.shape)}, {tuple(log_trans.shape)}, "
                         f"{tuple(log_obs.shape)}")
    return k, log_obs.shape[0]


def _hmm_sweep(k: int, num_particles: int, ess_threshold: float, scheme: str):
    batch = {"particle": Bint[num_particles]}

    def run(log_init, log_trans, log_obs, key):
        # Row k of the extended transition is the initial distribution (the start state).
        trans = Tensor(ops.cat((log_trans, log_init[None, :]), 0),
                          {"prev": Bint[k + 1], "x": Bint[k]})

        def weigh(state, obs):
            joint = trans(prev=Tensor(state[0], batch, k + 1)) + Tensor(obs, {"x": Bint[k]})
            log_u = joint.reduce(ops.logaddexp, "x").align(("particle",)).data
            return log_u, joint.align(("particle", "x")).data

        def assign(state, value, obs):
            return (value,)

        start = ops.new_full(ops.astype(log_obs[0], "int"), (num_particles,), k)
        return run_sweep(Proposal(weigh, assign), (start,), log_obs, num_particles, key,
                         ess_threshold, scheme)

    return run


def hmm_smc(log_init, log_trans, log_obs, num_particles: int, rng_key: Any = None,
            ess_threshold: float = 0.5, scheme: str = "joint") -> SMCResult:
    """Fully adapted SMC estimate of ``log p(y_{0:T-1})`` for a discrete HMM.

    Args:
        log_init: ``(K,)`` initial log probabilities.
        log_trans: ``(K, K)`` log transition probabilities, rows the previous state.
        log_obs: ``(T, K)`` emission log likelihoods ``log p(y_t | x_t)``.
        num_particles, rng_key, ess_threshold: as for ``smc``.
        scheme: ``"joint"`` (default: the states drawn systematically, value-major, at every
            step) or ``"adaptive"`` (ESS-triggered resampling, independent draws).

    Returns:
        an ``SMCResult`` whose ``counts`` is ``{"x": final states}``; unpacks as
        ``(log_z, ess_trace)``.

    Example:
        >>> log_z, ess = hmm_smc(np.zeros(1), np.zeros((1, 1)), np.zeros((3, 1)), 4)
        >>> float(log_z), ess.tolist()
        (0.0, [4.0, 4.0, 4.0])
    """
    k, steps = _check(log_init, log_trans, log_obs)
    module = backend_of(log_obs)
    run = _hmm_sweep(k, num_particles, ess_threshold, scheme)
    if module.COMPILES and module.SPLITS_RNG_KEYS:
        key = (k, steps, num_particles, ess_threshold, scheme, module.NAME)
        fn = _COMPILED.get(key)
        if fn is None:
            fn = _COMPILED[key] = module.jit(run)
        if rng_key is None or isinstance(rng_key, int):
            rng_key = module.new_rng_key(rng_key or 0)
        out = fn(log_init, log_trans, log_obs, rng_key)
    else:
        out = run(log_init, log_trans, log_obs, rng_key)
    return SMCResult(out.log_z, out.ess, out.resampled, {"x": out.state[0]}, out.log_weights)
