"""The term protocol: the metaclass that routes construction through the interpreter, the
declarative base class ``Term`` (fields, binds, arrays), and the hooks by which printing,
conversion and sampling plug into the base term class without being imported by it.

Example:
    >>> {"repr", "to_data", "array_to_funsor"} <= set(TERM_HOOKS)
    True
"""

from __future__ import annotations

import contextvars
from typing import Any

from funsor_core.engine.backend import announce_term_class
from funsor_core.engine.interpreter import _DEFAULT, _STATE_GET
from funsor_core.engine.typing import deep_isinstance, params_subclass
from funsor_core.ops.op import is_array_type

__all__ = ["Term", "FunsorMeta", "TERM_HOOKS", "register_term_hook", "pending_setup",
           "pending_slot", "children", "terms_in"]

# What a class's ``_prepare`` computed for its checks, kept for ``_setup`` (Binary,
# Contraction): a one-item list per context (thread, asyncio task), never shared by threads.
_PENDING: contextvars.ContextVar[list] = contextvars.ContextVar("funsor_core.pending_setup")


_pending = _PENDING.get
pending_slot = _PENDING.get
"""``pending_slot(None)``: this context's ``pending_setup()`` list, or None before its first
use; one C call where the hot path cannot afford ``pending_setup``'s frame."""


def pending_setup() -> list:
    """This context's one-item list in which ``_prepare`` leaves what ``_setup`` may reuse.

    A class that uses it sets ``_stash = True``; the slot is emptied when its construction
    ends, so it never keeps arguments (and their arrays) alive.

    Example:
        >>> slot = pending_setup(); slot is pending_setup(), slot
        (True, [None])
    """
    try:
        return _pending()
    except LookupError:
        slot = [None]
        _PENDING.set(slot)
        return slot



# Registration points: modules that the base term module must not import (printing,
# conversion, sampling) plug their functions in here when they are imported.
TERM_HOOKS: dict[str, Any] = {}


def register_term_hook(name: str, fn) -> Any:
    """Install ``fn`` as the base term module's ``name`` hook: ``repr`` (text of a term),
    ``str`` (the text ``print`` shows),
    ``to_data`` (the number of a term), ``lazy_error`` (the error for ``.data`` of a term that
    is not a number), ``array_to_funsor`` (convert an array) and ``sample``.

    Example:
        >>> register_term_hook("repr", TERM_HOOKS["repr"]) is TERM_HOOKS["repr"]
        True
    """
    TERM_HOOKS[name] = fn
    return fn


def _hook(name: str):
    fn = TERM_HOOKS.get(name)
    if fn is None:
        raise RuntimeError(f"funsor_core's {name!r} hook is not installed; import funsor_core")
    return fn


_RESERVED = frozenset({"_args", "inputs", "output", "__weakref__"})


