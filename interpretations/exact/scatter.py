"""Rules for ``Scatter``: evaluation on Tensors and Numbers (``exact``), and substitution
(on ``lazy``, so that every interpretation propagates it).

Example:
    >>> from funsor_core.algorithms.adjoint.scatter import Scatter
    >>> src = fc.Tensor(np.array([1.0, 2.0]), {"k": fc.Bint[2]})
    >>> d = Scatter(ops.add, (("i", fc.Number(1, 3)),), src, frozenset())
    >>> sorted(d(i="j").inputs.items())   # renaming a key renames the new input
    [('j', Bint[3]), ('k', Bint[2])]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.adjoint.scatter import (
    Scatter,
    accumulate_scatter,
    combine_scatters,
    evaluate_scatter,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.backend import backend_module
from funsor_core.ops import AssociativeOp
from funsor_core.terms.base import Binary, Number, Subs, Variable
from funsor_core.terms.traversal import alpha_rename, bound_name
from interpretations.exact import exact
from interpretations.lazy import lazy

__all__ = []


# Scatter of a Tensor: fill with op's unit and scatter (op-combine) the source into it. With no
# keys it is a plain reduction.
@exact.register(Scatter, object, tuple, Tensor, frozenset)
def exact_scatter_tensor(op, subs, source, reduced_vars):
    return evaluate_scatter(op, subs, source, reduced_vars)


# A Number source is a 0-d Tensor on the backend of the index values.
@exact.register(Scatter, object, tuple, Number, frozenset)
def exact_scatter_number(op, subs, source, reduced_vars):
    proto = next((v.data for _, v in subs if isinstance(v, Tensor)),
                 backend_module().asarray([], "real"))
    if source.dtype == "real":
        # A real 0-d array on the index values' backend (an index array is an integer one).
        data = ops.new_array(proto, float(source.data))
    else:
        data = ops.reshape(ops.new_arange(proto, source.data, source.data + 1), ())
    return Scatter(op, subs, Tensor.make(data, {}, source.dtype), reduced_vars)


# Substitution into a Scatter. A value for an input b of the source and the index values goes
# inside: Scatter(s, src)[b := v] = Scatter(s[b := v], src[b := v]), renaming reduced names
# that v would capture. A Variable for a key renames that new input. Any other value for a key
# stays a Subs (exact evaluates the Scatter to a Tensor first wherever it can).
@lazy.register(Subs, Scatter, tuple)
def lazy_subs_scatter(arg, subs):
    keys = {k for k, _ in arg.subs}
    inner = tuple((k, v) for k, v in subs if k not in keys)
    renames, rest = {}, []
    for k, v in subs:
        if k not in keys:
            continue
        if isinstance(v, Variable) and (v.name == k or v.name not in arg.inputs):
            renames[k] = v.name
        else:
            rest.append((k, v))
    free = set()
    for _, v in inner:
        free.update(v.inputs)
    if free & keys:
        return None  # a value would bring in a name the Scatter introduces: keep it lazy
    new_keys = list(renames.values())
    if len(set(new_keys)) != len(new_keys) or set(new_keys) & (free | set(arg.inputs) - keys):
        return None  # two keys renamed to one name (a diagonal): keep it lazy
    if not inner and not renames:
        return None
    captured = arg.reduced_vars & (free | set(new_keys))
    if captured:
        arg = alpha_rename(arg, {n: bound_name(n) for n in sorted(captured)})
    env = dict(inner)
    pairs = tuple((renames.get(k, k), v(**{n: x for n, x in env.items() if n in v.inputs}))
                  for k, v in arg.subs)
    source = arg.source(**{n: x for n, x in env.items() if n in arg.source.inputs})
    result = Scatter(arg.op, pairs, source, arg.reduced_vars)
    return Subs(result, tuple(rest)) if rest else result


# A scattered message accumulated into a Tensor (the transpose of a strided index meeting the
# adjoint it adds to): combined on the points it lands on, without materializing the rest of
# the scatter (op's unit) and combining it everywhere. Otherwise the scatter is evaluated first.
@exact.register(Binary, AssociativeOp, Tensor, Scatter)
def exact_binary_tensor_scatter(op, lhs, rhs):
    if type(rhs.source) is not Tensor:
        return None
    result = accumulate_scatter(op, lhs, rhs)
    if result is not None:
        return result
    value = evaluate_scatter(*rhs._args)
    return None if value is None else Binary(op, lhs, value)


# Two scattered messages for one Tensor (the transposes of the two halves of a strided time
# index): written into one array where they land apart; otherwise the left one is evaluated
# and the right one accumulated into it (the rule above).
@exact.register(Binary, AssociativeOp, Scatter, Scatter)
def exact_binary_scatter_scatter(op, lhs, rhs):
    if type(lhs.source) is not Tensor or type(rhs.source) is not Tensor:
        return None
    result = combine_scatters(op, lhs, rhs)
    if result is not None:
        return result
    value = evaluate_scatter(*lhs._args)
    return None if value is None else Binary(op, value, rhs)
