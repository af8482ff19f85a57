"""``make_op``: a new op from an annotated backend function (funsor's
``funsor.op_factory.make_op``).

Example:
    >>> @make_op
    ... def double(x: fc.Reals[2]) -> fc.Reals[2]:
    ...     return x * 2
    >>> double(fc.Variable("v", fc.Reals[2])).output, double(np.array([1.0, 2.0]))
    (Reals[2], array([2., 4.]))
    >>> from funsor_core.terms.product import Product
    >>> @make_op
    ... def split(x: fc.Reals[4]) -> Product[fc.Reals[2], fc.Reals[2]]:
    ...     return x[..., :2], x[..., 2:]
    >>> lo, hi = split(fc.Tensor(np.arange(4.0)))  # a Tuple of Tensors
    >>> hi.data
    array([2., 3.])
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable

from funsor_core import ops
from funsor_core.domains import Dependent, Domain
from funsor_core.ops.domain_rules import domain_rule
from funsor_core.terms.product import ProductDomain

__all__ = ["make_op", "TupleUnaryOp"]


class TupleUnaryOp(ops.UnaryOp):
    """The family of the one-argument ops that ``make_op`` builds with a ``Product[...]``
    output: on arrays they return a tuple, on Tensors a ``Tuple`` of Tensors (the rule is
    ``exact_unary_tupleop_tensor``), on other funsors a lazy ``Unary``.

    Example:
        >>> isinstance(ops.make_op("pair", TupleUnaryOp), ops.UnaryOp)
        True
    """

    __slots__ = ()


_FAMILIES = {1: ops.UnaryOp, 2: ops.BinaryOp}


def make_op(fn: Callable) -> ops.Op:
    """An op that calls ``fn`` on arrays and builds ``Unary``/``Binary`` terms on funsors.

    ``fn`` (a function, or an object with a ``forward`` method such as a torch module) has
    one or two positional parameters, annotated with domains (``Reals[2, 3]``, or ``Array``
    for any), and a return annotation: a domain, or ``Dependent[lambda x, y: ...]`` computing
    it from the argument domains. On Tensors, ``fn`` receives arrays with the named batch
    dims on the left, so it must broadcast over them.

    Raises:
        TypeError: a missing annotation, or a domain that does not match the argument's.
        NotImplementedError: other arities, or a tuple (``Product[...]``) output of a
            two-argument op (one argument: its values are tuples, on Tensors a ``Tuple``).

    Example:
        >>> @make_op
        ... def outer(x: fc.Reals[2], y: fc.Reals[3]) -> fc.Reals[2, 3]:
        ...     return x[..., :, None] * y[..., None, :]
        >>> outer(np.ones(2), np.arange(3.0)).shape
        (2, 3)
    """
    body = getattr(fn, "forward", fn)
    name = getattr(body, "__name__", type(fn).__name__)
    hints = typing.get_type_hints(body)
    params = [p.name for p in inspect.signature(body).parameters.values()]
    family = _FAMILIES.get(len(params))
    if family is None:
        raise NotImplementedError(f"make_op({name}): ops of {len(params)} arguments are not "
                                  "built; one or two (Unary, Binary) are")
    if "return" not in hints:
        raise TypeError(f"make_op({name}) needs a return annotation: a domain or "
                        "Dependent[lambda ...: domain]")
    output = hints["return"]
    if isinstance(output, ProductDomain) and family is ops.UnaryOp:
        family = TupleUnaryOp
    elif not isinstance(output, (Domain, Dependent)):
        raise NotImplementedError(f"make_op({name}): an output {output!r} is not built for "
                                  f"{len(params)} arguments; a domain or Dependent[...] is "
                                  "(and Product[...] for one argument)")
    inputs = [hints.get(p) for p in params]
    op = ops.make_op(name, family)
    op.register(object, fn)  # every array type: fn itself computes

    @domain_rule(op)
    def domain_make_op(op, op_params, domains):
        for p, hint, d in zip(params, inputs, domains):
            if isinstance(hint, Domain) and hint != d:
                raise TypeError(f"{name}: argument {p!r} is {d}, but its annotation says {hint}")
        return output.fn(*domains) if isinstance(output, Dependent) else output

    return op
