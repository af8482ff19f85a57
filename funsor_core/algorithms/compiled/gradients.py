"""The model's gradient with respect to declared functional tables.

A jointree replicates a declared 0/1 table and sums its name out of one side first
(``functional.py``): exact in value for a function table, but the replicated program is a
different polynomial of the table's entries. Differentiating it gives ``k`` times the
model's derivative on the table's 1 entries (``k`` copies, ``f * f`` at ``f = 1`` has
derivative 2) and a wrong number on its 0 entries: there the model's derivative sums over
assignments where the name is *not* the function of its parents, which the shrunk
separators never visit. No stop-gradient on some copies can recover it; only the unreplicated
elimination computes it.

So a run that may be differentiated (a torch array requiring grad, or a traced jax array)
computes ``fast(sg(G), theta) + (p - sg(p))`` where ``sg`` stops the gradient and
``p = plain(G, sg(theta))`` is the same factors planned without declarations (each table
once), the declared tables ``G`` live and the other factors ``theta`` stopped: ``p - sg(p)``
is exactly 0 with the model's derivative with respect to every ``G_k`` (a ``where`` makes
it 0 where the model is not finite, e.g. ``-inf`` in log space). The gradient with respect
to ``theta`` comes from the fast run, right because the replication licences hold for any
values of the undeclared factors. Values are bit for bit the fast run's (``x + 0.0``). The
cost is one more run, of the unreplicated plan (its size: the declarations no longer shrink
it), on calls that may be differentiated: torch with ``requires_grad`` on a declared
table, and every traced jax call (under ``jax.jit`` without ``grad`` too: whether a ``grad``
surrounds the ``jit`` cannot be seen from inside it). numpy and concrete jax arrays take the
fast run alone.

Example:
    >>> u = np.array([0.3, 0.7]); h = np.array([2.0, 5.0])
    >>> p = plan_structure((("u",), ("u", "x"), ("x",)), (("u", 2), ("x", 2)),
    ...                    (None, "x", None), (), "jointree")
    >>> float(run_model_gradient(p, [u, np.eye(2), h], False, (1,)))
    4.1
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funsor_core import ops
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
        if getattr(x, "requires_grad", False):
            return True
        if not (isinstance(x, (float, int)) or ops.is_concrete(x)):
            return True
    return False


def run_model_gradient(plan: Plan, arrays: Sequence, log: bool, slots: Sequence[int]):
    """``plan.run_arrays(arrays, log)`` in value, with the gradient of the unreplicated model
    with respect to the declared tables in ``slots`` (see the module's docstring).

    Example:
        >>> p = plan_structure((("u", "x"),), (("u", 2), ("x", 2)), ("x",), (), "jointree")
        >>> float(run_model_gradient(p, [np.eye(2)], False, (0,)))
        2.0
    """
    if plan.method != "jointree":  # only the jointree replicates and shrinks
        return plan.run_arrays(arrays, log)
    slots = tuple(slots)
    stopped = [ops.detach(x) if _differentiable(x) else x for x in arrays]
    fast = list(arrays)
    for k in slots:
        fast[k] = stopped[k]
    out = plan.run_arrays(fast, log)
    plain = plan_structure(plan.scopes, tuple(plan.sizes.items()), (None,) * len(plan.scopes),
                           plan.output, "jointree")
    args = list(stopped)
    for k in slots:
        args[k] = arrays[k]
    p = plain.run_arrays(args, log)
    q = ops.detach(p)
    return out + ops.where(ops.isfinite(q), p - q, 0.0)


def _differentiable(x) -> bool:
    return hasattr(x, "shape") and not isinstance(x, np.ndarray)
