"""The eager Tensor operators' commonest cases in one frame each (issue #29: the eager op).

Each function here returns exactly what one exact Tensor rule returns for the arguments it
accepts, and None for any other (then the operator runs the rules as before). The rule
registers it as its eager program (``engine/fast_path.py``), so it runs only where that rule is
the first one the active interpretation would call and nothing else would run: a user rule
ahead of the built-in one, ``lazy``, a tape or the debug log turn it off. Nothing here reads an
array's values, so traced jax arrays take the same path as concrete ones.

- ``binary_tensor_tensor``: two Tensors of one array type with the same inputs in the same
  order, an elementwise op with no parameters whose output domain is already known (cached, so
  the combination was checked before). The array is the backend kernel's answer; the result is
  built as ``Tensor.make`` builds it.
- ``subs_tensor_int``: ``t(i=k)`` for a Python int ``k`` in ``range(n)`` of an input
  ``i: Bint[n]``: one basic index on the input's axis, the kept inputs from a cache keyed by
  (inputs, name). Negative and out-of-range ``k`` take the general path and its error.
- ``reduce_tensor_name``: ``t.reduce(op, "i")`` for a reduction op and one input name: one
  kernel call over that axis, the kept inputs from a cache keyed by (inputs, name).

Example:
    >>> x = fc.Tensor(np.arange(4.0).reshape(2, 2), {"i": fc.Bint[2], "j": fc.Bint[2]})
    >>> y = x + x  # the fast case the first time its output domain is known
    >>> binary_tensor_tensor(ops.add, x, x).data
    array([[0., 2.],
           [4., 6.]])
    >>> subs_tensor_int(x, "i", 1).data, subs_tensor_int(x, "i", 2) is None
    (array([2., 3.]), True)
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.cache import FastCache
from funsor_core.ops.domain_rules import _DOMAINS

__all__ = ["binary_tensor_tensor", "reduce_tensor_name", "subs_tensor_int"]

_new = object.__new__


def binary_tensor_tensor(op, lhs: Tensor, rhs: Tensor) -> Tensor | None:
    """``exact_binary_tensor_tensor(op, lhs, rhs)`` where both have one array type and the
    same inputs in the same order and ``op``'s output domain for their outputs is cached;
    None otherwise.

    Example:
        >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> y = x * x
        >>> binary_tensor_tensor(ops.mul, x, x).data
        array([1., 1.])
    """
    ld, rd = lhs.data, rhs.data
    ikey = lhs._ikey
    if type(ld) is not type(rd) or (ikey is not rhs._ikey and ikey != rhs._ikey):
        return None
    lo, ro = lhs.output, rhs.output
    # A cached domain is one infer_domain computed without raising; matmul's rule differs.
    out = _DOMAINS.get((op, (lo, ro)))
    if out is None or op.params or op.base is ops.matmul or len(lo.shape) != len(ro.shape):
        return None
    kernel = op._cache.get((type(ld), type(rd)))
    if kernel is None:  # op(ld, rd) resolves and caches it
        return None
    data = kernel(ld, rd)
    result = _new(Tensor)  # as Tensor.make(data, lhs.inputs, out.dtype, ikey, out)
    result._args = (data, ikey, out.dtype)
    result.data = data
    result._ikey = ikey
    result.inputs = lhs.inputs
    result.output = out
    return result


def subs_tensor_int(arg: Tensor, name: str, value: int) -> Tensor | None:
    """``exact_subs_tensor(arg, ((name, Number(value, arg.inputs[name])),))`` for an input
    ``name: Bint[n]`` of ``arg`` and an int ``0 <= value < n``; None otherwise.

    Example:
        >>> x = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> subs_tensor_int(x, "j", 2).data, subs_tensor_int(x, "j", -1)
        (array([2., 5.]), None)
    """
    ikey = arg._ikey
    recipe = _SUBS_RECIPES.get((ikey, name))
    if recipe is None:
        recipe = _SUBS_CACHE.put((ikey, name), _subs_recipe(ikey, name))
    lead, size, inputs, new_ikey = recipe
    if not 0 <= value < size:
        return None
    data = arg.data[value] if lead is None else arg.data[lead + (value,)]
    out = arg.output
    result = _new(Tensor)  # as index_tensor_number's Tensor.make
    result._args = (data, new_ikey, out.dtype)
    result.data = data
    result._ikey = new_ikey
    result.inputs = inputs
    result.output = out
    return result


def _subs_recipe(ikey: tuple, name: str) -> tuple:
    names = [n for n, _ in ikey]
    pos = names.index(name)
    domain = ikey[pos][1]
    size = domain.size if domain.dtype != "real" else 0  # a real input is never an index
    new_ikey = ikey[:pos] + ikey[pos + 1:]
    return ((slice(None),) * pos if pos else None), size, dict(new_ikey), new_ikey


# (input signature, name) -> (leading slices, size, kept inputs, their ikey). Bounded.
_SUBS_CACHE = FastCache("tensor.fast_subs", 4096)
_SUBS_RECIPES = _SUBS_CACHE.data


def reduce_tensor_name(op, arg: Tensor, name: str) -> Tensor | None:
    """``exact_reduce_tensor(op, arg, frozenset({name}))`` for a real Tensor with input
    ``name`` and a reduction op; None otherwise.

    Example:
        >>> x = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> reduce_tensor_name(ops.add, x, "i").data
        array([0., 0., 0.])
    """
    out = arg.output
    if out.dtype != "real":  # integer sums widen the bound: the rule's own path
        return None
    ikey = arg._ikey
    recipe = _REDUCE_RECIPES.get((ikey, name))
    if recipe is None:
        recipe = _REDUCE_CACHE.put((ikey, name), _reduce_recipe(ikey, name))
    axis, inputs, new_ikey = recipe
    data = ops.REDUCE_OPS[op](arg.data, axis=axis)
    result = _new(Tensor)  # as exact_reduce_tensor's Tensor.make
    result._args = (data, new_ikey, out.dtype)
    result.data = data
    result._ikey = new_ikey
    result.inputs = inputs
    result.output = out
    return result


def _reduce_recipe(ikey: tuple, name: str) -> tuple:
    pos = [n for n, _ in ikey].index(name)
    new_ikey = ikey[:pos] + ikey[pos + 1:]
    return (pos,), dict(new_ikey), new_ikey


# (input signature, name) -> (axes, kept inputs, their ikey). Bounded.
_REDUCE_CACHE = FastCache("tensor.fast_reduce", 4096)
_REDUCE_RECIPES = _REDUCE_CACHE.data
