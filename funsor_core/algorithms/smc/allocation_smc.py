"""Sequential Monte Carlo for the marginal likelihood of a count tensor under a Bayesian
allocation model (Cemgil et al., section 4.2, BAM-SIS-R).

The tokens of ``X`` are visited in a chosen order (one fixed sequence of visible cells ``c_V``
for every particle; by exchangeability ``Pr(S_V = X) = T! / prod X! * Pr(c_V^{1:T})``). Each
token's predictive factors (one Pólya urn per family, (4.1)) are funsor Tensors over the
family's indices, batched over a ``particle`` input; substituting the visible values leaves a
factor graph over the hidden indices whose sum is the incremental weight
``u = p(c_V | S^{tau-1})`` and from which the hidden indices are drawn exactly (a Delta
funsor per hidden index: the fully adapted proposal). The counts are updated, and
``sweep.run_sweep`` weights, resamples and accumulates ``log Z-hat``:

    log Z-hat = log NB(T; a, b) + log T! / prod X! + sum_tau log sum_m w_m u_m

On jax the whole sweep is one ``lax.scan`` under ``jax.jit``, compiled once per model, token
count and particle count.

Example:
    >>> from funsor_core.algorithms.smc.model import AllocationModel
    >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 2},
    ...                     ("i", "j"), a=1.0, b=1.0)
    >>> X = np.array([[1, 0], [0, 1]])
    >>> log_z, ess = smc(m, X, num_particles=2000, rng_key=0)
    >>> abs(float(log_z) - m.log_marginal_exact(X)) < 0.05
    True
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.smc.model import AllocationModel
from funsor_core.algorithms.smc.rejuvenate import move_draws, rejuvenate
from funsor_core.algorithms.smc.sweep import Proposal, check_counts, check_rng_key, run_sweep
from funsor_core.algorithms.smc.token_plan import token_plan
from funsor_core.algorithms.smc.urns import lgamma, log_total_count
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import Cache

__all__ = ["SMCResult", "allocation_step", "initial_tables", "smc", "token_sequence"]

_COMPILED = Cache("smc.allocation.programs", maxsize=32)
ORDERS = ("shuffle", "cells")


class SMCResult:
    """An SMC estimate: ``log_z`` (log Z-hat), ``ess`` (the effective sample size after each
    token), ``resampled`` (per token), ``counts`` (the particles' family count tables
    ``S_fa(n)``, a dict over names, arrays ``(particle, *family)``) and ``log_weights``.
    Unpacks as ``log_z, ess`` (``ess_trace`` is another name of ``ess``, the name the API
    page and ``smc``'s docstring use).

    Example:
        >>> r = SMCResult(0.0, [4.0], [False], {}, None)
        >>> log_z, ess = r
        >>> r.ess_trace is r.ess
        True
    """

    def __init__(self, log_z, ess, resampled, counts: dict, log_weights) -> None:
        self.log_z, self.ess, self.resampled = log_z, ess, resampled
        self.counts, self.log_weights = counts, log_weights

    @property
    def ess_trace(self):
        """The effective sample size after each token (``ess``)."""
        return self.ess

    def __iter__(self):
        return iter((self.log_z, self.ess))

    def __repr__(self) -> str:
        return f"SMCResult(log_z={float(self.log_z):.6g}, steps={len(self.ess)})"


def token_sequence(X, order: str = "shuffle", seed: int = 0, names: tuple = ()) -> np.ndarray:
    """The visible cell of every token of the count tensor ``X``, ``(T, X.ndim)`` ints:
    ``"cells"`` in row-major order, ``"shuffle"`` in a random order drawn from ``seed``.
    ``names`` (the indices of ``X``) only name them in the error for a bad count.

    Example:
        >>> token_sequence(np.array([[2, 0], [0, 1]]), "cells").tolist()
        [[0, 0], [0, 0], [1, 1]]
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    X = np.asarray(X)
    wrong = ~((X >= 0) & (X == np.round(X)))  # NaN is wrong too
    if wrong.any():
        bad = tuple(int(i) for i in np.argwhere(wrong)[0])
        over = f" over the indices {tuple(names)}" if names else ""
        raise ValueError(f"X must hold nonnegative integer counts: X[{bad}] = {X[bad]}{over}")
    cells = np.argwhere(np.ones(X.shape, dtype=bool))
    tokens = np.repeat(cells, X.reshape(-1).astype(np.int64), axis=0)
    if order == "shuffle":
        tokens = tokens[np.random.default_rng(seed).permutation(len(tokens))]
    return tokens.reshape(len(tokens), X.ndim).astype(np.int64)


def initial_tables(model: AllocationModel, proto, num_particles: int) -> tuple:
    """The urns before any token: ``alpha_fa(n)`` in every cell, ``(particle, *family)``.

    Example:
        >>> m = AllocationModel({"k": (), "i": ("k",)}, {"i": 3, "k": 2}, ("i",), 1.0, 1.0)
        >>> urns = initial_tables(m, np.zeros(()), 4)
        >>> [u.shape for u in urns], urns[1][0].tolist() == np.full((3, 2), m.alpha["i"]).tolist()
        ([(4, 2), (4, 3, 2)], True)
    """
    return tuple(ops.new_full(proto, (num_particles,) + tuple(model.cards[m] for m in fa),
                              model.alpha[n]) for n, fa in model.families.items())


def allocation_step(model: AllocationModel, num_particles: int) -> Proposal:
    """The fully adapted proposal of one token whose visible cell is ``x`` (ints, in the order of
    ``model.visible``), from the model's ``TokenPlan``: ``weigh`` eliminates the hidden indices
    from the token's predictive factors along the planned order (``log u`` per particle and
    the root's table), ``complete`` draws the other hidden indices backwards through the
    elimination, and ``assign`` adds the token to every family's urn.

    Example:
        >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)},
        ...                     {"i": 2, "j": 2, "k": 3}, ("i", "j"), 1.0, 1.0)
        >>> log_u, log_root, _ = allocation_step(m, 2).weigh(
        ...     initial_tables(m, np.zeros(()), 2), np.array([0, 1]))
        >>> log_root.shape  # (particle, k)
        (2, 3)
    """
    plan = token_plan(_model_key(model), model, num_particles)
    return Proposal(plan.weigh, plan.assign, plan.complete, tuple(plan.uniform_shapes()))


def _sweep_fn(model: AllocationModel, num_particles: int, ess_threshold: float, scheme: str,
              moves: int):
    step = allocation_step(model, num_particles)
    plan = token_plan(_model_key(model), model, num_particles)

    def run(state, tokens, key):
        proposal = step
        if moves:
            proposal = step._replace(
                move=lambda s, x, u: rejuvenate(plan, s, tokens, x, u),
                move_draws=move_draws(plan), moves=moves)
        return run_sweep(proposal, state, tokens, num_particles, key, ess_threshold, scheme)

    return run


def _model_key(model: AllocationModel) -> tuple:
    # Structure only: the pseudo-counts (a) enter through the initial tables, an argument,
    # so a sweep over a compiles once.
    return (tuple(model.parents.items()), tuple(model.cards.items()), model.visible)


def smc(model: AllocationModel, X, num_particles: int, rng_key: Any = None,
        ess_threshold: float = 0.5, order: str = "shuffle",
        scheme: str = "adaptive", moves: int = 0) -> SMCResult:
    """Estimate ``log p(X)`` under ``model`` by sequential Monte Carlo (BAM-SIS-R).

    Args:
        model: an ``AllocationModel``.
        X: the visible count tensor (indices ``model.visible``); its array type picks the
            backend (numpy, torch or jax; on jax the sweep runs compiled).
        num_particles: the number of particles.
        rng_key: an int seed, None, a Generator or a jax key (the shuffled token order
            is drawn from an int seed, else from seed 0; an int seed traced under
            ``jax.jit`` raises a ``ValueError`` with ``order="shuffle"``).
        ess_threshold: resample when ESS < ``ess_threshold * num_particles``.
        order: the token order, ``"shuffle"`` (seeded by an int ``rng_key``) or ``"cells"``.
        scheme: ``"adaptive"`` (BAM-SIS-R: resample under the ESS threshold, then draw the
            hidden indices) or ``"joint"`` (resample and draw jointly, systematically, at
            every token); see ``sweep.py``.
        moves: Gibbs moves per token on the particles' past allocations (``rejuvenate``:
            resample-move; 0, the default, is plain BAM-SIS-R). Long token sequences need
            them (benchmarks/README.md, Figure 10a).

    Returns:
        an ``SMCResult`` (unpacks as ``(log_z, ess_trace)``).

    Example:
        >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
        >>> round(float(smc(m, np.array([[2, 1], [0, 1]]), 4, rng_key=0).log_z), 5)
        -7.97684
    """
    if not isinstance(model, AllocationModel):
        raise TypeError(f"smc(model, X, ...) takes an AllocationModel, got "
                        f"{type(model).__name__}; for a discrete HMM use hmm_smc")
    if not model.names:
        raise ValueError("smc: the model has no indices, so there is nothing to allocate: "
                         "log p(X) is exact, model.log_marginal_exact(X)")
    check_counts("smc", num_particles, ess_threshold)
    if isinstance(moves, bool) or not isinstance(moves, numbers.Integral) or moves < 0:
        raise ValueError(f"smc: moves must be >= 0 (an int), got {moves!r}")
    if order == "shuffle" and getattr(rng_key, "ndim", None) == 0 and \
            "int" in str(getattr(rng_key, "dtype", "")) and not ops.is_concrete(rng_key):
        # The order is drawn on the host from the seed's value, which a traced seed lacks:
        # any fixed order would silently differ from the same seed's eager run.
        raise ValueError("smc: order='shuffle' draws the token order on the host from an "
                         "int rng_key, and this one is traced (under jax.jit); pass the "
                         "seed as a Python int (static), a jax key (order of seed 0, "
                         "eagerly and under jit alike) or order='cells'")
    rng_key = check_rng_key(rng_key, "smc")
    X = model.counts_array(X, model.visible)
    module = backend_of(X, None)
    if module is not None and not ops.is_concrete(X):
        # The tokens (and so the sweep's length) are read from the counts' values.
        raise ValueError("smc: the counts X must be concrete (the number of tokens is read "
                         "from their values); call smc outside jax.jit, with the counts as "
                         "an array: its sweep is compiled once per model structure and "
                         "token count")
    host = np.asarray(X) if module is None else np.asarray(ops.to_numpy(X))
    module = module or backend_of(host)
    want = tuple(model.cards[v] for v in model.visible)
    if host.shape != want:
        raise ValueError(f"X must have shape {want} (visible indices {model.visible}), got "
                         f"{host.shape}")
    tokens = token_sequence(host, order, rng_key if isinstance(rng_key, int) else 0,
                            model.visible)
    proto = ops.new_zeros(ops.astype(module.asarray(np.zeros(1)), "float"), ())
    # Each token's visible cell, then its position (what a move's history update reads).
    positions = np.arange(len(tokens))[:, None]
    xs = ops.astype(module.asarray(np.concatenate([tokens, positions], 1)), "int")
    total = float(host.sum())
    const = float(log_total_count(total, model.a, model.b) + lgamma(total + 1.0)
                  - lgamma(host.astype(np.float64) + 1.0).sum())
    if len(tokens) == 0:
        return SMCResult(ops.new_full(proto, (), const), xs[:0, 0], xs[:0, 0] > 0,
                         {}, ops.new_full(proto, (num_particles,), 0.0))
    run = _sweep_fn(model, num_particles, ess_threshold, scheme, moves)
    state = initial_tables(model, proto, num_particles)
    if moves:  # each hidden index's allocation of every token, per particle
        zeros = ops.new_zeros(ops.astype(xs, "int"), (num_particles, len(tokens)))
        state = state + (zeros,) * len(model.hidden)
    if module.COMPILES and module.SPLITS_RNG_KEYS:
        key = (_model_key(model), num_particles, ess_threshold, scheme, len(tokens),
               moves, module.NAME)
        fn = _COMPILED.get(key)
        if fn is None:
            fn = _COMPILED[key] = module.jit(run)
        rng_key = module.new_rng_key(rng_key) if isinstance(rng_key, int) else rng_key
        if rng_key is None:
            rng_key = module.new_rng_key(0)
        out = fn(state, xs, rng_key)
    else:
        out = run(state, xs, rng_key)
    counts = {n: ops.sub(t, model.alpha[n]) for n, t in zip(model.names, out.state)}
    return SMCResult(ops.add(out.log_z, const), out.ess, out.resampled, counts, out.log_weights)
