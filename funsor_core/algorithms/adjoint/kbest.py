"""The k best assignments of a max-product computation (k-best Viterbi), from its tape.

The forward computation (max-product variable elimination, recorded by an ``AdjointTape``)
is replayed in the k-max semiring, whose elements are the k largest values of a sum (as in
torch-struct's ``KMaxSemiring``): a product of two k-lists is the k best of all pairwise
sums, a max over a variable the k best over its values and the lists' entries, a product
over a plate the k best of the sums that take one entry per slice (merged slice by slice,
which is exact: a prefix of a k-best combination is itself among the k best prefixes).
Each step keeps back pointers; walking them from each of the k values of the root gives the
k assignments. The replay runs in numpy on host copies of the factors (a discrete,
non-differentiable search); the results are returned on the factors' backend.

Example:
    >>> from funsor_core.algorithms.adjoint.tape import AdjointTape
    >>> f = fc.Tensor(np.array([[0.0, 3.0], [2.0, 1.0]]), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> with AdjointTape() as tape:
    ...     root = f.reduce(ops.max, frozenset({"a", "b"}))
    >>> scores, best = kbest_from_tape(tape, root, 3)
    >>> scores.tolist(), best["a"][0].tolist(), best["b"][0].tolist()
    ([3.0, 2.0, 1.0], [0, 1, 1], [1, 0, 1])
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.adjoint.tape import canonical_key
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Align, Binary, Funsor, Number, Reduce
from funsor_core.terms.contraction import Contraction

__all__ = ["kbest_from_tape"]

_TRACED = ("k-best runs in numpy on host copies of the factors, but the factor over {names} "
           "holds traced arrays (inside jax.jit): call the k-best query outside jax.jit, "
           "e.g. infer_discrete(factors, query='kbest', k=3) on concrete arrays")


class _KList:
    """Values of a term in the k-max semiring: ``data[..., r]`` is the r-th best (sorted
    descending), over the term's inputs ``names`` (sizes ``sizes``); ``step`` replays back
    pointers."""

    __slots__ = ("names", "sizes", "data", "step")

    def __init__(self, names: tuple, sizes: tuple, data: np.ndarray, step=None) -> None:
        self.names, self.sizes, self.data, self.step = names, sizes, data, step


def _leaf(term: Funsor) -> _KList:
    if isinstance(term, Number):
        return _KList((), (), np.array([float(term.data)]))
    if not isinstance(term, Tensor) or term.dtype != "real" or term.shape:
        raise NotImplementedError(f"k-best needs real scalar Tensor factors, got a "
                                  f"{type(term).__name__} of output {term.output}")
    names = tuple(term.inputs)
    if not ops.is_concrete(term.data):
        raise TypeError(_TRACED.format(names=list(names)))
    data = np.asarray(ops.to_numpy(term.data), dtype=float)
    return _KList(names, tuple(d.size for d in term.inputs.values()), data[..., None])


def _aligned(x: _KList, names: tuple, sizes: dict) -> np.ndarray:
    # x.data with its dims in the order of ``names`` (missing ones of size 1), K last.
    perm = [x.names.index(n) for n in names if n in x.names] + [len(x.names)]
    data = np.transpose(x.data, perm)
    shape = tuple(sizes[n] if n in x.names else 1 for n in names) + (data.shape[-1],)
    return data.reshape(shape)


def _topk(flat: np.ndarray, k: int) -> tuple:
    # The k largest along the last axis, sorted descending (stable: ties keep index order).
    # (the values by a second sort rather than a gather: one C call, equal values alike)
    k = min(k, flat.shape[-1])
    neg = -flat
    order = neg.argsort(axis=-1, kind="stable")[..., :k]
    neg.sort(axis=-1)
    return -neg[..., :k], order


class _Combine:
    """Back pointers of a step that reduced names ``reduced`` of the pairwise sums of the
    k-lists of its children: ``index[..., r]`` is a flat index into (reduced values, child
    ranks...)."""

    def __init__(self, children, out_names, reduced, sizes, index, child_k) -> None:
        self.children = children
        self.out_names = out_names
        self.reduced = reduced
        self.sizes = sizes
        self.index = index
        self.child_k = child_k

    def back(self, assign: dict, rank: np.ndarray, plates: tuple, found: dict) -> list:
        # assign: name -> int array of the shape of rank: (k,) + the plate dims ``plates``.
        idx = self.index[tuple(assign[n] for n in self.out_names) + (rank,)]
        shape = tuple(self.sizes[n] for n in self.reduced) + self.child_k
        parts = np.unravel_index(idx, shape)
        new = dict(assign)
        for n, v in zip(self.reduced, parts):
            new[n] = v
            found[n] = (v, plates)
        ranks = parts[len(self.reduced):]
        return [(child, new, r, plates) for child, r in zip(self.children, ranks)]


def _combine(children: list, klists: list, reduced: tuple, out_names: tuple, sizes: dict,
             k: int) -> _KList:
    # k best over (reduced values, child ranks) of the sum of the children's k-lists.
    names = out_names + reduced
    total = 0.0
    for j, x in enumerate(klists):
        data = _aligned(x, names, sizes)
        shape = data.shape[:-1] + tuple(data.shape[-1] if i == j else 1
                                        for i in range(len(klists)))
        total = total + data.reshape(shape)
    out_shape = tuple(sizes[n] for n in out_names)
    full = np.broadcast_to(total, out_shape + tuple(sizes[n] for n in reduced)
                           + tuple(x.data.shape[-1] for x in klists))
    values, index = _topk(full.reshape(out_shape + (-1,)), k)
    step = _Combine(children, out_names, reduced, sizes, index,
                    tuple(x.data.shape[-1] for x in klists))
    return _KList(out_names, out_shape, values, step)


class _Plate:
    """Back pointers of a product over plates: per slice (in order), the rank of the running
    combination and of the slice."""

    def __init__(self, child, out_names, plates, sizes, pointers) -> None:
        self.child, self.out_names, self.plates = child, out_names, plates
        self.sizes, self.pointers = sizes, pointers

    def back(self, assign: dict, rank: np.ndarray, plates: tuple, found: dict) -> list:
        # from the last slice back: each slice's rank, then the running rank before it
        out_index = tuple(assign[name] for name in self.out_names)
        slice_ranks = []
        r = rank
        for prev, own in reversed(self.pointers):
            key = out_index + (r,)
            slice_ranks.append(own[key])
            if prev is not None:
                r = prev[key]
        plate_shape = tuple(self.sizes[q] for q in self.plates)
        stacked = np.stack(slice_ranks[::-1], -1).reshape(rank.shape + plate_shape)
        return self.below(assign, stacked, plates)

    def below(self, assign: dict, stacked: np.ndarray, plates: tuple) -> list:
        # The child's rank and assignment, with the plate dims appended to the batch dims.
        plate_shape = stacked.shape[stacked.ndim - len(self.plates):]
        extra = (1,) * len(self.plates)
        new = {name: np.broadcast_to(np.reshape(v, v.shape + extra), stacked.shape)
               for name, v in assign.items()}
        for q, g in zip(self.plates, np.indices(plate_shape, sparse=True)):
            new[q] = np.broadcast_to(g, stacked.shape)
        return [(self.child, new, stacked, plates + self.plates)]


def _plate_product(child, x: _KList, plates: tuple, sizes: dict, k: int) -> _KList:
    out_names = tuple(n for n in x.names if n not in plates)
    data = _aligned(x, out_names + plates, sizes)
    out_shape = tuple(sizes[n] for n in out_names)
    n = int(np.prod([sizes[q] for q in plates], dtype=int))
    slices = data.reshape(out_shape + (n, data.shape[-1]))
    acc = slices[..., 0, :]
    pointers = [(None, np.broadcast_to(np.arange(acc.shape[-1]), acc.shape))]
    for p in range(1, n):
        cur = slices[..., p, :]
        pair = acc[..., :, None] + cur[..., None, :]
        acc, index = _topk(pair.reshape(out_shape + (-1,)), k)
        prev, own = np.unravel_index(index, pair.shape[-2:])
        pointers.append((prev, own))
    return _KList(out_names, out_shape, acc, _Plate(child, out_names, plates, sizes, pointers))


def kbest_from_tape(tape, root: Funsor, k: int) -> tuple:
    """The ``k`` best values of a recorded max-product computation and their assignments.

    Args:
        tape: an ``AdjointTape`` that recorded the computation of ``root`` in the semiring
            ``(max, add)`` (maximizations, sums, and sums over plates of log factors).
        root: its result, a scalar with no inputs.
        k: the number of assignments.

    Returns:
        ``(scores, assignments)``: a numpy array of the (at most) ``k`` best total scores,
        descending, and a dict from each maximized name to ``(values, plates)``: an int
        array of shape ``(len(scores),) + plate sizes`` and the names of those plate dims.

    Raises:
        NotImplementedError: a recorded step other than max, add and plate sums.

    Example:
        A chain ``f(a, b) + g(b, c)``: the 4 best of its 12 totals, found by enumeration too.

        >>> from funsor_core.algorithms.adjoint.tape import AdjointTape
        >>> rng = np.random.default_rng(0)
        >>> f = fc.Tensor(rng.normal(size=(2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
        >>> g = fc.Tensor(rng.normal(size=(3, 2)), {"b": fc.Bint[3], "c": fc.Bint[2]})
        >>> with AdjointTape() as tape:
        ...     root = (f + g).reduce(ops.max, frozenset("abc"))
        >>> scores, best = kbest_from_tape(tape, root, 4)
        >>> total = f.data[:, :, None] + g.data[None]
        >>> np.allclose(scores, np.sort(total.ravel())[::-1][:4])
        True
        >>> np.allclose(total[best["a"][0], best["b"][0], best["c"][0]], scores)
        True
    """
    if root.inputs:
        raise ValueError(f"k-best needs a root with no inputs, got {dict(root.inputs)}")
    sizes: dict = {}
    values: dict = {}  # tape index -> _KList

    def klist(node_index, arg):
        parent = tape.tape[node_index].parents.get(id(arg))
        if parent is not None:
            return values[parent], ("node", parent)
        for name, d in arg.inputs.items():
            sizes[name] = d.size
        return _leaf(arg), ("leaf", arg)

    start = tape._producer.get(canonical_key(root))
    if start is None:
        if isinstance(root, (Tensor, Number)):  # a constant model: one assignment, no steps
            return _leaf(root).data.reshape(-1), {}
        raise ValueError("the root was not computed on this tape")
    needed = {start}
    for index in range(start, -1, -1):  # the steps the root depends on
        if index in needed:
            needed.update(p for p in tape.tape[index].parents.values() if p is not None)
    for index in sorted(needed):
        node = tape.tape[index]
        for name, d in node.output.inputs.items():
            sizes[name] = d.size
        values[index] = _replay(node, index, klist, sizes, k)
    scores = values[start].data.reshape(-1)
    found: dict = {}
    todo = [(("node", start), {}, np.arange(len(scores)), ())]
    while todo:
        (kind, ref), env, rank, plates = todo.pop()
        step = values[ref].step if kind == "node" else None
        if step is not None:
            todo.extend(step.back(env, rank, plates, found))
    return scores, found


def _replay(node, index, klist, sizes, k) -> _KList:
    cls, args = node.cls, node.args
    if cls is Align:
        x, ref = klist(index, args[0])
        return _KList(x.names, x.sizes, x.data, _Pass(ref))
    if cls is Binary:
        op, lhs, rhs = args
        if op is not ops.add:
            raise NotImplementedError(f"k-best replays (max, add); got Binary(ops.{op.name})")
        children = [klist(index, lhs), klist(index, rhs)]
        return _sum_step(children, (), node.output, sizes, k)
    if cls is Reduce:
        op, arg, reduced = args
        child = klist(index, arg)
        if op is ops.max:
            return _sum_step([child], tuple(sorted(reduced)), node.output, sizes, k)
        if op is ops.add:
            return _plate_product(child[1], child[0], tuple(sorted(reduced)), sizes, k)
        raise NotImplementedError(f"k-best replays (max, add); got Reduce(ops.{op.name})")
    if cls is Contraction:
        red_op, bin_op, reduced, terms = args
        if red_op not in (None, ops.max) or bin_op not in (None, ops.add):
            raise NotImplementedError(f"k-best replays (max, add); got Contraction({red_op}, "
                                      f"{bin_op})")
        children = [klist(index, t) for t in terms]
        return _sum_step(children, tuple(sorted(reduced)), node.output, sizes, k)
    raise NotImplementedError(f"k-best cannot replay a {cls.__name__} step")


def _sum_step(children, reduced, output, sizes, k) -> _KList:
    out_names = tuple(output.inputs)
    return _combine([ref for _, ref in children], [x for x, _ in children], reduced,
                    out_names, sizes, k)


class _Pass:
    def __init__(self, child) -> None:
        self.child = child

    def back(self, assign, rank, plates, found):
        return [(self.child, assign, rank, plates)]

