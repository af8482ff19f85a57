"""The Op machinery: one vocabulary for numbers, arrays and funsors.

An op is a callable object. Called on arrays it looks up a kernel by the argument's type (one
dict lookup on the hot path); called on funsors it builds or rewrites a term. Each op is the
only instance of its own class (``AddOp``), so rewrite rules can be registered for one op or
for a family (``BinaryOp``).

Example:
    >>> import numpy as np
    >>> from funsor_core import ops
    >>> ops.logaddexp(np.zeros(2), np.zeros(2))
    array([0.69314718, 0.69314718])
"""

from __future__ import annotations

import numbers
import weakref
from collections.abc import Callable
from typing import Any

from funsor_core.engine.cache import CacheFamily, FastCache
from funsor_core.ops.kernel_helpers import cast_bool_args, expand_shape, in_float32  # noqa: F401

__all__ = [
    "Op", "UnaryOp", "BinaryOp", "ReductionOp", "NaryOp", "EinsumOp", "CatOp", "StackOp",
    "ArrayOp", "AssociativeOp", "ComparisonOp", "TransformOp", "FinitaryOp", "make_op",
    "cast_bool_args", "expand_shape", "in_float32",
    "ARRAY_TYPES", "register_funsor_builder", "register_array_type", "register_scalar_type",
    "is_scalar",
    "register_kernel_factory",
    "kernel_generation",
]

# Array types whose kernels are registered, in registration order (a backend adds its own).
ARRAY_TYPES: list[type] = []
# Scalar types of an array module that are numbers although not ``numbers.Number`` (numpy's
# ``bool_``: numpy registers its ints and floats with ``numbers``, not its bool), so that
# ``np.bool_(True)`` is a number like ``np.float64(1.0)`` and ``True``, not a 0-d array.
_SCALAR_TYPES: list[type] = [numbers.Number]
# Term builders for funsor arguments, keyed by op family (filled by funsor_core.terms.op_builders).
_FUNSOR_BUILDERS: dict[type, Callable] = {}
_FUNSOR_BASE: list[type] = []
# The backend registry's loader (funsor_core.engine.backend installs it): loads the backend
# of an array type on first sight, so `Tensor(torch.ones(2))` works without an explicit
# `set_backend("torch")`. Here, below the registry, no backend is named.
_LOADER: list[Callable[[type], bool]] = []
# Every op, base and bound, so that registering a kernel can clear their dispatch caches.
# Weak: a bound op (``ops.getitem.bind(index=k)``) lives only as long as a term or a caller
# holds it, so a loop binding fresh parameters does not grow memory.
_ALL_OPS: weakref.WeakSet = weakref.WeakSet()
# Interning of bound ops, keyed by ``(base, params)``: weak, so ``bind`` returns the same
# object for as long as one is alive (an interning table, so not a clearable cache).
# ``Op._bound`` is a small strong front cache on each base op (a member of "ops.bound"), so the
# hot path stays one dict lookup and recently bound ops are not collected between two calls.
_INTERNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_MAX_BOUND = 256
_BOUND = CacheFamily("ops.bound", _MAX_BOUND)
# Each op's kernel per argument type (bounded by the types met), cleared when kernels change.
_DISPATCH = CacheFamily("ops.dispatch", 1024)
_BY_NAME: dict[str, Op] = {}  # unpickling finds an op by its name
# Array types whose kernel for every op is made by a factory ``factory(op) -> kernel`` (the
# tracer's stand-ins for arrays, ops/tracer.py, while it records): read only when a kernel is
# resolved and only if not empty, so neither the hot path nor the resolution of Python scalars
# pays for it, and ops made later have a kernel for them too.
_KERNEL_FACTORIES: dict[type, Callable[[Op], Callable]] = {}
# Bumped whenever a kernel or an array type is registered: code that resolved kernels once
# (``Op.array_kernel``) keys what it keeps by it, and resolves again when it changes.
_GENERATION = [0]


def kernel_generation() -> int:
    """A number that changes whenever a kernel or an array type is registered.

    Example:
        >>> from funsor_core.ops.op import kernel_generation
        >>> isinstance(kernel_generation(), int)
        True
    """
    return _GENERATION[0]


