"""Ops: one vocabulary for numeric and symbolic use.

Calling an op on arrays computes with the array's backend; calling it on funsors builds (or,
under ``exact``, evaluates) a term.

Example:
    >>> from funsor_core import ops
    >>> ops.add(1.0, 2.0)
    3.0
    >>> ops.UNITS[ops.logaddexp]
    -inf

funsor's ``ops.sample`` is a sampling reduction that computes as ``ops.logaddexp`` (its own op,
so that rules can tell sampling from marginalizing), and ``ops.null`` ("no op" in a
Contraction) is ``None``:

    >>> ops.sample is ops.logaddexp, float(ops.sample(0.0, 0.0)), ops.null is None
    (False, 0.6931471805599453, True)
"""

from funsor_core.ops.builtin import *  # noqa: F403
from funsor_core.ops.builtin import (
    ARITHMETIC_OPS,
    ASSOCIATIVE_OPS,
    BINARY_INVERSES,
    COMPARISON_OPS,
    DISTRIBUTIVE_OPS,
    IDEMPOTENT_OPS,
    LOGICAL_OPS,
    NONNEGATIVE_DISTRIBUTIVE_OPS,
    REDUCE_OPS,
    UNARY_INVERSES,
    UNITS,
    known_true,
    parse_ellipsis,
    parse_slice,
    sample,
)
from funsor_core.ops.domain_rules import (
    DOMAIN_RULES,
    domain_rule,
    find_domain_rule,
    infer_domain,
    infer_domain_by_divisor,
)
from funsor_core.ops.op import (
    ARRAY_TYPES,
    ArrayOp,
    AssociativeOp,
    BinaryOp,
    CatOp,
    ComparisonOp,
    EinsumOp,
    FinitaryOp,
    NaryOp,
    Op,
    ReductionOp,
    StackOp,
    TransformOp,
    UnaryOp,
    make_op,
)
from funsor_core.ops.wrapped import LogAbsDetJacobianOp, WrappedTransformOp

# The ops every backend must give a kernel for; tests walk this list for each backend.
REQUIRED_OPS = tuple(
    v for k, v in sorted(globals().items())
    if isinstance(v, Op) and not k.startswith("_") and k == v.name
)

# funsor 0.4.8's placeholder op for "no op" in a Contraction (``Contraction(ops.null, ...)``
# reduces nothing, and its ``NullOp`` is never evaluated). funsor-core spells "no op" as
# ``None``, which Contraction already takes, so ``ops.null`` is ``None`` and ``ops.NullOp`` is
# its type: ``isinstance(red_op, ops.NullOp)`` answers as in funsor.
null = None
NullOp = type(None)

# Each op is the only instance of its own class, named as funsor names it (``AddOp``,
# ``LogaddexpOp``), so funsor code can test ``isinstance(op, ops.LogaddexpOp)``. A family
# class of the same name (``CatOp``, ``StackOp``, ``EinsumOp``) keeps its place: the op's class
# is a subclass of it, so the test answers the same.
OP_CLASSES = {type(op).__name__: type(op) for op in REQUIRED_OPS}
for _name, _cls in OP_CLASSES.items():
    globals().setdefault(_name, _cls)
del _name, _cls

__all__ = [
    "ARITHMETIC_OPS", "ASSOCIATIVE_OPS", "BINARY_INVERSES", "COMPARISON_OPS", "DISTRIBUTIVE_OPS",
    "IDEMPOTENT_OPS", "NONNEGATIVE_DISTRIBUTIVE_OPS",
    "LOGICAL_OPS", "REDUCE_OPS", "UNARY_INVERSES", "UNITS", "REQUIRED_OPS", "ARRAY_TYPES",
    "OP_CLASSES", "infer_domain", "infer_domain_by_divisor", "parse_ellipsis", "parse_slice",
    "Op", "UnaryOp", "BinaryOp",
    "ReductionOp", "ArrayOp", "NaryOp", "FinitaryOp", "EinsumOp", "CatOp", "StackOp",
    "AssociativeOp", "ComparisonOp", "TransformOp", "make_op",
    "null", "NullOp", "sample", "known_true", "WrappedTransformOp", "LogAbsDetJacobianOp",
] + [op.name for op in REQUIRED_OPS] + sorted(set(OP_CLASSES) - {"CatOp", "StackOp",
                                                                 "EinsumOp"})