class FunsorMeta(type):
    """Metaclass routing every term construction through the interpreter, and deriving each
    term class's slots and protocol from its declaration (``fields``, ``binds``, ``arrays``).

    Example:
        >>> type(fc.Reduce) is FunsorMeta, fc.Reduce.fields, fc.Reduce.binds
        (True, ('op', 'arg', 'reduced_vars'), ('reduced_vars',))
    """

    def __new__(mcs, name, bases, ns, **kwargs):
        fields = ns.get("fields", ns.get("_fields"))
        if fields is not None and "__slots__" not in ns:
            inherited = set()
            for b in bases:
                for c in b.__mro__:
                    inherited.update(getattr(c, "__slots__", ()))
            ns["__slots__"] = tuple(
                f for f in fields if f not in inherited and f not in _RESERVED
                and not isinstance(ns.get(f), property))
        return super().__new__(mcs, name, bases, ns, **kwargs)

    def __call__(cls, *args, **kwargs):
        # (A plain call when there are no keywords: the hot path of every eager op.)
        args = cls._prepare(*args, **kwargs) if kwargs else cls._prepare(*args)
        state = _STATE_GET(None)
        interp = _DEFAULT[0] if state is None else state[0]
        if cls._stash is None:
            return interp.interpret(cls, args)
        # A class whose _prepare keeps what it checked for _setup in ``pending_setup()``
        # (Binary, Contraction): the slot is emptied once the term is built or a rule returned
        # something else. A stale slot would keep the last arguments, and their arrays, alive
        # until the next construction (an 8 MB array of a Monte Carlo step outlived the step).
        try:
            return interp.interpret(cls, args)
        finally:
            _pending()[0] = None

    def __getitem__(cls, params):
        """``Reduce[AssociativeOp, Funsor, frozenset]``: the class parametrized by one type per
        field, as funsor's generic term classes are (for ``issubclass`` and type hints).

        A parametrized class is a cached subclass whose ``issubclass`` compares parameters
        covariantly (``funsor_core.engine.typing.deep_issubclass``). Calling it builds the plain
        term; instances always have the plain class, so dispatch and ``isinstance(x, Funsor)``
        stay on ``type``'s fast path (the check lives on the parametrized classes' own
        metaclass, never on ``FunsorMeta``).
        """
        params = params if isinstance(params, tuple) else (params,)
        if cls.__dict__.get("__args__"):
            raise TypeError(f"{cls!r} is already parametrized")
        if len(params) != len(cls.fields):
            raise TypeError(f"{cls.__name__}[...] takes one type per field {cls.fields}, got "
                            f"{len(params)}")
        params = tuple(Any if p is object else p for p in params)
        # Interning of parametrized classes (``Reduce[X] is Reduce[X]``), bounded by the
        # parameters a program writes: not a clearable cache (a clear would break that ``is``).
        cache = cls.__dict__.get("_param_cache")
        if cache is None:
            cache = {}
            type.__setattr__(cls, "_param_cache", cache)
        result = cache.get(params)
        if result is None:
            ns = {"__args__": params, "__origin__": cls, "__slots__": (),
                  "__module__": cls.__module__, "__qualname__": cls.__qualname__}
            result = _param_meta(type(cls))(cls.__name__, (cls,), ns)
            cache[params] = result
        return result


def _param_meta(meta: type) -> type:
    # A class with a metaclass of its own (Gaussian's, Normal's) is parametrized by a
    # metaclass deriving from both (Python requires it); one per such metaclass, interned.
    if meta is FunsorMeta or issubclass(meta, _ParamFunsorMeta):
        return _ParamFunsorMeta
    derived = _PARAM_METAS.get(meta)
    if derived is None:
        derived = _PARAM_METAS[meta] = type("_Param" + meta.__name__, (_ParamFunsorMeta, meta),
                                            {})
    return derived


_PARAM_METAS: dict = {}  # interned, as the parametrized classes are: never cleared


class _ParamFunsorMeta(FunsorMeta):
    """Metaclass of parametrized term classes (``Reduce[...]``): covariant ``issubclass``,
    and calling one builds the plain term."""

    def __call__(cls, *args, **kwargs):
        return cls.__origin__(*args, **kwargs)

    def __subclasscheck__(cls, sub) -> bool:
        if cls is sub:
            return True
        origin = sub.__dict__.get("__origin__", sub) if isinstance(sub, type) else sub
        if not type.__subclasscheck__(cls.__origin__, origin):
            return False
        sub_args = sub.__dict__.get("__args__", ()) if isinstance(sub, type) else ()
        return params_subclass(sub_args, cls.__args__)

    def __instancecheck__(cls, obj) -> bool:
        # Instances have the plain class, so compare each field's value with its parameter.
        if not type.__subclasscheck__(cls.__origin__, type(obj)):
            return False
        return all(deep_isinstance(v, p) for v, p in zip(obj._args, cls.__args__))

    def __repr__(cls) -> str:
        return f"{cls.__origin__.__name__}[{', '.join(map(_type_repr, cls.__args__))}]"