# type -> whether it is an array type of a loaded backend; cleared when a backend registers.
_IS_ARRAY_TYPE = FastCache("ops.is_array_type", 1024)


def is_array_type(typ: type) -> bool:
    """Whether ``typ`` is an array type of a backend, loading torch/jax on first sight."""
    known = _IS_ARRAY_TYPE.data.get(typ)
    if known is None:
        autoload_backend(typ)
        known = _IS_ARRAY_TYPE.put(typ, issubclass(typ, tuple(ARRAY_TYPES))
                                   and not issubclass(typ, tuple(_SCALAR_TYPES)))
    return known


def autoload_backend(typ: type) -> bool:
    """Load the backend of a torch or jax array type on first sight; True if one was loaded."""
    if not _LOADER or any(issubclass(typ, t) for t in ARRAY_TYPES):
        return False
    return _LOADER[0](typ)


def set_backend_loader(loader: Callable[[type], bool]) -> None:
    """Install ``loader(typ) -> bool``, which loads the backend of ``typ`` if it has one
    that is not loaded yet (the backend registry calls this once)."""
    _LOADER[:] = [loader]


def register_array_type(typ: type) -> None:
    """Declare ``typ`` an array type (a backend calls this before registering kernels); a
    type already declared is left as it is.

    Example:
        >>> import numpy as np
        >>> register_array_type(np.ndarray)
        >>> ARRAY_TYPES.count(np.ndarray), is_array_type(np.ndarray)
        (1, True)
    """
    if typ not in ARRAY_TYPES:
        ARRAY_TYPES.append(typ)
        _GENERATION[0] += 1
        _IS_ARRAY_TYPE.clear()
        for op in _ALL_OPS:
            op._cache.clear()


def register_scalar_type(typ: type) -> None:
    """Declare ``typ`` a number, not an array, although a subclass of an array type (a
    backend's scalar that ``numbers`` does not know).

    Example:
        >>> import numpy as np
        >>> from funsor_core.ops.op import is_array_type
        >>> is_array_type(np.bool_), is_array_type(np.ndarray)
        (False, True)
    """
    if typ not in _SCALAR_TYPES:
        _SCALAR_TYPES.append(typ)
        _IS_ARRAY_TYPE.clear()


def is_scalar(x) -> bool:
    """Whether ``x`` is a number: a ``numbers.Number`` or a scalar type a backend declared
    (``register_scalar_type``).

    Example:
        >>> import numpy as np
        >>> is_scalar(np.bool_(True)), is_scalar(2.0), is_scalar(np.zeros(()))
        (True, True, False)
    """
    return isinstance(x, tuple(_SCALAR_TYPES))


def register_funsor_builder(family: type, builder: Callable, funsor_type: type) -> None:
    """Tell ops of ``family`` how to build a term when an argument is a funsor: the op calls
    ``builder(op, *args, **params)``, the builder of the nearest family in its class's MRO.

    Example:
        >>> class InputsOp(UnaryOp):
        ...     __slots__ = ()
        >>> inputs_of = InputsOp("inputs_of_demo")
        >>> register_funsor_builder(InputsOp, lambda op, f: sorted(f.inputs), fc.Funsor)
        >>> inputs_of(fc.Tensor(np.zeros((2, 3)), {"j": fc.Bint[2], "i": fc.Bint[3]}))
        ['i', 'j']
    """
    _FUNSOR_BUILDERS[family] = builder
    if funsor_type not in _FUNSOR_BASE:
        _FUNSOR_BASE.append(funsor_type)
    for op in _ALL_OPS:
        op._cache.clear()


def register_kernel_factory(typ: type, factory: Callable[[Op], Callable] | None) -> None:
    """Make every op's kernel for arguments of type ``typ`` with ``factory(op)`` (an array
    argument of this type wins over any other array argument); None removes it. The tracer
    installs its factory only while it records, so the table is empty the rest of the time.

    Example:
        >>> class Loud(float):
        ...     pass
        >>> register_kernel_factory(Loud, lambda op: lambda *a, **k: op.name)
        >>> from funsor_core import ops
        >>> ops.exp(Loud(0.0)), ops.add(1.0, Loud(2.0))
        ('exp', 'add')
        >>> register_kernel_factory(Loud, None)
    """
    if factory is None:
        _KERNEL_FACTORIES.pop(typ, None)
    else:
        _KERNEL_FACTORIES[typ] = factory
    _GENERATION[0] += 1
    for op in _ALL_OPS:
        op._cache.clear()


