"""The factors an algorithm is given, as a list: one bare factor, a dict of named factors
(its values), or any iterable (a list, a tuple, a generator)."""

from __future__ import annotations

from collections.abc import Mapping

from funsor_core.terms.base import Funsor

__all__ = ["factor_list"]


def factor_list(factors, single: tuple = (Funsor,)) -> list:
    """The factors as a list; ``single`` are the types of one bare factor.

    A dict's iteration gives its keys, so named factors would reach the checks as strings
    ("got str at position 0"); they are taken by value, as ``infer_discrete`` takes them.

    Example:
        >>> f = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
        >>> factor_list({"prior": f}) == [f], factor_list(f) == [f], factor_list((f, f))
        (True, True, [Tensor(...), Tensor(...)])
    """
    if isinstance(factors, single):
        return [factors]
    if isinstance(factors, Mapping):
        return list(factors.values())
    return list(factors)
