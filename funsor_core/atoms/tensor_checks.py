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

import numpy as np

from funsor_core import ops
from funsor_core.domains import Domain, Real
from funsor_core.engine.backend import backend_module
from funsor_core.engine.cache import FastCache
from funsor_core.engine.cons import _CONS, _forget, _partial, _ref, build
from funsor_core.engine.interpreter import _DEFAULT, _STATE
from funsor_core.engine.protocol import FunsorMeta
from funsor_core.ops.op import _IS_ARRAY_TYPE, is_array_type
from funsor_core.terms.inputs import DomainError

__all__ = ["KNOWN_INPUTS", "TensorMeta", "check_dtype", "check_tensor_args", "out_of_range"]

_SHAPE_MISMATCH = (
    "Tensor data of shape {shape} does not match its inputs {inputs}: the leftmost dims must be "
    "the inputs' sizes {sizes}, followed by the output shape.\n"
    "For example Tensor(np.zeros((2, 3)), {{'i': Bint[2]}}) has output Reals[3]."
)

_FLOAT_BINT = (
    "Tensor data of dtype {dtype} cannot hold Bint[{n}] values (the integers 0 to {m}); "
    "cast the data to an integer type first, e.g. Tensor(data.astype(int), inputs, {n}), "
    "or leave dtype='real' for real values."
)

_OUT_OF_RANGE = (
    "Tensor data with dtype {n} must hold Bint[{n}] values (the integers 0 to {m}), but its "
    "values span [{lo}, {hi}]; pass the bound that covers them, e.g. dtype={hi1}, or fix the "
    "data."
)

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
        module = backend_module()
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
        _check_value_range(data, dtype)
    return dtype


def _check_value_range(data, n: int) -> None:
    # Concrete integer data must hold values of Bint[n]: 5 in a Bint[2] tensor would index
    # past the end later, or (as a jax gather clamps) give a plausible wrong number. Traced
    # values (jax.jit) are not read; their gathers mask out-of-range indices instead.
    span = out_of_range(data, n)
    if span is not None:
        raise DomainError(_OUT_OF_RANGE.format(n=n, m=n - 1, lo=span[0], hi=span[1],
                                               hi1=max(span[1] + 1, 1)))


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


class TensorMeta(FunsorMeta):
    """The metaclass of ``Tensor``: builds it as every term is built, with the common call
    ``Tensor(array, inputs)`` in one frame.

    That call (an array of a loaded backend, a dict of inputs seen before, no dtype) is
    validated by one dict lookup and one shape comparison, as ``Tensor._prepare`` does, and
    when the active interpretation builds every Tensor as it is (``builds_class_as_is``: no
    rule, hook, tape or debug log sees Tensors) the term is cons-hashed directly, as the
    interpreter would; any other call takes the full path, with its checks and errors.

    Example:
        >>> x = np.zeros((2, 3))
        >>> fc.Tensor(x, {"i": fc.Bint[2]}) is fc.Tensor(x, {"i": fc.Bint[2]})
        True
    """

    def __call__(cls, *args, **kwargs):
        if len(args) == 2 and not kwargs and type(args[1]) is dict:
            data, inputs = args
            try:
                items = tuple(inputs.items())
                known = _SIGNATURE_DATA.get(items)
                if known is None:
                    known = _known_signature(items)
            except TypeError:  # an unhashable domain: the full check names it
                known = None
            # (The caches of ``is_array_type`` and ``builds_class_as_is`` read in place: a
            # miss, or False, asks the function.)
            if known is not None and (_IS_ARRAY.get(type(data)) or is_array_type(type(data))):
                ikey, sizes, shared = known
                shape = data.shape  # read once: a torch ``.shape`` builds a torch.Size
                if shape == sizes or shape[:len(sizes)] == sizes:
                    state = _STATE.get(None)
                    interp = _DEFAULT[0] if state is None else state[0]
                    if interp._direct.get(cls) or interp.builds_class_as_is(cls):
                        if shape != sizes or cls is not _TENSOR[0]:
                            return build(cls, (data, ikey, "real"))
                        # ``build`` with ``Tensor._cons_key`` and ``Tensor._init`` inline,
                        # for a real output of no dims (the output domain is ``Real``).
                        key = (id(data), ikey, "real")
                        table = _CONS.get(cls)
                        if table is None:
                            table = _CONS[cls] = {}
                        ref = table.get(key)
                        if ref is not None:
                            obj = ref()
                            if obj is not None:
                                return obj
                        obj = object.__new__(cls)
                        obj._args = (data, ikey, "real")
                        obj.data = data
                        obj._ikey = ikey
                        obj.inputs = shared
                        obj.output = Real
                        table[key] = _ref(obj, _partial(_forget, table, key))
                        return obj
        return FunsorMeta.__call__(cls, *args, **kwargs)

    def __init__(cls, name, bases, ns, **kwargs):
        super().__init__(name, bases, ns, **kwargs)
        if _TENSOR[0] is None:
            _TENSOR[0] = cls  # the first class built here is Tensor itself, not a subclass


# The Tensor class, whose ``_init`` of a real Tensor with no output dims ``TensorMeta``
# does inline (a subclass may extend ``_init``: it takes ``build``).
_TENSOR: list = [None]


def _known_signature(items: tuple):
    # A signature ``check_tensor_args`` validated: its fast-path entry, or None.
    known = KNOWN_INPUTS.get(items)
    if known is None:
        return None
    ikey, sizes = known
    return _SIGNATURES.put(items, (ikey, sizes, dict(ikey)))