def _factory_kernel(op: Op, values) -> Callable | None:
    for v in values:
        factory = _KERNEL_FACTORIES.get(type(v))
        if factory is not None:
            return factory(op)
    return None


def _is_funsor(x: Any) -> bool:
    return bool(_FUNSOR_BASE) and isinstance(x, _FUNSOR_BASE[0])


class Op:
    """Base of all ops. ``op(*args, **params)`` computes on arrays or builds a term on funsors.

    ``op.bind(**params)`` returns the op with some keyword parameters fixed, as an interned
    instance of the same class; terms such as ``Unary`` store bound ops.

    Example:
        >>> from funsor_core import ops
        >>> ops.sum.bind(axis=-1) is ops.sum.bind(axis=-1)
        True
    """

    __slots__ = ("name", "kernels", "params", "base", "_cache", "_cache_box", "_bound",
                 "_bound_box", "__weakref__")
    dispatch_index = 0

    def __init__(self, name: str, base: Op | None = None, params: tuple = ()) -> None:
        self.name = name
        self.base = self if base is None else base
        self.params = params
        self.kernels: dict[type, Callable] = {} if base is None else base.kernels
        # Read directly (plain dicts); written through their boxes, which keep the bounds.
        self._cache_box: FastCache = _DISPATCH.new()
        self._cache: dict[Any, Callable] = self._cache_box.data
        self._bound_box: FastCache | None = _BOUND.new() if base is None else None  # bases only
        self._bound: dict | None = None if base is not None else self._bound_box.data
        _ALL_OPS.add(self)
        if base is None:
            _BY_NAME.setdefault(name, self)

    def register(self, typ: type, fn: Callable) -> Callable:
        """Register the kernel ``fn`` of this op for arguments of type ``typ``."""
        self.kernels[typ] = fn
        _GENERATION[0] += 1
        for op in _ALL_OPS:
            if op.kernels is self.kernels:  # bound ops, and ops sharing the kernel table
                op._cache.clear()
        return fn

    def bind(self, **params) -> Op:
        """This op with keyword parameters fixed (interned)."""
        base = self.base
        merged = dict(self.params)
        merged.update(params)
        key = tuple(sorted(merged.items()))
        op = base._bound.get(key)
        if op is None:
            op = _INTERNED.get((base, key))
            if op is None:
                op = _INTERNED[(base, key)] = type(base)(base.name, base=base, params=key)
            base._bound_box.put(key, op)
        return op

    @property
    def kwargs(self) -> dict:
        return dict(self.params)

    @property
    def __name__(self) -> str:
        # funsor's ops are named like the functions they wrap (``ops.add.__name__ == "add"``),
        # and its tests build ids and lookups from that name.
        return self.name

    def __call__(self, *args, **kwargs):
        fn = self._cache.get(type(args[self.dispatch_index]))
        if fn is None:
            fn = self._resolve(args)
        if self.params:
            kwargs = {**dict(self.params), **kwargs}
        return fn(*args, **kwargs)

    def array_kernel(self, typ: type) -> Callable | None:
        """The kernel ``op(x, ...)`` calls for a first argument ``x`` of the array type
        ``typ`` (None: none, or this op binds parameters or dispatches otherwise), for code
        that repeats one call: valid while ``kernel_generation()`` is unchanged.

        Example:
            >>> from funsor_core import ops
            >>> ops.sum.array_kernel(np.ndarray)(np.ones((2, 3)), (1,))
            array([3., 3.])
        """
        cls = type(self)
        if self.params or cls.__call__ is not Op.__call__ or cls._resolve is not Op._resolve:
            return None
        return self._kernel_for(typ)

    def _dispatch_values(self, args: tuple) -> list:
        return list(args)

    def _resolve(self, args: tuple) -> Callable:
        values = self._dispatch_values(args)
        for v in values:
            if _is_funsor(v):
                return self._funsor_builder()
        if _KERNEL_FACTORIES and (fn := _factory_kernel(self, values)) is not None:
            return fn  # not cached: the dispatch argument's type may be another one
        key_type = type(args[self.dispatch_index]) if len(args) > self.dispatch_index else None
        for v in values:
            fn = self._kernel_for(type(v))
            if fn is not None:
                # Only cache on the dispatch argument's own type: a Python scalar first
                # argument says nothing about the type of the others.
                if type(v) is key_type and key_type not in (int, float, bool):
                    self._cache_box.put(key_type, fn)
                return fn
        names = ", ".join(sorted({type(v).__name__ for v in values}))
        raise TypeError(f"ops.{self.name} has no kernel for arguments of type {names}")

    def _kernel_for(self, typ: type) -> Callable | None:
        kernels = self.kernels
        for t in typ.__mro__:
            if t in kernels:
                return kernels[t]
        autoload_backend(typ)
        # Virtual subclasses (jax arrays of jax.Array, tracers of the types the jax backend
        # lists) are not in the MRO; issubclass over the registered types finds them.
        for t in ARRAY_TYPES:
            if issubclass(typ, t) and t in kernels:
                return kernels[t]
        return None

    def _funsor_builder(self) -> Callable:
        for cls in type(self).__mro__:
            builder = _FUNSOR_BUILDERS.get(cls)
            if builder is not None:
                return lambda *args, **kwargs: builder(self, *args, **kwargs)
        raise TypeError(f"ops.{self.name} cannot be applied to funsors")

    def __repr__(self) -> str:
        if self.params:
            args = ", ".join(f"{k}={v!r}" for k, v in self.params)
            return f"ops.{self.name}.bind({args})"
        return f"ops.{self.name}"

    def __reduce__(self):
        if self.params:
            return _rebind, (self.base.name, self.params)
        return _lookup, (self.name,)


