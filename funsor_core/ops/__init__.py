"""Ops: one vocabulary for numeric and symbolic use.

Calling an op on arrays computes with the array's backend; calling it on funsors builds (or,
under ``exact``, evaluates) a term.

Example:
    >>> from funsor_core import ops
    >>> ops.add(1.0, 2.0)
    3.0
    >>> ops.UNITS[ops.logaddexp]
    -inf
"""

from funsor_core.ops.builtin import *  # noqa: F403
from funsor_core.ops.builtin import (
    ASSOCIATIVE_OPS,
    BINARY_INVERSES,
    COMPARISON_OPS,
    DISTRIBUTIVE_OPS,
    IDEMPOTENT_OPS,
    LOGICAL_OPS,
    REDUCE_OPS,
    UNARY_INVERSES,
    UNITS,
    infer_domain,
)
from funsor_core.ops.op import (
    ARRAY_TYPES,
    ArrayOp,
    BinaryOp,
    CatOp,
    EinsumOp,
    NaryOp,
    Op,
    ReductionOp,
    StackOp,
    UnaryOp,
    make_op,
)

# The ops every backend must give a kernel for; tests walk this list for each backend.
REQUIRED_OPS = tuple(
    v for k, v in sorted(globals().items()) if isinstance(v, Op) and not k.startswith("_")
)

__all__ = [
    "ASSOCIATIVE_OPS", "BINARY_INVERSES", "COMPARISON_OPS", "DISTRIBUTIVE_OPS", "IDEMPOTENT_OPS",
    "LOGICAL_OPS", "REDUCE_OPS", "UNARY_INVERSES", "UNITS", "REQUIRED_OPS", "ARRAY_TYPES",
    "infer_domain", "Op", "UnaryOp", "BinaryOp", "ReductionOp", "ArrayOp", "NaryOp", "EinsumOp",
    "CatOp", "StackOp", "make_op",
] + [op.name for op in REQUIRED_OPS]
