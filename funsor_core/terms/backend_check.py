"""One term, one backend: the check that terms combining arrays (``Contraction``, ``Subs``,
``Integrate``, ``Stack``, ``Cat``, ``Delta``, a sum of Gaussians, ...) hold arrays of a single
array library.

Mixing numpy and torch arrays would convert one side silently (and drop autograd), so it
raises a ``TypeError`` naming both backends. What counts:

- an atom's declared ``arrays`` (a Tensor's ``data``, a Gaussian's parameters), and the
  arrays of the atoms inside a Delta;
- a numpy *scalar* (``np.float64(2.0)``, an ``np.generic``) is a number, not an array: it
  combines with any backend, as a Python float does;
- a numpy *array* (also a 0-d one) is an array of the numpy backend: combined with torch or
  jax arrays it raises. Convert it first (``torch.as_tensor(a)``, ``jnp.asarray(a)``).

The backend of an array type is computed once per type; the check compares names.

Example:
    >>> import torch
    >>> a, b = fc.Tensor(np.zeros(2)), fc.Tensor(torch.zeros(2))
    >>> check_backends("contract", (a, b))
    Traceback (most recent call last):
    ...
    TypeError: cannot contract: term 0 holds numpy arrays and term 1 holds torch arrays; ...
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from funsor_core.engine.backend import backend_module, backend_name_of
from funsor_core.engine.cache import FastCache
from funsor_core.engine.protocol import children
from funsor_core.ops.op import is_array_type
from funsor_core.terms.base import Number, register_term_hook

__all__ = ["array_backend", "deep_array_backend", "check_backends", "MIXED_BACKENDS"]

MIXED_BACKENDS = (
    "cannot {what}: {first} holds {left} arrays and {second} holds {right} arrays; one term "
    "must use one backend, and nothing is converted silently (that would drop autograd). "
    "Convert one side first, e.g. fc.Tensor(np.asarray(t.data), t.inputs) (or "
    "torch.as_tensor, jax.numpy.asarray), or fc.set_backend(...) before building numbers."
)

# array type -> backend name, or None for numpy scalars and non-arrays
_BACKEND_OF_TYPE = FastCache("terms.backend_of_type", 1024)


def _backend_of_type(typ: type, value) -> str | None:
    name = _BACKEND_OF_TYPE.data.get(typ, False)
    if name is False:
        # A numpy scalar (np.generic: 0-d, not an ndarray) is a number to every backend.
        if issubclass(typ, np.generic) or not is_array_type(typ):
            name = None
        else:
            name = backend_name_of(value)
        _BACKEND_OF_TYPE.put(typ, name)
    return name


def array_backend(term) -> str | None:
    """The backend of the arrays a term holds itself (an atom's arrays; for a Delta, those of
    the atoms inside it), or None when it holds none (numpy scalars count as numbers).

    Example:
        >>> array_backend(fc.Tensor(np.zeros(2))), array_backend(fc.Number(1.0))
        ('numpy', None)
    """
    cls = type(term)
    fields = cls.arrays
    if fields:
        value = getattr(term, fields[0])
        return _backend_of_type(type(value), value)
    if cls._atom:  # an atom made of other atoms (a Delta of Tensor points)
        for arg in children(term):
            name = array_backend(arg)
            if name is not None:
                return name
    return None


def deep_array_backend(term) -> str | None:
    """The backend of every array anywhere inside ``term`` (None when there is none); raises
    TypeError if two are found. Linear in the size of the term (shared subterms once).

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> deep_array_backend(x * fc.Tensor(np.ones(2), {"i": fc.Bint[2]}) + 1.0)
        'numpy'
    """
    found = None
    seen: set = set()
    todo = [term]
    types = _BACKEND_OF_TYPE.data
    while todo:
        node = todo.pop()
        cls = type(node)
        if cls._kid_pos:  # a leaf is cheaper to look at again than to remember
            if id(node) in seen:
                continue
            seen.add(id(node))
        fields = cls.arrays
        if fields:  # array_backend, inlined: this walk runs per Integrate and distribution
            value = getattr(node, fields[0])
            name = types.get(type(value), False)
            if name is False:
                name = _backend_of_type(type(value), value)
            if name is not None:
                if found is None:
                    found = name, node
                elif name != found[0]:
                    raise TypeError(MIXED_BACKENDS.format(
                        what="combine", first=f"{type(found[1]).__name__} {found[1].inputs}",
                        left=found[0], second=f"{cls.__name__} {node.inputs}", right=name))
        if cls._kid_pos:
            todo.extend(children(node))
    return None if found is None else found[0]


def check_backends(what: str, terms, labels=None, deep: bool = False) -> tuple:
    """Raise TypeError if the terms hold arrays of two backends; return the terms, where a
    Tensor of a numpy scalar met by arrays of another backend is replaced by the Number it
    holds (so that no kernel sees the two together).

    Args:
        what: the operation, for the message ("contract", "substitute", ...).
        terms: the terms combined.
        labels: names of the terms for the message (default "term k").
        deep: look at every array inside each term (lazy terms too), not only at the
            arrays the terms hold themselves.

    Example:
        >>> t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> check_backends("contract", (t, fc.Number(1.0)))[0] is t
        True
    """
    if not deep and len(terms) > 8 and _one_array_type(terms):
        return terms
    first = first_k = None
    scalars = False
    for k, t in enumerate(terms):
        name = deep_array_backend(t) if deep else array_backend(t)
        if name is None:
            scalars = scalars or _is_scalar_tensor(t)
            continue
        if first is None:
            first, first_k = name, k
        elif name != first:
            label = (lambda i: labels[i]) if labels else (lambda i: f"term {i}")
            raise TypeError(MIXED_BACKENDS.format(what=what, first=label(first_k), left=first,
                                                  second=label(k), right=name))
    if scalars and first is not None and not _takes_numpy_scalars(first):
        terms = tuple(_as_number(t) if _is_scalar_tensor(t) else t for t in terms)
    return terms


def _one_array_type(terms) -> bool:
    # Many terms of one class whose arrays are all of one backend's array type (a
    # Contraction of 2,000 Tensors): decided by C-level passes, with nothing to convert.
    kinds = set(map(type, terms))
    if len(kinds) != 1:
        return False
    fields = kinds.pop().arrays
    if not fields:
        return False
    types = set(map(type, map(attrgetter(fields[0]), terms)))
    if len(types) != 1:
        return False
    typ = types.pop()
    return _backend_of_type(typ, getattr(terms[0], fields[0])) is not None


def _takes_numpy_scalars(name: str) -> bool:
    # On numpy a numpy scalar is an array of the backend; elsewhere it must become a Number.
    return issubclass(np.generic, backend_module(name).ARRAY_TYPES)


def _is_scalar_tensor(t) -> bool:
    fields = type(t).arrays
    return fields == ("data",) and isinstance(t.data, np.generic)


def _as_number(t):
    return Number(t.data.item(), t.dtype)


register_term_hook("check_backends", check_backends)