def _lookup(name: str) -> Op:
    return _BY_NAME[name]


def _rebind(name: str, params: tuple) -> Op:
    return _lookup(name).bind(**dict(params))


class UnaryOp(Op):
    """An op of one array argument, elementwise unless a subclass says otherwise.

    Example:
        >>> isinstance(ops.exp, ops.UnaryOp), float(ops.exp(0.0))
        (True, 1.0)
    """

    __slots__ = ()


class BinaryOp(Op):
    """An op of two arguments, broadcasting elementwise unless a subclass says otherwise.

    Example:
        >>> isinstance(ops.add, ops.BinaryOp), ops.add(1.0, 2.0)
        (True, 3.0)
    """

    __slots__ = ()

    def __call__(self, lhs, rhs, **kwargs):
        key = (type(lhs), type(rhs))
        fn = self._cache.get(key)
        if fn is None:
            fn = self._resolve((lhs, rhs))
            if type(lhs) not in (int, float, bool) or type(rhs) not in (int, float, bool):
                self._cache_box.put(key, fn)
        if self.params:
            kwargs = {**dict(self.params), **kwargs}
        elif not kwargs:
            return fn(lhs, rhs)  # the hot path: a plain call, no keyword dict to unpack
        return fn(lhs, rhs, **kwargs)

    def _resolve(self, args: tuple) -> Callable:
        for v in args:
            if _is_funsor(v):
                return self._funsor_builder()
        if _KERNEL_FACTORIES and (fn := _factory_kernel(self, args)) is not None:
            return fn
        # An array argument wins over a Python scalar, whichever side it is on.
        for v in sorted(args, key=lambda v: isinstance(v, (int, float, bool))):
            fn = self._kernel_for(type(v))
            if fn is not None:
                return fn
        names = ", ".join(sorted({type(v).__name__ for v in args}))
        raise TypeError(f"ops.{self.name} has no kernel for arguments of type {names}")


class AssociativeOp(BinaryOp):
    """A binary op that is associative and commutative (``add``, ``logaddexp``, ``max``, ...),
    so it can reduce over inputs; funsor's name for the family.

    Example:
        >>> isinstance(ops.logaddexp, AssociativeOp), isinstance(ops.sub, AssociativeOp)
        (True, False)
    """

    __slots__ = ()


class ComparisonOp(BinaryOp):
    """An elementwise comparison (``lt``, ``eq``, ...): its values are ``Bint[2]``.

    Example:
        >>> isinstance(ops.lt, ComparisonOp)
        True
    """

    __slots__ = ()


