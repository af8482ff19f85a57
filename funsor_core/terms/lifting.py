"""``@symbolic``: a funsor written as a Python function of its free variables (funsor's
``funsor.terms.symbolic``).

Example:
    >>> @symbolic
    ... def shifted(x: fc.Real, y: fc.Reals[3]):
    ...     return x + y
    >>> shifted.inputs, shifted.output
    ({'x': Real, 'y': Reals[3]}, Reals[3])
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable

from funsor_core.domains import Domain
from funsor_core.terms.base import Funsor, Variable, to_funsor

__all__ = ["symbolic"]

_NO_HINTS = (
    "@symbolic without domains reads them from type hints, but {name}() lacks hints for "
    "{missing}: annotate every argument, e.g. def {name}(x: Real, i: Bint[3]), or give the "
    "domains, e.g. @symbolic(Real, Bint[3])."
)


def symbolic(*signature) -> Funsor | Callable[[Callable], Funsor]:
    """Build a funsor by calling a function once on one ``Variable`` per argument.

    ``@symbolic`` reads each argument's domain from its type hint (a ``return`` hint, if any,
    is the output domain the result is converted to); ``@symbolic(Real, Bint[3])`` gives the
    domains positionally. The function runs once, symbolically, when decorated: the result
    is the term it builds, with inputs named after its parameters (in their order first).
    Unlike ``@function``, nothing opaque is kept: the body's operations are the term.

    Raises:
        TypeError: a domain is not a domain, a hint is missing, or the arity does not match.

    Example:
        >>> @symbolic(fc.Reals[2], fc.Bint[2])
        ... def pick(v, i):
        ...     return v[i]
        >>> float(pick(v=np.array([3.0, 4.0]), i=1).data)
        4.0
    """
    if len(signature) == 1 and callable(signature[0]) and not isinstance(signature[0], Domain):
        fn = signature[0]
        hints = typing.get_type_hints(fn)
        output = hints.pop("return", None)
        names = _param_names(fn)
        missing = [n for n in names if n not in hints]
        if missing:
            raise TypeError(_NO_HINTS.format(name=fn.__name__, missing=missing))
        return _build(fn, names, tuple(hints[n] for n in names), output)
    for d in signature:
        if not isinstance(d, Domain):
            raise TypeError(f"@symbolic domains must be domains such as Real or Bint[3], "
                            f"got {d!r}")
    return functools.partial(_build_positional, signature)


def _param_names(fn: Callable) -> tuple:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = inspect.signature(fn).parameters.values()
    if any(p.kind not in kinds for p in params):
        raise TypeError(f"@symbolic needs plain positional parameters; {fn.__name__}() has "
                        "*args, **kwargs or keyword-only ones")
    return tuple(p.name for p in params)


def _build_positional(domains: tuple, fn: Callable) -> Funsor:
    names = _param_names(fn)
    if len(names) != len(domains):
        raise TypeError(f"@symbolic got {len(domains)} domain(s) for {fn.__name__}() of "
                        f"{len(names)} parameter(s) {list(names)}")
    return _build(fn, names, domains, None)


def _build(fn: Callable, names: tuple, domains: tuple, output) -> Funsor:
    result = to_funsor(fn(*(Variable(n, d) for n, d in zip(names, domains))), output)
    # The parameters' order first (an argument the body ignores is no input), then the rest.
    order = tuple(n for n in names if n in result.inputs)
    order += tuple(n for n in result.inputs if n not in order)
    return result if order == tuple(result.inputs) else result.align(order)
