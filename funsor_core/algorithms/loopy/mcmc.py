"""Blocked Gibbs sampling and Metropolis-Hastings on a ``FactorGraph`` (Singh 2014, ch. 3).

A round updates the colours of the graph's colouring one after the other; the variables of a
colour share no factor, so given the rest they are independent and are updated together, as
one array program. A variable's conditional reads only its Markov blanket: the log tables of
its own factors, indexed at the current values of their other variables,

    log p(x_i = s | x_-i) = sum_{a ∋ i} log psi_a(x_a[i := s]) + const,

computed for a whole colour by ``blocks`` (the colour's variables stored contiguously, its
edges a padded neighbour table: a read of the neighbours' states and ``where`` selects from
tables gathered once per run). A round is one step of the backend's ``scan``, with one
random draw for all colours (on jax, one draw for up to 8 small rounds). Gibbs draws binary
variables by one uniform against the sigmoid of the log odds and others by Gumbel-max; MH
proposes a uniform state (or a draw from a user's ``q(y | x)``) per variable and accepts with
``min(1, p(y) q(x | y) / (p(x) q(y | x)))`` (the same single-site kernel for every variable
of a colour: they are independent given the rest). Both run at temperature ``T`` (``1 / T``
scales the log densities, annealing toward a MAP as ``T -> 0``).

Example:
    >>> f = fc.Tensor(np.log(np.array([[4.0, 1.0], [1.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> plan = SamplerPlan(FactorGraph.build([f]))
    >>> plan.colour_vars
    (array([0]), array([1]))
"""

from __future__ import annotations

import copy

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.blocks import ColourBlocks, block_logits, block_values
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph, backend_of_graph
from funsor_core.algorithms.loopy.mcmcmc import checked_fraction, mcmcmc_rounds
from funsor_core.algorithms.loopy.runners import compiled, uses_compiled
from funsor_core.sampling.keys import KeyStream

__all__ = ["SamplerPlan", "run_chains", "sweep_rounds", "conditional_logits", "KERNELS",
           "void_unsupported"]

KERNELS = ("gibbs", "mh")


class SamplerPlan:
    """Host index arrays of the blocked updates of one graph (structure only).

    For every edge ``e = (a, i at position j)``: the flat offset of ``a``'s table, the stride
    of position ``j``, and the (variable, stride) pairs of the other positions; per colour,
    its variables and their padded edge lists (the padding edge reads a row of zeros); and
    ``blocks``, the colour-block layout the sweeps run on.

    Example:
        A unary factor on ``b`` and a pairwise one on ``(a, b)``: the 2 x 2 table starts at
        flat offset 2 (after the unary's 2 entries), ``a`` strides it by 2, ``b`` by 1; the
        padding edge points at the zeros after all tables (offset 6).

        >>> u = fc.Tensor(np.zeros(2), {"b": fc.Bint[2]})
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f, u]))
        >>> plan.off, plan.stride, plan.colour_vars
        (array([0, 2, 2, 6]), array([1, 2, 1, 1]), (array([0]), array([1])))
    """

    def __init__(self, graph: FactorGraph) -> None:
        if graph.bshape:
            raise NotImplementedError("MCMC over batch inputs: run one sampler per batch "
                                      "element, or use chains (num_chains) for independent runs")
        V, D, E = len(graph.names), graph.D, graph.num_edges
        self.graph = graph
        offsets, size = np.zeros(graph.num_factors, np.int64), 0
        for g in graph.groups:
            width = D ** g.arity
            offsets[g.factor_ids] = size + width * np.arange(len(g.factor_ids))
            size += width * len(g.factor_ids)
        self.zero_offset = size  # D zeros appended after all tables
        rmax = max([g.arity for g in graph.groups] + [1])
        off = np.full(E + 1, size, np.int64)
        stride = np.ones(E + 1, np.int64)
        other_var = np.full((E + 1, max(rmax - 1, 1)), V, np.int64)
        other_stride = np.zeros((E + 1, max(rmax - 1, 1)), np.int64)
        for g in graph.groups:
            k = g.arity
            for row, a in enumerate(g.factor_ids):
                for j in range(k):
                    e = g.edge_start + row * k + j
                    off[e], stride[e] = offsets[a], D ** (k - 1 - j)
                    others = [p for p in range(k) if p != j]
                    other_var[e, : len(others)] = g.var_index[row, others]
                    other_stride[e, : len(others)] = [D ** (k - 1 - p) for p in others]
        self.off, self.stride = off, stride
        self.other_var, self.other_stride = other_var, other_stride
        colors = graph.colors
        self.colour_vars = tuple(np.flatnonzero(colors == c) for c in range(int(colors.max()) + 1))
        self.colour_edges = tuple(graph.var_edges[vs] for vs in self.colour_vars)  # E = pad
        self.blocks = ColourBlocks(graph, self.colour_vars, off, stride, other_var,
                                   other_stride, size)

    def flat_table(self):
        """All tables flattened and concatenated, then ``D`` zeros (the padding edge's row)."""
        g = self.graph
        parts = [ops.reshape(t.table, (-1,)) for t in g.groups]
        parts.append(ops.new_zeros(g.prototype(), (g.D,)))
        return ops.cat(parts, 0)


