"""Rules for the ops that ``make_op`` builds with a tuple (``Product[...]``) output.

Example:
    >>> from funsor_core.op_factory import make_op
    >>> from funsor_core.terms.product import Product
    >>> @make_op
    ... def halves(x: fc.Reals[2]) -> Product[fc.Real, fc.Real]:
    ...     return x[..., 0], x[..., 1]
    >>> type(halves(fc.Tensor(np.ones((3, 2)), {"i": fc.Bint[3]}))).__name__
    'Tuple'
"""

from __future__ import annotations

from funsor_core.atoms.tensor import Tensor
from funsor_core.compat.op_factory import TupleUnaryOp
from funsor_core.terms.base import Unary, unary_domain
from funsor_core.terms.product import Tuple
from interpretations.exact import exact


# f(t) = (f(t)_0, f(t)_1, ...): one call of f on the data, one Tensor per part, each with
# t's batch inputs (f broadcasts over the batch dims on the left).
@exact.register(Unary, TupleUnaryOp, Tensor)
def exact_unary_tupleop_tensor(op, arg):
    output = unary_domain(op, arg.output)
    parts = op(arg.data)
    if not isinstance(parts, tuple) or len(parts) != len(output.__args__):
        raise TypeError(f"{op.name}() has output {output}: it must return a tuple of "
                        f"{len(output.__args__)} arrays, got {type(parts).__name__}")
    return Tuple(tuple(Tensor(p, arg.inputs, d.dtype) for p, d in zip(parts, output.__args__)))