def _type_repr(tp) -> str:
    return tp.__name__ if isinstance(tp, type) and not isinstance(tp, _ParamFunsorMeta) \
        else repr(tp)


class Term(metaclass=FunsorMeta):
    """The term protocol: how a term class is declared, and what follows from it.

    A term class declares its constructor arguments once::

        class Reduce(Funsor):
            fields = ("op", "arg", "reduced_vars")   # constructor args, stored as attributes
            binds = ("reduced_vars",)                # fields naming variables bound inside
            arrays = ()                              # fields holding backend arrays
            plain = ()                               # fields never holding terms

    and defines ``_prepare`` (normalize and check the arguments; runs at construction under
    every interpretation) and ``_setup`` (compute ``inputs`` and ``output`` and any derived
    slot, which must be static: names, domains, tuples). Slots, ``bound``, alpha-renaming
    (``traversal.alpha_rename``), substitution, pickling and JAX pytree flattening are
    derived from the declaration. ``Funsor`` adds the user-facing operators.

    Example:
        >>> fc.Reduce.fields, fc.Reduce.binds, fc.Tensor.arrays
        (('op', 'arg', 'reduced_vars'), ('reduced_vars',), ('data',))
    """


    __slots__ = ("_args", "inputs", "output", "__weakref__")
    fields: tuple[str, ...] = ()
    binds: tuple[str, ...] = ()
    arrays: tuple[str, ...] = ()
    plain: tuple[str, ...] = ()  # fields that never hold terms (names, domains): not walked
    _cons_key = None
    _cons_build = None  # a class's own cons-hashing (``build`` delegates to it), if any
    _stash = None  # True where _prepare fills pending_setup(); see FunsorMeta.__call__
    _is_funsor = True
    _atom = False  # atoms evaluate their own substitutions; generic terms push them down
    # Where terms of this class sort among the terms of a commutative Contraction (then by
    # class name and inputs). Atoms declare their own rank (Delta 10, Gaussian 20, Tensor 70,
    # Number 80), so rules can rely on a stable order: point masses first, then densities,
    # generic terms (this default), discrete factors, numbers.
    sort_rank = 50
    _deep_key = False  # set by the interpreter when a rule pattern looks inside tuples

    @classmethod
    def _prepare(cls, *args):
        return args

    def _init(self, *args) -> None:
        self._args = args
        for i, name in type(self)._stored:
            object.__setattr__(self, name, args[i])
        self._setup()

    def _setup(self) -> None:
        """Compute ``inputs``, ``output`` and any derived slots from the stored fields."""
        raise NotImplementedError(f"{type(self).__name__} defines no _setup")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__args__" in cls.__dict__:  # a parametrization (Reduce[...]): no term of its own
            return
        cls.__origin__ = cls  # as funsor's generic classes: the unparametrized origin
        if "fields" not in cls.__dict__ and "_fields" in cls.__dict__:
            cls.fields = cls._fields
        cls._fields = cls.fields
        slots = set()
        for c in cls.__mro__:
            slots.update(getattr(c, "__slots__", ()))
        slots -= _RESERVED
        cls._slot_names = frozenset(slots)
        pos = {name: i for i, name in enumerate(cls.fields)}
        for group in ("binds", "arrays", "plain"):
            unknown = set(getattr(cls, group)) - pos.keys()
            if unknown:
                raise TypeError(f"{cls.__name__}.{group} names {sorted(unknown)}, which are "
                                f"not among its fields {cls.fields}")
        cls._stored = tuple((i, f) for i, f in enumerate(cls.fields) if f in slots)
        cls._derived = tuple(sorted(slots - set(cls.fields)))
        cls._bind_pos = tuple(pos[f] for f in cls.binds)
        cls._leaf_args = tuple(pos[f] for f in cls.arrays) if cls.arrays else None
        # Where child terms may sit: every field but the arrays and the plain ones (``children``).
        cls._kid_pos = tuple(i for i, f in enumerate(cls.fields)
                             if f not in cls.arrays and f not in cls.plain)
        announce_term_class(cls)

    # -- derived protocol: pytrees and pickling ------------------------------------------------
    @classmethod
    def tree_flatten(cls, term: Term) -> tuple[list, tuple]:
        """Split ``term`` into (leaves, static aux): arrays and subterms are the leaves;
        names, domains, ops and derived slots are static, so ``jax.jit`` traces once per
        structure.

        Example:
            >>> t = fc.Tensor(np.arange(2.0), {"i": fc.Bint[2]})
            >>> leaves, aux = fc.Tensor.tree_flatten(t)
            >>> leaves, fc.Tensor.tree_unflatten(aux, [leaves[0] * 10]).data
            ([array([0., 1.])], array([ 0., 10.]))
        """
        args = term._args
        derived = tuple(getattr(term, s) for s in cls._derived)
        positions = cls._leaf_args
        if positions is not None:
            leaves = [args[i] for i in positions]
            static = tuple(_LEAF if i in positions else a for i, a in enumerate(args))
            return leaves, (static, tuple(term.inputs.items()), term.output, derived)
        leaves: list = []
        static = _strip(args, leaves)
        return leaves, (static, tuple(term.inputs.items()), term.output, derived)

    @classmethod
    def tree_unflatten(cls, aux: tuple, leaves) -> Term:
        """Rebuild a term from its aux and (possibly transformed) leaves without checks.

        JAX may pass placeholders or batched arrays as leaves, so shapes come from ``aux``.

        Example:
            >>> t = fc.Tensor(np.arange(2.0), {"i": fc.Bint[2]})
            >>> _, aux = fc.Tensor.tree_flatten(t)
            >>> fc.Tensor.tree_unflatten(aux, [np.ones(2)]).inputs
            {'i': Bint[2]}
        """
        static, inputs, output, derived = aux
        args = _fill(static, iter(leaves))
        obj = object.__new__(cls)
        obj._args = args
        for i, name in cls._stored:
            object.__setattr__(obj, name, args[i])
        obj.inputs = dict(inputs)
        obj.output = output
        for name, value in zip(cls._derived, derived):
            object.__setattr__(obj, name, value)
        return obj

    # -- structure -----------------------------------------------------------------------------
    def __hash__(self) -> int:
        return id(self)

    @property
    def bound(self) -> frozenset:
        """Names bound by this term (not free in it), read off the fields in ``binds``.

        Example:
            >>> with fc.reflect:
            ...     e = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}).reduce(ops.add, "i")
            >>> e.bound, e.inputs
            (frozenset({'i'}), {})
        """
        positions = type(self)._bind_pos
        if not positions:
            return frozenset()
        names: set = set()
        for i in positions:
            _bound_names(self._args[i], names)
        return frozenset(names)

    def __reduce__(self):
        # The whole DAG as one flat list (children first), so that pickle never recurses
        # through nested terms: a 10^5-step lazy chain pickles like a list.
        return _rebuild_dag, (_encode_dag(self),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        fn = TERM_HOOKS.get("repr")
        return fn(self) if fn is not None else f"{type(self).__name__}(...)"

    def __str__(self) -> str:
        fn = TERM_HOOKS.get("str")
        return fn(self) if fn is not None else repr(self)

class _Ref:
    """Position of an already-encoded term in a pickled DAG."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __reduce__(self):
        return _Ref, (self.i,)


# -- the one children walker -------------------------------------------------------------------
def children(term: Term) -> list[Term]:
    """The child terms of ``term``, in field order: every term among its declared fields, also
    inside (nested) tuples of a field; array fields hold no terms and are not looked at.

    Every traversal (substitution, reinterpretation, printing, pickling, the adjoint tape,
    backend checks) walks terms with this one function.

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> [type(c).__name__ for c in children(x + 1.0)]
        ['Variable', 'Number']
    """
    out: list = []
    args = term._args
    for i in type(term)._kid_pos:
        a = args[i]
        if type(a) is tuple:
            _terms_in_tuple(a, out)
        elif isinstance(a, Term):
            out.append(a)
    return out


def terms_in(value: Any) -> list[Term]:
    """The terms inside ``value``: ``[value]`` for a term, the terms of a (nested) tuple in
    order, else ``[]``. ``children`` of a term are the terms in its fields.

    Example:
        >>> terms_in((fc.Number(1.0), ("i", fc.Number(2.0)), 3.0))
        [Number(1.0, 'real'), Number(2.0, 'real')]
    """
    out: list = []
    _terms_in(value, out)
    return out


def _terms_in(arg: Any, out: list) -> None:
    if isinstance(arg, Term):
        out.append(arg)
    elif type(arg) is tuple:
        _terms_in_tuple(arg, out)


def _terms_in_tuple(items: tuple, out: list) -> None:
    # One call per nested tuple, not per item: Delta's ((name, (point, log_density)), ...)
    # and Contraction's terms are walked on hot paths (printing, substitution, checks).
    if len(items) > 8 and all(issubclass(k, Term) for k in set(map(type, items))):
        out.extend(items)  # a long tuple of terms (a 2,000-term Contraction): C-level
        return
    for a in items:
        if type(a) is tuple:
            _terms_in_tuple(a, out)
        elif isinstance(a, Term):
            out.append(a)


def _encode(arg: Any, index: dict) -> Any:
    if isinstance(arg, Term):
        return _Ref(index[id(arg)])
    if type(arg) is tuple:
        return tuple(_encode(a, index) for a in arg)
    return arg


def _decode(arg: Any, built: list) -> Any:
    if type(arg) is _Ref:
        return built[arg.i]
    if type(arg) is tuple:
        return tuple(_decode(a, built) for a in arg)
    return arg


def _encode_dag(root: Term) -> tuple:
    index: dict[int, int] = {}
    order: list = []
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in index:
            continue
        if ready:
            index[id(node)] = len(order)
            order.append((type(node), _encode(node._args, index)))
            continue
        stack.append((node, True))
        kids = children(node)
        stack.extend((k, False) for k in reversed(kids) if id(k) not in index)
    return tuple(order)


def _rebuild_dag(order: tuple) -> Term:
    built: list = []
    for cls, args in order:
        built.append(cls(*_decode(args, built)))
    return built[-1]


def _bound_names(value, out: set) -> None:
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, Term):  # a Variable
        out.add(value.name)
    elif isinstance(value, (tuple, frozenset)):
        for v in value:
            _bound_names(v, out)


class _Leaf:
    __slots__ = ()

    def __repr__(self) -> str:
        return "_LEAF"


_LEAF = _Leaf()


def _strip(arg: Any, leaves: list) -> Any:
    if isinstance(arg, Term) or is_array_type(type(arg)):
        leaves.append(arg)
        return _LEAF
    if type(arg) is tuple:
        return tuple(_strip(a, leaves) for a in arg)
    return arg


def _fill(arg: Any, it) -> Any:
    if arg is _LEAF:
        return next(it)
    if type(arg) is tuple:
        return tuple(_fill(a, it) for a in arg)
    return arg


class TypeHints(dict):
    """``__annotations__`` of a term: on the class, its (empty) class annotations; on a term,
    its inputs and ``"return"``: its output, so ``typing.get_type_hints(term)`` reads a term's
    signature as funsor's does (terms have no instance ``__dict__``, hence a descriptor)."""

    def __get__(self, obj, cls=None):
        return self if obj is None else {**obj.inputs, "return": obj.output}
