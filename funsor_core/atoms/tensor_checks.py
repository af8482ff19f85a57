"""The checks of a Tensor's constructor arguments, with their errors.

``check_tensor_args`` runs every check; input signatures it has validated are remembered in
``KNOWN_INPUTS``, so that ``Tensor._prepare`` validates a mapping of inputs seen before with
one dict lookup, and compares only the data's shape with the inputs' sizes. The interned key
tuple it returns is shared by every Tensor of that signature, so rules compare signatures with
``is`` before ``==``.

Example:
    >>> data, ikey, dtype = check_tensor_args(np.zeros((2, 3)), {"i": fc.Bint[2]}, "real")
    >>> ikey, dtype, KNOWN_INPUTS[ikey][1]
    ((('i', Bint[2]),), 'real', (2,))
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.domains import Domain, Real
from funsor_core.engine.backend import backend_module
from funsor_core.engine.cache import FastCache
from funsor_core.engine.cons import Entry, _forgetter, cons_table
from funsor_core.engine.interpreter import _DEFAULT, _STATE_GET
from funsor_core.engine.protocol import FunsorMeta
from funsor_core.ops.op import _IS_ARRAY_TYPE, is_array_type
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.inputs import DomainError
from funsor_core.terms.reshaping import Slice

__all__ = ["KNOWN_INPUTS", "NUMPY_SCALARS", "TensorMeta", "check_dtype", "check_numeric",
           "check_tensor_args", "out_of_range", "progression_slices", "tensor_cons"]

_SHAPE_MISMATCH = (
    "Tensor data of shape {shape} does not match its inputs {inputs}: the leftmost dims must be "
    "the inputs' sizes {sizes}, followed by the output shape.\n"
    "For example Tensor(np.zeros((2, 3)), {{'i': Bint[2]}}) has output Reals[3]."
)

_FLOAT_BINT = (
    "Tensor data of dtype {dtype} cannot hold Bint[{n}] values (the integers 0 to {m}); "
    "cast the data to an integer type first, e.g. Tensor(data.astype(int), inputs, {n}) "
    "(numpy, jax) or Tensor(data.long(), inputs, {n}) (torch), "
    "or leave dtype='real' for real values."
)

# numpy's scalar types (np.float64, np.int64, np.bool_, ...): what numpy returns for a full
# reduction or arithmetic on 0-d arrays; a Tensor's data is an array (funsor's is).
NUMPY_SCALARS = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.generic))

# numpy dtype kinds that are no numbers: objects, bytes and str, structured records, dates.
_NOT_NUMBERS = {"O": "Python objects", "S": "bytes", "U": "strings", "V": "records",
                "M": "dates", "m": "time spans"}
_NOT_NUMERIC = (
    "Tensor data of dtype {dtype} ({what}) cannot be a Tensor: its data must be numbers "
    "(bool, int or float); convert it first, e.g. data.astype(float) for numbers held as "
    "{what}, or np.unique(data, return_inverse=True)[1] for category labels as Bint values"
)
# Complex numbers: a real domain holds no complex value, and ops (logaddexp, max, <) have
# none or numpy's lexicographic one; torch and jax arrays are asked their dtype's kind too.
_COMPLEX = (
    "Tensor data of dtype {dtype} (complex numbers) cannot be a Tensor: its outputs are real "
    "or Bint; keep the real and imaginary parts apart, e.g. "
    "Tensor(np.stack([z.real, z.imag], -1), inputs) (an output Reals[2])"
)
_NDARRAY = np.ndarray
# The dtypes known to be real numbers, of every backend (numpy's and jax's are numpy dtypes,
# torch's its own): one set lookup on the hot path; any other dtype (complex, strings, a
# byte-swapped float) takes ``check_new_dtype``, which refuses it or adds it here.
_NUMERIC_DTYPES = set(np.dtype(c) for c in "?bhilqBHILQefdg")
# The array dtypes ``check_dtype`` accepted for a Bint dtype (no floats): Tensor's fast path
# of an int dtype asks this set instead.
_INDEX_DTYPES: set = set()


def check_numeric(data) -> None:
    """Raise TypeError where ``data`` is a numpy array of no numbers (strings, bytes, Python
    objects, records, dates): torch and jax cannot hold those, and ops on them fail far from
    the constructor. Other arrays pass (their dtypes are numbers).

    Example:
        >>> check_numeric(np.zeros(2))
        >>> check_numeric(np.array(["a", "b"]))
        Traceback (most recent call last):
        ...
        TypeError: Tensor data of dtype <U1 (strings) cannot be a Tensor: ...
    """
    if isinstance(data, _NDARRAY):
        kind = data.dtype.kind
        if kind in _NOT_NUMBERS:
            raise TypeError(_NOT_NUMERIC.format(dtype=data.dtype, what=_NOT_NUMBERS[kind]))
    else:  # a torch or jax array: torch dtypes answer is_complex, jax's are numpy dtypes
        dtype = getattr(data, "dtype", None)
        kind = getattr(dtype, "is_complex", None) or getattr(dtype, "kind", None) == "c"
    if kind is True or kind == "c":
        raise TypeError(_COMPLEX.format(dtype=data.dtype))


def check_new_dtype(data) -> None:
    """``check_numeric`` of an array whose dtype the hot path has not seen: a dtype that
    passes is remembered, so each dtype is tested once per process.

    Example:
        >>> import torch
        >>> check_new_dtype(torch.zeros(2, dtype=torch.complex64))
        Traceback (most recent call last):
        ...
        TypeError: Tensor data of dtype torch.complex64 (complex numbers) cannot be a Tensor: ...
    """
    check_numeric(data)
    dtype = getattr(data, "dtype", None)
    if dtype is not None:  # (e.g. jax's bfloat16, a numpy dtype of kind "V" that is a number)
        _NUMERIC_DTYPES.add(dtype)


def _check_nested(data) -> None:
    # A list or tuple whose entries numpy reads as no numbers: ["a", "b"] (the backend's
    # asarray fails with "could not convert string to float"), [None, 1.0] (read as nan).
    try:
        probe = np.asarray(data)
    except ValueError as e:  # ragged: [[1.0, 2.0], [3.0]]
        if "inhomogeneous" in str(e):
            raise ValueError(f"Tensor data {data!r} is ragged: its rows differ in length, "
                             "and an array needs one length per dim") from e
        return
    except Exception:  # arrays numpy cannot read: the backend's asarray decides
        return
    if probe.dtype.kind == "O":
        if any(x is None for x in probe.ravel().tolist()):
            raise TypeError(f"Tensor data {data!r} holds None, which is no number; write "
                            "float('nan') where a missing value is meant")
        return  # e.g. a list of 0-d arrays of another backend: its asarray decides
    check_numeric(probe)


def _check_scalar(data) -> None:
    # Data that is neither an array nor a list: a number, or a mistake that the backends
    # would turn into nan (numpy reads None as a float nan) or a message about their own
    # constructors ("new(): invalid data type 'str'").
    if data is None or isinstance(data, (str, bytes, dict, set, frozenset)):
        raise TypeError(f"Tensor data must be an array or a number, got {type(data).__name__} "
                        f"{data!r:.60}; e.g. Tensor(np.array([0.5, 1.5]), {{'i': Bint[2]}}), "
                        "and float('nan') where a missing value is meant")
    if isinstance(data, Funsor):
        raise TypeError(f"Tensor data must be an array, got a funsor ({type(data).__name__} "
                        f"with inputs {dict(data.inputs)} and output {data.output}); use the "
                        "funsor itself, or its array: Tensor(f.data, f.inputs, f.dtype)")


# Validated input signatures: ``tuple(inputs.items())`` -> (the interned tuple, the sizes).
# Bounded: a loop over fresh names makes fresh keys; an evicted one is checked again.
_KNOWN_CACHE = FastCache("tensor.known_inputs", 4096)
KNOWN_INPUTS = _KNOWN_CACHE.data  # read directly on the hot path


def check_tensor_args(data, inputs, dtype) -> tuple:
    """``(data, ikey, dtype)`` of a Tensor, normalized, or the error naming what is wrong:
    data converted to an array of the active backend, inputs as an interned tuple of
    ``(name, Bint[n])`` pairs whose sizes lead the data's shape, dtype ``"real"`` or an int.

    Example:
        >>> check_tensor_args(np.zeros(3), {"i": fc.Bint[2]}, "real")
        Traceback (most recent call last):
        ...
        funsor_core.terms.inputs.DomainError: Tensor data of shape (3,) does not match ...
        For example Tensor(np.zeros((2, 3)), {'i': Bint[2]}) has output Reals[3].
    """
    if not is_array_type(type(data)):
        if isinstance(data, (list, tuple)):
            _check_nested(data)
        else:
            _check_scalar(data)
        module = backend_module()
        if isinstance(data, np.bool_):  # a number, as True (torch takes no np.bool_ as int)
            data = bool(data)
        if (dtype == "real" and isinstance(data, np.floating)
                and isinstance(data, module.ARRAY_TYPES)):
            data = module.asarray(data)  # a numpy float32 scalar stays float32 on numpy
        else:
            data = module.asarray(data, "real" if dtype == "real" else "int")
    inputs = _as_inputs(inputs)
    shape = tuple(data.shape)
    n = len(inputs)
    for name, domain in inputs:
        if not isinstance(name, str) or not isinstance(domain, Domain):
            raise TypeError(f"Tensor inputs map names to domains, got {name!r}: {domain!r}")
        if domain.dtype == "real" or domain.shape:
            raise DomainError(f"Tensor input '{name}' must be a Bint[n], got {domain}; real "
                              "inputs belong to Gaussian or lazy terms")
    sizes = tuple(d.dtype for _, d in inputs)
    if shape[:n] != sizes or len(shape) < n:
        raise DomainError(_SHAPE_MISMATCH.format(shape=shape, inputs=dict(inputs),
                                                 sizes=sizes))
    if len({name for name, _ in inputs}) != n:
        raise DomainError(f"Tensor inputs repeat a name: {[name for name, _ in inputs]}")
    if all(type(name) is str for name, _ in inputs):  # (a str subclass is not a key)
        known = KNOWN_INPUTS.get(inputs)
        if known is None:
            known = _KNOWN_CACHE.put(inputs, (inputs, sizes))
        inputs = known[0]
    return data, inputs, check_dtype(data, dtype, n)


def check_dtype(data, dtype, batch_ndim: int | None = None):
    """``"real"``, or the int bound ``n`` of integer ``data`` (values ``0 .. n-1``). A
    Domain given as the dtype names the whole output: with ``batch_ndim`` (the number of
    inputs) its shape must be the data's shape after the batch dims.

    Example:
        >>> check_dtype(np.arange(3), fc.Bint[3]), check_dtype(np.zeros(2), "real")
        (3, 'real')
        >>> check_dtype(np.zeros(2), fc.Reals[3], 0)
        Traceback (most recent call last):
        ...
        funsor_core.terms.inputs.DomainError: Tensor data of shape (2,) cannot have output ...
    """
    if isinstance(dtype, Domain):
        if batch_ndim is not None and tuple(data.shape[batch_ndim:]) != dtype.shape:
            raise DomainError(
                f"Tensor data of shape {tuple(data.shape)} cannot have output {dtype}: after "
                f"its {batch_ndim} batch dims the data's shape is "
                f"{tuple(data.shape[batch_ndim:])}, the output's is {dtype.shape}")
        dtype = dtype.dtype
    if dtype != "real":
        if not isinstance(dtype, int) and hasattr(dtype, "__index__"):
            # A 0-d integer array as the bound (a size read under torch.jit.trace), as
            # Bint[...] accepts one.
            dtype = operator.index(dtype)
        if isinstance(dtype, bool) or not isinstance(dtype, int):
            raise DomainError(f"Tensor dtype must be 'real' or an int bound, got {dtype!r}")
        if ops.is_floating(data):
            raise DomainError(_FLOAT_BINT.format(dtype=data.dtype, n=dtype, m=dtype - 1))
        if is_array_type(type(data)):
            _INDEX_DTYPES.add(data.dtype)
    # Integer data outside 0..n-1 is not refused here: NumPyro builds subsample indices as
    # Tensors whose values exceed their bound (funsor 0.4.8 accepts them), and a value is
    # checked where it would select an entry: substitution (``_check_index_range``) and a
    # distribution's support (``out_of_range``).
    return dtype


def out_of_range(data, n: int) -> tuple | None:
    """``(min, max)`` of concrete integer ``data`` when a value lies outside ``0 .. n-1``,
    else None (also for traced values, which are never read).

    Example:
        >>> out_of_range(np.array([0, 5, 1]), 2), out_of_range(np.array([0, 1]), 2)
        ((0, 5), None)
    """
    if type(data) is not np.ndarray:
        if not ops.is_concrete(data):
            return None
        data = ops.to_numpy(data)
    size = data.size
    if size == 0:
        return None
    if size <= 64:  # Python's min/max of a short list: ~0.5 us, against ~3 us for numpy's
        values = data.ravel().tolist()
        lo, hi = min(values), max(values)
    else:
        lo, hi = data.min(), data.max()
    if lo < 0 or hi >= n:
        return int(lo), int(hi)
    return None


def _as_inputs(inputs) -> tuple:
    if inputs is None:
        return ()
    if isinstance(inputs, dict):
        return tuple(inputs.items())
    if isinstance(inputs, (set, frozenset)) and len(inputs) > 1:
        raise TypeError(f"Tensor inputs {inputs!r} are a set, which has no order: the data's "
                        "leading dims would be named in hash order. Pass a dict or a list "
                        "of (name, Bint[n]) pairs in the order of the dims")
    pairs = () if isinstance(inputs, str) else tuple(inputs)
    if isinstance(inputs, str) or not all(
            isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs):
        raise TypeError(f"Tensor inputs must map names to Bint domains, e.g. "
                        f"{{'i': Bint[2]}} or [('i', Bint[2])], got {inputs!r}")
    return tuple(tuple(pair) for pair in pairs)


# The fast path's view of a validated signature: ``tuple(inputs.items())`` -> (the interned
# key, the sizes, one inputs dict shared by the scalar Tensors of that signature, as
# ``Tensor.make`` shares its caller's; terms never mutate their inputs).
_SIGNATURES = FastCache("tensor.fast_signatures", 4096)
_SIGNATURE_DATA = _SIGNATURES.data  # read directly on the hot path
_IS_ARRAY = _IS_ARRAY_TYPE.data
# The fast path's view by the inputs dict's ``id``: (a copy of its pairs, its names when
# there are two or more, then the ``_SIGNATURES`` entry). The id only finds the entry; the
# dict's pairs and order are compared with it each call (a freed dict's address is reused).
_BY_DICT_ID_CACHE = FastCache("tensor.signatures_by_dict_id", 4096)
_BY_DICT_ID = _BY_DICT_ID_CACHE.data
_REAL = "real"  # the default dtype, compared by identity on the fast path (a literal
# 'real' is the same interned string)
_new = object.__new__


class TensorMeta(FunsorMeta):
    """The metaclass of ``Tensor``: builds it as every term is built, with the common call
    ``Tensor(array, inputs)`` in one frame.

    That call (an array of a loaded backend, a dict of inputs seen before, no dtype) is
    validated by one lookup by the dict's ``id``, a comparison of its pairs and order with
    the validated copy found there, and one shape comparison, as ``Tensor._prepare`` does, and
    when the active interpretation builds every Tensor as it is (``builds_class_as_is``: no
    rule, hook, tape or debug log sees Tensors) the term is cons-hashed directly, as the
    interpreter would; any other call takes the full path, with its checks and errors.

    Example:
        >>> x = np.zeros((2, 3))
        >>> fc.Tensor(x, {"i": fc.Bint[2]}) is fc.Tensor(x, {"i": fc.Bint[2]})
        True
    """

    def __call__(cls, data, inputs=None, dtype=_REAL, *rest):
        # The common call in as few bytecodes as it takes (each is ~30 instructions): a new
        # real Tensor of an array no live Tensor holds, a signature seen before, no output
        # dims, while Tensors are built as they are; anything else is ``_call_checked``.
        if dtype is _REAL and (type(inputs) is dict or type(inputs) is OrderedDict) and not rest:
            known = _BY_DICT_ID.get(id(inputs))
            if known is not None and _IS_ARRAY.get(type(data)):
                copy, names, ikey, sizes, shared = known
                # This dict, or one at its freed address: it has the validated signature if
                # it holds the same pairs (C-level, no tuple built) in the same order (the
                # names, for two or more).
                try:
                    same = inputs == copy and (names is None or (*inputs,) == names)
                except (TypeError, ValueError):  # a value whose == is no bool: checked below
                    same = False
                if same:
                    shape = data.shape  # read once: a torch ``.shape`` builds a torch.Size
                    exact = shape == sizes
                    state = _STATE_GET(None)
                    if ((exact or shape[:len(sizes)] == sizes) and cls is _TENSOR[0]
                            and (_DEFAULT[0] if state is None else state[0])._direct.get(cls)):
                        key = id(data)
                        entry = _TENSOR_TABLES[0].get(key)
                        if entry is None:
                            if not _TENSOR_TABLES[2]:  # (no array has two Tensors: see below)
                                if data.dtype not in _NUMERIC_DTYPES:
                                    check_new_dtype(data)  # (a new Tensor: once per array)
                                obj = _new(cls)
                                if exact:  # a real output of no dims: ``_init`` inline
                                    obj._args = (data, ikey, _REAL)
                                    obj.data = data
                                    obj._ikey = ikey
                                    obj.inputs = shared
                                    obj.output = Real
                                else:
                                    obj._init(data, ikey, _REAL)
                                entry = _TENSOR_TABLES[0][key] = Entry(obj, _TENSOR_TABLES[1])
                                entry.key = key
                                return obj
                        else:  # the live Tensor of this array, if it has this signature
                            obj = entry()
                            if obj is not None and obj._ikey is ikey and obj._args[2] == "real":
                                return obj
            return _call_checked(cls, data, inputs)
        if type(dtype) is int and not rest and (type(inputs) is dict or
                                                type(inputs) is OrderedDict):
            return _call_int(cls, data, inputs, dtype)
        return FunsorMeta.__call__(cls, data, inputs, dtype, *rest)

    def __init__(cls, name, bases, ns, **kwargs):
        super().__init__(name, bases, ns, **kwargs)
        cls._cons_build = tensor_cons
        if _TENSOR[0] is None:
            _TENSOR[0] = cls  # the first class built here is Tensor itself, not a subclass
            _TENSOR_TABLES[:] = (*cons_table(cls), _multi_table(cls)[0])


# The Tensor class, whose ``_init`` of a real Tensor with no output dims ``TensorMeta``
# does inline (a subclass may extend ``_init``: it takes ``tensor_cons``).
_TENSOR: list = [None]

# A Tensor's cons key is its array's ``id`` alone: one int to hash, where the key
# ``(id(data), inputs, dtype)`` hashed the nested input tuple three times a term (lookup,
# insertion, removal). An entry's Tensor is the one of that array; the rare second Tensor of
# one array under another signature or dtype has its entry in a second table (``_MULTI``),
# under the full key. Equal (array, inputs, dtype) still give the same term while it lives.
_MULTI: dict[type, tuple[dict, Any]] = {}
# Tensor's own (table, callback, second table), read by ``TensorMeta.__call__``.
_TENSOR_TABLES: list = [None, None, None]


def _call_checked(cls, data, inputs):
    # ``TensorMeta.__call__`` of a real dtype and a dict of inputs, off its shortest path: a
    # signature or array type seen for the first time, data with output dims, a live Tensor
    # of the array, a subclass, an interpretation that may rewrite Tensors.
    try:
        items = tuple(inputs.items())
        known = _SIGNATURE_DATA.get(items)
        if known is None:
            known = _known_signature(items)
        if known is not None:
            ikey = known[0]
            record = _BY_DICT_ID.get(id(inputs))
            if record is None or record[2] is not ikey:  # (a record is a function of ikey)
                _BY_DICT_ID_CACHE.put(id(inputs), (
                    dict(ikey), tuple(name for name, _ in ikey) if len(ikey) > 1 else None,
                    *known))
    except TypeError:  # an unhashable domain: the full check names it
        known = None
    # (The caches of ``is_array_type`` and ``builds_class_as_is`` read in place: a miss,
    # or False, asks the function.)
    if known is not None and (_IS_ARRAY.get(type(data)) or is_array_type(type(data))):
        ikey, sizes, shared = known
        shape = data.shape  # read once: a torch ``.shape`` builds a torch.Size
        if shape == sizes or shape[:len(sizes)] == sizes:
            state = _STATE_GET(None)
            interp = _DEFAULT[0] if state is None else state[0]
            if interp._direct.get(cls) or interp.builds_class_as_is(cls):
                if cls is not _TENSOR[0]:
                    return tensor_cons(cls, (data, ikey, _REAL))
                table, forget, multi = _TENSOR_TABLES
                key = id(data)
                entry = table.get(key)
                if entry is not None or multi:
                    obj = None if entry is None else entry()
                    if obj is not None:
                        args = obj._args
                        if args[1] is ikey and args[2] == "real":
                            return obj
                    return tensor_cons(cls, (data, ikey, _REAL))
                if data.dtype not in _NUMERIC_DTYPES:
                    check_new_dtype(data)  # (a new Tensor: once per array)
                obj = _new(cls)
                if shape == sizes:  # a real output of no dims: ``_init`` inline
                    obj._args = (data, ikey, _REAL)
                    obj.data = data
                    obj._ikey = ikey
                    obj.inputs = shared
                    obj.output = Real
                else:
                    obj._init(data, ikey, _REAL)
                entry = table[key] = Entry(obj, forget)
                entry.key = key
                return obj
    return FunsorMeta.__call__(cls, data, inputs)


def _call_int(cls, data, inputs, dtype: int):
    # ``Tensor(indices, inputs, n)`` (Pyro's and NumPyro's enumerated values): an array of a
    # dtype ``check_dtype`` passed before, a signature seen before, the sizes leading the
    # shape, Tensors built as they are: cons-hashed with no more checks; else the full path.
    if (dtype >= 0 and _IS_ARRAY.get(type(data)) and data.dtype in _INDEX_DTYPES):
        try:
            items = tuple(inputs.items())
            known = _SIGNATURE_DATA.get(items) or _known_signature(items)
        except TypeError:  # an unhashable domain: the full check names it
            known = None
        if known is not None and data.shape[:len(known[1])] == known[1]:
            state = _STATE_GET(None)
            interp = _DEFAULT[0] if state is None else state[0]
            if interp._direct.get(cls) or interp.builds_class_as_is(cls):
                return tensor_cons(cls, (data, known[0], dtype))
    return FunsorMeta.__call__(cls, data, inputs, dtype)


def _multi_table(cls: type) -> tuple[dict, Any]:
    multi = _MULTI.get(cls)
    if multi is None:
        table: dict = {}
        multi = _MULTI[cls] = (table, _forgetter(table))
    return multi


def tensor_cons(cls: type, args: tuple):
    """``build`` for Tensor classes: the live Tensor of ``(data, ikey, dtype)``, else a new
    one entered in the cons-hash table, with no checks (``args`` are normalized).

    Example:
        >>> x = np.zeros(2)
        >>> t = fc.Tensor(x, {"i": fc.Bint[2]})
        >>> tensor_cons(fc.Tensor, (x, t._ikey, "real")) is t
        True
    """
    data, ikey, dtype = args
    table, forget = cons_table(cls)
    key = id(data)
    entry = table.get(key)
    held = None if entry is None else entry()
    if held is not None:
        old = held._args
        if (old[1] is ikey or old[1] == ikey) and old[2] == dtype:
            return held
    multi, mforget = _multi_table(cls)
    full = (key, ikey, dtype)
    if multi:
        entry = multi.get(full)
        obj = None if entry is None else entry()
        if obj is not None:
            return obj
    check_numeric(data)
    obj = object.__new__(cls)
    obj._init(data, ikey, dtype)
    if held is None:  # the array's own entry is free
        entry = table[key] = Entry(obj, forget)
        entry.key = key
        return obj
    entry = multi[full] = Entry(obj, mforget)
    entry.key = full
    return obj


def _known_signature(items: tuple):
    # A signature ``check_tensor_args`` validated: its fast-path entry, or None.
    known = KNOWN_INPUTS.get(items)
    if known is None:
        return None
    ikey, sizes = known
    return _SIGNATURES.put(items, (ikey, sizes, dict(ikey)))


def progression_slices(inputs: dict, values: dict, tensor_type: type) -> tuple | None:
    """The basic index (one slice or int per input of ``inputs``) that substitutes ``values``
    when each is a rename (a Variable), a Number, a forward Slice, or a Bint Tensor (of
    ``tensor_type``) that is concrete, 1-d over one input, with entries stepping evenly forward
    (``start + step * arange(n)``, ``step >= 1``: the time shifts of Pyro's vectorized Markov
    chains); else None. A view, not a gather (whose derivative is a scatter-add); reads the
    index on the host. The caller made sure that each substituted input becomes a new one.

    Example:
        >>> i = fc.Tensor(np.array([1, 3, 5]), {"k": fc.Bint[3]}, 6)
        >>> progression_slices({"t": fc.Bint[6], "x": fc.Bint[2]}, {"t": i}, fc.Tensor)
        (slice(1, 6, 2), slice(None, None, None))
    """
    index = []
    for name in inputs:
        value = values.get(name)
        if value is None or isinstance(value, Variable):
            index.append(slice(None))
            continue
        if type(value) is Number:  # removes the dim, as the caller's inputs say
            index.append(int(value.data))
            continue
        if type(value) is Slice:  # a forward Slice in range, its own name or a new one
            start, _, step = value.slice_args
            last = start + step * (value.inputs[value.name].size - 1)
            if step < 1 or start < 0 or last >= inputs[name].size:
                return None
            index.append(slice(start, last + step, step))
            continue
        if not isinstance(value, tensor_type):
            return None
        data = value.data
        if len(value.inputs) != 1 or len(data.shape) != 1 or not ops.is_concrete(data):
            return None
        a = ops.to_numpy(data)
        if a.dtype.kind not in "iu" or not len(a):
            return None
        start, step = int(a[0]), int(a[1] - a[0]) if len(a) > 1 else 1
        if step < 1 or not np.array_equal(a, start + step * np.arange(len(a))):
            return None
        index.append(slice(start, start + step * (len(a) - 1) + 1, step))
    return tuple(index)


# -- substitution into a Tensor: index checks (used by ``tensor.index_tensor``) -----------------
def _as_int_index(data):
    # A comparison result used as a Bint[2] index must select, not mask: index by 0/1.
    if str(getattr(data, "dtype", "")).endswith("bool"):
        return ops.astype(data, "int")
    return data


def _add_input(inputs: dict, name: str, domain) -> None:
    other = inputs.get(name)
    if other is None:
        inputs[name] = domain
    elif other is not domain:
        raise DomainError(f"cannot substitute: input '{name}' would be both {other} and {domain}")


def _arange_at(proto, size: int, position: int, ndim: int):
    shape = [1] * ndim
    shape[position] = size
    return ops.reshape(ops.new_arange(proto, size), tuple(shape))


def _check_index_range(name: str, size: int, data) -> bool:
    """Raise DomainError if concrete index values fall outside ``[0, size)``. Returns False
    when the values are traced (under ``jax.jit``) and cannot be checked, else True."""
    if 0 in tuple(data.shape):
        return True
    if not ops.is_concrete(data):
        return False
    # Read on the host: a concrete jax index inside a trace (``jnp`` ops on it would be
    # traced, and unreadable).
    span = out_of_range(data, size)
    if span is not None:
        raise DomainError(f"cannot substitute into '{name}' of Bint[{size}]: index values span "
                          f"[{span[0]}, {span[1]}]")
    return True
