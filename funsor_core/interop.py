"""Conversion between funsors and arrays, and ``@function``.

Example:
    >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> fc.to_data(f, name_to_dim={"j": -2, "i": -1}).shape
    (3, 2)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from funsor_core import ops
from funsor_core.array_terms import Function
from funsor_core.backend import backend_module
from funsor_core.domains import Bint, Domain
from funsor_core.interpreter import get_interpretation
from funsor_core.tensor import Tensor, is_array
from funsor_core.terms import DomainError, Funsor, Number, register_term_hook, to_funsor
from funsor_core.traversal import children

__all__ = ["to_data", "array_to_funsor", "function", "LazyTermError", "NoDataError"]


class LazyTermError(NotImplementedError):
    """A number was demanded from a term that is still lazy."""


class NoDataError(LazyTermError, AttributeError):
    """``.data`` of a term that is not a Tensor or Number (an AttributeError too, so that
    ``getattr(term, "data", default)`` still works)."""


_NOT_A_NUMBER = (
    "{where} needs a number, but this {cls} is a function of its free inputs {inputs}: "
    "substitute values for them or reduce them first, e.g. .reduce(ops.logaddexp, {names})."
)


_LAZY = (
    "{where} needs a number, but this term is still lazy:\n  {term}\n"
    "No rule of the active interpretations matches ({pattern}). Active interpretations: "
    "{chain}.{hint}"
)


def _lazy_error(expr: Funsor, where: str, cls: type = LazyTermError) -> LazyTermError:
    if type(expr)._atom:  # a Gaussian, Delta or Variable: evaluated, but not a number
        names = sorted(expr.inputs)
        return cls(_NOT_A_NUMBER.format(where=where, cls=type(expr).__name__,
                                        inputs=dict(expr.inputs), names=names))
    culprit = _innermost_lazy(expr)
    pattern = ", ".join([type(culprit).__name__] + [
        type(a).__name__ for a in culprit._args if isinstance(a, Funsor)])
    hint = ""
    if any(d.dtype == "real" for d in expr.inputs.values()):
        real = sorted(k for k, d in expr.inputs.items() if d.dtype == "real")
        hint = (f"\nIts free real inputs {real} have no value: substitute values for them or "
                "integrate them out.")
    elif expr.inputs:
        hint = f"\nIts free inputs are {dict(expr.inputs)}."
    return cls(_LAZY.format(where=where, term=repr(culprit), pattern=pattern,
                                      chain=" -> ".join(get_interpretation().chain()), hint=hint))


def _innermost_lazy(expr: Funsor) -> Funsor:
    # Walk down while some child is itself a non-atom: the deepest such term is the one whose
    # pattern had no rule. A child with inputs its parent lacks is lazy only because the parent
    # binds them (an Integrate or Reduce over a free variable): the parent is the culprit.
    node = expr
    while True:
        lazy_kids = [c for c in children(node) if not type(c)._atom
                     and c.inputs.keys() <= node.inputs.keys()]
        if not lazy_kids:
            return node
        node = lazy_kids[0]


def to_data(x: Any, name_to_dim: dict | None = None):
    """The array (or number) of a Tensor or Number.

    Args:
        x: a funsor with no inputs, or a Tensor whose inputs are all named in ``name_to_dim``.
        name_to_dim: maps input names to negative batch dims of the result.

    Raises:
        LazyTermError: if ``x`` is a lazy term (names the pattern that had no rule).

    Example:
        >>> fc.to_data(fc.Number(2.0))
        2.0
    """
    if not isinstance(x, Funsor):
        return x
    if isinstance(x, Number):
        return x.data
    if not isinstance(x, Tensor):
        if hasattr(x, "to_data"):
            return x.to_data(name_to_dim)
        raise _lazy_error(x, "to_data()")
    if not x.inputs:
        return x.data
    if name_to_dim is None:
        raise ValueError(f"to_data() of a Tensor with inputs {dict(x.inputs)} needs name_to_dim, "
                         "e.g. name_to_dim={'i': -1}")
    missing = set(x.inputs) - set(name_to_dim)
    if missing:
        raise ValueError(f"name_to_dim lacks inputs {sorted(missing)} of {dict(x.inputs)}")
    batch_ndim = max(-d for d in name_to_dim.values())
    order = sorted(x.inputs, key=lambda n: name_to_dim[n])
    data = x.align(tuple(order)).data
    shape = [1] * batch_ndim
    for n in order:
        shape[batch_ndim + name_to_dim[n]] = x.inputs[n].dtype
    return ops.reshape(data, tuple(shape) + x.shape)


def array_to_funsor(x: Any, output: Domain | None = None, dim_to_name: dict | None = None):
    """Convert an array (or nested list) into a Tensor; see ``to_funsor``."""
    if not is_array(x):
        x = backend_module().asarray(x)
    dtype = "real" if output is None else output.dtype
    if output is None:
        dtype = "real"
    out_shape = () if output is None else output.shape
    if dim_to_name is None:
        if output is not None and tuple(x.shape) != out_shape:
            raise DomainError(f"an array of shape {tuple(x.shape)} cannot have output {output} "
                              "without dim_to_name naming its batch dims")
        return Tensor(x, (), dtype)
    batch_shape = tuple(x.shape[: len(x.shape) - len(out_shape)])
    if tuple(x.shape[len(batch_shape):]) != out_shape:
        raise DomainError(
            f"array shape {tuple(x.shape)} does not end with output shape {out_shape}")
    nb = len(batch_shape)
    names = []
    keep = []
    for i, size in enumerate(batch_shape):
        name = dim_to_name.get(i - nb)
        if name is None:
            if size != 1:
                raise DomainError(f"batch dim {i - nb} of size {size} has no name in dim_to_name")
            continue
        names.append((name, Bint[size]))
        keep.append(i)
    data = ops.reshape(x, tuple(batch_shape[i] for i in keep) + out_shape)
    return Tensor(data, tuple(names), dtype)


# -- @function ---------------------------------------------------------------------------------
def function(*domains: Domain) -> Callable:
    """Lift a backend function to funsors: ``@function(Reals[2], Real)`` (inputs..., output).

    The function receives arrays with named batch dims on the left (aligned across arguments)
    and must broadcast over them.

    Example:
        >>> @fc.function(fc.Reals[2], fc.Real)
        ... def norm2(x):
        ...     return (x ** 2).sum(-1)
        >>> norm2(fc.Tensor(np.array([3.0, 4.0]))).item()
        25.0
    """
    *input_domains, output = domains

    def decorator(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args):
            if len(args) != len(input_domains):
                raise TypeError(f"{fn.__name__} takes {len(input_domains)} arguments")
            args = tuple(to_funsor(a, d) for a, d in zip(args, input_domains))
            return Function(fn, output, args)

        return wrapped

    return decorator


def _data_error(expr: Funsor, where: str) -> LazyTermError:
    return _lazy_error(expr, where, NoDataError)


register_term_hook("to_data", to_data)
register_term_hook("lazy_error", _data_error)
register_term_hook("array_to_funsor", array_to_funsor)
