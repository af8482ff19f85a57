"""The MAP path of a max-plus chain between fixed end states, in ``O(log T)`` rounds of
batched array calls.

Viterbi's forward pass ``alpha_{t+1}(x) = max_w alpha_t(w) + m_t(w, x)`` from a fixed first
state is a scan of ``T`` steps. ``max_path`` gets every ``alpha_t`` from the max-plus tree
instead: the tree's rounds multiply steps ``(0, 1), (2, 3), ...`` (``K^3`` per pair, as the
chain's value), then a down-sweep sends each node's incoming ``alpha`` to its children: the
left child gets it unchanged, the right child gets it times the left child's product (a
vector-matrix product, ``K^2``). Then the best predecessors
``ptr_t(x) = argmax_w alpha_t(w) + m_t(w, x)`` are one batched ``argmax``, and the path
from the last state back is ``ceil(log2 T)`` rounds of pointer doubling (each ``x_t`` is the
composition of the pointers after it, applied to the last state).

Each ``x_t`` so placed is a best predecessor of ``x_{t+1}`` given ``x_0``: the path scores
the best total from ``x_0`` to ``x_T``, however paths tie.

Example:
    >>> mats = np.array([[[0.0, -1.0], [-5.0, 0.0]], [[-2.0, 0.0], [0.0, -3.0]]])
    >>> max_path(mats, np.array(1), np.array(1)).tolist()  # 1 -> 1 -> 1 scores -3, 1 -> 0: -5
    [1, 1, 1]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_tree import semiring_mm

__all__ = ["max_path"]


def max_path(mats, start, stop):
    """The best path through ``mats`` ``(T, *batch, K, K)`` (max-plus) from the states
    ``start`` to ``stop`` (integer arrays ``(*batch)``), as ``(T + 1, *batch)`` states.

    Example:
        >>> mats = np.log(np.array([[[0.9, 0.1], [0.5, 0.5]]] * 3))
        >>> max_path(mats, np.array(0), np.array(1)).tolist()  # one switch, at the end
        [0, 0, 0, 1]
    """
    index = ops.new_arange(mats, 0, mats.shape[-1], 1)
    alpha = ops.where(index == start[..., None], ops.new_zeros(mats, ()),
                      ops.new_full(mats, (), -float("inf")))
    if mats.shape[0] == 1:
        return ops.stack([start, stop], 0)
    alphas = _down_sweep(_levels(mats), alpha[None])  # (T, *batch, K): alpha_t over x_t
    # Laid out (x_{t+1}, x_t), so that argmax reads contiguous rows (torch: 2-5x faster
    # than along the middle axis at K = 16).
    score = alphas[1:, ..., None, :] + ops.transpose(mats[1:], -2, -1)
    ptrs = ops.argmax(score, -1)  # (T - 1, *batch, K): the best x_t given x_{t+1}
    interior = _gather(_suffix_maps(ptrs), stop)
    return ops.cat([start[None], interior, stop[None]], 0)


def _levels(mats) -> list:
    # The operands of each round of the max-plus tree, from the steps up.
    levels, p = [], mats
    while p.shape[0] > 1:
        levels.append(p)
        n = p.shape[0]
        q = semiring_mm(ops.max, ops.add, p[0:n - 1:2], p[1:n:2])
        p = ops.cat([q, p[n - 1:]], 0) if n % 2 else q
    return levels


def _down_sweep(levels: list, alpha):
    # alpha (1, *batch, K) enters the root; each round gives a node's left child its alpha
    # and the right child alpha (max, +) the left child's product.
    for p in reversed(levels):
        n = p.shape[0]
        half = n // 2
        left = p[0:n - 1:2]
        a = alpha[:half]
        b = ops.amax(a[..., :, None] + left, -2)
        both = ops.reshape(ops.stack([a, b], 1), (2 * half,) + tuple(a.shape[1:]))
        alpha = ops.cat([both, alpha[half:]], 0) if n % 2 else both
    return alpha


def _gather(maps, states):
    # maps[..., states] per row: maps (n, *batch, S), states (*batch) -> (n, *batch).
    size = maps.shape[-1]
    flat = ops.reshape(maps, (-1, size))
    rows = ops.new_arange(states, 0, flat.shape[0], 1)
    cols = ops.reshape(ops.expand(states, tuple(maps.shape[:-1])), (-1,))
    return ops.reshape(ops.getitem(flat, (rows, cols)), tuple(maps.shape[:-1]))


def _suffix_maps(ptrs):
    # ptrs[t] maps the state at t + 2 to the best one at t + 1; the suffix compositions
    # ptrs[t] o ptrs[t + 1] o ... o ptrs[n - 1] by pointer doubling: ceil(log2 n) rounds of
    # one gather each, where a backtrack would take n sequential steps.
    n, shift = ptrs.shape[0], 1
    while shift < n:
        head = ptrs[:n - shift]
        tail = ptrs[shift:]
        size = head.shape[-1]
        flat = ops.reshape(head, (-1, size))
        rows = ops.new_arange(tail, 0, flat.shape[0], 1)[:, None]
        cols = ops.reshape(tail, (-1, size))
        composed = ops.reshape(ops.getitem(flat, (rows, cols)), tuple(head.shape))
        ptrs = ops.cat([composed, ptrs[n - shift:]], 0)
        shift *= 2
    return ptrs
