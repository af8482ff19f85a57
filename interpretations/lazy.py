"""``lazy``: record terms; only substitution is propagated.

Its rules are also the last resort of every other interpretation (``exact`` falls back here):
pushing substitutions down to the atoms, resolving substituted variables, and dropping
trivial wrappers.

Example:
    >>> from interpretations import lazy
    >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
    >>> with lazy:
    ...     y = x + 1
    >>> type(y).__name__
    'Binary'
"""

from __future__ import annotations

from funsor_core.engine.interpreter import Interpretation, reflect
from funsor_core.terms.base import Align, Funsor, Number, Reduce, Subs, Variable
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.reshaping import Cat, Slice, Stack
from funsor_core.terms.traversal import receives_subs, substitute

__all__ = ["lazy", "LAZY"]

lazy = Interpretation("lazy", base=reflect, doc=__doc__)
LAZY = lazy


# Subs(Variable x, {x: v}) = v.
@lazy.register(Subs, Variable, tuple)
def lazy_subs_variable(arg, subs):
    for name, value in subs:
        if name == arg.name:
            return value
    return arg


# Subs(f, {}) = f; and substitution into a non-atom distributes over its arguments.
@lazy.register(Subs, Funsor, tuple)
def lazy_subs_funsor(arg, subs):
    if not subs:
        return arg
    if type(arg)._atom or receives_subs(arg, subs):
        return None
    return substitute(arg, subs)


# Reduce over no variables is the identity; nested reductions of one op merge.
@lazy.register(Reduce, object, Funsor, frozenset)
def lazy_reduce_funsor(op, arg, reduced_vars):
    if not reduced_vars:
        return arg
    if isinstance(arg, Reduce) and arg.op is op:
        return Reduce(op, arg.arg, reduced_vars | arg.reduced_vars)
    return None


# Aligning to the order a term already has changes nothing.
@lazy.register(Align, Funsor, tuple)
def lazy_align_funsor(arg, names):
    if names == tuple(arg.inputs)[: len(names)]:
        return arg
    return None


# Stack(i, parts)(i=n) is parts[n] (with the other substituted values); a Variable renames
# the index, a Slice selects parts; any other value for the index stays a Subs (a
# Tensor-valued index is evaluated once the parts are Tensors).
@lazy.register(Subs, Stack, tuple)
def lazy_subs_stack(arg, subs):
    values = dict(subs)
    index = values.pop(arg.name, None)
    if type(index) is Number:
        return _subs_part(arg.parts[index.data], values)
    if type(index) is Variable:
        return Stack(index.name, tuple(_subs_part(p, values) for p in arg.parts))
    if type(index) is Slice:
        start, stop, step = index.slice_args
        parts = arg.parts[start:stop:step]
        return Stack(index.name, tuple(_subs_part(p, values) for p in parts))
    return None


# Cat(i, parts, j)(i=n) is the part holding n, at j = n - (the sizes before it); a Variable
# renames i, a Slice selects from each part the stretch it covers. Other values (a Tensor
# index) stay a Subs, unless the parts concatenate into one atom (Tensors, Gaussians).
@lazy.register(Subs, Cat, tuple)
def lazy_subs_cat(arg, subs):
    values = dict(subs)
    index = values.pop(arg.name, None)
    part_name = arg.part_name
    if part_name != arg.name and any(part_name in v.inputs for v in values.values()):
        return None  # a value would be captured by the bound part_name: leave it to the atom
    sizes = [p.inputs[part_name].size for p in arg.parts]
    if type(index) is Number:
        k, local = _cat_position(sizes, index.data)
        return _subs_part(arg.parts[k], {**values, part_name: Number(local, sizes[k])})
    if type(index) is Variable:
        return Cat(index.name, tuple(_subs_part(p, values) for p in arg.parts), part_name)
    if type(index) is Slice:
        pieces = _cat_slices(sizes, *index.slice_args)
        parts = tuple(_subs_part(arg.parts[k], {**values, part_name: Slice(
            part_name, start, stop, index.slice_args[2], sizes[k])}) for k, start, stop in pieces)
        return Cat(index.name, parts, part_name) if parts else None
    return None


def _cat_position(sizes, n):
    # The part holding position n of the concatenation, and n's position within it.
    for k, size in enumerate(sizes):
        if n < size:
            return k, n
        n -= size
    raise AssertionError("Number index out of range")  # Number checks its own range


def _cat_slices(sizes, start, stop, step):
    # range(start, stop, step) over the concatenation, as (part, local start, local stop).
    pieces, offset = [], 0
    for k, size in enumerate(sizes):
        first = max(start, offset)
        first += (start - first) % step  # the first position >= offset on the progression
        last = min(stop, offset + size)
        if first < last:
            pieces.append((k, first - offset, last - offset))
        offset += size
    return pieces


# Slice(i, start, stop, step)(i=v) is start + step * v: a Number or a Variable (a rename)
# becomes the index it denotes, and a Slice of a Slice is one Slice.
@lazy.register(Subs, Slice, tuple)
def lazy_subs_slice(arg, subs):
    value = dict(subs).get(arg.name)
    start, stop, step = arg.slice_args
    dtype = arg.output.dtype
    if type(value) is Number:
        return Number(start + step * value.data, dtype)
    if type(value) is Variable:
        return Slice(value.name, start, stop, step, dtype)
    if type(value) is Slice:
        v_start, v_stop, v_step = value.slice_args
        new_start = min(start + step * v_start, dtype)
        new_stop = max(min(start + step * v_stop, dtype), new_start)
        return Slice(value.name, new_start, new_stop, step * v_step, dtype)
    return None


# MarkovProduct(...)(x=Variable("y")) renames the free step name x to y (its step_names), as
# funsor's MarkovProduct does; other values are substituted into the renamed product. A
# rename that would make two inputs one (a diagonal) is substituted like any other value.
@lazy.register(Subs, MarkovProduct, tuple)
def lazy_subs_markov_product(arg, subs):
    position = {n: (i, j) for i, pair in enumerate(arg.step_names) for j, n in enumerate(pair)}
    names = [list(pair) for pair in arg.step_names]
    taken = set(arg.inputs)
    rest = []
    for name, value in subs:
        at = position.get(name)
        if at is None or type(value) is not Variable or (
                value.name != name and value.name in taken):
            rest.append((name, value))
            continue
        taken.discard(name)
        taken.add(value.name)
        names[at[0]][at[1]] = value.name
    if len(rest) == len(subs):
        return None
    result = MarkovProduct(arg.sum_op, arg.prod_op, arg.trans, arg.time, arg.step,
                           tuple(map(tuple, names)), arg.strategy)
    return Subs(result, tuple(rest)) if rest else result


def _subs_part(part, values):
    rest = {k: v for k, v in values.items() if k in part.inputs}
    return part(**rest) if rest else part
