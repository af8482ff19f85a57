"""MCMCMC: Metropolis-Hastings with the acceptance test on a subsample of the factors
(Singh 2014, chapter 5.1, Algorithm 5.1 with uniform sampling, 5.1.1.1, or confidence-based
sampling, 5.1.1.2).

A single-site proposal ``x_i -> y`` changes the factors ``F_i`` of ``i``'s Markov blanket.
Instead of their exact log ratio ``pi = sum_{f ∈ F_i} log psi_f(y) - log psi_f(x)``, MCMCMC
scores a uniform subsample ``S ⊆ F_i`` of ``|S| = max(1, ceil(p |F_i|))`` factors (drawn
without replacement, afresh for every proposal) and accepts with

    min(1, q(x | y) / q(y | x) * exp(pi_S)),   pi_S = |F_i| / |S| * sum_{f ∈ S} (...)  (eq. 5.2)

``pi_S`` is unbiased for ``pi``, but ``E[min(1, e^pi_S)] != min(1, e^pi)``: the chain no longer
satisfies detailed balance (section 5.1.2), and its stationary distribution differs from the
model's by an amount that shrinks as ``p -> 1``; at ``p = 1`` it is exact MH.

The updates are blocked as ``mcmc``'s (a colour's variables share no factor); the state is
``(C, V)`` in the graph's order. A variable's edge ``e`` contributes
``T_e[s] = flat[off_e + stride_e s + sum_m other_stride_{e,m} x_{other_{e,m}}]`` (the
``SamplerPlan`` offsets; padding edges read zeros); the subsample is the ``|S|`` edges with
the smallest uniform keys (a rank by comparisons, no sort).

Confidence-based sampling (``Confidence(width, level)``, 5.1.1.2) draws the factors one at a
time without replacement, in the order of the same keys, and stops at the first ``k >= 2``
whose confidence interval on the mean log ratio ``d_f`` is narrower than ``width``:

    I_k = 2 z s_k / sqrt(k) * sqrt((|F| - k) / (|F| - 1))   (eq. 5.4, fpc included)

with ``s_k`` the sample standard deviation of the first ``k`` (eq. 5.3) and ``z`` the normal
quantile of ``level`` (1.96 at 0.95), or at ``k = |F|``; then ``pi_S = |F| mean_k(d)``. All
``|F|`` prefixes are scored at once (fixed shapes, so ``jax.jit`` traces it); at ``level = 1``
(``z = inf``) only the full set stops: exact MH. The stopping rule makes ``pi_S`` slightly
biased as well as noisy.

Example:
    >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
    >>> fs = [fc.Tensor(np.log(np.array([1.0, 3.0])), {"a": fc.Bint[2]}) for _ in range(4)]
    >>> plan = SamplerPlan(FactorGraph.build(fs))
    >>> subsample_sizes(plan, 0, 0.5).tolist()
    [2]
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.graph import FactorGraph, backend_of_graph

__all__ = ["Confidence", "mcmcmc_rounds", "subsample_sizes"]

_BAD_FRACTION = ("subsample: the fraction of each variable's Markov-blanket factors scored "
                 "per proposal, a number in (0, 1], or Confidence(width, level) to sample "
                 "until a confidence interval is narrow (ch. 5.1.1.2); got {p!r}")
_BAD_CONFIDENCE = ("Confidence: width must be a number > 0 and level a number in (0, 1]; "
                   "got width={width!r}, level={level!r}")


@dataclass(frozen=True)
class Confidence:
    """MCMCMC's confidence-based subsampling (Singh 2014, 5.1.1.2): score a proposal's
    factors one by one (random order, no replacement) until the ``level`` confidence
    interval of their mean log ratio, finite-population corrected, is narrower than
    ``width``; ``level = 1`` scores them all (exact MH). Pass as ``mh(..., subsample=...)``.

    Example:
        >>> from funsor_core.loopy import Confidence
        >>> round(Confidence(width=0.5).z, 2)
        1.96
    """

    width: float
    level: float = 0.95

    def __post_init__(self) -> None:
        w, lv = self.width, self.level
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in (w, lv)) or \
                not (w > 0 and 0.0 < lv <= 1.0):
            raise ValueError(_BAD_CONFIDENCE.format(width=w, level=lv))

    @property
    def z(self) -> float:
        """The two-sided normal quantile of ``level`` (``inf`` at 1)."""
        return float("inf") if self.level >= 1.0 else NormalDist().inv_cdf(0.5 + self.level / 2)

    @property
    def threshold(self) -> float:
        """``(width / 2z)^2``: the interval is narrow when ``s^2 fpc / k`` is below it."""
        return (self.width / (2.0 * self.z)) ** 2


def subsample_sizes(plan, c: int, p: float) -> np.ndarray:
    """``(n_c,)`` ``|S_i| = max(1, ceil(p |F_i|))`` for colour ``c``'s variables (0 for one
    with no factors).

    Example:
        ``a`` has four factors (three unary, one shared with ``b``), ``b`` one:

        >>> from funsor_core.algorithms.loopy.graph import FactorGraph
        >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan
        >>> u = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([u, u, u, f]))
        >>> subsample_sizes(plan, 0, 0.5), subsample_sizes(plan, 1, 0.5)  # ceil(2.0), ceil(0.5)
        (array([2]), array([1]))
    """
    deg = (plan.colour_edges[c] < plan.graph.num_edges).sum(1)
    return np.where(deg > 0, np.maximum(1, np.ceil(p * deg - 1e-9)), 0).astype(np.int64)


def checked_fraction(p) -> float | Confidence:
    """``p`` as a float in ``(0, 1]`` (uniform) or a ``Confidence``, else a ``ValueError``."""
    if isinstance(p, Confidence):
        return p
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 1.0:
        raise ValueError(_BAD_FRACTION.format(p=p))
    return float(p)


def _ix(ref, index: np.ndarray):
    # A host index array as an integer array of ref's backend (torch rejects numpy indices).
    return ops.new_array(ref, np.asarray(index, dtype=np.int64))


class _Colour:
    """Colour ``c``'s index arrays as arrays of ``ref``'s backend, built once per run (the
    round body only reads them): its variables ``vs``, the base flat index of each edge's
    table entries ``(n_c, deg, D)``, per other position the slot read and its stride, which
    edges are real, ``|S_i|`` and ``|F_i| / |S_i|``, and where its new values go."""

    def __init__(self, plan, c: int, p: float | Confidence, ref) -> None:
        graph, D, V = plan.graph, plan.graph.D, len(plan.graph.names)
        vs, edges = plan.colour_vars[c], plan.colour_edges[c]
        self.deg = edges.shape[1]
        self.vs = _ix(ref, vs)
        base = plan.off[edges][..., None] + plan.stride[edges][..., None] * np.arange(D)
        self.base = _ix(ref, base)[None]
        self.others = [(_ix(ref, plan.other_var[edges, m]), _ix(ref, plan.other_stride[edges, m]))
                       for m in range(plan.other_var.shape[1])]
        real = edges < graph.num_edges
        self.real = ops.new_array(ref, real.astype(float)) > 0.5
        self.confidence = p if isinstance(p, Confidence) else None
        if self.confidence is not None:  # |F_i| and the prefix lengths k = 1..deg
            self.count = ops.new_array(ref, real.sum(1).astype(float))[..., None]
            self.ks = ops.new_array(ref, np.arange(1.0, self.deg + 1.0))
        else:
            size = subsample_sizes(plan, c, p)
            self.size = ops.new_array(ref, size.astype(float))[..., None]
            self.scale = ops.new_array(ref, np.where(size > 0, real.sum(1)
                                                     / np.maximum(size, 1), 0.0))
        self.num_states = ops.new_array(ref, np.array(graph.sizes)[vs].astype(float))
        self.in_c = ops.new_array(ref, np.isin(np.arange(V), vs).astype(float)) > 0.5
        position = np.zeros(V, np.int64)
        position[vs] = np.arange(len(vs))
        self.position = _ix(ref, position)


def _edge_values(col: _Colour, flat, xs_ext):
    # (C, n_c, deg, D): T_e[s] for the colour's edges given the others' states.
    idx = col.base
    for slot, mult in col.others:
        idx = idx + (xs_ext[:, slot] * mult)[..., None]
    return flat[idx]


def _rank(u, real):
    # (C, n_c, deg) each edge's place in the order of its key u, padding edges last.
    keys = ops.where(real, u, 2.0)
    return ops.sum(ops.astype(keys[..., None, :] < keys[..., :, None], "real"), axis=-1)


def _uniform_score(col: _Colour, diff, u):
    # eq. 5.2: |F| / |S| times the sum over the `size` real edges of smallest key.
    chosen = _rank(u, col.real) < col.size
    return ops.sum(ops.where(chosen, diff, 0.0), axis=-1) * col.scale


def _confident_score(col: _Colour, diff, u):
    # 5.1.1.2: the prefixes k = 1..deg of the key order at once; stop at the first k >= 2
    # with s_k^2 (|F| - k) / ((|F| - 1) k) < (width / 2z)^2 (eqs. 5.3-5.4), or at k = |F|.
    ks, count = col.ks, col.count
    inside = _rank(u, col.real)[..., None, :] < ks[:, None]  # (C, n_c, k, deg)
    d = ops.where(col.real, diff, 0.0)[..., None, :]
    mean = ops.sum(ops.where(inside, d, 0.0), axis=-1) / ks  # (C, n_c, k)
    dev = ops.where(inside, d - mean[..., None], 0.0)
    var = ops.sum(dev * dev, axis=-1) / ops.clamp(ks - 1.0, min=1.0)  # two-pass, >= 0
    fpc = (count - ks) / ops.clamp(count - 1.0, min=1.0)
    narrow = (ks >= 2.0) & (var * fpc / ks < col.confidence.threshold)
    stop = ops.amin(ops.where(narrow | (ks >= count), ks, float(col.deg)), -1)  # (C, n_c)
    chosen = ops.sum(ops.where(ks == stop[..., None], mean, 0.0), axis=-1)
    return count[..., 0] * chosen


def _update(col: _Colour, flat, xs, inv_t, u, states, log_q):
    deg, D = col.deg, states.shape[0]
    xs_ext = ops.cat([xs, ops.new_zeros(xs, (xs.shape[0], 1))], 1)
    vals = _edge_values(col, flat, xs_ext)  # (C, n_c, deg, D)
    cur = xs[:, col.vs]
    if log_q is None:
        proposal = ops.astype(u[..., deg] * col.num_states, "int")  # uniform on d_i states
        correction = 0.0
    else:
        g = -ops.log(-ops.log(ops.clamp(u[..., deg: deg + D], min=1e-300)))
        proposal = ops.argmax(log_q[cur] + g, axis=-1)
        correction = log_q[proposal, cur] - log_q[cur, proposal]
    at = (lambda y: ops.sum(ops.where(states == y[..., None, None], vals, 0.0), axis=-1))
    diff = at(proposal) - at(cur)  # (C, n_c, deg): each factor's log ratio
    score = _uniform_score if col.confidence is None else _confident_score
    pi_s = score(col, diff, u[..., :deg])
    accept = ops.log(u[..., -1]) < pi_s * inv_t + correction
    return ops.where(accept, proposal, cur)


def mcmcmc_rounds(plan, flat, x0, inv_t, key, p: float | Confidence, log_q=None):
    """``(R, C, V)``: the states after each of ``R = len(inv_t)`` rounds of blocked MCMCMC
    updates of ``C`` chains from ``x0`` ``(C, V)`` (the graph's order), scoring a fraction
    ``p`` of each variable's factors per proposal, or as many as ``p``, a ``Confidence``,
    asks; ``flat`` as ``SamplerPlan.flat_table()``.

    Example:
        >>> from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains
        >>> fs = [fc.Tensor(np.log(np.array([1.0, 3.0])), {"a": fc.Bint[2]}) for _ in range(4)]
        >>> plan = SamplerPlan(FactorGraph.build(fs))
        >>> x = run_chains(plan, np.zeros((4000, 1), np.int64), 30, "mh", rng_key=0,
        ...                subsample=1.0)
        >>> bool(abs(x[-1].mean() - 81 / 82) < 0.02)
        True
    """
    graph: FactorGraph = plan.graph
    module = backend_of_graph(graph)
    C, V = x0.shape[0], len(graph.names)
    W = max(e.shape[1] for e in plan.colour_edges) + 1 + (graph.D if log_q is not None else 1)
    splits = module.SPLITS_RNG_KEYS and key is not None
    num_rounds = inv_t.shape[0]
    keys = ops.stack(module.split_key(key, num_rounds), 0) if splits else None
    colours = [_Colour(plan, c, p, flat) for c in range(len(plan.colour_vars))]
    state_ids = ops.new_array(flat, np.arange(graph.D))
    extra = graph.D if log_q is not None else 0

    def body(xs, step):
        it, k = step
        u = module.rand((C, V, W), rng_key=k if splits else key)
        for col in colours:
            uv = u[:, col.vs]
            uc = ops.cat([uv[..., :col.deg + 1 + extra], uv[..., -1:]], -1)
            new = ops.astype(_update(col, flat, xs, inv_t[it], uc, state_ids, log_q), "int")
            xs = ops.where(col.in_c, new[:, col.position], xs)
        return xs, xs

    rounds = ops.new_array(flat, np.arange(num_rounds))
    _, states = module.scan(body, ops.astype(x0, "int"), (rounds, keys if splits else rounds))
    return states