class TransformOp(UnaryOp):
    """An invertible elementwise op (``exp``, ``log``, ``tanh``, ``atanh``, ``sigmoid``), as
    funsor groups them.

    Example:
        >>> isinstance(ops.atanh, TransformOp)
        True
    """

    __slots__ = ()


class ReductionOp(UnaryOp):
    """Reduction of an array over axes: ``op(x, axis=None, keepdims=False)``.

    Example:
        >>> isinstance(ops.sum, ops.ReductionOp), ops.sum(np.ones((2, 3)), 0)
        (True, array([2., 2., 2.]))
    """

    __slots__ = ()


class ArrayOp(Op):
    """A structural array op used by rules (reshape, permute, indexing, creation).

    Example:
        >>> isinstance(ops.new_zeros, ops.ArrayOp), ops.new_zeros(np.ones(1), (2,))
        (True, array([0., 0.]))
    """

    __slots__ = ()


class NaryOp(Op):
    """An op of a variable number of array arguments.

    Example:
        >>> isinstance(ops.einsum, ops.NaryOp), ops.FinitaryOp is ops.NaryOp  # funsor's name
        (True, True)
    """

    __slots__ = ()


# funsor's name for the family of ops of a variable number of arguments.
FinitaryOp = NaryOp


class EinsumOp(NaryOp):
    """``einsum(equation, *operands)``: dispatch on the first operand.

    funsor's argument order, ``einsum(operands, equation)`` with a list or tuple of
    operands, is accepted too.

    Example:
        >>> import numpy as np
        >>> from funsor_core import ops
        >>> x = np.arange(6.0).reshape(2, 3)
        >>> ops.einsum("ab->b", x), ops.einsum([x], "ab->b")
        (array([3., 5., 7.]), array([3., 5., 7.]))
    """

    __slots__ = ()
    dispatch_index = 1

    def __call__(self, *args, **kwargs):
        if args and isinstance(args[0], (list, tuple)):
            if len(args) != 2 or not isinstance(args[1], str):
                raise TypeError("ops.einsum takes (equation, *operands), or funsor's "
                                "(operands, equation) with a list of operands")
            args = (args[1], *args[0])
        return super().__call__(*args, **kwargs)


class CatOp(NaryOp):
    """``op(parts, axis=0)`` for a sequence of arrays: dispatch on the first part.

    Example:
        >>> isinstance(ops.cat, ops.CatOp), ops.cat([np.zeros(2), np.ones(1)])
        (True, array([0., 0., 1.]))
    """

    __slots__ = ()

    def __call__(self, parts, *args, **kwargs):
        parts = tuple(parts)
        fn = self._cache.get(type(parts[0]))
        if fn is None:
            fn = self._resolve((parts,))
        if self.params:
            kwargs = {**dict(self.params), **kwargs}
        return fn(parts, *args, **kwargs)

    def _dispatch_values(self, args: tuple) -> list:
        return list(args[0])

    def _resolve(self, args):
        values = self._dispatch_values(args)
        for v in values:
            if _is_funsor(v):
                return self._funsor_builder()
        if _KERNEL_FACTORIES and (fn := _factory_kernel(self, values)) is not None:
            return fn
        for v in values:
            fn = self._kernel_for(type(v))
            if fn is not None:
                self._cache_box.put(type(values[0]), fn)
                return fn
        raise TypeError(f"ops.{self.name} has no kernel for {type(values[0]).__name__}")


class StackOp(CatOp):
    """``stack(parts, axis=0)``.

    Example:
        >>> isinstance(ops.stack, ops.StackOp), ops.stack([np.zeros(2), np.ones(2)]).shape
        (True, (2, 2))
    """

    __slots__ = ()


def make_op(name: str, family: type = UnaryOp) -> Op:
    """Create a new op ``name`` of ``family`` as the only instance of its own class.

    Example:
        >>> op = make_op("myop", UnaryOp)
        >>> type(op).__name__, isinstance(op, UnaryOp)
        ('MyopOp', True)
    """
    cls_name = "".join(part.capitalize() for part in name.strip("_").split("_")) + "Op"
    cls = type(cls_name, (family,), {"__slots__": ()})
    return cls(name)