def conditional_logits(plan: SamplerPlan, flat, x, c: int):
    """``(C, n_c, D)``: the unnormalized log conditionals of colour ``c``'s variables given
    states ``x`` ``(C, V)`` (integers, variables in the graph's order), from their Markov
    blankets only.

    Example:
        ``p(a, b) ∝ psi(a, b) phi(b)``: given ``a``, ``b``'s conditional is ``psi[a] * phi``.

        >>> psi, phi = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 2.0])
        >>> plan = SamplerPlan(FactorGraph.build([
        ...     fc.Tensor(np.log(psi), {"a": fc.Bint[2], "b": fc.Bint[2]}),
        ...     fc.Tensor(np.log(phi), {"b": fc.Bint[2]})]))
        >>> x = np.array([[0, 1], [1, 0]])  # two chains: (a, b) = (0, 1) and (1, 0)
        >>> logits = conditional_logits(plan, plan.flat_table(), x, 1)  # colour 1 is b
        >>> np.allclose(np.exp(logits[:, 0]), psi * phi)
        True
    """
    values = block_values(plan.blocks, flat)
    return block_logits(plan.blocks, values, x[:, plan.blocks.order], c)


def _log_odds(values: tuple) -> tuple:
    """Per-colour values of the log odds ``log p(1) - log p(0)`` of binary variables."""
    return tuple((None if t is None else t[..., 1] - t[..., 0], u[..., 1] - u[..., 0], n)
                 for t, u, n in values)


def _gumbel(u):
    return -ops.log(-ops.log(ops.clamp(u, min=1e-300)))


def _gibbs_binary(blocks, odds, xs, c, inv_t, u):
    # One uniform per variable: x = 1 iff u < p(1) = sigmoid(log odds).
    return u < ops.sigmoid(block_logits(blocks, odds, xs, c) * inv_t)


def _gibbs(blocks, values, xs, c, inv_t, u):
    # Gumbel-max: argmax_s (logit_s / T + G_s) is a draw from the conditional at T.
    return ops.argmax(block_logits(blocks, values, xs, c) * inv_t + _gumbel(u), axis=-1)


def _mh(blocks, values, xs, c, inv_t, u, sizes, log_q):
    """A proposal per variable, accepted with ``min(1, p(y) q(x | y) / (p(x) q(y | x)))``;
    uniform over the variable's states when ``log_q`` is None, else a draw from row ``x``
    of ``log_q`` ``(D, D)`` (log q(y | x))."""
    logits = block_logits(blocks, values, xs, c)
    cur = xs[:, blocks.starts[c]: blocks.starts[c + 1]]
    states = ops.new_array(cur, np.arange(logits.shape[-1]))
    if log_q is None:
        d = ops.new_array(u, sizes[blocks.starts[c]: blocks.starts[c + 1]].astype(float))
        proposal = ops.astype(u[..., 0] * d, "int")  # floor: uniform on the d_i states
        correction = 0.0
    else:
        proposal = ops.argmax(log_q[cur] + _gumbel(u[..., :-1]), axis=-1)
        correction = log_q[proposal, cur] - log_q[cur, proposal]
    gain = (ops.sum(ops.where(states == proposal[..., None], logits, 0.0), axis=-1)
            - ops.sum(ops.where(states == cur[..., None], logits, 0.0), axis=-1)) * inv_t
    return ops.where(ops.log(u[..., -1]) < gain + correction, proposal, cur)


