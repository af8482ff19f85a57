"""The cons-hash table: terms built as they are (what ``reflect`` does), shared by identity.

Two constructions with the same class and the same arguments (arrays and terms by identity,
names, domains and ops by value) give the same object while it lives.

Example:
    >>> x = fc.Variable("cons_x", fc.Real)
    >>> build(fc.Variable, ("cons_x", fc.Real)) is x
    True
"""

from __future__ import annotations

import weakref
from typing import Any

from funsor_core.engine.cache import FastCache
from funsor_core.engine.patterns import MAX_CACHE

__all__ = ["Entry", "build", "cons_table"]

# The cons-hash table of terms, one map per term class from a term's key to a weak reference
# to it. Not a registered cache: an entry lives exactly as long as its term, and clearing it
# would make an equal term built later a different object (``is`` between terms is what rules
# and plans key on). Plain dicts of weak references with a C-level callback instead of
# ``WeakValueDictionary``, whose Python-level get and set cost 2 us of every Tensor built.
# Each reference carries its key (``Entry``), so one callback per table (``_FORGET``) serves
# every entry: no ``functools.partial`` of (table, key) is allocated per term.
_CONS: dict[type, dict] = {}
_FORGET: dict[type, Any] = {}


class Entry(weakref.ref):
    """A weak reference to a cons-hashed term that knows its key in the table.

    Example:
        >>> x = fc.Variable("cons_entry_x", fc.Real)
        >>> table, forget = cons_table(fc.Variable)
        >>> any(e() is x for e in table.values())
        True
    """

    __slots__ = ("key",)


def cons_table(cls: type) -> tuple[dict, Any]:
    """``cls``'s cons-hash table and the callback that drops an ``Entry`` of it when its term
    dies (unless an equal term built since has taken the key).

    Example:
        >>> table, forget = cons_table(fc.Variable)
        >>> cons_table(fc.Variable)[0] is table
        True
    """
    table = _CONS.get(cls)
    if table is None:
        table = _CONS[cls] = {}
    forget = _FORGET.get(cls)
    if forget is None:
        forget = _FORGET[cls] = _forgetter(table)
    return table, forget


def _forgetter(table: dict):
    get = table.get

    def forget(entry: Entry) -> None:
        # A term died: drop its entry, unless an equal term built since has taken the key.
        key = entry.key
        if get(key) is entry:
            del table[key]

    return forget


def _hashable(arg: Any) -> Any:
    typ = type(arg)
    if typ is str or typ is frozenset:
        return arg
    if typ is tuple:
        if len(arg) > 8 and all(getattr(k, "_is_funsor", False) for k in set(map(type, arg))):
            return tuple(zip(map(type, arg), map(id, arg)))  # (C-level: Contraction terms)
        return tuple(map(_hashable, arg))
    if typ in (int, float, bool):
        return (typ, arg)
    if typ is dict:
        return tuple((k, _hashable(v)) for k, v in arg.items())
    if getattr(typ, "_is_funsor", False):  # (before hash(): a term's __hash__ is Python)
        return (typ, id(arg))
    try:
        hash(arg)
    except TypeError:
        return (typ, id(arg))
    if not _plain_hashable(typ):
        return (typ, id(arg))
    return arg


_PLAIN = FastCache("engine.plain_hashable", MAX_CACHE)  # per argument type


def _plain_hashable(typ: type) -> bool:
    # Objects hashed by value (domains, ops, None) are keys themselves; anything whose __eq__
    # is not a plain equality (arrays, funsors) is keyed by identity.
    result = _PLAIN.data.get(typ)
    if result is None:
        result = typ.__eq__ is object.__eq__ or typ.__module__ in (
            "builtins", "funsor_core.domains")
        _PLAIN.put(typ, result)
    return result


def build(cls: type, args: tuple) -> Any:
    """Build ``cls(*args)`` with no rewriting, cons-hashed by argument identity.

    Only the interpreter calls this (it is what ``reflect`` does); rules build terms with
    the constructors, so the active interpretation sees every term.

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> build(fc.Binary, (ops.add, x, x)), build(fc.Variable, ("x", fc.Real)) is x
        (Binary(ops.add, Variable('x', Real), Variable('x', Real)), True)
    """
    special = cls._cons_build
    if special is not None:  # (Tensor: keyed by its array alone, see ``tensor_cons``)
        return special(cls, args)
    key = cls._cons_key(args) if cls._cons_key is not None else tuple(map(_hashable, args))
    table = _CONS.get(cls)
    forget = _FORGET.get(cls)
    if forget is None:
        table, forget = cons_table(cls)
    ref = table.get(key)
    if ref is not None:
        obj = ref()
        if obj is not None:
            return obj
    obj = object.__new__(cls)
    obj._init(*args)
    entry = table[key] = Entry(obj, forget)
    entry.key = key
    return obj


