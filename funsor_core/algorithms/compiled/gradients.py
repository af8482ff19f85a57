"""The model's gradient with respect to declared functional tables.

A jointree replicates a declared 0/1 table and sums its name out of one side first
(``functional.py``): exact in value for a function table, but the replicated program is a
different polynomial of the table's entries. Differentiating it gives ``k`` times the
model's derivative on the table's 1 entries (``k`` copies, ``f * f`` at ``f = 1`` has
derivative 2) and a wrong number on its 0 entries: there the model's derivative sums over
assignments where the name is *not* the function of its parents, which the shrunk
separators never visit. No stop-gradient on some copies can recover it; only the unreplicated
elimination computes it, at its own cost (a 100-node network: 30x to 4000x the flops).

So when a declared table may be differentiated and the plan replicates, the program runs
through the backend's ``differentiate_as(fast, plain, arrays, wrt=declared)``: the value is
the fast (replicated) run's, and every derivative that involves a declared table is that
of ``plain``, the same factors planned without declarations (each table once). A derivative
in the other factors alone stays the fast run's, which is exact: the replication licences
hold for any values of them, so the two programs agree as functions of them.

* torch: when a declared table ``requires_grad`` (autograd on), ``plain`` runs with a graph
  beside the fast run without one; derivatives of every order are the model's.
* jax (eagerly under ``grad``, under ``jit``, ``vmap``): a custom JVP. ``plain`` is traced
  only when a derivative with respect to a declared table is taken (not under a ``jit``
  forward, nor a ``grad`` in the other parameters only, nor a ``stop_gradient``ed table).
  Forward and reverse mode, first and second order, are the model's, also a mixed second
  derivative taken first by reverse mode in the other parameters alone, then in a declared
  table (``plain``'s tangent joins as a term that is 0 in value), except when an inner
  ``jax.jit`` hides the outer derivative from the rule: NaN there, never a wrong number.
* numpy (no autodiff) and concrete arrays run the fast plan alone.

If ``plain`` exceeds the memory budget, ``MemoryBudgetError`` names the parameters (on jax
when the derivative is traced), never a wrong gradient.

Example:
    >>> u = np.array([0.3, 0.7]); h = np.array([2.0, 5.0])
    >>> p = plan_structure((("u",), ("u", "x"), ("x",)), (("u", 2), ("x", 2)),
    ...                    (None, "x", None), (), "jointree")
    >>> float(run_model_gradient(p, [u, np.eye(2), h], False, (1,), ("g",)))
    4.1
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.compiled.cost import MemoryBudgetError, check_budget
from funsor_core.algorithms.compiled.program import Plan, plan_structure
from funsor_core.engine.backend import backend_of

__all__ = ["may_differentiate", "run_model_gradient"]


def may_differentiate(arrays: Sequence, slots: Sequence[int]) -> bool:
    """Whether a gradient may be taken through the tables in ``slots``: a torch array that
    requires grad, or an array traced by a compiler (jax under ``grad`` or ``jit``).

    Example:
        >>> may_differentiate([np.eye(2)], [0])
        False
    """
    for k in slots:
        x = arrays[k]
        if isinstance(x, np.ndarray):
            continue
        if getattr(x, "requires_grad", False):
            # An op on it records a gradient only where autograd is on (not under torch's
            # no_grad): an empty slice plus 0 asks at no cost.
            if getattr(ops.reshape(x, (-1,))[:0] + 0, "requires_grad", True):
                return True
            continue
        if not (isinstance(x, (float, int)) or ops.is_concrete(x)):
            return True
    return False


def run_model_gradient(plan: Plan, arrays: Sequence, log: bool, slots: Sequence[int],
                       names: Sequence[str] = ()):
    """``plan.run_arrays(arrays, log)`` in value, with the gradient of the unreplicated model
    with respect to the declared tables in ``slots`` (``names``: their parameters, for the
    error; see the module's docstring).

    Example:
        >>> p = plan_structure((("u", "x"),), (("u", 2), ("x", 2)), ("x",), (), "jointree")
        >>> float(run_model_gradient(p, [np.eye(2)], False, (0,), ("g",)))
        2.0
    """
    leaves = plan.tree.leaf_factor
    if plan.method != "jointree" or len(leaves) == len(set(leaves)):
        return plan.run_arrays(arrays, log)  # nothing replicated: its gradient is the model's
    named = dict(zip(slots, names))
    live = tuple(k for k in slots if may_differentiate(arrays, (k,)))
    if not live:
        return plan.run_arrays(arrays, log)

    def fast(*xs):
        return plan.run_arrays(list(xs), log)

    def model(*xs):
        # Planned (and its budget checked) only when a derivative in a declared table is
        # taken: on jax that is when the derivative is traced, not on every call.
        plain = plan_structure(plan.scopes, tuple(plan.sizes.items()),
                               (None,) * len(plan.scopes), plan.output, "jointree")
        try:
            check_budget(plain.tree.stats())
        except MemoryBudgetError as err:
            raise MemoryBudgetError(
                f"the gradient with respect to the parameters {[named.get(k) for k in live]}, "
                "declared functional by compile(functional=...), is the model's only through "
                f"the elimination without the declarations, and {err} Pass them detached (no "
                "requires_grad, or jax.lax.stop_gradient) to differentiate only the other "
                "parameters.") from None
        return plain.run_arrays(list(xs), log)

    backend = backend_of(arrays[live[0]])
    return backend.differentiate_as(fast, model, tuple(arrays), wrt=live)
