"""Compiled variable elimination (Darwiche 2020, "An Advance on Variable Elimination with
Applications to Tensor-Based Computation"): functional factors, binary jointrees with
replication and SHRINK_SEP, each node lowered to one batched matmul, programs compiled once
and run many times, and costs known before running.

Example:
    >>> u = fc.Tensor(np.array([0.25, 0.75]), {"u": fc.Bint[2]})
    >>> flip = fc.Tensor(np.eye(2)[::-1].copy(), {"u": fc.Bint[2], "x": fc.Bint[2]})
    >>> x = fc.functional(flip, "x")
    >>> fc.plan([u, x], frozenset({"u"}))([u, x]).data
    array([0.75, 0.25])
"""

from funsor_core.algorithms.compiled.cost import (
    MemoryBudgetError,
    get_memory_budget,
    memory_budget,
)
from funsor_core.algorithms.compiled.expression import Program, compile, cost
from funsor_core.algorithms.compiled.functional import (
    Functional,
    FunctionalError,
    eliminate_functional,
    functional,
    index_table,
)
from funsor_core.algorithms.compiled.plated_plan import PlatedPlan
from funsor_core.algorithms.compiled.program import Plan, plan

__all__ = ["Functional", "FunctionalError", "MemoryBudgetError", "Plan", "Program", "compile",
           "cost", "eliminate_functional", "functional", "get_memory_budget", "index_table",
           "memory_budget", "plan", "PlatedPlan"]
