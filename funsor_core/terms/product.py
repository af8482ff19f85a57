"""Tuple-valued funsors: the domain ``Product[d0, d1, ...]`` and the term ``Tuple(args)``.

``Tuple((x, y))`` packs funsors of possibly different outputs into one funsor whose output is
``Product[x.output, y.output]`` and whose inputs are the union of theirs. Indexing it by an
int gives a part back, by a slice a shorter ``Tuple``; iterating it unpacks it.

Example:
    >>> t = Tuple((fc.Number(1.0), fc.Variable("i", fc.Bint[2])))
    >>> t.output, t.inputs, t[1] is fc.Variable("i", fc.Bint[2])
    (Product[Real, Bint[2]], {'i': Bint[2]}, True)
"""

from __future__ import annotations

import threading
import weakref

from funsor_core.domains import Domain
from funsor_core.terms.base import Funsor, merge_inputs, to_funsor

__all__ = ["Product", "ProductDomain", "Tuple", "tuple_to_funsor"]


class ProductDomain:
    """The domain of a tuple of values, one of each of the domains ``args``.

    Interned like array domains: ``Product[Real, Bint[2]]`` is always the same object, so
    outputs compare with ``is``. Its ``shape`` is ``(len(args),)`` as in funsor; it has no
    array ``dtype`` (a tuple is not an array), so ``dtype`` is the string ``"product"``.

    Example:
        >>> Product[fc.Real, fc.Bint[2]] is Product[fc.Real, fc.Bint[2]]
        True
    """

    __slots__ = ("__args__", "__weakref__")
    # Interning (weak: an entry dies with its domain), not a clearable cache: engine/cache.py.
    _CACHE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    _LOCK = threading.Lock()
    dtype = "product"

    def __new__(cls, args: tuple) -> ProductDomain:
        args = tuple(args)
        bad = [a for a in args if not isinstance(a, (Domain, ProductDomain))]
        if bad:
            raise TypeError(f"Product[...] takes domains such as Real or Bint[3], got {bad!r}")
        with cls._LOCK:
            self = cls._CACHE.get(args)
            if self is None:
                self = object.__new__(cls)
                object.__setattr__(self, "__args__", args)
                cls._CACHE[args] = self
        return self

    def __setattr__(self, name, value) -> None:
        raise AttributeError("domains are immutable")

    def __reduce__(self):
        return ProductDomain, (self.__args__,)

    def __copy__(self) -> ProductDomain:
        return self

    def __deepcopy__(self, memo) -> ProductDomain:
        return self

    @property
    def shape(self) -> tuple[int]:
        return (len(self.__args__),)

    @property
    def __origin__(self) -> type:
        return Product

    def __repr__(self) -> str:
        return "Product[" + ", ".join(map(repr, self.__args__)) + "]"

    __str__ = __repr__


class _ProductMeta(type):
    def __getitem__(cls, args) -> ProductDomain:
        return ProductDomain(args if isinstance(args, tuple) else (args,))


class Product(metaclass=_ProductMeta):
    """``Product[d0, d1, ...]``: the domain of tuples (funsor's ``funsor.domains.Product``).

    Example:
        >>> Product[fc.Real, fc.Reals[2]].shape
        (2,)
    """


class Tuple(Funsor):
    """A tuple of funsors of possibly different outputs, as one funsor of a ``Product`` output.

    Example:
        >>> x, y = fc.Number(1.0), fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> t = Tuple((x, y))
        >>> a, b = t
        >>> (a is x, b is y, t[:1] is Tuple((x,)))
        (True, True, True)
    """

    fields = ("args",)

    @classmethod
    def _prepare(cls, args):
        args = tuple(args)
        bad = [a for a in args if not isinstance(a, Funsor)]
        if bad:
            raise TypeError(f"Tuple(args) takes a tuple of funsors, got {bad!r}; convert them "
                            "with to_funsor first")
        inputs: dict = {}
        for arg in args:
            inputs = merge_inputs(inputs, arg.inputs, "make a Tuple")
        return (args,)

    def _setup(self):
        inputs: dict = {}
        for arg in self.args:
            inputs = merge_inputs(inputs, arg.inputs, "make a Tuple")
        self.inputs = inputs
        self.output = ProductDomain(tuple(a.output for a in self.args))

    # A Tuple is a container: selecting a part is structural, the same under every
    # interpretation (funsor registers it on eager and lazy alike).
    def __getitem__(self, index):
        if isinstance(index, tuple) and len(index) == 1:
            index = index[0]
        if isinstance(index, slice):
            return Tuple(self.args[index])
        if isinstance(index, int) or hasattr(index, "__index__"):
            return self.args[index]
        raise TypeError(f"a Tuple is indexed by an int or a slice, got {type(index).__name__}")

    def __len__(self) -> int:
        return len(self.args)

    def __iter__(self):
        return iter(self.args)


def tuple_to_funsor(args: tuple, output: ProductDomain, dim_to_name=None) -> Tuple:
    """Convert a Python tuple to a ``Tuple`` of the ``Product`` domain ``output``.

    Example:
        >>> tuple_to_funsor((1.0, 2), Product[fc.Real, fc.Bint[3]]).args[1].output
        Bint[3]
    """
    if not isinstance(output, ProductDomain):
        raise TypeError(f"converting a tuple needs a Product[...] output domain, got {output!r}")
    if len(args) != len(output.__args__):
        raise ValueError(f"a tuple of {len(args)} values cannot have domain {output!r}")
    return Tuple(tuple(to_funsor(a, d, dim_to_name) for a, d in zip(args, output.__args__)))
