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
step is the same program (one ``lax.scan`` under ``jax.jit`` on jax). Transitions may vary
with time (a ``(T - 1, K, K)`` array, or a lazy ``MarkovProduct``'s steps): the scan then
reads one extended transition per step.

Example:
    >>> log_a = np.log(np.full((2, 2), 0.5))
    >>> log_g = np.log(np.array([[0.9, 0.1], [0.2, 0.8]]))
    >>> r = hmm_smc(np.log(np.full(2, 0.5)), log_a, log_g, 10, rng_key=0)
    >>> round(float(r.log_z), 6) == round(float(np.log(0.5 * 0.5)), 6)  # iid states: exact
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.smc.allocation_smc import SMCResult
from funsor_core.algorithms.smc.sweep import Proposal, check_counts, check_rng_key, run_sweep
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import Cache
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.traversal import reinterpret

__all__ = ["hmm_smc"]

_COMPILED = Cache("smc.state_space.programs", maxsize=32)

_SHAPES = ("hmm_smc needs log_init (K,), log_trans (K, K) (homogeneous) or (T - 1, K, K) (step t "
           "uses log_trans[t - 1]) or a lazy MarkovProduct, and log_obs (T, K); got {}")


def _check(log_init, log_trans, log_obs) -> tuple[int, int]:
    k = log_init.shape[-1] if len(log_init.shape) == 1 else -1
    shapes = f"{tuple(log_init.shape)}, {tuple(log_trans.shape)}, {tuple(log_obs.shape)}"
    if k < 1 or len(log_obs.shape) != 2 or log_obs.shape[1] != k:
        raise ValueError(_SHAPES.format(shapes))
    steps = log_obs.shape[0]
    if tuple(log_trans.shape) not in ((k, k), (max(steps - 1, 0), k, k)):
        raise ValueError(_SHAPES.format(shapes))
    if steps < 1:
        raise ValueError(f"hmm_smc needs at least one observation (log_obs (T, K), T >= 1); "
                         f"got {shapes}")
    for name, x in (("log_init", log_init), ("log_trans", log_trans), ("log_obs", log_obs)):
        x = ops.detach(x)  # (under jax.jit even a closed-over array's detach is traced)
        if not ops.is_concrete(x):
            continue  # traced under jax.jit: a NaN gives a NaN estimate
        host = np.asarray(ops.to_numpy(x))
        bad = np.argwhere(~(host < np.inf))  # NaN or +inf
        if bad.size:
            at = tuple(int(i) for i in bad[0])
            raise ValueError(f"hmm_smc: {name}[{at}] is {host[at]}; a log probability must be "
                             "a number or -inf (probability 0)")
    # The sweep runs on log_obs's backend; another backend's arrays are refused, except
    # arrays without autodiff (numpy) read by a compiling backend (jax), which loses nothing.
    modules = [backend_of(x) for x in (log_init, log_trans, log_obs)]
    target = modules[-1]
    if any(m is not target and (m.DIFFERENTIABLE or not target.COMPILES) for m in modules):
        names = ", ".join(m.NAME for m in modules)
        raise TypeError(f"hmm_smc: log_init, log_trans and log_obs hold {names} arrays; pass "
                        "arrays of one backend (nothing is converted silently)")
    return k, steps


def _chain_arrays(chain, log_obs):
    """``(log_trans (T', K, K), log_obs (T' + 1, K))`` of a lazy ``MarkovProduct`` of log
    factors over ``(time, prev, curr)`` (emissions may be folded into its steps): its steps
    are the transitions into states 1..T'; state 0 has the initial factor only."""
    if chain.sum_op is not ops.logaddexp or chain.prod_op is not ops.add:
        raise ValueError(f"hmm_smc needs a MarkovProduct in the (logaddexp, add) semiring, got "
                         f"({chain.sum_op}, {chain.prod_op})")
    trans = chain.trans
    if not isinstance(trans, Tensor) and all(d.dtype != "real" for d in trans.inputs.values()):
        # A step recorded under lazy (``trans + obs``, as the README builds an HMM) is a
        # ground term over discrete names: evaluate it once, as exact would have.
        trans = reinterpret(trans)
    if len(chain.step) != 1 or not isinstance(trans, Tensor):
        raise ValueError(f"hmm_smc needs a MarkovProduct of one state (step {chain.step}) whose "
                         f"trans is a Tensor (or evaluates to one outside lazy), got "
                         f"{type(trans).__name__} over {dict(trans.inputs)}")
    (prev, curr), = chain.step
    names = (chain.time.name, prev, curr)
    if set(trans.inputs) != set(names):
        raise ValueError(f"the MarkovProduct's trans must have exactly the inputs {names}, "
                         f"got {tuple(trans.inputs)}")
    log_trans = trans.align(names).data
    if log_obs is None:
        shape = (log_trans.shape[0] + 1, log_trans.shape[-1])
        log_obs = ops.new_zeros(log_trans, shape)
    return log_trans, log_obs


def _hmm_sweep(k: int, num_particles: int, ess_threshold: float, scheme: str, varying: bool):
    batch = {"particle": Bint[num_particles]}

    def weigh(trans, state, obs):
        joint = trans(prev=Tensor(state[0], batch, k + 1)) + Tensor(obs, {"x": Bint[k]})
        log_u = joint.reduce(ops.logaddexp, "x").align(("particle",)).data
        return log_u, joint.align(("particle", "x")).data

    def assign(state, value, x):
        return (value,)

    def run(log_init, log_trans, log_obs, key):
        start = ops.new_full(ops.astype(log_obs[0], "int"), (num_particles,), k)
        if not varying:
            # Row k of the extended transition is the initial distribution (the start state).
            trans = Tensor(ops.cat((log_trans, log_init[None, :]), 0),
                           {"prev": Bint[k + 1], "x": Bint[k]})
            step = Proposal(lambda state, obs: weigh(trans, state, obs), assign)
            return run_sweep(step, (start,), log_obs, num_particles, key, ess_threshold,
                             scheme)
        # One extended transition per step: step 0 reads row k (the initial distribution),
        # step t >= 1 reads log_trans[t - 1] from the previous state.
        first = ops.expand(log_init[None, None, :], (1, k, k))
        rows = ops.expand(log_init[None, None, :], (log_obs.shape[0], 1, k))
        ext = ops.cat((ops.cat((first, log_trans), 0), rows), 1)  # (T, k + 1, k)
        step = Proposal(lambda state, x: weigh(Tensor(x[0], {"prev": Bint[k + 1],
                                                             "x": Bint[k]}), state, x[1]),
                        assign)
        return run_sweep(step, (start,), (ext, log_obs), num_particles, key, ess_threshold,
                         scheme)

    return run


def hmm_smc(log_init, log_trans, log_obs, num_particles: int, rng_key: Any = None,
            ess_threshold: float = 0.5, scheme: str = "joint") -> SMCResult:
    """Fully adapted SMC estimate of ``log p(y_{0:T-1})`` for a discrete HMM.

    Args:
        log_init: ``(K,)`` initial log probabilities.
        log_trans: log transition probabilities, rows the previous state: ``(K, K)`` for a
            homogeneous chain; ``(T - 1, K, K)`` for a time-varying one (step ``t`` uses
            ``log_trans[t - 1]``); or a lazy ``MarkovProduct`` (logaddexp, add) of one state
            whose ``trans`` Tensor has the inputs ``(time, prev, curr)``: its ``T'`` steps are
            the transitions into states ``1..T'`` (emissions may be folded into them).
        log_obs: ``(T, K)`` emission log likelihoods ``log p(y_t | x_t)``; with a
            ``MarkovProduct``, None means zeros (``T = T' + 1``).
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
        >>> log_z, _ = hmm_smc(np.zeros(1), np.zeros((2, 1, 1)), np.zeros((3, 1)), 4)
        >>> float(log_z)  # time-varying: T - 1 = 2 transitions
        0.0
    """
    if isinstance(log_trans, MarkovProduct):
        log_trans, log_obs = _chain_arrays(log_trans, log_obs)
    check_counts("hmm_smc", num_particles, ess_threshold)
    rng_key = check_rng_key(rng_key, "hmm_smc")
    k, steps = _check(log_init, log_trans, log_obs)
    varying = len(log_trans.shape) == 3
    module = backend_of(log_obs)
    run = _hmm_sweep(k, num_particles, ess_threshold, scheme, varying)
    if module.COMPILES and module.SPLITS_RNG_KEYS:
        key = (k, steps, num_particles, ess_threshold, scheme, varying, module.NAME)
        fn = _COMPILED.get(key)
        if fn is None:
            fn = _COMPILED[key] = module.jit(run)
        if rng_key is None or isinstance(rng_key, int):
            rng_key = module.new_rng_key(rng_key or 0)
        out = fn(log_init, log_trans, log_obs, rng_key)
    else:
        out = run(log_init, log_trans, log_obs, rng_key)
    return SMCResult(out.log_z, out.ess, out.resampled, {"x": out.state[0]}, out.log_weights)
