"""Min-fill elimination orders on the interaction graph of a set of factor scopes.

Neighbourhoods are Python ints used as bitsets, so a fill count is a few word operations per
neighbour; a heap with lazy invalidation re-scores only the vertices whose neighbourhood (or
the edges among their neighbours) changed. Chains and trees have no fill at all and are
ordered in linear time (each elimination rescores only its neighbours).

Example:
    >>> min_fill_order([("a", "b"), ("b", "c"), ("c", "d")], {"a": 2, "b": 2, "c": 2, "d": 2},
    ...                {"a", "b", "c", "d"})
    ['a', 'b', 'c', 'd']
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence

__all__ = ["min_fill_order"]


def _graph(scopes: Sequence[Iterable[str]], names: list[str]) -> list[int]:
    index = {n: i for i, n in enumerate(names)}
    adj = [0] * len(names)
    for scope in scopes:
        bits = 0
        for n in scope:
            bits |= 1 << index[n]
        for n in scope:
            i = index[n]
            adj[i] |= bits & ~(1 << i)
    return adj


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def _fill(adj: list[int], v: int) -> int:
    # Number of missing edges among v's neighbours (each counted twice, which keeps order).
    nbrs = rest = adj[v]
    total = 0
    while rest:  # the bits of nbrs inline: this is min-fill's innermost loop
        low = rest & -rest
        total += (nbrs & ~adj[low.bit_length() - 1]).bit_count() - 1
        rest ^= low
    return total


def _peel(adj: list[int], alive: list[bool], names: list[str]) -> list[str]:
    # Eliminate names of at most one neighbour first, in a linear-time sweep: no fill, a
    # cluster of at most two names, so min-fill would choose them too (trees and chains are
    # ordered here entirely, without the heap).
    order = []
    stack = [v for v in range(len(names) - 1, -1, -1) if alive[v] and adj[v] & (adj[v] - 1) == 0]
    while stack:
        v = stack.pop()
        if not alive[v]:
            continue
        alive[v] = False
        order.append(names[v])
        u = adj[v].bit_length() - 1
        adj[v] = 0
        if u >= 0:
            adj[u] &= ~(1 << v)
            if alive[u] and adj[u] & (adj[u] - 1) == 0:
                stack.append(u)
    return order


def min_fill_order(scopes: Sequence[Iterable[str]], sizes: dict[str, int],
                   eliminate: Iterable[str]) -> list[str]:
    """Order ``eliminate`` by min-fill (ties: the smaller cluster, in log2 of its size, then
    the first name seen). Names outside ``eliminate`` stay in the graph and are never chosen.

    Example:
        >>> min_fill_order([("x", "y"), ("y", "z"), ("x", "z")], {"x": 2, "y": 3, "z": 2},
        ...                {"y", "z"})
        ['y', 'z']
    """
    names = list(dict.fromkeys(n for scope in scopes for n in scope))
    todo = frozenset(eliminate)
    adj = _graph(scopes, names)
    alive = [n in todo for n in names]
    order = _peel(adj, alive, names)
    if any(alive):
        order += _min_fill_rest(adj, alive, names, sizes)
    return order


def _min_fill_rest(adj: list[int], alive: list[bool], names: list[str], sizes) -> list[str]:
    # What peeling left: a heap of (fill, weight, index) with lazy invalidation. The cluster
    # weight (log2 of its size) by popcounts over masks of equal-sized names.
    classes: dict[float, int] = {}
    for i, n in enumerate(names):
        key = math.log2(max(sizes[n], 1))
        classes[key] = classes.get(key, 0) | (1 << i)
    masks = [(w, m) for w, m in classes.items() if w]

    def score(v: int) -> tuple:
        group = adj[v] | (1 << v)
        weight = sum(w * (group & m).bit_count() for w, m in masks)
        return (_fill(adj, v), weight, v)

    order = []
    version = [0] * len(names)
    heap = [(*score(v), 0) for v in range(len(names)) if alive[v]]
    heapq.heapify(heap)
    while heap:
        fill, _, v, ver = heapq.heappop(heap)
        if not alive[v] or ver != version[v]:
            continue
        alive[v] = False
        order.append(names[v])
        nbrs = adj[v]
        touched = nbrs
        added = []
        for u in _bits(nbrs):
            new = nbrs & ~adj[u] & ~(1 << u)
            adj[u] = (adj[u] | nbrs) & ~(1 << u) & ~(1 << v)
            if new:
                added.append((u, new))
        # A new edge (u, w) changes the fill of exactly the common neighbours of u and w.
        for u, new in added:
            for w in _bits(new):
                if w > u:
                    touched |= adj[u] & adj[w]
        adj[v] = 0
        for u in _bits(touched):
            if alive[u]:
                version[u] += 1
                heapq.heappush(heap, (*score(u), version[u]))
    return order
