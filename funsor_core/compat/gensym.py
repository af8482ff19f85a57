"""funsor's ``gensym``: fresh names from one process-wide counter."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["gensym"]

_GENSYM = itertools.count(1)


def gensym(x: Any = None) -> Any:
    """A fresh name: ``"V<k>"``, or ``"<x>_<k>"`` for a string ``x`` (funsor's
    ``funsor.interpreter.gensym``); for any other object, its ``id``.

    ``k`` comes from one process-wide counter, so two calls never return the same name.
    (Bound variables are renamed by ``traversal.alpha_rename``, not by this function.)

    Example:
        >>> a, b = gensym("x"), gensym("x")
        >>> a != b and a.startswith("x_") and gensym().startswith("V")
        True
    """
    k = next(_GENSYM)
    if x is None:
        return f"V{k}"
    if isinstance(x, str):
        return f"{x}_{k}"
    return id(x)
