"""Input bookkeeping shared by the term classes: merging the inputs of subterms (with a
clear error on a domain clash), checking substitutions, and normalizing output indices.

These helpers know no term class, so every term module can use them without importing
``funsor_core.terms``.

Example:
    >>> from funsor_core.term_inputs import merge_inputs
    >>> merge_inputs({"i": fc.Bint[2]}, {"i": fc.Bint[2], "x": fc.Real})
    {'i': Bint[2], 'x': Real}
"""

from __future__ import annotations

import numbers

from funsor_core.domains import Bint, Domain, Real

__all__ = ["DomainError", "merge_inputs", "merge_all_inputs", "check_substitution",
           "index_to_python"]


class DomainError(ValueError):
    """A name is used with two different domains, or a value has the wrong domain."""


_MISMATCH = (
    "cannot {what}: input '{name}' is {left} on the left but {right} on the right.\n"
    "A name must have one domain within an expression; rename one side, "
    "e.g. rhs({name}=\"{name}2\")."
)


def merge_inputs(lhs: dict, rhs: dict, what: str = "combine") -> dict:
    """Union of two input mappings (left order first); raises DomainError on a domain clash.

    Example:
        >>> merge_inputs({"i": fc.Bint[2]}, {"j": fc.Real})
        {'i': Bint[2], 'j': Real}
    """
    if lhs is rhs or not rhs or lhs == rhs:
        return lhs
    if not lhs:
        return rhs
    result = None
    for name, domain in rhs.items():
        other = lhs.get(name)
        if other is None:
            if result is None:
                result = dict(lhs)
            result[name] = domain
        elif other is not domain:
            raise DomainError(_MISMATCH.format(what=what, name=name, left=other, right=domain))
    return lhs if result is None else result


def merge_all_inputs(terms, what: str = "combine") -> dict:
    """Union of the inputs of many terms, in order, in one pass (linear in the total number
    of inputs, where folding ``merge_inputs`` would copy the dict once per new name).

    Example:
        >>> merge_all_inputs([fc.Variable("x", fc.Real), fc.Variable("i", fc.Bint[2])])
        {'x': Real, 'i': Bint[2]}
    """
    result: dict = {}
    for t in terms:
        for name, domain in t.inputs.items():
            other = result.setdefault(name, domain)
            if other is not domain:
                raise DomainError(_MISMATCH.format(what=what, name=name, left=other,
                                                   right=domain))
    return result


def _normalize_index(index, shape) -> tuple | None:
    # Slices are unhashable before Python 3.12, so an index is stored as tagged tuples.
    # None when a part is not basic (a name, a funsor, an array): the caller gathers instead.
    if not isinstance(index, tuple):
        index = (index,)
    result = []
    for i in index:
        if isinstance(i, slice):
            result.append(("slice", i.start, i.stop, i.step))
        elif i is None or i is Ellipsis:
            result.append(i)
        elif isinstance(i, numbers.Integral) and not getattr(i, "_is_funsor", False):
            result.append(int(i))
        else:
            return None
    return tuple(result)


def index_to_python(index: tuple) -> tuple:
    """Turn a stored (tagged) output index back into Python index objects.

    Example:
        >>> index_to_python((0, ("slice", None, 2, None), None))
        (0, slice(None, 2, None), None)
    """
    return tuple(slice(*i[1:]) if isinstance(i, tuple) else i for i in index)


def check_substitution(name: str, domain: Domain, value) -> None:
    """Raise DomainError unless ``value`` may be substituted for input ``name: domain``.

    Example:
        >>> check_substitution("i", fc.Bint[2], fc.Number(1, 2))  # fits: no error
        >>> check_substitution("i", fc.Bint[2], fc.Number(0.5))
        Traceback (most recent call last):
        ...
        funsor_core.term_inputs.DomainError: cannot substitute a value of domain Real ...
    """
    out = value.output
    if out is domain:
        return
    raise DomainError(
        f"cannot substitute a value of domain {out} for input '{name}' of domain {domain}"
        + (": a real value cannot index a Bint input" if domain.dtype != "real"
           and out.dtype == "real" else ""))


def _reduced_names(reduced_vars, inputs) -> frozenset:
    if reduced_vars is None:
        return frozenset(inputs)
    # A Variable (any term with a name) stands for its name.
    if isinstance(reduced_vars, str) or getattr(reduced_vars, "_is_funsor", False):
        reduced_vars = (reduced_vars,)
    return frozenset(v if isinstance(v, str) else v.name for v in reduced_vars)


def _as_domain(x) -> Domain:
    if isinstance(x, Domain):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return Bint[x]
    if x == "real":
        return Real
    raise TypeError(f"expected a domain such as Real or Bint[3], got {x!r}")


def _index_shape(index, shape) -> tuple:
    import numpy as np

    probe = np.empty(shape, dtype=np.int8)
    return probe[index_to_python(index)].shape