def run_chains(plan: SamplerPlan, init, num_rounds: int, kernel: str = "gibbs",
               temperatures=None, rng_key=None, keep_all: bool = True, *, proposal=None,
               subsample=None):
    """``(num_rounds, C, V)``: the states after each round of blocked updates of ``C`` chains
    started at ``init`` ``(C, V)``; ``temperatures`` one per round (None: all 1);
    ``keep_all=False``: only the last states ``(C, V)``; ``proposal`` (MH only): a ``(D, D)``
    array of log proposal probabilities ``log q(y | x)`` (rows ``x``), None for uniform;
    ``subsample`` (MH only): MCMCMC, the fraction of each variable's factors that scores a
    proposal (``mcmcmc``; not invariant below 1).

    Example:
        >>> f = fc.Tensor(np.log(np.eye(2) + 1e-300), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f]))
        >>> xs = run_chains(plan, np.zeros((3, 2), np.int64), 5, rng_key=0)
        >>> bool((xs[..., 0] == xs[..., 1]).all())
        True
    """
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
    graph = plan.graph
    proto = graph.prototype()
    temps = np.ones(num_rounds) if temperatures is None else np.asarray(temperatures, float)
    if temps.shape != (num_rounds,):
        raise ValueError(f"temperatures: one per round ({num_rounds}), got shape {temps.shape}")
    log_q = None if proposal is None else checked_proposal(plan, proposal, proto)
    key = KeyStream(rng_key).next(proto)
    x0 = init if _is_backend_int(init, proto) else ops.new_array(
        proto, np.asarray(init, dtype=np.int64))
    # Temperature 0 (the MAP) scales by a huge finite number, not inf: a log conditional of 0
    # times inf is NaN, which argmax takes for the best state. 1e270 keeps sums of many log
    # zeros (NEG = -1e30 each) finite and any two distinct logits far apart.
    inv_t = ops.new_array(proto, 1.0 / np.maximum(temps, 1e-270))
    if subsample is not None:
        if kernel != "mh":
            raise ValueError(f"subsample= (MCMCMC) subsamples the MH acceptance test: use "
                             f"kernel='mh', not {kernel!r}")
        frac = checked_fraction(subsample)
        if key is not None and uses_compiled(graph, x0, key):  # eager jax: compiled once
            fn = compiled(graph, "mcmcmc", (frac, log_q is None),
                          lambda: _compiled_mcmcmc(plan, frac))
            states = fn([g.table for g in graph.groups], x0, inv_t, key, log_q)
        else:
            states = mcmcmc_rounds(plan, plan.flat_table(), x0, inv_t, key, frac, log_q)
        return states if keep_all else states[-1]
    if key is not None and uses_compiled(graph, x0, key):
        # Eager jax: one compiled program per structure and options, tables as arguments.
        fn = compiled(graph, "run_chains", (kernel, keep_all, log_q is None),
                      lambda: _compiled_rounds(plan, kernel, keep_all))
        return fn([g.table for g in graph.groups], x0, inv_t, key, log_q)
    return sweep_rounds(plan, plan.flat_table(), x0, inv_t, key, kernel, keep_all, log_q)


def _compiled_mcmcmc(plan: SamplerPlan, frac: float):
    def run(tables, x0, inv_t, key, log_q):
        p = copy.copy(plan)
        p.graph = plan.graph.with_tables(tables)
        return mcmcmc_rounds(p, p.flat_table(), x0, inv_t, key, frac, log_q)
    return run


def _compiled_rounds(plan: SamplerPlan, kernel: str, keep_all: bool):
    def run(tables, x0, inv_t, key, log_q):
        p = copy.copy(plan)
        p.graph = plan.graph.with_tables(tables)
        return sweep_rounds(p, p.flat_table(), x0, inv_t, key, kernel, keep_all, log_q)
    return run


