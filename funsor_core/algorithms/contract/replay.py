"""Replaying a recorded elimination of Tensors on their arrays, where that is provably what
the active interpretation would do.

``partial_sum_product`` records, once per structure, the steps of an elimination of Tensors:
which values each Contraction or Reduce combines (``algorithms.plates``). Replayed as terms,
every step pays for building the term, finding its rule and the rule's way to its kernel:
some microseconds a step, most of the time of a small plated model. ``compile_elimination``
turns the recording into an ``ArrayProgram``: the very kernel calls the exact rules make (the
cached plan of ``plan_tensors`` per Contraction, one array reduction per Reduce), on the
Tensors' data, with the operands' order and the plans worked out once.

A program stands in for the terms only where that changes nothing observable:
``ArrayProgram.applies(interp)`` asks the interpreter (``Interpretation.direct_rules``, its
own cached resolution, so a rule registered later is seen at once) whether each step's term
would go first to a built-in rule that declares, with ``replays_as``, that it computes what
the program computes, with no canonicalization hook, no interpretation wrapping construction
and no debug log on the way. A user rule registered for one of those patterns is more
specific, or comes first by registration, and the terms are built again; so are they under
``lazy``, a tape, or any interpretation whose first rule differs.

Nothing here reads values: under ``jax.jit`` a program runs at trace time on tracers, making
the calls the rules would make.

Example:
    >>> from funsor_core.sum_product import sum_product
    >>> f = fc.Tensor(np.full((2, 3), 2.0), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> g = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
    >>> [sum_product(ops.add, ops.mul, [f, g], frozenset("ij"), frozenset("i")).item()
    ...  for _ in range(2)]  # sum_j g(j) prod_i f(i, j); the second call replays the first
    [12.0, 12.0]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.contract.kernels import SEMIRINGS
from funsor_core.algorithms.contract.plan import plan_tensors
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.patterns import type_key
from funsor_core.terms.base import Reduce
from funsor_core.terms.contraction import Contraction, sort_terms

__all__ = ["ArrayProgram", "compile_elimination", "replays_as", "CONTRACT", "REDUCE"]

# The kinds of recorded steps: a Contraction of a connected group over its variables (a
# lone factor is reduced by sum_op), and a Reduce by prod_op over plates.
CONTRACT, REDUCE = 0, 1


def replays_as(kind: str):
    """Declare that a rule computes what an ``ArrayProgram`` step of ``kind`` computes, for
    the terms such a step stands for (a decorator; the rule is returned unchanged).

    - ``"contraction"``: for a Contraction reducing some names of two or more Tensors of
      scalar real output in a kernel semiring, the rule returns ``contract_tensors`` of its
      terms in the given order (``plan_tensors``'s plan, run by ``run_arrays``);
    - ``"reduce"``: for a Reduce of a Tensor of real output, it returns the Tensor of
      ``ops.REDUCE_OPS[op](data, axis=axes)`` over the reduced names' axes, with the other
      inputs in order.

    Example:
        >>> @replays_as("reduce")
        ... def toy_reduce_tensor(op, arg, reduced_vars):
        ...     return None
        >>> toy_reduce_tensor.replays_as
        'reduce'
    """
    if kind not in ("contraction", "reduce"):
        raise ValueError(f"replays_as: unknown step kind {kind!r}; use 'contraction' or 'reduce'")

    def mark(rule):
        rule.replays_as = kind
        return rule

    return mark


class ArrayProgram:
    """The array calls of a recorded elimination of Tensors.

    Attributes:
        steps: ``(kind, operand positions, plan)`` for a Contraction (positions in the order
            the term sorts its terms) and ``(kind, position, (op, axes))`` for a Reduce. The
            values are the factors' arrays, then each step's result, in order.
        outputs: the positions of the results; ``out_ikeys`` their Tensors' inputs.
        arg_types: the types of the factors' arrays in the recording run. A caller running
            the program on other types checks first, as building the terms would, that
            they mix no backends.
        checks: ``(type key, term class, whether its key was deep, kind)``: the terms the
            steps stand for (``kind`` None: a term no rule may rewrite, built as it is).
    """

    __slots__ = ("sum_op", "prod_op", "steps", "outputs", "out_ikeys", "arg_types", "checks")

    def __init__(self, sum_op, prod_op, steps, outputs, out_ikeys, arg_types, checks) -> None:
        self.sum_op, self.prod_op = sum_op, prod_op
        self.steps, self.outputs, self.out_ikeys = steps, outputs, out_ikeys
        self.arg_types, self.checks = arg_types, checks

    def __repr__(self) -> str:
        return f"ArrayProgram({len(self.steps)} steps, {len(self.outputs)} results)"

    def with_checks(self, checks: tuple) -> ArrayProgram:
        """This program, also checking ``checks`` (e.g. that the factors' Tensors would be
        built as they are, for a caller that skips building them)."""
        extra = tuple(c for c in dict.fromkeys(checks) if c not in self.checks)
        return ArrayProgram(self.sum_op, self.prod_op, self.steps, self.outputs,
                            self.out_ikeys, self.arg_types, self.checks + extra)

    def applies(self, interp) -> bool:
        """Whether building the steps' terms under ``interp`` would make exactly these calls."""
        for key, cls, deep, kind in self.checks:
            if cls._deep_key is not deep:  # a tuple pattern registered since: keys changed
                return False
            rules = interp.direct_rules(key)
            if rules is None:
                return False
            if kind is None:
                if rules:
                    return False
            elif not rules or getattr(rules[0], "replays_as", None) != kind:
                return False
        return True

    def run(self, arrays) -> list:
        """The results' arrays, from the factors' arrays (in the recorded order)."""
        values = list(arrays)
        sum_op, prod_op, reduce_ops = self.sum_op, self.prod_op, ops.REDUCE_OPS
        for kind, pos, arg in self.steps:
            if kind == CONTRACT:
                values.append(arg.run_arrays(sum_op, prod_op, [values[k] for k in pos]))
            else:
                op, axes = arg
                values.append(reduce_ops[op](values[pos], axis=axes))
        return [values[k] for k in self.outputs]


def check_of(cls: type, args: tuple, kind: str | None) -> tuple:
    """The entry of ``ArrayProgram.checks`` for the term ``cls(*args)``.

    Example:
        >>> key, cls, deep, kind = check_of(fc.Tensor, (np.ones(2), (), "real"), None)
        >>> key
        (<class 'funsor_core.atoms.tensor.Tensor'>, <class 'numpy.ndarray'>, <class 'tuple'>, <class 'str'>)
    """  # noqa: E501
    return (type_key(cls, args), cls, cls._deep_key, kind)


def compile_elimination(sum_op, prod_op, values, steps, outputs) -> ArrayProgram | None:
    """The ``ArrayProgram`` of a recorded elimination, or None where a step is not a kernel
    call of the exact rules (a product without reduction, a non-real or non-scalar value, a
    semiring without a kernel).

    Args:
        values: the factors, then each step's result, as the recording run built them: all
            must be Tensors (the run was evaluated).
        steps: ``(kind, operand positions, names)`` per step (``CONTRACT`` or ``REDUCE``).
        outputs: the positions of the results.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> r = f.reduce(ops.mul, frozenset("j"))
        >>> program = compile_elimination(ops.add, ops.mul, [f, r],
        ...                               [(REDUCE, (0,), frozenset("j"))], (1,))
        >>> program.run([np.full((2, 3), 2.0)])
        [array([8., 8.])]
    """
    if (sum_op, prod_op) not in SEMIRINGS or sum_op is ops.or_:
        return None
    if not all(type(v) is Tensor and v.dtype == "real" and not v.shape for v in values):
        return None
    first = len(values) - len(steps)
    program, checks = [], {}
    for s, (kind, pos, names) in enumerate(steps):
        result, operands = values[first + s], [values[k] for k in pos]
        if kind == CONTRACT and len(pos) > 1:
            if not names:
                return None  # a product alone: Binary terms, not a kernel call
            ordered = sort_terms(tuple(operands))  # as Contraction orders its terms
            where = {id(v): k for k, v in zip(pos, operands)}
            plan, out_ikey = plan_tensors(tuple(t._ikey for t in ordered), names)
            if out_ikey != result._ikey:
                return None
            check = check_of(Contraction, (sum_op, prod_op, names, ordered), "contraction")
            program.append((CONTRACT, tuple(where[id(t)] for t in ordered), plan))
        else:
            op = sum_op if kind == CONTRACT else prod_op
            (f,) = operands
            axes = tuple(i for i, (n, _) in enumerate(f._ikey) if n in names)
            kept = tuple(pair for pair in f._ikey if pair[0] not in names)
            if not axes or len(axes) != len(names) or kept != result._ikey:
                return None
            check = check_of(Reduce, (op, f, names), "reduce")
            program.append((REDUCE, pos[0], (op, axes)))
        checks[check] = None
    return ArrayProgram(sum_op, prod_op, tuple(program), tuple(outputs),
                        tuple(values[k]._ikey for k in outputs),
                        tuple(type(v.data) for v in values[:first]), tuple(checks))
