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

__all__ = ["JoinTree", "build_jointree", "jointree_from_children", "replicate_functional",
           "tree_from_order", "separators", "separator_bits", "shrink_separators", "shrink_bits"]


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

    Example:
        Two copies of a function ``x = g(u)`` joined at the root: SHRINK_SEP drops ``x`` from
        both messages, since each leaf recomputes it from ``u``.

        >>> t = build_jointree([("u", "x"), ("u", "x")], ["x", "x"], {"u": 2, "x": 2})
        >>> t.children, t.unshrunk, t.seps
        (((), (), (0, 1)), (('u', 'x'), ('u', 'x'), ()), (('u',), ('u',), ()))
    """

    __slots__ = ("leaf_factor", "leaf_scope", "children", "sizes", "num_vars", "_seps",
                 "_unshrunk", "_root_names", "_stats", "_bits")

    def __init__(self, leaf_factor, leaf_scope, children, seps, sizes, num_vars, unshrunk,
                 bits=None, root_names=None):
        self.leaf_factor = tuple(leaf_factor)
        self.leaf_scope = tuple(map(tuple, leaf_scope))
        self.children = tuple(children)
        self.sizes = dict(sizes)
        self.num_vars = num_vars
        self._stats = None
        self._bits = bits  # (names, leaf bits, sep bits, unshrunk sep bits), or None
        self._root_names = root_names
        # Given as bits only: the names are spelled out when first asked for (lowering).
        self._seps = None if seps is None else tuple(map(tuple, seps))
        self._unshrunk = (None if unshrunk is None else self._seps if unshrunk is seps
                          else tuple(map(tuple, unshrunk)))

    @property
    def seps(self) -> tuple:
        if self._seps is None:
            names, _, seps, _ = self._bits
            out = [_names_of(s, names) for s in seps]
            out[-1] = self._root_names
            self._seps = tuple(out)
        return self._seps

    @property
    def unshrunk(self) -> tuple:
        if self._unshrunk is None:
            names, _, seps, unshrunk = self._bits
            if unshrunk is seps:
                self._unshrunk = self.seps
            else:
                out = [_names_of(s, names) for s in unshrunk]
                out[-1] = self._root_names
                self._unshrunk = tuple(out)
        return self._unshrunk

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


def _size_classes(names, sizes) -> dict[int, int]:
    # size -> the bit mask of the names of that size (sizes 1 left out: they multiply by 1).
    classes: dict[int, int] = {}
    for i, n in enumerate(names):
        s = sizes[n]
        if s != 1:
            classes[s] = classes.get(s, 0) | (1 << i)
    return classes


def _sizer(names, sizes):
    # [bits] -> [the product of the sizes of the names set in bits], by popcounts over one
    # mask per distinct size (a network has few), so a cluster costs a few word operations.
    classes = _size_classes(names, sizes)
    if len(classes) == 1:
        ((s, m),) = classes.items()
        return lambda many: [s ** (b & m).bit_count() for b in many]
    if len(classes) == 2:  # the common mixed case (sizes 2 and 3): no inner list per cluster
        (s1, m1), (s2, m2) = classes.items()
        return lambda many: [s1 ** (b & m1).bit_count() * s2 ** (b & m2).bit_count()
                             for b in many]
    pairs = tuple(classes.items())
    return lambda many: [math.prod([s ** (b & m).bit_count() for s, m in pairs]) for b in many]


def _weigher(names, sizes):
    # bits -> a number ordered as the product of the sizes (with one size class, the count
    # of names: s ** k is increasing in k), for comparing subtrees without the powers.
    classes = _size_classes(names, sizes)
    if len(classes) == 1:
        ((_, m),) = classes.items()
        return lambda bits: (bits & m).bit_count()
    pairs = tuple(classes.items())
    return lambda bits: math.prod([s ** (bits & m).bit_count() for s, m in pairs])


def _to_bits(scopes, index) -> list[int]:
    out = []
    for scope in scopes:
        b = 0
        for n in scope:
            b |= 1 << index[n]
        out.append(b)
    return out


def _names_of(bits: int, names) -> tuple:
    out = []
    while bits:
        low = bits & -bits
        out.append(names[low.bit_length() - 1])
        bits ^= low
    return tuple(out)


def tree_stats(tree: JoinTree, itemsize: int = 8) -> dict:
    """``nodes`` (names of the replicated network), ``jointree_nodes``, ``max_rank`` (most
    names in a cluster), ``max_binary_rank`` (log2 of the largest cluster), the same two on
    the unshrunk separators of the same tree, ``total_size`` (entries of all messages),
    ``flops`` (multiply-adds of the binary contractions and leaf sums), ``peak_bytes`` (most
    message bytes alive at once, executing in post-order), ``largest_cluster``."""
    sizes = tree.sizes
    if tree._bits is None:
        names = tuple(sizes)
        index = {n: i for i, n in enumerate(names)}
        seps = _to_bits(tree.seps, index)
        tree._bits = (names, _to_bits(tree.leaf_scope, index), seps,
                      seps if tree._unshrunk is tree._seps else _to_bits(tree.unshrunk, index))
    names, leaves, seps, unshrunk = tree._bits
    size = _sizer(names, sizes)
    clusters = _cluster_bits(tree.children, leaves, seps)
    csizes = size(clusters)
    ranks = [c.bit_count() for c in clusters]
    _, _, big = max(zip(csizes, ranks, range(len(clusters))))
    old = clusters if unshrunk is seps else _cluster_bits(tree.children, leaves, unshrunk)
    out = size(seps)
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
        "max_rank": max(ranks),
        "max_binary_rank": round(math.log2(max(csizes[big], 1)), 6),
        "unshrunk_max_rank": max(c.bit_count() for c in old),
        "unshrunk_max_binary_rank": round(math.log2(max(
            csizes[big] if old is clusters else max(size(old)), 1)), 6),
        "total_size": sum(out), "flops": 2 * sum(csizes), "peak_bytes": itemsize * peak,
        "largest_cluster": {n: sizes[n] for n in _names_of(clusters[big], names)},
    }


def _cluster_bits(children, leaves, seps) -> list[int]:
    return [seps[i] | seps[kids[0]] | seps[kids[1]] if kids else leaves[i]
            for i, kids in enumerate(children)]


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


def tree_from_order(leaf_scope: Sequence[tuple], order: Sequence[str], sizes: dict):
    """Join leaves into a binary tree following an elimination order: for each name, the
    subtrees mentioning it are joined, the two smallest (in their open names) first.

    Returns the children per node (leaves first, then internal nodes in creation order).

    Example:
        >>> sizes = {"a": 2, "b": 2, "c": 2}
        >>> tree_from_order([("a", "b"), ("b", "c"), ("c",)], ["a", "b", "c"], sizes)
        [(), (), (), (0, 1), (2, 3)]
    """
    names = tuple(dict.fromkeys(n for s in leaf_scope for n in s))
    index = {n: i for i, n in enumerate(names)}
    weight = _weigher(names, sizes)
    n_leaves = len(leaf_scope)
    children: list[tuple] = [()] * n_leaves
    open_bits = _to_bits(leaf_scope, index)  # per subtree, its names not yet eliminated
    up = list(range(n_leaves))  # union-find: each node's merged subtree (itself at a top)
    holders: dict[str, list] = {}
    for i, scope in enumerate(leaf_scope):
        for n in scope:
            holders.setdefault(n, []).append(i)

    def top_of(x: int) -> int:
        root = x
        while up[root] != root:
            root = up[root]
        while up[x] != root:
            up[x], x = root, up[x]
        return root

    def pair(a: int, b: int) -> int:
        node = len(children)
        children.append((a, b))
        open_bits.append(open_bits[a] | open_bits[b])
        up.append(node)
        up[a] = up[b] = node
        return node

    def join(group: list) -> int:
        if len(group) <= 2:  # chains and trees: no heap
            return group[0] if len(group) == 1 else pair(group[0], group[1])
        heap = [(weight(open_bits[t]), t) for t in group]
        if len(heap) == 3:  # a binary tree's inner names: the heap's pairing, unrolled
            (_, a), (_, b), last = sorted(heap)
            node = pair(a, b)
            first = (weight(open_bits[node]), node)
            return pair(first[1], last[1]) if first < last else pair(last[1], first[1])
        heapq.heapify(heap)
        while len(heap) > 1:
            _, a = heapq.heappop(heap)
            _, b = heapq.heappop(heap)
            node = pair(a, b)
            heapq.heappush(heap, (weight(open_bits[node]), node))
        return heap[0][1]

    for name in order:
        leaves = holders.pop(name, None)
        if not leaves:
            continue
        if len(leaves) == 2:  # a chain's names: two subtrees, or one already
            a, b = top_of(leaves[0]), top_of(leaves[1])
            top = a if a == b else pair(a, b) if a < b else pair(b, a)
        else:
            top = join(sorted({top_of(leaf) for leaf in leaves}))
        open_bits[top] &= ~(1 << index[name])
    tops = sorted({top_of(leaf) for leaf in range(n_leaves)})
    if len(tops) > 1 or not children:
        join(tops)
    return children


def separators(children, leaf_scope, keep) -> list[frozenset]:
    """Per node, the names both below it and outside it (or kept); the root's: ``keep``.

    Example:
        >>> sorted(separators(((), (), (0, 1)), (("a", "b"), ("b",)), frozenset({"a"}))[0])
        ['a', 'b']
    """
    names = tuple(dict.fromkeys(n for s in leaf_scope for n in s))
    index = {n: i for i, n in enumerate(names)}
    keep_bits = _to_bits([[n for n in keep if n in index]], index)[0]
    seps = separator_bits(children, _to_bits(leaf_scope, index), keep_bits)
    return [frozenset(_names_of(s, names)) for s in seps]


def separator_bits(children, leaves: list[int], keep: int) -> list[int]:
    """``separators`` on bitsets: two linear passes, ``below(i)`` up the tree and
    ``outside(c) = outside(i) | below(sibling)`` down it; ``sep(i) = below(i) & (outside(i)
    | keep)``, so chains of 1,000 factors cost a few word operations per node.

    Example:
        Factors over ``{x, y}``, ``{y, z}``, ``{z}`` (bits x = 1, y = 2, z = 4), the first two
        joined at node 3, then node 3 with the third at the root, keeping ``x``: node 3 sends
        ``{x, z}`` (5), the root keeps ``{x}`` (1).

        >>> separator_bits(((), (), (), (0, 1), (3, 2)), [0b011, 0b110, 0b100], 0b001)
        [3, 6, 4, 5, 1]
    """
    n = len(children)
    below = list(leaves) + [0] * (n - len(leaves))
    for i in range(len(leaves), n):
        a, b = children[i]
        below[i] = below[a] | below[b]
    outside = [0] * n
    seps = [0] * n
    for i in range(n - 1, -1, -1):
        kids = children[i]
        seps[i] = below[i] & (outside[i] | keep)
        if kids:
            a, b = kids
            outside[a] = outside[i] | below[b]
            outside[b] = outside[i] | below[a]
    return seps


def shrink_separators(children, seps, leaf_out, keep, sizes) -> list[frozenset]:
    """SHRINK_SEP (Figure 3): top down, drop a functional name with copies under both
    children from one child's separator, then keep in each child only what its sibling or
    parent still needs.

    Example:
        >>> shrink_separators(((), (), (0, 1)), [{"x"}, {"x"}, set()], ["x", "x"], set(),
        ...                   {"x": 2})
        [frozenset(), frozenset(), frozenset()]
    """
    names = tuple(dict.fromkeys(n for s in seps for n in s))
    names += tuple(n for n in dict.fromkeys(leaf_out) if n is not None and n not in names)
    index = {n: i for i, n in enumerate(names)}
    out_bits = [0 if o is None or o in keep else 1 << index[o] for o in leaf_out]
    shrunk = shrink_bits(children, _to_bits(seps, index), out_bits, _sizer(names, sizes))
    return [frozenset(_names_of(s, names)) for s in shrunk]


def shrink_bits(children, seps: list[int], leaf_out: list[int], size) -> list[int]:
    """``shrink_separators`` on bitsets (``leaf_out``: per leaf the bit of the name it is
    functional for, 0 if none or kept; ``size``: [bits] -> [instantiations]).

    Example:
        Two leaves over ``{u, x}`` (bits 1, 2), both functional for ``x``: ``x`` leaves the
        heavier child's message, then each child keeps only what the other or the parent needs.

        >>> shrink_bits(((), (), (0, 1)), [0b11, 0b11, 0], [0b10, 0b10],
        ...             lambda seps: [2 ** bin(s).count("1") for s in seps])
        [1, 1, 0]
    """
    seps = list(seps)
    fvars: list[int] = []
    weight = size(seps)  # then: instantiations of the separators at or below a node
    for i, kids in enumerate(children):
        if not kids:
            fvars.append(leaf_out[i] if i < len(leaf_out) else 0)
        else:
            a, b = kids
            fvars.append(fvars[a] | fvars[b])
            weight[i] += weight[a] + weight[b]
    stack = [len(children) - 1]
    while stack:
        i = stack.pop()
        if not children[i]:
            continue
        a, b = children[i]
        shared = fvars[a] & fvars[b]
        if shared:
            c = a if weight[a] >= weight[b] else b
            seps[c] &= ~shared
        seps[a] &= seps[b] | seps[i]
        seps[b] &= seps[a] | seps[i]
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
    num_vars = len(names) + len(original) - len(set(original.values()))
    return jointree_from_children(leaf_factor, scope_back, children, sizes, keep, names,
                                  num_vars, leaf_out if shrink else None)


def jointree_from_children(leaf_factor, leaf_scope, children, sizes, keep, names, num_vars,
                           leaf_out=None) -> JoinTree:
    """The ``JoinTree`` of a tree shape: its separators (on bitsets over ``names``, which
    fixes the order of each message's names), shrunk when ``leaf_out`` names functional
    leaves; the root's message lists ``keep`` in its order.

    Example:
        >>> t = jointree_from_children((0, 1), (("i", "j"), ("j",)), ((), (), (0, 1)),
        ...                            {"i": 2, "j": 3}, ("i",), ("i", "j"), 2)
        >>> t.seps
        (('i', 'j'), ('j',), ('i',))
    """
    names = tuple(names)
    index = {n: i for i, n in enumerate(names)}
    leaves = _to_bits(leaf_scope, index)
    keep_bits = _to_bits([[n for n in keep if n in index]], index)[0]
    unshrunk = separator_bits(children, leaves, keep_bits)
    seps = unshrunk
    if leaf_out is not None and any(out is not None for out in leaf_out):
        out_bits = [0 if o is None or o in keep else 1 << index[o] for o in leaf_out]
        seps = shrink_bits(children, unshrunk, out_bits, _sizer(names, sizes))
    root = tuple(n for n in keep if n in index and seps[-1] >> index[n] & 1)
    return JoinTree(leaf_factor, leaf_scope, children, None, sizes, num_vars, None,
                    (names, leaves, seps, unshrunk), root)