def sweep_rounds(plan: SamplerPlan, flat, x0, inv_t, key, kernel: str, keep_all: bool,
                 log_q=None):
    """``run_chains`` past its checks: every argument an array (or a key) of the backend, so
    that a compiled runner (``runners``' cache) can take them as arguments. ``flat`` is
    ``plan.flat_table()``, ``x0`` the ``(C, V)`` start, ``inv_t`` one inverse temperature
    per round.

    Example:
        Near temperature 0 a Gibbs sweep takes each conditional's mode: from ``(0, 0)`` it
        reaches the joint's mode ``(1, 1)`` of ``psi(a, b) phi(b)`` = [[1, 4], [3, 8]].

        >>> psi, phi = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 2.0])
        >>> plan = SamplerPlan(FactorGraph.build([
        ...     fc.Tensor(np.log(psi), {"a": fc.Bint[2], "b": fc.Bint[2]}),
        ...     fc.Tensor(np.log(phi), {"b": fc.Bint[2]})]))
        >>> xs = sweep_rounds(plan, plan.flat_table(), np.zeros((1, 2), np.int64),
        ...                   np.full(2, 1e270), np.random.default_rng(0), "gibbs", True)
        >>> xs[:, 0].tolist(), np.argwhere(psi * phi == (psi * phi).max()).tolist()
        ([[1, 1], [1, 1]], [[1, 1]])
    """
    graph, blocks = plan.graph, plan.blocks
    module = backend_of_graph(graph)
    values = block_values(blocks, flat)
    binary = kernel == "gibbs" and graph.D == 2
    if binary:
        values = _log_odds(values)
    sizes = np.array(graph.sizes)[blocks.order]
    width = (() if binary else (graph.D,) if kernel == "gibbs"
             else (2,) if log_q is None else (graph.D + 1,))
    C, V = x0.shape[0], len(graph.names)
    splits = module.SPLITS_RNG_KEYS and key is not None
    num_rounds = inv_t.shape[0]
    shape = (C, V) + width

    def one_round(xs, it, u):
        for c in range(blocks.num_colours):
            lo, hi = blocks.starts[c], blocks.starts[c + 1]
            if binary:
                new = _gibbs_binary(blocks, values, xs, c, inv_t[it], u[:, lo:hi])
            elif kernel == "gibbs":
                new = _gibbs(blocks, values, xs, c, inv_t[it], u[:, lo:hi])
            else:
                new = _mh(blocks, values, xs, c, inv_t[it], u[:, lo:hi], sizes, log_q)
            xs = ops.cat([xs[:, :lo], ops.astype(new, "int"), xs[:, hi:]], 1)
        return xs

    x0 = ops.astype(x0[:, blocks.order], "int")
    R = _rounds_per_draw(num_rounds, shape) if splits else 1
    if R > 1:
        last, states = _chunked(module, one_round, x0, key, num_rounds, R, shape, keep_all)
    else:
        keys = ops.stack(module.split_key(key, num_rounds), 0) if splits else None

        def body(xs, step):
            it, k = step
            xs = one_round(xs, it, module.rand(shape, rng_key=k if splits else key))
            return xs, (xs if keep_all else None)

        rounds = ops.new_array(flat, np.arange(num_rounds))
        last, states = module.scan(body, x0, (rounds, keys if splits else rounds))
    rank = blocks.rank
    return states[..., rank] if keep_all else last[:, rank]


# A backend that splits keys draws the uniforms of R rounds at once, R the largest divisor of
# the number of rounds up to ROUNDS_PER_DRAW with R rounds' draws of at most DRAW_ENTRIES
# entries: one generator call per R rounds. Measured on XLA:CPU (64x64 Ising grid, one
# thread): 1 chain 1.3-1.7x faster with R = 8; at 16 chains (65,536 uniforms a round) R = 8
# was 0.75x, so large rounds keep one call each. The law is unchanged: every round still
# reads fresh independent uniforms.
ROUNDS_PER_DRAW = 8
DRAW_ENTRIES = 1 << 16


