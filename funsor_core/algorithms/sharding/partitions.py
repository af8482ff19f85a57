"""Partitions of a factor graph's variables for synchronously partitioned MCMC (Singh 2014,
ch. 4.2), and the host index arrays that let every partition update its own variables.

A partitioning assigns each variable to one of ``P`` partitions. A variable is *active* in it
when its whole Markov blanket (every variable it shares a factor with) lies in its own
partition (ch. 4.1.1, the restricted proposals): updating it reads only factors local to that
partition, so the partitions' updates touch disjoint factor sets and commute. Strategies
(chosen before sampling, never from the state, which keeps the forward-backward ratio of the
single-site kernel exact, ch. 4.3.2):

- ``"neighborhood"`` (ch. 4.2.3): partitions grown by breadth-first search from a random
  variable, ``ceil(V / P)`` variables each, in turn; where that leaves a variable of a chain
  (or cycle) on a boundary in every partitioning, contiguous blocks along the chain, each
  partitioning shifted by ``ceil(V / P) / R``;
- ``"random"`` (ch. 4.2.1): each variable in a uniformly random partition;
- an int array ``(R, V)`` (or ``(V,)``) of partition ids given by the user.

``R`` partitionings are used in turn, one per round; a variable active in none of them would
never move, which raises (the chain would not be irreducible).

Example:
    >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> g = fc.Tensor(np.zeros((2, 2)), {"c": fc.Bint[2], "d": fc.Bint[2]})
    >>> plan = PartitionPlan(FactorGraph.build([f, g]), np.array([[0, 0, 1, 1]]))
    >>> plan.active.tolist(), plan.local_vars[0, 1].tolist()
    ([[True, True, True, True]], [[2], [3]])
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from funsor_core.algorithms.loopy.graph import FactorGraph

__all__ = ["PartitionPlan", "blankets", "make_partitions", "STRATEGIES"]

STRATEGIES = ("neighborhood", "random")

_NEVER_ACTIVE = ("partitioned MCMC: variables {names} never have their whole Markov blanket "
                 "inside one partition in any of the {r} partitionings, so no round would "
                 "update them; use fewer partitions (num_partitions), more partitionings "
                 "(num_partitionings), or partitions that keep each of them with its "
                 "neighbours (partitions=an int array (R, V) of partition ids; a chain needs "
                 "blocks of at least 3 variables and R >= 2)")
_BAD_IDS = ("partitioned MCMC: partitions must be ints in [0, {p}) of shape (R, {v}) or ({v},) "
            "(one id per variable, in the order {names}); got shape {shape}")


def blankets(graph: FactorGraph) -> list[np.ndarray]:
    """Each variable's Markov blanket: the variables it shares a factor with (indices).

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2],
        ...                                     "c": fc.Bint[2]})
        >>> [b.tolist() for b in blankets(FactorGraph.build([f]))]
        [[1, 2], [0, 2], [0, 1]]
    """
    index = {k: i for i, k in enumerate(graph.names)}
    out: list = [set() for _ in graph.names]
    for vs in graph.factor_vars:
        ids = [index[v] for v in vs]
        for i in ids:
            out[i].update(j for j in ids if j != i)
    return [np.array(sorted(s), dtype=np.int64) for s in out]


def _neighborhood(near: list, parts: int, rng) -> np.ndarray:
    # Breadth-first search from a random unassigned variable until the partition holds
    # ceil(V / P) variables (a new random start when a component runs out), in turn.
    V = len(near)
    size = math.ceil(V / parts)
    ids = np.full(V, -1, dtype=np.int64)
    order = rng.permutation(V)
    for p in range(parts):
        count, queue = 0, deque()
        while count < size and (ids < 0).any():
            if not queue:
                queue.append(next(int(v) for v in order if ids[v] < 0))
            v = queue.popleft()
            if ids[v] >= 0:
                continue
            ids[v] = p
            count += 1
            queue.extend(int(u) for u in rng.permutation(near[v]) if ids[u] < 0)
    return ids


def make_partitions(graph: FactorGraph, num_partitions: int, strategy="neighborhood",
                    num_partitionings: int = 4, seed: int = 0) -> np.ndarray:
    """``(R, V)`` partition ids of the graph's variables (see the module docstring).

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> make_partitions(FactorGraph.build([f]), 1, num_partitionings=2).tolist()
        [[0, 0], [0, 0]]
    """
    V = len(graph.names)
    if not isinstance(strategy, str):
        ids = np.asarray(strategy)
        ids = ids[None] if ids.ndim == 1 else ids
        if (ids.ndim != 2 or ids.shape[1] != V or not np.issubdtype(ids.dtype, np.integer)
                or (ids < 0).any() or (ids >= num_partitions).any()):
            raise ValueError(_BAD_IDS.format(p=num_partitions, v=V, names=graph.names,
                                             shape=np.shape(strategy)))
        return ids.astype(np.int64)
    if strategy not in STRATEGIES:
        raise ValueError(f"partitioned MCMC: unknown partition strategy {strategy!r}; choose "
                         f"one of {STRATEGIES} or pass an int array of partition ids")
    rng = np.random.default_rng(seed)
    if strategy == "random":
        return rng.integers(0, num_partitions, size=(num_partitionings, V))
    near = blankets(graph)
    ids = np.stack([_neighborhood(near, num_partitions, rng)
                    for _ in range(num_partitionings)])
    if not _all_active(near, ids):
        # Random breadth-first starts can leave a variable on a boundary in every
        # partitioning; a chain (or cycle) has a cover by contiguous blocks instead.
        order = _path_order(near)
        if order is not None and num_partitionings > 1:
            ids = _shifted_blocks(order, num_partitions, num_partitionings)
    return ids


def _all_active(near: list, ids: np.ndarray) -> bool:
    return all(any((row[near[v]] == row[v]).all() for row in ids) for v in range(len(near)))


def _path_order(near: list) -> list | None:
    # The variables along each path or cycle, components one after another; None when some
    # variable has more than two neighbours (not a chain).
    if any(len(n) > 2 for n in near):
        return None
    seen, order = set(), []
    starts = [v for v in range(len(near)) if len(near[v]) < 2] + list(range(len(near)))
    for start in starts:
        v = start
        while v is not None and v not in seen:
            seen.add(v)
            order.append(v)
            v = next((int(u) for u in near[v] if int(u) not in seen), None)
    return order


def _shifted_blocks(order: list, parts: int, num_partitionings: int) -> np.ndarray:
    # Blocks of ceil(V / P) consecutive variables along the path, partitioning r shifted by
    # r * size / R (cyclically): a variable on a boundary in one is inside a block in another
    # whenever size >= 3 and R >= 2.
    V = len(order)
    size = math.ceil(V / parts)
    pos = np.empty(V, dtype=np.int64)
    pos[order] = np.arange(V)
    return np.stack([((pos - (r * size) // num_partitionings) % V) // size
                     for r in range(num_partitionings)]).astype(np.int64)


def _padded(groups: list, fill: int, width: int) -> np.ndarray:
    # Lists of indices as one array (len(groups), width), padded with ``fill``.
    out = np.full((len(groups), width), fill, dtype=np.int64)
    for i, g in enumerate(groups):
        out[i, : len(g)] = g
    return out


class PartitionPlan:
    """Host index arrays of the partitioned updates of ``graph`` under the partitionings
    ``ids`` ``(R, V)``, with ``num_partitions`` rounded up to a multiple of ``multiple``
    (the devices; the extra partitions are empty). ``V`` (one past the last variable) pads.

    - ``active (R, V)``: the variable's blanket is inside its partition;
    - ``local_vars (R, P, colours, m)``: per partition and colour, its active variables;
    - ``owner (R, V)`` (the partition of an active variable, else -1), ``slot (R, V)`` (its
      place in its colour's list), ``act_vars (R, P, a)`` (the partition's active variables,
      all colours) and ``act_slot (R, V)`` (the place in that list).

    Example:
        The chain ``a - b - c - d`` in two partitionings: ``a, b`` have their blankets in
        partition 0 of the first, ``c, d`` in partition 0 of the second; 2 partitions padded
        to 4 (devices).

        >>> z = np.zeros((2, 2))
        >>> g = FactorGraph.build([fc.Tensor(z, {"a": fc.Bint[2], "b": fc.Bint[2]}),
        ...                        fc.Tensor(z, {"b": fc.Bint[2], "c": fc.Bint[2]}),
        ...                        fc.Tensor(z, {"c": fc.Bint[2], "d": fc.Bint[2]})])
        >>> plan = PartitionPlan(g, np.array([[0, 0, 0, 1], [1, 0, 0, 0]]), multiple=4)
        >>> plan.active.astype(int).tolist(), plan.owner.tolist(), plan.act_vars.shape
        ([[1, 1, 0, 0], [0, 0, 1, 1]], [[0, 0, -1, -1], [-1, -1, 0, 0]], (2, 4, 2))
    """

    def __init__(self, graph: FactorGraph, ids: np.ndarray, num_partitions: int | None = None,
                 multiple: int = 1) -> None:
        V = len(graph.names)
        ids = np.asarray(ids, dtype=np.int64)
        parts = int(ids.max()) + 1 if num_partitions is None else num_partitions
        self.num_partitions = parts
        P = -(-parts // multiple) * multiple
        near = blankets(graph)
        colors = graph.colors
        ncol = int(colors.max()) + 1 if V else 1
        self.active = np.array([[bool((row[near[v]] == row[v]).all()) for v in range(V)]
                                for row in ids])
        never = [graph.names[v] for v in np.flatnonzero(~self.active.any(0))]
        if never:
            raise ValueError(_NEVER_ACTIVE.format(names=never, r=len(ids)))
        self.owner = np.where(self.active, ids, -1)
        self.slot = np.zeros_like(ids)
        self.act_slot = np.zeros_like(ids)
        local, act = [], []
        for r, row in enumerate(self.owner):
            groups = [[np.flatnonzero((row == p) & (colors == c)) for c in range(ncol)]
                      for p in range(P)]
            for per_colour in groups:
                for vs in per_colour:
                    self.slot[r, vs] = np.arange(len(vs))
            local.append(groups)
            act.append([np.flatnonzero(row == p) for p in range(P)])
            for vs in act[-1]:
                self.act_slot[r, vs] = np.arange(len(vs))
        m = max([len(vs) for g in local for pc in g for vs in pc] + [1])
        self.local_vars = np.array([[_padded(pc, V, m) for pc in g] for g in local])
        a = max([len(vs) for g in act for vs in g] + [1])
        self.act_vars = np.array([_padded(g, V, a) for g in act])
        self.colors = colors
        self.graph = graph
