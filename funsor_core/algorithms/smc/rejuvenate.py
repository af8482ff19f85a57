"""Gibbs rejuvenation of the particles' past allocations (resample-move SMC, Gilks and
Berzuini 2001) for allocation models.

BAM-SIS-R never revises a token's hidden cell once drawn, so on long token sequences (the
PARAFAC rank selection of Cemgil et al., Figure 10a: 500 tokens in a 20x25x30 tensor) the
particles inherit early allocations that later tokens contradict, and ``log Z-hat`` has a
standard deviation of tens of nats (benchmarks/README.md). After each token, a move picks a
past token ``t`` uniformly among the ``tau + 1`` seen so far (the same for every particle),
takes it out of each particle's urns and draws its hidden cell again from the full
conditional ``p(c_H^t | c_V^t, S^{-t})``: by exchangeability of the Pólya urns that is the
predictive of a token added last, i.e. ``TokenPlan.weigh`` and the backward draw at ``c_V^t``.
Each move leaves the step's target ``p(c_H^{1:tau} | c_V^{1:tau})`` invariant and the
weights untouched, so ``Z-hat`` stays unbiased (examples: ``move_draws``, ``rejuvenate``).
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.smc.sweep import categorical

__all__ = ["move_draws", "rejuvenate"]


def move_draws(plan) -> tuple:
    """The shapes of the uniforms one move takes: the token's, the root's, the backward
    pass's (``TokenPlan.uniform_shapes``).

    Example:
        3 particles, the root ``k`` of 2 values, no other hidden index to draw backwards:

        >>> from funsor_core.algorithms.smc.model import AllocationModel
        >>> from funsor_core.algorithms.smc.token_plan import TokenPlan
        >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 2},
        ...                     ("i", "j"), 1.0, 1.0)
        >>> move_draws(TokenPlan(m, 3))
        ((), (3, 2))
    """
    size = 1
    for n in plan.root:
        size *= plan.cards[n]
    return ((), (plan.num, size)) + tuple(plan.uniform_shapes())


def rejuvenate(plan, state: tuple, tokens, x, uniforms) -> tuple:
    """One Gibbs move on ``state`` (urns, then each hidden index's history ``(particle,
    T)``) after the token ``x`` (whose last entry is its position ``tau``): the past token
    ``t = floor(u (tau + 1))`` of ``tokens`` (``(T, V + 1)``) is taken out of every particle's
    urns and put back at a hidden cell drawn from its full conditional.

    Example:
        One token at ``(i, j) = (0, 1)``, put in class 0 by every particle; alone, its full
        conditional is uniform, and the uniforms ``[0.1, 0.9]`` (Gumbel-max) draw class 1:
        the token moves from urn 0 to urn 1 of ``k`` (prior weight 0.5 in each).

        >>> from funsor_core.algorithms.smc.model import AllocationModel
        >>> from funsor_core.algorithms.smc.token_plan import TokenPlan
        >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 2},
        ...                     ("i", "j"), 1.0, 1.0)
        >>> from funsor_core.algorithms.smc.allocation_smc import initial_tables
        >>> plan, token = TokenPlan(m, 3), np.array([0, 1, 0])  # the cell, then its position
        >>> urns = plan.update(initial_tables(m, np.zeros(()), 3), {"k": np.zeros(3, int)},
        ...                    token, 1.0)
        >>> state = urns + (np.zeros((3, 1), int),)  # the urns, then k's history
        >>> uniforms = (np.array(0.3), np.array([[0.1, 0.9]] * 3))
        >>> new = rejuvenate(plan, state, token[None], token, uniforms)
        >>> urns[0][0].tolist(), new[0][0].tolist(), new[-1].ravel().tolist()
        ([1.5, 0.5], [0.5, 1.5], [1, 1, 1])
    """
    count = len(plan.families)
    tables, history = state[:count], state[count:]
    u_token, u_root, *u_back = uniforms
    tau = ops.astype(x[-1], "float")
    t = ops.astype(ops.floordiv(ops.mul(u_token, ops.add(tau, 1.0)), 1.0), "int")
    token = ops.getitem(tokens, (t,))
    rows = ops.new_arange(ops.astype(tables[0], "int"), 0, plan.num, 1)
    column = ops.add(ops.mul(rows, 0), t)
    old = {n: ops.getitem(h, (rows, column)) for n, h in zip(plan.hidden, history)}
    tables = plan.update(tables, old, token, -1.0)
    _, log_root, messages = plan.weigh(tables, token)
    values = plan.complete(messages, rows, categorical(log_root, u_root), u_back)
    tables = plan.update(tables, values, token, 1.0)
    history = tuple(ops.scatter_set(h, (rows, column), values[n])
                    for h, n in zip(history, plan.hidden))
    return tables + history