def _rounds_per_draw(num_rounds: int, shape) -> int:
    per_round = max(int(np.prod(shape)), 1)
    cap = max(1, min(ROUNDS_PER_DRAW, DRAW_ENTRIES // per_round, num_rounds))
    return next(r for r in range(cap, 0, -1) if num_rounds % r == 0)


def _chunked(module, one_round, x0, key, num_rounds: int, R: int, shape, keep_all: bool):
    # An outer scan over num_rounds / R draws, an inner scan over the R rounds of each.
    keys = ops.stack(module.split_key(key, num_rounds // R), 0)
    steps = ops.reshape(ops.new_array(x0, np.arange(num_rounds)), (num_rounds // R, R))

    def inner(xs, step):
        it, u = step
        xs = one_round(xs, it, u)
        return xs, (xs if keep_all else None)

    def outer(xs, step):
        its, k = step
        return module.scan(inner, xs, (its, module.rand((R,) + shape, rng_key=k)))

    last, states = module.scan(outer, x0, (steps, keys))
    if keep_all:
        states = ops.reshape(states, (num_rounds,) + tuple(states.shape[2:]))
    return last, states


_PROPOSAL = ("proposal: a ({D}, {D}) array of log probabilities log q(y | x) (row x, each "
             "row normalized), for variables that all have {D} states; got {what}")


def checked_proposal(plan: SamplerPlan, proposal, proto):
    """The proposal as an array of ``proto``'s backend, checked where it can be read."""
    D = plan.graph.D
    if tuple(getattr(proposal, "shape", np.shape(proposal))) != (D, D):
        raise ValueError(_PROPOSAL.format(D=D, what=f"shape {np.shape(proposal)}"))
    if any(s != D for s in plan.graph.sizes):
        raise ValueError(_PROPOSAL.format(D=D, what=f"domain sizes {plan.graph.sizes}"))
    log_q = ops.new_array(proto, proposal)
    if ops.is_concrete(log_q):
        host = np.asarray(ops.to_numpy(ops.detach(log_q)), float)
        if np.isnan(host).any() or np.isposinf(host).any():  # NaN compares False below
            raise ValueError(_PROPOSAL.format(D=D, what="NaN or +inf entries"))
        rows = np.logaddexp.reduce(host, axis=1)
        if np.abs(rows).max() > 1e-6:
            raise ValueError(_PROPOSAL.format(D=D, what=f"row sums {np.exp(rows)}"))
    return log_q


def void_unsupported(plan: SamplerPlan, states, proposal=None):
    """``states`` ``(S, C, V)`` with every state of a chain set to -1 (no state) where its
    last state has probability zero, or where a table (or ``proposal``) holds NaN or +inf:
    the checks that raise eagerly, made on traced values under ``jax.jit``, where no chain
    may return states that are samples of nothing (as ``infer_discrete``'s -1 paths).

    Example:
        >>> f = fc.Tensor(np.full((2, 2), -np.inf), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f]))
        >>> void_unsupported(plan, np.zeros((3, 1, 2), np.int64))[:, 0].tolist()
        [[-1, -1], [-1, -1], [-1, -1]]
    """
    D, last = plan.graph.D, states[-1]
    void = None
    for g in plan.graph.groups:
        flat = ops.reshape(g.table, (-1,))
        k, rows = g.arity, len(g.factor_ids)
        strides = ops.new_array(last, D ** np.arange(k - 1, -1, -1, dtype=np.int64))
        base = ops.new_array(last, np.arange(rows, dtype=np.int64) * D ** k)
        score = flat[ops.sum(last[:, g.var_index] * strides, -1) + base]  # (C, F_k)
        # A log potential below NEG / 2 is log 0; NaN compares False and so is void too.
        bad = ops.any(~(score > NEG / 2), -1) | ops.any(~ops.isfinite(flat))
        void = bad if void is None else void | bad
    if proposal is not None:
        q = ops.new_array(flat, proposal)
        void = void | ops.any((q != q) | (q == float("inf")))  # NaN or +inf
    return ops.where(void[None, :, None], ops.new_full(states, (), -1), states)


def _is_backend_int(x, proto) -> bool:
    return type(x) is type(proto) and not ops.is_floating(x)
