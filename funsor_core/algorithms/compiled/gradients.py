"""The model's gradient with respect to declared functional tables.

A jointree replicates a declared 0/1 table and sums its name out of one side first
(``functional.py``): exact in value for a function table, but the replicated program is a
different polynomial of the table's entries. Differentiating it gives ``k`` times the
model's derivative on the table's 1 entries (``k`` copies, ``f * f`` at ``f = 1`` has
derivative 2) and a wrong number on its 0 entries: there the model's derivative sums over
assignments where the name is *not* the function of its parents, which the shrunk
separators never visit. No stop-gradient on some copies can recover it; only the unreplicated
elimination computes it, at its own cost (a 100-node network: 30x to 4000x the flops).

So when a declared table may be differentiated and the plan replicates, the fast run gets
the tables with their gradient stopped (``sg``; the gradient with respect to the other
factors ``theta`` stays right: the replication licences hold for any values of them), plus a
term that is exactly 0 in value and carries the tables' gradient:

* torch (a declared table with ``requires_grad``, autograd on): ``p - sg(p)`` where
  ``p = plain(G, sg(theta))`` is the same factors planned without declarations, each table
  once, so its derivative in every ``G_k`` is the model's (a ``where`` makes the term 0
  where the model is not finite, e.g. ``-inf`` in log space). If that plan exceeds the
  memory budget, ``MemoryBudgetError`` names the parameters instead of a wrong gradient.
* traced arrays (jax under ``grad`` or ``jit``): ``0 * sqrt(G - sg(G))``, whose gradient is
  NaN: the unreplicated run cannot be paid on every traced call (under ``jit`` a ``grad``
  outside it cannot be seen) and a number would be wrong. Compile without the declaration
  to differentiate with respect to the table under jax.

Values are bit for bit the fast run's (``x + 0.0``); numpy and concrete jax arrays, and
plans that replicate nothing, take the fast run alone.

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
    error), or NaN where that cannot be computed (see the module's docstring).

    Example:
        >>> p = plan_structure((("u", "x"),), (("u", 2), ("x", 2)), ("x",), (), "jointree")
        >>> float(run_model_gradient(p, [np.eye(2)], False, (0,), ("g",)))
        2.0
    """
    leaves = plan.tree.leaf_factor
    if plan.method != "jointree" or len(leaves) == len(set(leaves)):
        return plan.run_arrays(arrays, log)  # nothing replicated: its gradient is the model's
    named = dict(zip(slots, names))
    live = [k for k in slots if may_differentiate(arrays, (k,))]
    stopped = [ops.detach(x) if _differentiable(x) else x for x in arrays]
    fast = list(arrays)
    for k in live:
        fast[k] = stopped[k]
    traced = [k for k in live if not ops.is_concrete(arrays[k])]
    if traced:
        out = plan.run_arrays(fast, log)
        for k in traced:
            d = arrays[k] - stopped[k]
            if log:  # -inf - -inf is NaN in value: those entries carry no gradient anyway
                d = ops.where(ops.isfinite(stopped[k]), d, 0.0)
            out = out + ops.sum(ops.sqrt(d)) * 0.0
        return out
    plain = plan_structure(plan.scopes, tuple(plan.sizes.items()), (None,) * len(plan.scopes),
                           plan.output, "jointree")
    try:
        check_budget(plain.tree.stats())
    except MemoryBudgetError as err:
        raise MemoryBudgetError(
            f"the gradient with respect to the parameters {[named.get(k) for k in live]}, "
            "declared functional "
            "by compile(functional=...), is the model's only through the elimination without "
            f"the declarations, and {err} Pass them detached (no requires_grad) to "
            "differentiate only the other parameters.") from None
    out = plan.run_arrays(fast, log)
    args = list(stopped)
    for k in live:
        args[k] = arrays[k]
    p = plain.run_arrays(args, log)
    q = ops.detach(p)
    return out + ops.where(ops.isfinite(q), p - q, 0.0)


def _differentiable(x) -> bool:
    return hasattr(x, "shape") and not isinstance(x, np.ndarray)
