"""Domains: the types of funsor inputs and outputs.

A domain is a shape plus a dtype: ``"real"`` for real arrays, or an integer bound ``n`` for
integers in ``0..n-1``. Domains are interned, so ``is`` and ``==`` agree and hashing is cheap.

Example:
    >>> from funsor_core.domains import Bint, Real, Reals
    >>> Bint[3].size, Reals[2, 3].shape, Real.num_elements
    (3, (2, 3), 1)
"""

from __future__ import annotations

import math
import operator
import threading
import weakref
from typing import Any

from funsor_core.engine.cache import FastCache

__all__ = ["Array", "Bint", "Dependent", "Domain", "Real", "Reals", "bint", "reals",
           "find_domain", "register_find_domain"]


_RECENT_CACHE = FastCache("domains.recent", 4096)
_RECENT_BY_KEY: dict = _RECENT_CACHE.data  # (dtype, shape) -> the domain, read in place

class Domain:
    """An interned (shape, dtype) pair. Build one with ``Bint[n]``, ``Reals[...]``, ``Array``.

    Domains are canonical: equal domains are the same object, so the rest of the code compares
    them with ``is``. Arguments are validated and normalized (numpy integers become ``int``)
    before the cache is consulted, so ``Array[True, ()]`` is an error and never aliases
    ``Bint[1]`` (``True == 1`` and both hash alike).

    Example:
        >>> Bint[2] is Bint[2] is Domain(np.int64(2))
        True
    """

    __slots__ = ("shape", "dtype", "__weakref__")
    # Weak values: a domain lives as long as some term (or name) holds it, so programs that
    # make many distinct shapes do not grow the cache forever, yet while any reference exists
    # the same (dtype, shape) gives the same object. A size-bounded cache alone would evict
    # domains still in use and break ``is``; so the bounded part (_RECENT, strong references
    # to the most recently created domains) only keeps short-lived ``Bint[n]`` temporaries
    # from being rebuilt on every call, and the weak map is the one source of identity.
    # The weak map is an interning table, not a clearable cache (see engine/cache.py).
    _CACHE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    _RECENT: dict = _RECENT_CACHE.data  # read directly; written through the FastCache
    _RECENT_SIZE = _RECENT_CACHE.maxsize
    _LOCK = threading.Lock()

    shape: tuple[int, ...]
    dtype: Any

    def __new__(cls, dtype: Any, shape: tuple[int, ...] = ()) -> Domain:
        # Fast path: already-normal arguments (exact int/str types, so no bool aliasing).
        if type(shape) is tuple and (type(dtype) is int or type(dtype) is str) and all(
                type(s) is int for s in shape):
            self = cls._RECENT.get((dtype, shape))
            if self is not None:
                return self
        dtype, shape = _normal_dtype(dtype), _normal_shape(shape)
        key = (dtype, shape)
        with cls._LOCK:
            self = cls._CACHE.get(key)
            if self is None:
                self = object.__new__(cls)
                object.__setattr__(self, "shape", shape)
                object.__setattr__(self, "dtype", dtype)
                cls._CACHE[key] = self
            if key not in cls._RECENT:
                _RECENT_CACHE.put(key, self)  # evicts the oldest insertion when full
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("domains are immutable")

    def __reduce__(self):
        return Domain, (self.dtype, self.shape)

    def __copy__(self) -> Domain:
        return self

    def __deepcopy__(self, memo) -> Domain:
        return self

    @property
    def size(self) -> int:
        """The number of values of a scalar ``Bint[n]`` (that is, ``n``)."""
        if self.dtype == "real":
            raise ValueError(f"{self} has no finite size; only Bint[n] does")
        return self.dtype

    def __iter__(self):
        """The values of a scalar ``Bint[n]``, ``0..n-1``, as funsor iterates a Bint domain
        (funsor yields them as Numbers; ints substitute the same way).

        Example:
            >>> list(Bint[3])
            [0, 1, 2]
        """
        if self.dtype == "real" or self.shape:
            raise TypeError(f"cannot iterate over the values of {self}; only Bint[n] has a "
                            "finite list of values")
        return iter(range(self.dtype))

    @property
    def num_elements(self) -> int:
        """The number of scalar elements of the shape."""
        return math.prod(self.shape)

    @property
    def is_real(self) -> bool:
        return self.dtype == "real"

    def __repr__(self) -> str:
        if self.dtype == "real":
            if not self.shape:
                return "Real"
            return f"Reals[{', '.join(map(str, self.shape))}]"
        if not self.shape:
            return f"Bint[{self.dtype}]"
        return f"Array[{self.dtype}, {self.shape}]"

    def __str__(self) -> str:
        """funsor's spelling, with no spaces in a shape: ``str(Reals[2, 3]) == "Reals[2,3]"``
        (``repr`` keeps the spaced form that the rest of funsor-core's output uses).

        Example:
            >>> str(Reals[2, 3]), repr(Reals[2, 3]), str(Bint[4])
            ('Reals[2,3]', 'Reals[2, 3]', 'Bint[4]')
        """
        return repr(self).replace(", ", ",") if self.dtype == "real" else repr(self)

    def __subclasscheck__(self, sub) -> bool:
        # funsor's domains are classes, so code written for it asks ``issubclass(Bint[2],
        # Bint)``; a concrete domain is "a subclass" of itself only.
        return sub is self


def _as_size(x, what: str) -> int:
    # A bool is an int to Python, but Bint[True] is always a mistake.
    if isinstance(x, bool):
        raise TypeError(f"{what} must be an integer, got the bool {x!r}")
    try:
        n = operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r} of type "
                        f"{type(x).__name__}") from None
    if n < 0:
        raise ValueError(f"{what} must be non-negative, got {n}")
    return n


