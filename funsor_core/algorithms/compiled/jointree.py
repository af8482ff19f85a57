"""Binary jointrees with replicated functional factors and shrunk separators (Darwiche 2020,
section 3).

A jointree here is a binary tree whose leaves hold the factors (a functional factor may sit
at several leaves: its replicas) and whose node ``i`` sends its parent the message
``f(i) = sum_{not sep(i)} f(c1) * f(c2)`` (a leaf: its factor summed down to ``sep(i)``).
The root's separator is the set of names kept. Construction:

1. **Replication** (Theorem 4), children before parents: a functional factor for an
   eliminated ``X`` used by ``n > 1`` other leaves becomes ``n`` copies, copy ``k`` shared by
   ``X``'s replica ``X#k`` and user ``k`` only.
2. **A binary tree from a min-fill order**: for each eliminated name in turn, the subtrees
   mentioning it are joined pairwise, smallest first; what is left is joined last.
3. **Replicas renamed back** to ``X``; the separator of node ``i`` is the names both below and
   outside ``i`` (or kept).
4. **SHRINK_SEP** (Figure 3, top down; Theorem 3): a functional ``X`` with copies under both
   children of ``i`` is dropped from one child's separator (the one with the larger
   separators below it); then ``sep(c1) &= sep(c2) | sep(i)`` and symmetrically (Theorem 2).

Example:
    >>> tree = build_jointree([("u",), ("u", "x"), ("x", "a"), ("x", "b")], [None, "x", None, None],
    ...                       {"u": 2, "x": 2, "a": 2, "b": 2}, keep=("a", "b"))
    >>> tree.stats()["nodes"], tree.stats()["max_rank"]
    (5, 3)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from funsor_core.algorithms.compiled.minfill import min_fill_order

__all__ = ["JoinTree", "build_jointree", "replicate_functional", "tree_from_order",
           "separators", "shrink_separators"]


class JoinTree:
    """A binary jointree as data: nodes ``0..L-1`` are leaves, later nodes are internal and
    come after their children (so ``range(len(children))`` is a post-order).

    Attributes:
        leaf_factor: the input factor each leaf holds.
        leaf_scope: each leaf's names (replicas renamed back).
        children: per node, ``()`` or ``(c1, c2)``.
        seps: per node, the names of its message (the root's: the names kept), as tuples.
        sizes: the size of every name.
        num_vars: names of the (replicated) network, counting each replica.
        unshrunk: the separators before SHRINK_SEP, on the same tree.
    """

    __slots__ = ("leaf_factor", "leaf_scope", "children", "seps", "sizes", "num_vars",
                 "unshrunk", "_stats")

    def __init__(self, leaf_factor, leaf_scope, children, seps, sizes, num_vars, unshrunk):
        self.leaf_factor = tuple(leaf_factor)
        self.leaf_scope = tuple(map(tuple, leaf_scope))
        self.children = tuple(children)
        self.seps = tuple(map(tuple, seps))
        self.sizes = dict(sizes)
        self.num_vars = num_vars
        self.unshrunk = self.seps if unshrunk is seps else tuple(map(tuple, unshrunk))
        self._stats = None

    @property
    def root(self) -> int:
        return len(self.children) - 1

    def clusters(self, seps=None) -> list[tuple]:
        """Per node, its cluster: a leaf's scope, or the union of an internal node's separator
        and its children's."""
        seps = self.seps if seps is None else seps
        out = []
        for i, kids in enumerate(self.children):
            if not kids:
                out.append(self.leaf_scope[i])
            else:
                a, b = kids
                out.append(tuple(dict.fromkeys(seps[a] + seps[b] + seps[i])))
        return out

    def stats(self, itemsize: int = 8) -> dict:
        """Structural statistics (see ``tree_stats``), computed once."""
        if self._stats is None:
            self._stats = tree_stats(self, 1)
        out = dict(self._stats)
        out["peak_bytes"] *= itemsize
        return out


def tree_stats(tree: JoinTree, itemsize: int = 8) -> dict:
    """``nodes`` (names of the replicated network), ``jointree_nodes``, ``max_rank`` (most
    names in a cluster), ``max_binary_rank`` (log2 of the largest cluster), the same two on
    the unshrunk separators of the same tree, ``total_size`` (entries of all messages),
    ``flops`` (multiply-adds of the binary contractions and leaf sums), ``peak_bytes`` (most
    message bytes alive at once, executing in post-order), ``largest_cluster``."""
    sizes = tree.sizes
    logs = {n: math.log2(max(s, 1)) for n, s in sizes.items()}
    clusters = tree.clusters()
    weights = [sum(map(logs.__getitem__, c)) for c in clusters]
    same = tree.unshrunk is tree.seps
    old = clusters if same else tree.clusters(tree.unshrunk)
    big = max(range(len(clusters)), key=lambda i: (weights[i], len(clusters[i])))
    out = [math.prod(map(sizes.__getitem__, sep)) for sep in tree.seps]
    flops = sum(math.prod(map(sizes.__getitem__, c)) for c in clusters)
    total = sum(out)
    peak = live = 0
    for i, kids in enumerate(tree.children):
        live += out[i]
        if live > peak:
            peak = live
        for c in kids:
            live -= out[c]
    return {
        "nodes": tree.num_vars, "leaves": len(tree.leaf_factor),
        "jointree_nodes": len(tree.children),
        "max_rank": max(map(len, clusters)),
        "max_binary_rank": round(weights[big], 6),
        "unshrunk_max_rank": max(map(len, old)),
        "unshrunk_max_binary_rank": round(weights[big] if same else
                                          max(sum(map(logs.__getitem__, c)) for c in old), 6),
        "total_size": total, "flops": 2 * flops, "peak_bytes": itemsize * peak,
        "largest_cluster": {n: sizes[n] for n in clusters[big]},
    }


def _topological(outs: dict) -> list[str]:
    # outs: functional name -> its parents; parents first (iterative DFS, cycles tolerated).
    order, state = [], {}
    for start in outs:
        stack = [(start, iter(outs[start]))]
        state.setdefault(start, 1)
        while stack:
            node, it = stack[-1]
            nxt = next((p for p in it if p in outs and p not in state), None)
            if nxt is None:
                stack.pop()
                order.append(node)
            else:
                state[nxt] = 1
                stack.append((nxt, iter(outs[nxt])))
    return order


def replicate_functional(scopes, functional, eliminate):
    """Replicate the functional factors of eliminated names (Theorem 4), children first.

    Returns ``(leaf_factor, leaf_scope, leaf_out, original)``: per leaf its input factor,
    its names with replicas renamed ``X#k``, the name it is functional for (or None), and the
    map from each replica to its name.

    Example:
        >>> replicate_functional([("u", "x"), ("x", "a"), ("x", "b")], ["x", None, None], {"x"})[1]
        [('u', 'x#0'), ('x#0', 'a'), ('x#1', 'b'), ('u', 'x#1')]
    """
    leaf_factor = list(range(len(scopes)))
    leaf_scope = [tuple(s) for s in scopes]
    leaf_out = list(functional)
    owner = {}
    for k, out in enumerate(functional):
        if out is not None and out in eliminate:
            owner.setdefault(out, k)
    parents = {x: tuple(n for n in scopes[k] if n != x) for x, k in owner.items()}
    original = {}
    for x in reversed(_topological(parents)):
        home = owner[x]
        users = [k for k, s in enumerate(leaf_scope) if x in s and k != home]
        if len(users) < 2:
            continue
        for r, k in enumerate(users):
            name = f"{x}#{r}"
            original[name] = x
            leaf_scope[k] = tuple(name if n == x else n for n in leaf_scope[k])
            copy = tuple(name if n == x else n for n in scopes[leaf_factor[home]])
            if r == 0:
                leaf_scope[home] = copy
            else:
                leaf_factor.append(leaf_factor[home])
                leaf_scope.append(copy)
                leaf_out.append(x)
    return leaf_factor, leaf_scope, leaf_out, original


def _tree_weight(names, logs) -> float:
    return sum(logs.get(n, 0.0) for n in names)


def tree_from_order(leaf_scope: Sequence[tuple], order: Sequence[str], sizes: dict):
    """Join leaves into a binary tree following an elimination order: for each name, the
    subtrees mentioning it are joined, the two smallest (in their open names) first.

    Returns the children per node (leaves first, then internal nodes in creation order).

    Example:
        >>> sizes = {"a": 2, "b": 2, "c": 2}
        >>> tree_from_order([("a", "b"), ("b", "c"), ("c",)], ["a", "b", "c"], sizes)
        [(), (), (), (0, 1), (2, 3)]
    """
    logs = {n: math.log2(max(s, 1)) for n, s in sizes.items()}
    children = [()] * len(leaf_scope)
    open_names = [frozenset(s) for s in leaf_scope]
    holders: dict[str, set] = {}
    for i, scope in enumerate(leaf_scope):
        for n in scope:
            holders.setdefault(n, set()).add(i)
    active = set(range(len(leaf_scope)))

    def pair(a: int, b: int) -> int:
        node = len(children)
        children.append((a, b))
        names = open_names[a] | open_names[b]
        open_names.append(names)
        active.difference_update((a, b))
        active.add(node)
        for n in names:
            h = holders.get(n)
            if h is not None:  # None: the name being eliminated
                h.discard(a)
                h.discard(b)
                h.add(node)
        return node

    def join(group) -> int:
        group = sorted(group)
        if len(group) <= 2:  # chains and trees: no heap
            return group[0] if len(group) == 1 else pair(group[0], group[1])
        heap = [(_tree_weight(open_names[t], logs), t) for t in group]
        heapq.heapify(heap)
        while len(heap) > 1:
            _, a = heapq.heappop(heap)
            _, b = heapq.heappop(heap)
            node = pair(a, b)
            heapq.heappush(heap, (_tree_weight(open_names[node], logs), node))
        return heap[0][1]

    for name in order:
        group = holders.pop(name, ())
        if not group:
            continue
        top = join(group)
        open_names[top] = open_names[top] - {name}
    if len(active) > 1 or not children:
        join(active)
    return children


def separators(children, leaf_scope, keep) -> list[frozenset]:
    """Per node, the names both below it and outside it (or kept); the root's: ``keep``.

    A name's nodes are the paths from its leaves up to their lowest common ancestor (up to
    and including the root for a kept name), so the work is the size of the separators,
    not the depth of the tree times the names (chains of 1,000 factors stay linear).
    """
    n = len(children)
    parent = [n] * n
    for i, kids in enumerate(children):
        for c in kids:
            parent[c] = i
    depth = [0] * n
    for i in range(n - 2, -1, -1):
        depth[i] = depth[parent[i]] + 1
    holders: dict[str, list] = {}
    for i, scope in enumerate(leaf_scope):
        for name in scope:
            holders.setdefault(name, []).append(i)
    seps: list[set] = [set() for _ in range(n)]
    root = n - 1
    for name, leaves in holders.items():
        if name in keep:
            top = n  # above the root: the root keeps it
        else:
            top = leaves[0]
            for b in leaves[1:]:
                a = top
                while a != b:
                    if depth[a] < depth[b]:
                        b = parent[b]
                    else:
                        a = parent[a]
                top = a
        for node in leaves:
            while node != top and name not in seps[node]:
                seps[node].add(name)
                node = parent[node] if node != root else top
    return [frozenset(s) for s in seps]


def shrink_separators(children, seps, leaf_out, keep, sizes) -> list[frozenset]:
    """SHRINK_SEP (Figure 3): top down, drop a functional name with copies under both
    children from one child's separator, then keep in each child only what its sibling or
    parent still needs."""
    seps = list(seps)
    n_leaves = len(leaf_out)
    fvars: list[frozenset] = []
    weight: list[float] = []  # instantiations of the separators at or below a node
    for i, kids in enumerate(children):
        own = math.prod(sizes[n] for n in seps[i])
        if not kids:
            out = leaf_out[i] if i < n_leaves else None
            fvars.append(frozenset((out,)) if out is not None and out not in keep
                         else frozenset())
            weight.append(own)
        else:
            a, b = kids
            fvars.append(fvars[a] | fvars[b])
            weight.append(own + weight[a] + weight[b])
    stack = [len(children) - 1]
    while stack:
        i = stack.pop()
        if not children[i]:
            continue
        a, b = children[i]
        shared = fvars[a] & fvars[b]
        if shared:
            c = a if weight[a] >= weight[b] else b
            seps[c] = seps[c] - shared
        seps[a] = seps[a] & (seps[b] | seps[i])
        seps[b] = seps[b] & (seps[a] | seps[i])
        stack.extend((a, b))
    return seps


def build_jointree(scopes: Sequence[Sequence[str]], functional: Sequence[str | None],
                   sizes: dict, keep: Sequence[str] = (), order: Sequence[str] | None = None,
                   shrink: bool = True) -> JoinTree:
    """The jointree of factors with these ``scopes`` (``functional[k]``: the name factor
    ``k`` is a function for, or None), eliminating every name not in ``keep``.

    Example:
        >>> t = build_jointree([("a", "b"), ("b", "c")], [None, None], {"a": 2, "b": 3, "c": 2})
        >>> t.children, t.seps
        (((), (), (0, 1)), (('b',), ('b',), ()))
    """
    keep = tuple(keep)
    names = dict.fromkeys(n for s in scopes for n in s)
    eliminate = frozenset(names) - frozenset(keep)
    if not scopes:
        raise ValueError("build_jointree(): no factors")
    leaf_factor, leaf_scope, leaf_out, original = replicate_functional(
        scopes, functional, eliminate)
    rep_sizes = dict(sizes)
    rep_sizes.update((r, sizes[x]) for r, x in original.items())
    todo = eliminate | frozenset(original)
    replicated = (leaf_factor, leaf_scope, leaf_out, original)
    if order is not None:
        return _finish(replicated, order, names, sizes, keep, shrink)
    tree = _finish(replicated, min_fill_order(leaf_scope, rep_sizes, todo), names, sizes,
                   keep, shrink)
    if keep:
        # A kept name is in every message above the leaves that hold it, whatever the order.
        # In the graph it ties a query to its neighbours (good for a query such as a label);
        # a batch of evidence it would tie to every observed name (bad): try the order
        # without kept names too, and keep the cheaper tree.
        kept = frozenset(keep)
        graph = [tuple(n for n in s if n not in kept) for s in leaf_scope]
        other = _finish(replicated, min_fill_order(graph, rep_sizes, todo), names, sizes,
                        keep, shrink)
        if other.stats()["flops"] < tree.stats()["flops"]:
            tree = other
    return tree


def _finish(replicated, order, names, sizes, keep, shrink) -> JoinTree:
    # The tree of one elimination order, its separators, shrunk (or not).
    leaf_factor, leaf_scope, leaf_out, original = replicated
    rep_sizes = dict(sizes)
    rep_sizes.update((r, sizes[x]) for r, x in original.items())
    children = tree_from_order(leaf_scope, order, rep_sizes)
    scope_back = [tuple(original.get(n, n) for n in s) for s in leaf_scope]
    seps = separators(children, scope_back, keep)
    unshrunk = seps
    if shrink and any(out is not None for out in leaf_out):
        seps = shrink_separators(children, seps, leaf_out, frozenset(keep), sizes)
    rank = {n: i for i, n in enumerate(names)}
    ordered = [tuple(sorted(s, key=rank.__getitem__)) for s in seps]
    ordered[-1] = tuple(n for n in keep if n in seps[-1])
    num_vars = len(names) + len(original) - len({original[r] for r in original})
    old = ordered if seps is unshrunk else [tuple(sorted(s, key=rank.__getitem__))
                                            for s in unshrunk]
    return JoinTree(leaf_factor, scope_back, children, ordered, sizes, num_vars, old)
