"""The eager Tensor operators' commonest cases in one frame each (issue #29: the eager op).

Each function here returns exactly what one exact Tensor rule returns for the arguments it
accepts, and None for any other (then the operator runs the rules as before). The rule
registers it as its eager program (``engine/fast_path.py``), so it runs only where that rule is
the first one the active interpretation would call and nothing else would run: a user rule
ahead of the built-in one, ``lazy``, a tape or the debug log turn it off. Nothing here reads an
array's values, so traced jax arrays take the same path as concrete ones.

- ``binary_tensor_tensor``: two Tensors of one array type with the same inputs (in another
  order the right array is permuted first, by a cached permutation, as ``align_binary`` does),
  outputs of one rank, an elementwise op with no parameters whose output domain is already
  known (cached, so the combination was checked before). The array is the backend kernel's
  answer; the result is built as ``Tensor.make`` builds it.
- ``subs_tensor_int``: ``t(i=k)`` for a Python int ``k`` in ``range(n)`` of an input
  ``i: Bint[n]``: one basic index on the input's axis, the kept inputs from a cache keyed by
  (inputs, name). Negative and out-of-range ``k`` take the general path and its error.
- ``reduce_tensor_name``: ``t.reduce(op, "i")`` for a reduction op and one input name: one
  kernel call over that axis, the kept inputs from a cache keyed by (inputs, name); zeros for
  ``logaddexp`` along the value of a normalized log table (``atoms/tensor_facts.py``).

Tensor's own ``x + y`` (and the other binary operators) and ``t(i=k)`` ask for their program
with one lookup in the active interpretation's table (``eager_program_key``), and run the
commonest case inline: ``subs_tensor_int``'s body, and ``binary_tensor_tensor``'s for the same
interned inputs and no bool array (issue #29: each frame and key tuple is a tenth of the op).

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
from funsor_core.atoms.int_range import (
    _INT_MAX,
    _UNSIGNED,
    FLOAT_DTYPES,
    SAFE_BOUND,
    is_float_dtype,
    real_reduce,
    real_result,
    widen_int_result,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.atoms.tensor_checks import NUMPY_SCALARS
from funsor_core.atoms.tensor_facts import _NORMALIZED, logaddexp_of_normalized
from funsor_core.engine.cache import FastCache
from funsor_core.engine.fast_path import (
    eager_program,
    eager_program_key,
)
from funsor_core.engine.interpreter import _DEFAULT, _STATE_GET
from funsor_core.ops.domain_rules import _DOMAINS
from funsor_core.terms.base import Binary, Funsor, Subs

__all__ = ["binary_tensor_tensor", "reduce_tensor_name", "subs_tensor_int"]

_new = object.__new__
_LOGADDEXP = ops.logaddexp


def binary_tensor_tensor(op, lhs: Tensor, rhs: Tensor) -> Tensor | None:
    """``exact_binary_tensor_tensor(op, lhs, rhs)`` where both have one array type and the
    same inputs (in any order: the right array is permuted to the left's order), outputs of one
    rank, and ``op``'s output domain for their outputs is cached; None otherwise.

    Example:
        >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> y = x * x
        >>> binary_tensor_tensor(ops.mul, x, x).data
        array([1., 1.])
    """
    ld, rd = lhs.data, rhs.data
    typ = type(ld)
    if typ is not type(rd):
        return None
    # What op(ld, rd) calls: the kernel registered for the type (else the op's own cache).
    kernel = op.kernels.get(typ) or op._cache.get((typ, typ))
    entry = _BINARY_ENTRIES.get((op, kernel, lhs.output, rhs.output))
    if entry is None:
        entry = _binary_entry(op, kernel, lhs.output, rhs.output)
    if not entry:
        return None
    fn, bool_dtype, out = entry
    ikey, rkey = lhs._ikey, rhs._ikey
    if ikey is not rkey and ikey != rkey:  # the same inputs in another order, or decline
        perm = _PERMS.get(ikey, _NONE).get(rkey)  # (no key tuple built, hashed, compared)
        if perm is None:
            perm = _permutation_of(ikey, rkey)
        permute = _PERMUTE_KERNELS.get(typ)
        if not perm or permute is None:
            return None
        rank = len(rhs.output.shape)
        if rank:  # the output dims stay last
            perm = perm + tuple(range(len(rkey), len(rkey) + rank))
        rd = permute(rd, perm)  # as align_binary's ops.permute
    # The backend casts bool arrays (Bint[2]) to integers first: then its wrapper runs.
    if bool_dtype is not None and (ld.dtype is bool_dtype or rd.dtype is bool_dtype):
        fn = kernel
    data = fn(ld, rd)
    if data.dtype not in FLOAT_DTYPES and out.dtype == "real":
        data = real_result(op, (ld, rd), data)  # a real Tensor of int/bool data: float data
    if type(data) in NUMPY_SCALARS:  # numpy's 0-d results: hold an array
        data = data.__array__()
    result = _new(Tensor)  # as Tensor.make(data, lhs.inputs, out.dtype, ikey, out)
    result._args = (data, ikey, out.dtype)
    result.data = data
    result._ikey = ikey
    result.inputs = lhs.inputs
    result.output = out
    return result


def _permutation(ikey: tuple, rkey: tuple) -> tuple:
    # The axes of the right array's inputs in the left's input order, or () where the
    # (name, domain) pairs differ: aligning, or the general path's error.
    if len(ikey) != len(rkey) or set(ikey) != set(rkey):
        return ()
    names = [n for n, _ in rkey]
    return tuple(names.index(n) for n, _ in ikey)


def _permutation_of(ikey: tuple, rkey: tuple) -> tuple:
    inner = _PERMS.get(ikey)
    if inner is None:
        inner = _PERM_CACHE.put(ikey, {})
    perm = _permutation(ikey, rkey)
    if len(inner) < 64:  # (many orders of one signature: computed per call past that)
        inner[rkey] = perm
    return perm


# left inputs -> {right inputs: _permutation}. Bounded.
_PERM_CACHE = FastCache("tensor.fast_permutation", 4096)
_PERMS = _PERM_CACHE.data
_NONE: dict = {}
_PERMUTE_KERNELS = ops.permute.kernels  # (the op's own table, updated in place)


def _binary_entry(op, kernel, lo, ro) -> tuple | None:
    # (raw kernel, the bool dtype it must not see, output domain), or () for a case the rule
    # computes otherwise (bound parameters, matmul, outputs of two ranks), or None (nothing
    # cached) until infer_domain has accepted the two outputs once, on the general path.
    out = _DOMAINS.get((op, (lo, ro)))
    if out is None or kernel is None:
        return None
    entry = ()
    if (not op.params and op.base is not ops.matmul and len(lo.shape) == len(ro.shape)
            and type(op).__call__ is ops.BinaryOp.__call__):
        fn, bool_dtype = getattr(kernel, "unless_bool", (kernel, None))
        if out.dtype != "real":  # a Bint result: as wide as its domain (atoms/int_range.py)
            fn, bool_dtype = _widening(op, kernel, out.dtype), None
        # A bound past every default int is checked by the rule (its error names the terms).
        entry = (fn, bool_dtype, out) if out.dtype == "real" or out.dtype <= SAFE_BOUND else ()
    return _BINARY_CACHE.put((op, kernel, lo, ro), entry)


def _widening(op, kernel, size: int):
    # ``widen_int_result``'s test inline (the common dtype fits: no call); a difference must
    # also not wrap an unsigned dtype below 0 (Bint[n] - Bint[n] stays Bint[n], as funsor).
    top, signed = size - 1, op is ops.sub

    def widened(ld, rd):
        data = kernel(ld, rd)
        dtype = data.dtype
        fits = _INT_MAX.get(dtype, -1)  # (-1: a dtype not seen yet)
        if fits is None or (fits >= top and not (signed and dtype in _UNSIGNED)):
            return data
        return widen_int_result(kernel, ld, rd, data, size, signed)

    return widened


# (op, its kernel, output domains) -> _binary_entry. Keyed by the kernel too, so a kernel
# registered later makes a new key instead of a stale entry. Bounded.
_BINARY_CACHE = FastCache("tensor.fast_binary", 4096)
_BINARY_ENTRIES = _BINARY_CACHE.data


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
    if type(data) in NUMPY_SCALARS:  # numpy's 0-d results: hold an array
        data = data.__array__()
    result = _new(Tensor)  # as index_tensor_number's Tensor.make
    result._args = (data, new_ikey, out.dtype)
    result.data = data
    result._ikey = new_ikey
    result.inputs = inputs
    result.output = out
    return result


def _subs_recipe(ikey: tuple, name: str) -> tuple:
    names = [n for n, _ in ikey]
    if name not in names:  # not an input: nothing to index (the caller's case)
        return None, 0, None, None
    pos = names.index(name)
    domain = ikey[pos][1]
    size = domain.size if domain.dtype != "real" else 0  # a real input is never an index
    new_ikey = ikey[:pos] + ikey[pos + 1:]
    return ((slice(None),) * pos if pos else None), size, dict(new_ikey), new_ikey


# (input signature, name) -> (leading slices, size, kept inputs, their ikey). Bounded.
_SUBS_CACHE = FastCache("tensor.fast_subs", 4096)
_SUBS_RECIPES = _SUBS_CACHE.data
# The same recipes by input signature, then name: the operator hashes the signature alone
# (a key tuple per call costs its allocation and an element-wise comparison). Bounded.
_SUBS_NAMES_CACHE = FastCache("tensor.fast_subs_by_name", 4096)
_SUBS_BY_NAME = _SUBS_NAMES_CACHE.data


def _subs_by_name(ikey: tuple, name: str) -> tuple:
    names = _SUBS_BY_NAME.get(ikey)
    if names is None:
        names = _SUBS_NAMES_CACHE.put(ikey, {})
    recipe = _SUBS_RECIPES.get((ikey, name))
    if recipe is None:
        recipe = _SUBS_CACHE.put((ikey, name), _subs_recipe(ikey, name))
    if len(names) < 64:  # (a name per call, e.g. fresh names in a loop: the bounded cache)
        names[name] = recipe
    return recipe


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
    data, reduced = arg.data, None
    if data.dtype not in FLOAT_DTYPES and not is_float_dtype(data):  # (a dtype's first sight)
        reduced = real_reduce(op, data, axis)  # int or bool data labelled Real: reduce floats
    elif _NORMALIZED and op is _LOGADDEXP:  # a normalized log table: zeros, no pass
        reduced = logaddexp_of_normalized(data, axis[0])
    if reduced is None:
        reduced = ops.REDUCE_OPS[op](data, axis=axis)
    data = reduced
    if type(data) in NUMPY_SCALARS:  # numpy's 0-d results: hold an array
        data = data.__array__()
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


# Tensor's own binary operators: ``x + y`` of two Tensors reads the eager program of the
# op's rule from the active interpretation's table by a key fixed per op (no isinstance, no
# key built, no guard frame per call), then falls back to Funsor's operator
# (terms/operators.py), which runs the whole rule path.
def _tensor_binary_method(op, generic):
    pkey = eager_program_key("eager_binary", (Binary, type(op), Tensor, Tensor))

    def method(self, other):
        if type(other) is Tensor and type(self) is Tensor:
            program = (_STATE_GET(None) or _DEFAULT)[0]._direct.get(pkey)
            if program is None:
                program = eager_program(pkey)
            if program is binary_tensor_tensor:
                ikey, ld, rd = self._ikey, self.data, other.data
                typ = type(ld)
                if ikey is other._ikey and typ is type(rd):
                    # binary_tensor_tensor's commonest case inline (one frame less): the
                    # same interned inputs, an entry cached, no bool array.
                    lo = self.output
                    entry = _BINARY_ENTRIES.get((op, op.kernels.get(typ), lo, other.output))
                    if entry and (entry[1] is None or (ld.dtype is not entry[1]
                                                       and rd.dtype is not entry[1])):
                        data = entry[0](ld, rd)
                        out = entry[2]
                        if data.dtype not in FLOAT_DTYPES and out.dtype == "real":
                            data = real_result(op, (ld, rd), data)  # int data labelled Real
                        if type(data) in NUMPY_SCALARS:  # numpy's 0-d results: hold an array
                            data = data.__array__()
                        result = _new(Tensor)
                        result._args = (data, ikey, out.dtype)
                        result.data = data
                        result._ikey = ikey
                        result.inputs = self.inputs
                        result.output = out
                        return result
                result = binary_tensor_tensor(op, self, other)
                if result is not None:
                    return result
        return generic(self, other)

    method.__doc__ = generic.__doc__
    return method


for _name, _op in {"add": ops.add, "sub": ops.sub, "mul": ops.mul, "truediv": ops.truediv,
                   "pow": ops.pow, "lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge,
                   "eq": ops.eq, "ne": ops.ne}.items():
    setattr(Tensor, f"__{_name}__",
            _tensor_binary_method(_op, getattr(Funsor, f"__{_name}__")))
del _name, _op


# Tensor's own ``t(i=0)``: the substitution's eager program, read from the active
# interpretation's table by a fixed key, then Funsor's ``__call__`` (terms/methods.py) for every
# other call.
_SUBS_PROGRAM = eager_program_key("eager_subs_int", (Subs, Tensor, tuple))
_funsor_call = Funsor.__call__


def _tensor_call(self, *args, **kwargs):
    if len(kwargs) == 1 and not args:
        name, value = kwargs.popitem()  # (this call's own dict: put back below)
        if type(value) is int and type(self) is Tensor:
            # (The active interpretation: the context's (interp, ...) pair, else the default.)
            program = (_STATE_GET(None) or _DEFAULT)[0]._direct.get(_SUBS_PROGRAM)
            if program is None:
                program = eager_program(_SUBS_PROGRAM)
            if program is subs_tensor_int:  # its body, inline (one frame less)
                ikey = self._ikey
                recipe = _SUBS_BY_NAME.get(ikey, _NONE).get(name)
                if recipe is None:
                    recipe = _subs_by_name(ikey, name)
                lead, size, inputs, new_ikey = recipe
                if 0 <= value < size:
                    data = self.data[value] if lead is None else self.data[lead + (value,)]
                    if type(data) in NUMPY_SCALARS:  # numpy's 0-d results: hold an array
                        data = data.__array__()
                    result = _new(Tensor)
                    result._args = (data, new_ikey, self.output.dtype)
                    result.data = data
                    result._ikey = new_ikey
                    result.inputs = inputs
                    result.output = self.output
                    return result
        kwargs[name] = value
    return _funsor_call(self, *args, **kwargs)


_tensor_call.__doc__ = _funsor_call.__doc__
Tensor.__call__ = _tensor_call
