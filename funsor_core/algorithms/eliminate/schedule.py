"""Plans of plated eliminations as data: ``plan_elimination`` returns a ``Schedule``,
``run_schedule`` executes it.

For Tensor factors every decision of tensor variable elimination (ordinals, components, which
plates to product-reduce) depends on the factors' input names only, never on their values.
``plan_elimination`` makes those decisions once per structure, a pure function cached by it
(``engine.cache``), by walking the graph (``eliminate_graph``) on placeholders that only have
names. ``run_schedule`` executes a schedule: on the arrays, through the schedule's
``ArrayProgram``, where the fast path's guard shows that building the terms would make the
same kernel calls and nothing else (``algorithms.contract.replay``); otherwise by building
each step's term through the active interpretation, so that every interpretation still sees
each Contraction and Reduce.

Example:
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> schedule = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [f]),
    ...                             frozenset("ij"), frozenset("i"))
    >>> [(s.kind, s.operands, sorted(s.names)) for s in schedule.steps]
    [('contract', (0,), ['j']), ('reduce', (1,), ['i'])]
    >>> float(run_schedule(schedule, [f])[0].data)  # (1 + 1 + 1) ** 2
    9.0
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, NamedTuple

from funsor_core import ops
from funsor_core.algorithms.contract.replay import CONTRACT, REDUCE, compile_elimination
from funsor_core.algorithms.eliminate.built_steps import build_steps
from funsor_core.algorithms.eliminate.graph import (
    _check_plates_of_kept_vars,
    check_domains,
    eliminate_graph,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.cache import cached

__all__ = ["Schedule", "Step", "plan_elimination", "run_schedule", "structure_of"]


class Step(NamedTuple):
    """One step of a schedule. Values are the factors, then each step's result, in order.

    - ``kind == "contract"``: the Contraction of ``operands`` by ``(sum_op, prod_op)`` over
      ``names`` (a lone operand: its reduction by ``sum_op``);
    - ``kind == "reduce"``: the reduction of ``operands[0]`` by ``prod_op`` over the plates
      ``names``.

    Example:
        ``y(x, i)`` is product-reduced over the plate ``i`` first (value 2), then contracted
        with ``x(x)`` over ``x``:

        >>> x = fc.Tensor(np.ones(2), {"x": fc.Bint[2]})
        >>> y = fc.Tensor(np.ones((2, 3)), {"x": fc.Bint[2], "i": fc.Bint[3]})
        >>> s = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [x, y]),
        ...                      frozenset("xi"), frozenset("i"))
        >>> s.steps
        (Step(kind='reduce', operands=(1,), names=frozenset({'i'})), Step(kind='contract', operands=(0, 2), names=frozenset({'x'})))
    """  # noqa: E501

    kind: str
    operands: tuple
    names: frozenset


class Schedule(NamedTuple):
    """A planned elimination of factors of one structure.

    Attributes:
        sum_op, prod_op: the semiring.
        steps: the ``Step`` records, in order.
        outputs: the positions of the results (their product is the total).
        program: the ``ArrayProgram`` of the steps on the factors' arrays, or None where a
            step is not a kernel call of the exact rules.

    Example:
        ``sum_x x(x) prod_i y(x, i)``, run as its array program:

        >>> from interpretations import exact
        >>> x = fc.Tensor(np.array([0.3, 0.7]), {"x": fc.Bint[2]})
        >>> y = fc.Tensor(np.arange(1.0, 7.0).reshape(2, 3), {"x": fc.Bint[2], "i": fc.Bint[3]})
        >>> s = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [x, y]),
        ...                      frozenset("xi"), frozenset("i"))
        >>> s.outputs, s.program
        ((3,), ArrayProgram(2 steps, 1 results))
        >>> (total,) = s.program.run([x.data, y.data], exact)
        >>> bool(np.isclose(total, (x.data * y.data.prod(1)).sum()))
        True
    """

    sum_op: Any
    prod_op: Any
    steps: tuple
    outputs: tuple
    program: Any


_IKEY, _OUTPUT, _DATA = attrgetter("_ikey"), attrgetter("output"), attrgetter("data")


def structure_of(sum_op, prod_op, factors) -> tuple | None:
    """What ``plan_elimination`` needs of ``factors``: ``(inputs key, output)`` per factor;
    None where no schedule applies (a factor that is not a Tensor, or a semiring that needs
    the factors' signs: ``(max, mul)`` routes read values).

    Example:
        >>> structure_of(ops.add, ops.mul, [fc.Tensor(np.ones(2), {"i": fc.Bint[2]})])
        (((('i', Bint[2]),), Real),)
    """
    if (sum_op, prod_op) in ops.NONNEGATIVE_DISTRIBUTIVE_OPS:
        return None
    if not set(map(type, factors)) <= {Tensor}:
        return None
    # (C-level attribute reads: the structure of 2,000 factors is built per call)
    return tuple(zip(map(_IKEY, factors), map(_OUTPUT, factors)))


class _Value:
    # A placeholder of a value of the elimination: its position and its input names.
    __slots__ = ("pos", "inputs")

    def __init__(self, pos: int, inputs: frozenset):
        self.pos, self.inputs = pos, inputs


class _Unschedulable(Exception):
    # The walk met the forbidden minor: unrolling a real plate substitutes into pending
    # factors, which is not a fixed list of steps (the terms are eliminated one by one).
    pass


class _Planner:
    # EliminationSteps on placeholders: records the steps instead of doing them.
    def __init__(self, sum_op, values: list):
        self.sum_op, self.values, self.steps = sum_op, values, []

    def _add(self, kind: str, operands: list, names: frozenset) -> _Value:
        inputs = frozenset().union(*(v.inputs for v in operands)) - names
        self.steps.append(Step(kind, tuple(v.pos for v in operands), names))
        value = _Value(len(self.values), inputs)
        self.values.append(value)
        return value

    def contract(self, group, names):
        if len(group) == 1:  # a lone factor: reduced by sum_op over the names it has
            names = names & group[0].inputs
            if not names:
                return group[0]
        return self._add(CONTRACT, group, frozenset(names))

    def reduce(self, f, plates):
        names = frozenset(plates) & f.inputs
        return self._add(REDUCE, [f], names) if names else f

    def unroll(self, f, remaining, leaf, graph, pending):
        raise _Unschedulable


@cached("eliminate.schedules", maxsize=1024, fast=True)  # (hot: every sum_product)
def plan_elimination(sum_op, prod_op, structure: tuple, eliminate: frozenset,
                     plates: frozenset, pedantic: bool = False) -> Schedule | None:
    """The ``Schedule`` of ``partial_sum_product(sum_op, prod_op, factors, eliminate,
    plates, pedantic)`` for factors of ``structure`` (``structure_of``), or None where the
    elimination is no fixed list of steps (a real plate is unrolled). A pure function of
    its arguments, cached by them.

    Raises:
        ValueError: ``pedantic`` and a kept variable inside an eliminated plate. (The
            forbidden plate minor gives None: building the terms unrolls or raises.)

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> s = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [f]),
        ...                      frozenset("j"), frozenset())
        >>> s.outputs, s.program
        ((1,), ArrayProgram(1 steps, 1 results))
    """
    check_domains(ikey for ikey, _ in structure)  # once per structure: this is cached
    values = [_Value(k, frozenset(n for n, _ in ikey)) for k, (ikey, _) in enumerate(structure)]
    if pedantic:
        _check_plates_of_kept_vars(values, eliminate, plates)
    plates = plates & eliminate  # a plate that is not eliminated is a batch input
    planner = _Planner(sum_op, list(values))
    try:
        results = eliminate_graph(values, eliminate - plates, plates, planner)
    except _Unschedulable:
        return None
    steps, outputs = tuple(planner.steps), tuple(v.pos for v in results)
    return Schedule(sum_op, prod_op, steps, outputs,
                    compile_elimination(sum_op, prod_op, structure, steps, outputs))


def run_schedule(schedule: Schedule, factors) -> list:
    """Execute ``schedule`` on ``factors`` (of the structure it was planned for): the results
    of ``partial_sum_product``.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> s = plan_elimination(ops.add, ops.mul, structure_of(ops.add, ops.mul, [f]),
        ...                      frozenset("j"), frozenset())
        >>> run_schedule(s, [f])[0].data
        array([3., 3.])
    """
    program = schedule.program
    if program is not None:
        arrays = program.run(list(map(_DATA, factors)))
        if arrays is not None:
            # Each result is what the rule of its last step returns: that rule builds it with
            # Tensor.make from the array its registered implementation computes and these
            # inputs, and the guard (fast_path) showed no hook or wrapping interpretation
            # would see it. So Tensor.make here builds exactly what the terms would.
            real = factors[0].output
            return [Tensor.make(x, dict(ikey), "real", ikey=ikey, output=real)
                    for x, ikey in zip(arrays, program.out_ikeys)]
    return build_steps(schedule, factors)