def _normal_dtype(dtype) -> Any:
    if isinstance(dtype, str):
        if dtype != "real":
            raise ValueError(f"a domain dtype is 'real' or an integer bound n >= 0, "
                             f"got {dtype!r}")
        return "real"
    return _as_size(dtype, "a domain dtype (an integer bound, or 'real')")


def _normal_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"a domain shape is a tuple of sizes, got {shape!r}")
    return tuple(_as_size(s, f"each size of a domain shape {tuple(shape)!r}") for s in shape)


class _BintFactory:
    """``Bint[n]``: integers ``0..n-1``.

    Example:
        >>> fc.Bint[3].size, fc.Bint[3].dtype
        (3, 3)
    """

    def __getitem__(self, size: int) -> Domain:
        if type(size) is int:  # (a bool is not: Bint[True] is an error)
            known = _RECENT_BY_KEY.get((size, ()))
            if known is not None:
                return known
        if isinstance(size, bool) or not hasattr(size, "__index__"):
            raise TypeError(f"Bint[n] needs an integer n, got {size!r}")
        return Domain(size, ())

    def __subclasscheck__(self, sub) -> bool:
        return sub is self or (isinstance(sub, Domain) and sub.dtype != "real" and not sub.shape)

    def __repr__(self) -> str:
        return "Bint"


class _RealsFactory:
    """``Reals[s1, s2, ...]``: real arrays of that shape; ``Reals[()]`` is ``Real``.

    Example:
        >>> fc.Reals[2, 3].shape, fc.Reals[()] is fc.Real
        ((2, 3), True)
    """

    def __getitem__(self, shape) -> Domain:
        if type(shape) is int:  # Reals[n], the common spelling (a bool is not an int here)
            known = _RECENT_BY_KEY.get(("real", (shape,)))
            if known is not None:
                return known
        if not isinstance(shape, tuple):
            shape = (shape,)
        return Domain("real", tuple(shape))

    def __subclasscheck__(self, sub) -> bool:
        return sub is self or (isinstance(sub, Domain) and sub.dtype == "real")

    def __repr__(self) -> str:
        return "Reals"


class _ArrayFactory:
    """``Array[dtype, shape]`` for any dtype ('real' or a bound) and shape.

    Example:
        >>> fc.Array["real", (2,)], fc.Array[3, ()]
        (Reals[2], Bint[3])
    """

    def __getitem__(self, key) -> Domain:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"Array[dtype, shape] needs two arguments, got {key!r}")
        dtype, shape = key
        if not isinstance(shape, (tuple, list)):
            shape = (shape,)
        return Domain(dtype, tuple(shape))

    def __subclasscheck__(self, sub) -> bool:
        return sub is self or (isinstance(sub, Domain))

    def __repr__(self) -> str:
        return "Array"


Bint = _BintFactory()
Reals = _RealsFactory()
Array = _ArrayFactory()


class Dependent:
    """``Dependent[lambda x, y: Reals[x.shape[0], y.shape[1]]]``: an output domain computed
    from the input domains, for ``funsor_core.op_factory.make_op``'s return hints.

    Example:
        >>> Dependent[lambda x: Reals[x.shape[0] * 2]].fn(Reals[3])
        Reals[6]
    """

    def __init__(self, fn) -> None:
        self.fn = fn

    def __class_getitem__(cls, fn) -> Dependent:
        return cls(fn)
Real = Reals[()]


def bint(size: int) -> Domain:
    """Functional form of ``Bint[size]``.

    Example:
        >>> bint(4)
        Bint[4]
    """
    return Bint[size]


def reals(*shape: int) -> Domain:
    """Functional form of ``Reals[shape]``.

    Example:
        >>> reals(2, 2)
        Reals[2, 2]
    """
    return Domain("real", tuple(shape))


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcasting of output shapes; raises ValueError naming the shapes."""
    n = max(map(len, shapes), default=0)
    result = []
    for i in range(n):
        size = 1
        for shape in shapes:
            j = i - n + len(shape)
            if j < 0:
                continue
            s = shape[j]
            if s != 1:
                if size != 1 and size != s:
                    raise ValueError(f"output shapes {shapes} do not broadcast together")
                size = s
        result.append(size)
    return tuple(result)


# The output-domain rules of the ops live with the ops (``funsor_core.ops.infer_domain``); ops
# import this module, so the rules plug in here when ops is imported, instead of this module
# importing ops back.
_FIND_DOMAIN: dict = {}


def register_find_domain(fn) -> Any:
    """Install ``fn(op, *domains) -> Domain`` as the rule behind ``find_domain`` (the ops
    package does this when it is imported).

    Example:
        >>> register_find_domain(_FIND_DOMAIN["fn"]) is _FIND_DOMAIN["fn"]
        True
    """
    _FIND_DOMAIN["fn"] = fn
    return fn


def find_domain(op, *domains: Domain) -> Domain:
    """The domain of the output of ``op`` applied to arguments of these domains (funsor's
    name for ``ops.infer_domain``). A shape mismatch raises ValueError naming the op and the
    domains.

    Example:
        >>> from funsor_core import ops
        >>> find_domain(ops.add, Reals[3, 1], Reals[2]), find_domain(ops.lt, Real, Real)
        (Reals[3, 2], Bint[2])
    """
    fn = _FIND_DOMAIN.get("fn")
    if fn is None:
        raise RuntimeError("find_domain needs the op rules of funsor_core.ops; import it")
    return fn(op, *domains)
