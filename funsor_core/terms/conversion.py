"""Conversion into terms: ``to_funsor`` of numbers, arrays, names and funsors, and the
checked conversion of a value substituted for an input (``f(i=0)``).

Example:
    >>> fc.to_funsor(2, fc.Bint[3]), fc.to_funsor("x", fc.Real)
    (Number(2, 3), Variable('x', Real))
"""

from __future__ import annotations

import numbers

from funsor_core.domains import Domain
from funsor_core.engine.cache import FastCache
from funsor_core.engine.protocol import _hook
from funsor_core.ops.op import is_scalar
from funsor_core.terms.funsor import Funsor
from funsor_core.terms.inputs import DomainError
from funsor_core.terms.leaves import Number, Variable

__all__ = ["to_funsor"]

# Integer constants are substituted in hot loops (``f(i=0)``); keep them built once.
# Bounded, so that a loop over fresh integers or fresh Bint sizes keeps memory flat.
_BINT_NUMBERS = FastCache("terms.bint_numbers", 4096)


def _subs_value(name: str, value, domain: Domain) -> Funsor:
    """``to_funsor(value, domain)`` for ``f(name=value)``: a bad value's error names the input."""
    try:
        return to_funsor(value, domain)
    except DomainError as e:
        raise DomainError(f"substituting {name}={value!r} into an input of domain {domain}: "
                          f"{e}") from None
    except TypeError as e:  # a value of no funsor form (None, a slice, an object)
        raise type(e)(f"substituting {name}={value!r} into an input of domain {domain}: "
                      f"{e}") from e


def to_funsor(x, output: Domain | None = None, dim_to_name=None) -> Funsor:
    """Convert a number, array, name or funsor into a funsor.

    Args:
        x: a Funsor, Python number, array, or a string (a Variable of domain ``output``).
        output: the expected output domain; checked for funsors, used for the rest.
        dim_to_name: for arrays, a mapping from batch dims (negative ints, counted from the
            left of the output shape) to input names; unnamed batch dims must have size 1,
            and dims of size 1 name no input (they broadcast, as in funsor).

    Example:
        >>> fc.to_funsor(np.zeros((2, 1, 3)), fc.Reals[3], {-2: "i"}).inputs
        {'i': Bint[2]}
    """
    if type(x) is int and output is not None:  # f(i=0): a Bint Number built before
        number = _BINT_NUMBERS.data.get((x, output))
        if number is not None:
            return number
    if isinstance(x, Funsor):
        if output is not None and x.output is not output:
            raise DomainError(f"expected a funsor of output {output}, got {x.output}")
        return x
    if isinstance(x, str):
        if output is None:
            raise ValueError(f"to_funsor('{x}') needs an output domain to make a Variable")
        return Variable(x, output)
    if isinstance(x, numbers.Number) or is_scalar(x):  # numpy scalars too (backend_check)
        x = x.item() if hasattr(x, "item") else x
        if output is None or output.dtype == "real":
            if output is not None and output.shape:
                raise DomainError(f"a scalar cannot have output {output}")
            return Number(x)
        if output.shape:
            raise DomainError(f"a scalar cannot have output {output}")
        key = (x, output)
        number = _BINT_NUMBERS.data.get(key) if type(x) is int else None
        if number is None:
            number = Number(x, output.dtype)
            if type(x) is int:
                _BINT_NUMBERS.put(key, number)
        return number
    if isinstance(x, (list, set, frozenset, dict)):
        raise ValueError(_NOT_ARRAY.format(kind=type(x).__name__))
    return _hook("array_to_funsor")(x, output, dim_to_name)


_NOT_ARRAY = ("to_funsor does not convert a {kind}, as funsor does not: a set or dict has no "
              "array form, and a list is ambiguous (which dims are inputs?). Make an array "
              "first, e.g. fc.Tensor(np.array(values), {{'i': fc.Bint[n]}}).")
