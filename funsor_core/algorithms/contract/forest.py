"""Level-batched elimination of tree- and forest-shaped contractions: one batched array call
per level of the trees instead of one call per variable.

A contraction whose operands each have one or two dims, all of one size ``D``, and whose
two-dim operands join the dims into a forest (no cycle, no pair twice), is a tree-shaped
factor graph. Rooting each tree (at its output dim if it has one, else at its center, which
keeps the trees shallow) and calling a dim's *height* the length of the longest path down to
a leaf, every dim of height ``h`` can be eliminated once those of heights below ``h`` are: its
message to its parent is

    m_v(p) = sum_v  f(p, v) * b(v),   b(v) = prod (unary factors of v) * prod_c m_c(v),

and all dims of one height share the shape of that computation. ``plan_forest`` works out,
from structure alone (names, sizes, output), the order of the dims by height and, per level,
where its pair factors and beliefs sit; ``run_forest`` then costs a fixed handful of array
calls per level: the beliefs start as a scatter-sum of the stacked unary factors, and each
level is one broadcast product, one reduction and one scatter of the messages into their
parents' beliefs. A random tree of 1,000 dims rooted at its center has 14 levels: some 60
array calls instead of 2,000 einsums.

Only semirings whose product is ``add`` have it (``(logaddexp, add)``, ``(max, add)``,
``(min, add)``): combining messages into beliefs is then a scatter-add. Each level of the log
semiring is an exact ``logsumexp`` (``kernels.log_sum``), so no range check is needed and it
runs under ``jax.jit`` as it does eagerly: nothing here reads values.

Example:
    >>> operands = (("a",), ("a", "b"), ("a", "c"), ("b",), ("c",))
    >>> forest = plan_forest(operands, {"a": 2, "b": 2, "c": 2}, ())
    >>> forest.levels
    1
    >>> arrays = [np.zeros(2), np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2)]
    >>> round(float(run_forest(forest, ops.logaddexp, arrays)), 6)  # log(2 * 2 * 2)
    2.079442
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.contract.kernels import log_sum
from funsor_core.engine.backend import backend_of

__all__ = ["ForestPlan", "plan_forest", "run_forest", "FOREST_SEMIRINGS"]

# sum_op -> the reduction of a level's broadcast (the product is ``add`` in each).
FOREST_SEMIRINGS = {ops.logaddexp: None, ops.max: ops.amax, ops.min: ops.amin}

# The fixed array calls of a run and those per level, against one call per pairwise step of
# a plan (``ForestPlan.pays``).
_FIXED_CALLS, _LEVEL_CALLS = 6, 4


class ForestPlan:
    """The level-by-level elimination of a tree-shaped contraction (``plan_forest``).

    Attributes:
        levels: the number of batched levels.
        size: the size ``D`` of every dim.
        unary: positions of the one-dim operands; ``unary_rows`` the belief row of each.
        beliefs: where each dim has a unary operand, the first one's position per row in
            row order (the beliefs start as their stack), else None; ``extra`` the other
            unary operands' positions, added at ``extra_rows`` (one scatter).
        edges: the positions of the two-dim operands in level order; ``bounds`` the slice of
            each level.
        flips: per edge, whether its dims are (child, parent) and need swapping (``flipped``:
            whether any does); ``edge_gather`` the flat index that reads the concatenated
            pairs with those swapped (None where none is).
        parents: per level, the belief rows that receive its messages.
        root_rows: the slice of the roots' rows that are summed; ``output_row`` the kept
            root's row, or None.

    Example:
        The tree ``b - a - c - d`` kept at ``a``, with a unary factor on ``b``: two levels
        (``d`` into ``c``, then ``b`` and ``c`` into ``a``), against the whole sum.

        >>> rng = np.random.default_rng(0)
        >>> ab, ac, cd, b = (rng.normal(size=s) for s in [(2, 2), (2, 2), (2, 2), (2,)])
        >>> plan = plan_forest([("a", "b"), ("a", "c"), ("c", "d"), ("b",)],
        ...                    dict.fromkeys("abcd", 2), ("a",))
        >>> plan, plan.levels
        (ForestPlan(4 dims, 2 levels), 2)
        >>> joint = ab[:, :, None, None] + ac[:, None, :, None] + cd + b[:, None, None]
        >>> np.allclose(run_forest(plan, ops.logaddexp, [ab, ac, cd, b]),
        ...             np.log(np.exp(joint).sum((1, 2, 3))))
        True
    """

    __slots__ = ("levels", "size", "rows", "unary", "unary_rows", "beliefs", "extra",
                 "extra_rows", "edges", "flips", "edge_gather",
                 "flipped", "bounds", "parents", "root_rows", "output_row", "_indices")

    def __init__(self, **fields) -> None:
        for name, value in fields.items():
            setattr(self, name, value)
        self._indices = {}

    def __repr__(self) -> str:
        return f"ForestPlan({self.rows} dims, {self.levels} levels)"

    def pays(self, steps: int) -> bool:
        """Whether batching by level makes fewer array calls than ``steps`` pairwise steps
        (a chain has as many levels as half its length: it does not)."""
        return _FIXED_CALLS + _LEVEL_CALLS * self.levels < steps

    def index(self, proto, name: str):
        # The integer index arrays as arrays of ``proto``'s backend (and device), made once:
        # a torch index from numpy would be converted on every call.
        key = (type(proto), str(getattr(proto, "device", "")), name)
        value = self._indices.get(key)
        if value is None:
            value = self._indices[key] = _index_arrays(self, proto, name)
        return value


def _index_arrays(forest: ForestPlan, proto, name: str):
    def make(a):
        return ops.new_array(proto, np.asarray(a, dtype=np.int64))

    if name == "parents":
        return tuple(make(p) for p in forest.parents)
    return make(getattr(forest, name))


def plan_forest(operands: Sequence[Sequence[str]], sizes: dict,
                output: Sequence[str]) -> ForestPlan | None:
    """The ``ForestPlan`` of a contraction of operands with these dims, or None where it is
    not tree-shaped (an operand of no dim or of more than two, dims of different sizes, a
    cycle, more than one dim kept, no pair factor). ``ForestPlan.pays`` says whether it
    makes fewer array calls than a pairwise plan.

    Example:
        >>> plan_forest((("a", "b"), ("b", "c"), ("c", "a")), {"a": 2, "b": 2, "c": 2}, ())
        >>> plan_forest((("a", "b"), ("a", "c")), {"a": 2, "b": 2, "c": 2}, ("a",))
        ForestPlan(3 dims, 1 levels)
    """
    if len(output) > 1 or not operands or any(not 0 < len(o) <= 2 for o in operands):
        return None
    names = list(dict.fromkeys(n for o in operands for n in o))
    if len({sizes[n] for n in names}) != 1 or sizes[names[0]] < 1:
        return None
    neighbours: dict = {n: [] for n in names}
    for k, o in enumerate(operands):
        if len(o) == 2:
            a, b = o
            if a == b:
                return None
            neighbours[a].append((b, k))
            neighbours[b].append((a, k))
    if any(len({m for m, _ in ns}) != len(ns) for ns in neighbours.values()):
        return None  # a pair of dims joined twice: a cycle of two
    trees = _rooted_trees(names, neighbours, output)
    if trees is None:
        return None
    parent, height, roots = trees
    levels = max(height.values())
    if not levels:
        return None  # no pair factor: nothing to batch
    return _layout(operands, names, parent, height, roots, output, sizes[names[0]], levels)


def _rooted_trees(names, neighbours, output):
    # (parent edge per dim, height per dim, roots) of the forest, each tree rooted at its
    # output dim (at most one) or its center (found by peeling leaves: the last dims left);
    # None on a cycle. Iterative, so trees of any depth stay off Python's recursion limit.
    degree = {n: len(neighbours[n]) for n in names}
    peel = [n for n in names if degree[n] <= 1]
    seen, order = set(peel), []
    while peel:
        order.extend(peel)
        nxt = []
        for n in peel:
            for m, _ in neighbours[n]:
                degree[m] -= 1
                if degree[m] == 1 and m not in seen:
                    seen.add(m)
                    nxt.append(m)
        peel = nxt
    if len(order) != len(names):
        return None  # a cycle never peels
    parent, height, roots = {}, {}, []
    for start in list(output) + order[::-1]:
        if start in parent or start in height:
            continue
        roots.append(start)
        stack, visit = [start], []
        parent[start] = None
        while stack:
            n = stack.pop()
            visit.append(n)
            for m, k in neighbours[n]:
                if m not in parent:
                    parent[m] = (n, k)
                    stack.append(m)
        for n in reversed(visit):  # children before parents
            height.setdefault(n, 0)
            if parent[n] is not None:
                p = parent[n][0]
                height[p] = max(height.get(p, 0), height[n] + 1)
    return parent, height, roots


def _layout(operands, names, parent, height, roots, output, size, levels) -> ForestPlan:
    # Belief rows: the non-root dims by height (a level is a contiguous block), then the
    # roots, the kept one last.
    root_set = set(roots)
    inner = sorted((n for n in names if n not in root_set), key=height.__getitem__)
    tail = [r for r in roots if r not in output] + [r for r in roots if r in output]
    rows = {n: k for k, n in enumerate(inner + tail)}
    unary = [k for k, o in enumerate(operands) if len(o) == 1]
    unary_rows = [rows[operands[k][0]] for k in unary]
    first: dict = {}
    for row, k in zip(unary_rows, unary):
        first.setdefault(row, k)
    beliefs, extra = None, ()
    if len(first) == len(rows):  # every dim has a unary operand: stack one per row
        beliefs = tuple(first[r] for r in range(len(rows)))
        taken = set(beliefs)
        extra = tuple((r, k) for r, k in zip(unary_rows, unary) if k not in taken)
    edges, flips, bounds, parents, start = [], [], [], [], 0
    for level in range(levels):
        block = [n for n in inner if height[n] == level]
        for n in block:
            k = parent[n][1]
            edges.append(k)
            # The stacked pair must read (parent, child): swap where it is (child, parent).
            flips.append(operands[k][0] == n)
        bounds.append((start, start + len(block)))
        parents.append([rows[parent[n][0]] for n in block])
        start += len(block)
    flips = np.array(flips, dtype=bool)
    return ForestPlan(
        levels=levels, size=size, rows=len(rows), unary=tuple(unary),
        unary_rows=np.array(unary_rows, dtype=np.int64), beliefs=beliefs,
        extra=tuple(k for _, k in extra),
        extra_rows=np.array([r for r, _ in extra], dtype=np.int64), edges=tuple(edges),
        flips=flips, flipped=bool(flips.any()), edge_gather=_edge_gather(flips, size),
        bounds=tuple(bounds),
        parents=tuple(parents),
        root_rows=slice(len(inner), len(inner) + len(tail) - len(output)),
        output_row=rows[output[0]] if output else None)


def _edge_gather(flips: np.ndarray, size: int) -> np.ndarray | None:
    # Entry (e, p, c) of the stacked pairs, read from the flat concatenation of the pair
    # arrays as given: at e*D*D + p*D + c, or at e*D*D + c*D + p for a pair given as
    # (child, parent). One gather swaps every flipped pair, against a transpose of all the
    # pairs and a ``where`` (torch, 1,000 pairs of 4 x 4: 40 us against 80 us).
    if not flips.any():
        return None
    d = np.arange(size)
    plain = (d[:, None] * size + d[None, :]).reshape(-1)
    swapped = (d[None, :] * size + d[:, None]).reshape(-1)
    base = np.arange(len(flips))[:, None] * (size * size)
    return (base + np.where(flips[:, None], swapped[None, :], plain[None, :])).reshape(-1)


def _stack_equal(parts: list, size: int):
    # ``stack`` of arrays of one shape, (size,) or (size, size), the plan's: one
    # concatenation and a reshape (numpy's ``stack`` checks and expands each part in Python,
    # 0.69 ms for 999 4x4 arrays against 0.25 ms).
    return ops.reshape(ops.cat(parts, 0), (len(parts),) + (size,) * len(parts[0].shape))


def _level_kernels(sum_op, x) -> tuple:
    # (reduce the last dim, scatter-add rows) for arrays like ``x``, resolved once per run:
    # the level loop calls them ~30 times (``Op.array_kernel``, else the op). The reduction
    # is the exact ``logsumexp`` (``kernels.log_sum`` where gradients need its guard), or
    # max/min.
    typ = type(x)
    scatter = ops.scatter_add.array_kernel(typ) or ops.scatter_add
    reduce = FOREST_SEMIRINGS[sum_op]
    if reduce is None:
        backend = backend_of(x)
        if not (backend.LOGSUMEXP_GRAD_FINITE or not backend.tracks_gradients(x)):
            return (lambda y: log_sum(y, -1)), scatter
        reduce = ops.logsumexp
    kernel = reduce.array_kernel(typ)
    if kernel is None:
        return (lambda y: reduce(y, axis=-1)), scatter
    return (lambda y: kernel(y, -1)), scatter


def run_forest(forest: ForestPlan, sum_op, arrays: Sequence):
    """Contract ``arrays`` (one per operand of the plan) level by level in the semiring
    ``(sum_op, add)``: the scalar total, or the kept dim's vector.

    Example:
        >>> forest = plan_forest((("a", "b"), ("a", "c"), ("b",)), {"a": 2, "b": 2, "c": 2},
        ...                      ("a",))
        >>> x = np.array([[0.0, -1.0], [-2.0, -3.0]])
        >>> run_forest(forest, ops.max, [x, x, np.zeros(2)])
        array([ 0., -4.])
    """
    size = forest.size
    # (pairs * D, D), in level order. (Transposing the flipped pairs before concatenating
    # would cost more: torch's ``cat`` of one non-contiguous part copies all 1,000 parts by
    # its slow path, +0.3 ms; the gather below costs ~40 us.)
    pairs = ops.cat([arrays[k] for k in forest.edges], 0)
    if forest.edge_gather is None:
        edges = ops.reshape(pairs, (len(forest.edges), size, size))
    else:  # (pairs, parent, child): the pairs given as (child, parent) read swapped
        flat = ops.reshape(pairs, (len(forest.edges) * size * size,))
        edges = ops.reshape(ops.getitem(flat, forest.index(pairs, "edge_gather")),
                            (len(forest.edges), size, size))
    if forest.beliefs is not None:  # a unary factor per dim: the beliefs, stacked
        unary = _stack_equal([arrays[k] for k in forest.beliefs + forest.extra], size)
        beliefs = unary
        if forest.extra:  # b(v) = sum of v's unary factors (in log space, a product)
            beliefs = ops.scatter_add(unary[:forest.rows], (forest.index(pairs, "extra_rows"),),
                                      unary[forest.rows:])
    else:
        beliefs = ops.new_zeros(pairs, (forest.rows, size))
        if forest.unary:
            unary = _stack_equal([arrays[k] for k in forest.unary], size)
            beliefs = ops.scatter_add(beliefs, (forest.index(pairs, "unary_rows"),), unary)
    reduce, scatter = _level_kernels(sum_op, edges)
    for (start, stop), up in zip(forest.bounds, forest.index(pairs, "parents")):
        # m_v(p) = sum_v f(p, v) + b(v) for every v of the level, then b(p) += m_v(p).
        messages = reduce(edges[start:stop] + beliefs[start:stop, None, :])
        beliefs = scatter(beliefs, (up,), messages)
    total = None
    if forest.root_rows.stop > forest.root_rows.start:
        total = ops.sum(reduce(beliefs[forest.root_rows]))
    if forest.output_row is None:
        return total
    kept = beliefs[forest.output_row]
    return kept if total is None else kept + total
