"""``Scatter(op, subs, source, reduced_vars)``: the transpose of a substitution, followed by an
``op``-reduction.

Read ``subs`` as a map from the inputs of ``source`` (and of the index values) to new Bint
inputs ``key = value``. The result has the new inputs ``key`` and the unreduced old inputs
``b``; at each point it is the ``op``-combination of the source values that land there, and
``op``'s unit where none does::

    Scatter(op, subs, source, R)[b, key] = op over {r in R : value(b, r) == key} of source(b, r)

So ``Scatter(op, subs, source, frozenset())`` is ``zeros[key = value] = source`` (funsor's
"transpose of Subs": substituting ``subs`` back gives ``source``), and a non-empty ``R`` equals
``Scatter(op, subs, source, frozenset()).reduce(op, R)`` without building the larger array.
Unlike funsor 0.4.8, indices that collide are combined by ``op`` (scatter-add for ``add``)
instead of the last write winning.

Example:
    >>> i = fc.Tensor(np.array([2, 0]), {"n": fc.Bint[2]}, 3)   # n=0 -> i=2, n=1 -> i=0
    >>> src = fc.Tensor(np.array([10.0, 20.0]), {"n": fc.Bint[2]})
    >>> Scatter(ops.add, (("i", i),), src, frozenset({"n"})).data
    array([20.,  0., 10.])
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Bint
from funsor_core.terms.base import (
    DomainError,
    Funsor,
    Number,
    Variable,
    merge_all_inputs,
    to_funsor,
)
from funsor_core.terms.reshaping import Slice

__all__ = ["Scatter", "accumulate_scatter", "combine_scatters", "evaluate_scatter",
           "scatter_tensors"]

_KEY_CLASH = (
    "cannot scatter into '{key}': it is already {where}. The keys of subs name NEW inputs of "
    "the result; rename it, e.g. subs (('{key}2', value),)"
)


class Scatter(Funsor):
    """Transpose of ``Subs`` followed by an ``op``-reduction over ``reduced_vars`` (see the
    module docstring for the law).

    Args:
        op: an associative op with a unit (``ops.add``, ``ops.logaddexp``, ``ops.max`` ...);
            its unit fills the points no source value lands on.
        subs: ``((key, value), ...)`` pairs (or a dict); each ``key`` becomes a new input of
            domain ``value.output``.
        source: the funsor whose values are scattered.
        reduced_vars: names (or Variables) of inputs of ``source`` or of the values that are
            ``op``-reduced away; they are bound, not inputs of the result.

    Example:
        >>> src = fc.Tensor(np.array([1.0, 2.0]), {"k": fc.Bint[2]})
        >>> k = fc.Variable("k", fc.Bint[2])
        >>> d = Scatter(ops.add, (("i", k), ("j", k)), src, frozenset({k}))  # diag_embed
        >>> d.inputs, d.data
        ({'i': Bint[2], 'j': Bint[2]}, array([[1., 0.],
               [0., 2.]]))
    """

    fields = ("op", "subs", "source", "reduced_vars")
    binds = ("reduced_vars",)
    # Atom-like for substitution: the keys of subs are inputs of the Scatter but of none of
    # its children, so the generic push-down (which restricts a substitution to each child's
    # inputs) would drop them. Substitution into a Scatter is a rule of its own instead
    # (``lazy_subs_scatter`` in interpretations/exact/scatter.py).
    _atom = True

    @classmethod
    def _prepare(cls, op, subs, source, reduced_vars=frozenset()):
        if op not in ops.UNITS:
            raise ValueError(f"cannot scatter with ops.{getattr(op, 'name', op)}: it has no "
                             f"unit to fill with; use one of {sorted(o.name for o in ops.UNITS)}")
        if isinstance(subs, dict):
            subs = tuple(subs.items())
        if not isinstance(subs, tuple) or not all(
                isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in subs):
            raise TypeError(f"Scatter subs must be a tuple of (name, funsor) pairs, got {subs!r}")
        source = to_funsor(source)
        pairs = []
        for key, value in subs:
            if not isinstance(value, Funsor):
                raise TypeError(f"Scatter subs value for '{key}' must be a funsor (a Bint-valued "
                                f"Tensor, Number or Variable), got {value!r}")
            pairs.append((key, value))
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"Scatter subs repeat a key: {keys}")
        batch = merge_all_inputs([v for _, v in pairs] + [source], "scatter")
        names = set()
        for v in (reduced_vars if isinstance(reduced_vars, (set, frozenset, tuple, list))
                  else (reduced_vars,)):
            name = v.name if isinstance(v, Variable) else v
            if not isinstance(name, str):
                raise TypeError(f"Scatter reduced_vars are names or Variables, got {v!r}")
            if isinstance(v, Variable) and name in batch and batch[name] is not v.output:
                raise DomainError(f"Scatter reduces '{name}' as {v.output}, but it is "
                                  f"{batch[name]} in the source or index values")
            if name in keys:
                raise ValueError(_KEY_CLASH.format(key=name, where="a reduced variable"))
            names.add(name)
        for key in keys:
            if key in batch:
                raise ValueError(_KEY_CLASH.format(
                    key=key, where=f"an input of the source or an index value ({batch[key]})"))
        # A reduction over a name the term does not have changes nothing (as in Reduce).
        return op, tuple(pairs), source, frozenset(n for n in names if n in batch)

    def _setup(self):
        op, subs, source, reduced = self._args
        batch = merge_all_inputs([v for _, v in subs] + [source], "scatter")
        inputs = {k: d for k, d in batch.items() if k not in reduced}
        for key, value in subs:
            inputs[key] = value.output
        self.inputs = inputs
        self.output = source.output


# ---------------------------------------------------------------------------------------------
# Pure array math: the scatter of Tensors.
def _index_tensor(proto: Tensor, value: Funsor) -> Tensor | None:
    # An index value as a Bint-valued Tensor: a Number is a 0-d array, a Variable an arange,
    # a Slice (or any function of Bint variables with a rule) its materialized values.
    if isinstance(value, Number):
        data = ops.reshape(ops.new_arange(proto.data, value.data, value.data + 1), ())
        return Tensor.make(data, {}, value.dtype)
    if isinstance(value, Slice):  # range(start, stop, step) along its input
        start, stop, step = value.slice_args
        data = ops.new_arange(proto.data, start, stop, step)
        return Tensor.make(data, dict(value.inputs), value.dtype)
    value = proto.materialize(value) if not isinstance(value, Tensor) else value
    return value if isinstance(value, Tensor) else None


def scatter_tensors(op, subs: tuple, source: Tensor, reduced: frozenset) -> Tensor | None:
    """The Tensor of ``Scatter(op, subs, source, reduced)`` for a Tensor ``source`` and index
    values that are (or materialize to) Bint-valued Tensors; None when they are not.

    ``add`` scatter-adds. Other ops scatter-add into zeros and put ``op``'s unit where nothing
    landed, which is exact when no two source points land together: always when nothing is
    reduced (the result keeps every source input), otherwise checked on concrete indices.
    When collisions are possible (or unknowable, under ``jax.jit``) the values are compared
    with every key (a one-hot of size ``|source| * |keys|``) and ``op``-reduced.

    Example:
        >>> src = fc.Tensor(np.array([1.0, 5.0]), {"n": fc.Bint[2]})
        >>> i = fc.Tensor(np.array([1, 1]), {"n": fc.Bint[2]}, 2)
        >>> scatter_tensors(ops.max, (("i", i),), src, frozenset({"n"})).data
        array([-inf,   5.])
    """
    index = []
    for key, value in subs:
        t = _index_tensor(source, value)
        if t is None or t.output.dtype == "real" or t.output.shape:
            return None
        index.append((key, t))
    unit = ops.UNITS[op]
    if source.dtype != "real" and unit in (float("inf"), -float("inf")):
        return None  # an integer array cannot hold an infinite unit
    if len(index) == 1 and set(index[0][1].inputs) <= reduced:
        fast = _scatter_along_one_axis(op, index[0], source, reduced)
        if fast is not None:
            return fast
    full = merge_all_inputs([t for _, t in index] + [source], "scatter")
    kept = {k: d for k, d in full.items() if k not in reduced}
    a_shape = tuple(d.size for d in full.values())
    key_sizes = tuple(t.output.size for _, t in index)
    out_shape = source.output.shape
    keys = [align_tensor(full, t, expand=True) for _, t in index]
    batch = []
    for pos, (name, d) in enumerate(full.items()):
        if name not in reduced:
            ar = ops.new_arange(source.data, d.size)
            shape = tuple(d.size if i == pos else 1 for i in range(len(a_shape)))
            batch.append(ops.expand(ops.reshape(ar, shape), a_shape))
    src = align_tensor(full, source, expand=True)
    idx = tuple(batch + keys)
    dest_shape = tuple(d.size for d in kept.values()) + key_sizes
    inputs = dict(kept)
    inputs.update((key, Bint[n]) for (key, _), n in zip(index, key_sizes))
    zeros = ops.new_full(src, dest_shape + out_shape, 0)
    if op is ops.add:
        return Tensor.make(ops.scatter_add(zeros, idx, src), inputs, source.dtype)
    # Count hits with integer arrays of the indices' own backend (exact, and never mixed).
    hits = ops.scatter_add(ops.new_zeros(idx[0], dest_shape), idx, ops.new_full(idx[0], a_shape, 1))
    if reduced and not _injective(idx, hits):
        data = _dense_scatter(op, keys, key_sizes, src, full, reduced, kept, out_shape)
        return Tensor.make(data, inputs, source.dtype)
    filled = ops.scatter_add(zeros, idx, src)
    mask = ops.reshape(hits > 0, dest_shape + (1,) * len(out_shape))
    data = ops.where(mask, filled, ops.full_like(filled, unit))
    return Tensor.make(data, inputs, source.dtype)


def evaluate_scatter(op, subs: tuple, source: Tensor, reduced: frozenset) -> Funsor | None:
    """The value of ``Scatter(op, subs, source, reduced)`` for a Tensor ``source``: with no
    keys a plain ``op``-reduction over ``reduced``, else ``scatter_tensors`` (None when the
    index values do not materialize to Tensors).

    Example:
        >>> src = fc.Tensor(np.array([1.0, 5.0]), {"n": fc.Bint[2]})
        >>> evaluate_scatter(ops.add, (), src, frozenset({"n"})).data
        array(6.)
    """
    if not subs:
        return source.reduce(op, reduced) if reduced else source
    return scatter_tensors(op, subs, source, reduced)


def _scatter_along_one_axis(op, key_index, source: Tensor, reduced: frozenset):
    # One key whose index depends on reduced names only: one indexed update along the key's
    # axis, without index arrays over the batch dims (the transpose of a strided time index).
    key, t = key_index
    src, idx, batch, domains = _one_axis(op, t, source, reduced)
    size = t.output.size
    shape = (size,) + tuple(src.shape[1:])
    if op is ops.add:
        filled = ops.scatter_add(ops.new_full(src, shape, 0), (idx,), src)
    else:
        hits = _hits(idx, size)
        if hits is None:
            return None
        # No two source points land together: write them over op's unit.
        filled = ops.scatter_set(ops.new_full(src, shape, ops.UNITS[op]), (idx,), src)
    # The key's axis comes first, where the index dims were (they lead ``src``): the array
    # is contiguous as it was filled (a permuted view is read far slower by contractions).
    inputs = {key: Bint[size]}
    inputs.update((n, domains[n]) for n in batch)
    return Tensor.make(filled, inputs, source.dtype)


def _one_axis(op, t: Tensor, source: Tensor, reduced: frozenset, order=()) -> tuple:
    # The source of a one-key scatter whose index ``t`` depends on reduced names only, as an
    # array (count,) + batch + out: its other reduced names op-reduced first (they do not move
    # the key), the index dims flattened into one leading axis; with the flat index, the
    # batch names (in ``order`` where it names them) and the domains of all names.
    own = tuple(t.inputs)
    other = reduced - set(own)
    data = source.data
    names = list(source.inputs)
    out_shape = tuple(data.shape[len(names):])
    if other:
        axes = tuple(names.index(n) for n in names if n in other)
        data = ops.REDUCE_OPS[op](data, axes)
        names = [n for n in names if n not in other]
    batch = [n for n in names if n not in own]
    if order:
        batch = [n for n in order if n in batch] + [n for n in batch if n not in order]
    domains = {**source.inputs, **t.inputs}
    full = {n: domains[n] for n in own + tuple(batch)}
    src = align_tensor(full, Tensor.make(data, {n: domains[n] for n in names}, source.dtype),
                       expand=True)
    count = 1
    for n in own:
        count *= domains[n].size
    batch_shape = tuple(domains[n].size for n in batch)
    src = ops.reshape(src, (count,) + batch_shape + out_shape)
    return src, ops.reshape(t.data, (count,)), batch, domains


def _hits(idx, size: int):
    # How often each key is hit (a host array), when no key is hit twice; None when one is,
    # or when the index has no values (jax tracing: the general path decides then).
    if not ops.is_concrete(idx):
        return None
    hits = np.bincount(np.asarray(ops.to_numpy(idx)), minlength=size)
    return None if (hits > 1).any() else hits


def accumulate_scatter(op, dest: Tensor, scatter: Scatter) -> Tensor | None:
    """``op(dest, scatter)`` for a Tensor ``dest`` with the inputs of ``scatter`` (a one-key
    ``Scatter`` by ``op`` of a Tensor, whose index depends on reduced names only), computed
    on the points the source lands on: ``dest`` with ``dest[key = index] op= source``,
    without materializing the scatter (op's unit elsewhere) and combining everywhere. None
    when it does not apply (then evaluate the scatter and combine).

    Example:
        >>> from funsor_core.engine.interpreter import reflect
        >>> dest = fc.Tensor(np.array([0.0, 1.0, 2.0]), {"i": fc.Bint[3]})
        >>> i = fc.Tensor(np.array([2, 0]), {"n": fc.Bint[2]}, 3)
        >>> src = fc.Tensor(np.array([1.0, 0.0]), {"n": fc.Bint[2]})
        >>> with reflect:  # lazy: exact would evaluate the Scatter
        ...     s = Scatter(ops.logaddexp, (("i", i),), src, frozenset({"n"}))
        >>> accumulate_scatter(ops.logaddexp, dest, s).data.round(3)
        array([0.693, 1.   , 2.313])
    """
    op_s, subs, source, reduced = scatter._args
    if (op_s is not op or len(subs) != 1 or type(source) is not Tensor
            or dest.dtype != source.dtype or dest.output != source.output
            or dest.inputs.keys() != scatter.inputs.keys()):
        return None
    key, value = subs[0]
    t = _index_tensor(source, value)
    if (t is None or t.output.dtype == "real" or t.output.shape
            or not set(t.inputs) <= reduced):
        return None
    src, idx, batch, domains = _one_axis(op, t, source, reduced, tuple(dest.inputs))
    if any(dest.inputs[n] is not domains[n] for n in batch):
        return None
    order = (key, *batch)  # dest's own order when the key leads it (no permuted copies)
    data = align_tensor(dict.fromkeys(order), dest) if tuple(dest.inputs) != order else dest.data
    if op is ops.add:
        data = ops.scatter_add(data, (idx,), src)
    else:
        if _hits(idx, t.output.size) is None:
            return None
        data = ops.scatter_set(data, (idx,), op(ops.getitem(data, (idx,)), src))
    out = Tensor.make(data, {n: dest.inputs[n] for n in order}, dest.dtype)
    return out if tuple(dest.inputs) == order else out.align(tuple(dest.inputs))


def combine_scatters(op, lhs: Scatter, rhs: Scatter) -> Tensor | None:
    """``op(lhs, rhs)`` for two one-key ``Scatter``s by ``op`` of Tensors into one key (whose
    indices depend on reduced names only) that land on different points: both written into
    one array of op's unit, without combining anything (the transposes of the even and odd
    halves of a time index, say). None when it does not apply.

    Example:
        >>> from funsor_core.engine.interpreter import reflect
        >>> n = {"n": fc.Bint[2]}
        >>> even = fc.Tensor(np.array([0, 2]), n, 4)
        >>> odd = fc.Tensor(np.array([1, 3]), n, 4)
        >>> with reflect:  # lazy: exact would evaluate each Scatter
        ...     a = Scatter(ops.max, (("i", even),), fc.Tensor(np.array([1.0, 2.0]), n), {"n"})
        ...     b = Scatter(ops.max, (("i", odd),), fc.Tensor(np.array([3.0, 4.0]), n), {"n"})
        >>> combine_scatters(ops.max, a, b).data
        array([1., 3., 2., 4.])
    """
    parts = []
    for s in (lhs, rhs):
        op_s, subs, source, reduced = s._args
        if op_s is not op or len(subs) != 1 or type(source) is not Tensor:
            return None
        t = _index_tensor(source, subs[0][1])
        if (t is None or t.output.dtype == "real" or t.output.shape
                or not set(t.inputs) <= reduced):
            return None
        parts.append((subs[0][0], t, source, reduced))
    (key, t, source, reduced), (key2, t2, source2, reduced2) = parts
    if (key2 != key or t2.output != t.output or source2.dtype != source.dtype
            or source2.output != source.output or lhs.inputs.keys() != rhs.inputs.keys()):
        return None
    src, idx, batch, domains = _one_axis(op, t, source, reduced)
    src2, idx2, batch2, domains2 = _one_axis(op, t2, source2, reduced2, tuple(batch))
    if batch2 != batch or any(domains2[n] is not domains[n] for n in batch):
        return None
    size = t.output.size
    shape = (size,) + tuple(src.shape[1:])
    if op is ops.add:
        data = ops.scatter_add(ops.new_full(src, shape, 0), (idx,), src)
        data = ops.scatter_add(data, (idx2,), src2)
    else:
        if _hits(ops.cat([idx, idx2], 0), size) is None:
            return None
        data = ops.scatter_set(ops.new_full(src, shape, ops.UNITS[op]), (idx,), src)
        data = ops.scatter_set(data, (idx2,), src2)
    inputs = {key: Bint[size]}
    inputs.update((n, domains[n]) for n in batch)
    return Tensor.make(data, inputs, source.dtype)


def _injective(idx: tuple, hits) -> bool:
    # Whether no destination point is hit twice; False when the indices have no values yet.
    if not all(ops.is_concrete(i) for i in idx):
        return False
    return bool((ops.to_numpy(hits) <= 1).all())


def _dense_scatter(op, keys, key_sizes, src, full, reduced, kept, out_shape):
    # result[b, k] = op over r of (src[b, r] if key(b, r) == k else unit), with the keys
    # flattened to one axis k of size K = prod(key_sizes).
    total = 1
    for n in key_sizes:
        total *= n
    flat = None
    for key, n in zip(keys, key_sizes):
        flat = key if flat is None else flat * n + key
    a_shape = tuple(d.size for d in full.values())
    nout = len(out_shape)
    hit = ops.reshape(flat, a_shape + (1,)) == ops.new_arange(flat, total)
    hit = ops.reshape(hit, a_shape + (total,) + (1,) * nout)
    vals = ops.reshape(src, a_shape + (1,) + tuple(out_shape))
    vals = ops.expand(vals, a_shape + (total,) + tuple(out_shape))
    data = ops.where(hit, vals, ops.full_like(vals, ops.UNITS[op]))
    axes = tuple(i for i, name in enumerate(full) if name in reduced)
    data = ops.REDUCE_OPS[op](data, axis=axes)
    shape = tuple(d.size for d in kept.values()) + tuple(key_sizes) + tuple(out_shape)
    return ops.reshape(data, shape)
