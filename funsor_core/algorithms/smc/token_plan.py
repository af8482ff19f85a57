"""One token of BAM-SIS-R as a planned elimination over the hidden indices, batched over
particles (Cemgil et al., section 4.2).

Given the particles' urns ``A_n = alpha_fa(n) + S_fa(n)`` and a token's visible cell ``c_V``,
the fully adapted proposal needs the incremental weight and the posterior of the hidden cell

    u = sum_{c_H} prod_n A_n(c_fa(n)) / A_n(c_pa(n), +),   p(c_H | c_V, S) ∝ the same product,

one factor per family over the hidden indices it has once ``c_V`` is substituted. Summing
the joint table over ``c_H`` costs ``prod_{h in H} I_h`` per particle: exponential in the
number of hidden indices. Instead ``TokenPlan`` eliminates them along the pairwise order of the
library's contraction planner (``plan_contraction``, opt_einsum's path search), planned once per
model structure and particle count, so a token costs the plan's largest intermediate table
(the treewidth of the hidden graph, not its size). The hidden cell is then drawn by
backward sampling through the same elimination: the last step's table gives the first
values (the *root*), and each earlier step's table, indexed at the values of the names it
kept, gives the names it summed (forward filtering, backward sampling on a junction tree).

Per token this is a fixed list of array calls (index the urns at ``c_V``, one broadcast add
and one ``logsumexp`` per planned step; one gather and one categorical draw per step in the
backward pass); the plan holds every permutation and shape, so nothing structural is worked
out per token, and under ``jax.jit`` everything here happens at trace time.

Example:
    >>> from funsor_core.algorithms.smc.model import AllocationModel
    >>> chain = {"h1": (), "h2": ("h1",), "v": ("h2",), "w": ("h1",)}
    >>> m = AllocationModel(chain, {"h1": 2, "h2": 3, "v": 2, "w": 2}, ("v", "w"), 1.0, 1.0)
    >>> plan = TokenPlan(m, 4)
    >>> [(s.keep, s.summed) for s in plan.steps]
    [(('h1',), ()), (('h2',), ('h1',)), ((), ('h2',))]
    >>> from funsor_core.algorithms.smc.allocation_smc import initial_tables
    >>> log_u, log_root, messages = plan.weigh(initial_tables(m, np.zeros(()), 4),
    ...                                        np.array([0, 1]))
    >>> np.exp(log_u).round(6).tolist()  # BDeu: the first token is uniform over V's cells
    [0.25, 0.25, 0.25, 0.25]
"""

from __future__ import annotations

import math
from typing import NamedTuple

from funsor_core import ops
from funsor_core.algorithms.contract.plan import plan_contraction
from funsor_core.algorithms.smc.sweep import categorical
from funsor_core.engine.cache import Cache

__all__ = ["PlanStep", "TokenPlan", "token_plan"]

_PLANS = Cache("smc.token_plans", maxsize=64)


class PlanStep(NamedTuple):
    """One pairwise step of the elimination, with its layout worked out once.

    ``i``, ``j``: the operands taken from the current list (``j`` None: ``i`` alone);
    ``perm_i``/``shape_i`` (and ``_j``): the transpose and the broadcast shape that put an
    operand on the step's axes ``(particle, *keep, *summed)``; ``keep``: the names its result
    keeps; ``summed``: the names it sums out (their values are drawn at this step in the
    backward pass); ``flat``: the result's shape ``(particle, *keep sizes, prod summed)``.

    Example:
        Operands over ``(a, b)`` and ``(b, c)`` for 5 particles, eliminated in one step: each
        goes onto the axes ``(particle, a, b, c)``, and their log sum is a table over all
        24 cells, summed (and drawn from) at once.

        >>> (step,) = _plan_steps((("a", "b"), ("b", "c")), {"a": 2, "b": 3, "c": 4}, 5)
        >>> step.shape_i, step.shape_j, step.summed, step.flat
        ((5, 2, 3, 1), (5, 1, 3, 4), ('a', 'b', 'c'), (5, 24))
        >>> x, y = np.zeros((5, 2, 3)), np.zeros((5, 3, 4))
        >>> both = x.reshape(step.shape_i) + y.reshape(step.shape_j)  # no transposes here
        >>> both.reshape(step.flat).shape
        (5, 24)
    """

    i: int
    j: int | None
    perm_i: tuple
    shape_i: tuple
    perm_j: tuple | None
    shape_j: tuple | None
    keep: tuple
    summed: tuple
    flat: tuple


def _layout(names: tuple, axes: tuple, sizes: dict, num: int) -> tuple:
    """The transpose and the shape putting an array over ``(particle, *names)`` onto
    ``(particle, *axes)`` (size 1 where it lacks a name)."""
    perm = (0,) + tuple(1 + names.index(n) for n in axes if n in names)
    shape = (num,) + tuple(sizes[n] if n in names else 1 for n in axes)
    return perm, shape


def _plan_steps(scopes: tuple, sizes: dict, num: int) -> tuple:
    """The ``PlanStep`` records of eliminating every name of ``scopes`` (one operand each)."""
    plan = plan_contraction(scopes, sizes, ())
    current, steps = list(scopes), []
    for i, j, keep in plan.steps:
        names_i = current[i]
        names_j = current[j] if j is not None else ()
        union = tuple(dict.fromkeys(names_i + names_j))
        summed = tuple(n for n in union if n not in keep)
        axes = tuple(keep) + summed
        perm_i, shape_i = _layout(names_i, axes, sizes, num)
        perm_j, shape_j = _layout(names_j, axes, sizes, num) if j is not None else (None, None)
        flat = (num,) + tuple(sizes[n] for n in keep) + (math.prod(sizes[n] for n in summed),)
        steps.append(PlanStep(i, j, perm_i, shape_i, perm_j, shape_j, tuple(keep), summed,
                              flat))
        for k in sorted((i,) if j is None else (i, j), reverse=True):
            del current[k]
        current.append(tuple(keep))
    return tuple(steps)


def _sum_child(table):
    """``A(pa, +)``: the sum over axis 1 (the child) of ``(particle, child, *parents)``.
    numpy's reduction over a short axis costs 10-100x an add, and a batched matmul loops
    over the batch, so: a matrix-vector product by ones where there is no parent, else a
    fold of adds over a short child axis, else a matrix-vector product after a transpose."""
    shape = tuple(table.shape)
    size, rest = shape[1], math.prod(shape[2:])
    if rest == 1:
        total = ops.matmul(ops.reshape(table, shape[:2]), ops.new_full(table, (size,), 1.0))
    elif size <= 8:
        total = table[:, 0]
        for k in range(1, size):
            total = ops.add(total, table[:, k])
        return total
    else:
        flat = ops.permute(ops.reshape(table, (shape[0], size, rest)), (0, 2, 1))
        total = ops.matmul(flat, ops.new_full(table, (size,), 1.0))
    return ops.reshape(total, (shape[0],) + shape[2:])


def _logsumexp_last(x):
    """``log sum exp`` over the last (short) axis of finite log weights: the maximum folded
    over the slices, the sum as a matmul by ones (see ``_sum_child``)."""
    size = x.shape[-1]
    if size == 1:
        return x[..., 0]
    if size > 8:
        top = ops.amax(x, -1)
    else:
        top = x[..., 0]
        for k in range(1, size):
            top = ops.max(top, x[..., k])
    total = ops.matmul(ops.exp(ops.sub(x, top[..., None])), ops.new_full(x, (size,), 1.0))
    return ops.add(ops.log(total), top)


def _put(x, perm: tuple, shape: tuple):
    if perm and perm != tuple(range(len(perm))):
        x = ops.permute(x, perm)
    return x if tuple(x.shape) == shape else ops.reshape(x, shape)


class TokenPlan:
    """The per-token elimination and backward sampling of an ``AllocationModel``'s predictive
    factor graph over its hidden indices, for ``num_particles`` particles (see the module
    docstring). Built once per model structure and particle count (``token_plan``).

    The particles' state is the tuple of urn tables ``A_n`` (``(particle, *fa(n))``, in the
    order of ``model.families``); a token is an int array of its visible values (in the order
    of ``model.visible``).

    Example:
        >>> from funsor_core.algorithms.smc.model import AllocationModel
        >>> nmf = AllocationModel({"k": (), "i": ("k",), "j": ("k",)},
        ...                       {"i": 2, "j": 2, "k": 3}, ("i", "j"), 1.0, 1.0)
        >>> TokenPlan(nmf, 8).root
        ('k',)
    """

    def __init__(self, model, num_particles: int) -> None:
        self.num = num_particles
        self.hidden = tuple(model.hidden)
        self.cards = dict(model.cards)
        visible = {v: k for k, v in enumerate(model.visible)}
        # Per family: where each axis's value comes from (a visible position or a hidden
        # name), and the family's hidden names in axis order (its factor's scope).
        self.families = []
        for fa in model.families.values():
            self.families.append(tuple((n, visible.get(n)) for n in fa))
        scopes = tuple(tuple(n for n, pos in fam if pos is None) for fam in self.families)
        self.scoped = tuple(k for k, s in enumerate(scopes) if s)
        self.steps = _plan_steps(tuple(scopes[k] for k in self.scoped), self.cards,
                                 num_particles) if self.scoped else ()
        # The root: the names the last step sums (drawn jointly from its table); the others
        # are drawn from the earlier steps that sum names, last first.
        self.root = self.steps[-1].summed if self.steps else ()
        self.backward = tuple((k, s) for k, s in reversed(list(enumerate(self.steps[:-1])))
                              if s.summed)
        self.strides = {}
        for fam in self.families:
            size = math.prod(self.cards[n] for n, _ in fam)
            self.strides[fam] = (size, tuple(math.prod(self.cards[m] for m, _ in fam[a + 1:])
                                             for a in range(len(fam))))

    # ----------------------------------------------------------------------------------------
    def factors(self, state: tuple, x) -> list:
        """Each family's log predictive factor with ``c_V = x`` substituted: ``log A_n(c) -
        log A_n(c_pa, +)``, an array over ``(particle, *its hidden names)``."""
        out = []
        for table, fam in zip(state, self.families):
            parent = _sum_child(table)
            index = tuple(slice(None) if pos is None else x[pos] for _, pos in fam)
            # A hidden child: the denominator gets a unit axis for it.
            lead = (slice(None), None) if fam[0][1] is None else (slice(None),)
            num = ops.getitem(table, (slice(None),) + index)
            out.append(ops.log(ops.truediv(num, ops.getitem(parent, lead + index[1:]))))
        return out

    def eliminate(self, factors: list) -> tuple:
        """``(log_u, messages)``: the log sum of the factors' product over the hidden indices
        (``(particle,)``) and each step's table ``(particle, *keep, prod summed)`` (None for a
        step that sums nothing)."""
        const = None
        for k, f in enumerate(factors):
            if k not in self.scoped:
                const = f if const is None else ops.add(const, f)
        current = [factors[k] for k in self.scoped]
        messages = []
        for step in self.steps:
            x = _put(current[step.i], step.perm_i, step.shape_i)
            if step.j is not None:
                x = ops.add(x, _put(current[step.j], step.perm_j, step.shape_j))
            for k in sorted((step.i,) if step.j is None else (step.i, step.j), reverse=True):
                del current[k]
            if step.summed:
                table = _put(x, (), step.flat)  # the broadcast covers every axis of the step
                messages.append(table)
                current.append(_logsumexp_last(table))
            else:
                messages.append(None)
                current.append(x)
        log_u = current[0] if current else None
        if const is not None:
            log_u = const if log_u is None else ops.add(log_u, const)
        return log_u, messages

    def weigh(self, state: tuple, x) -> tuple:
        """``(log_u, log_root, messages)`` of the token ``x`` (a ``Proposal.weigh``):
        ``log_root`` is the log factor over the root's flat values, whose ``logsumexp`` is
        ``log_u``."""
        log_u, messages = self.eliminate(self.factors(state, x))
        if not self.root:
            return log_u, ops.reshape(log_u, (self.num, 1)), messages
        root = messages[-1]
        if len(self.scoped) < len(self.families):  # the families without hidden indices
            root = ops.add(root, ops.sub(log_u, _logsumexp_last(root))[:, None])
        return log_u, root, messages

    def complete(self, messages: list, index, root, uniforms) -> dict:
        """Every hidden index's value per particle (``(particle,)`` ints): the root's from its
        flat value ``root``, the others drawn backwards through the steps, each step's table
        read at the ancestors ``index`` and the values of the names it kept. ``uniforms``
        is a list of uniform arrays of the shapes ``uniform_shapes()``."""
        values = self._unravel(root, self.root)
        for (k, step), u in zip(self.backward, uniforms):
            rows = ops.getitem(messages[k], (index,) + tuple(values[n] for n in step.keep))
            values.update(self._unravel(categorical(rows, u), step.summed))
        return values

    def uniform_shapes(self) -> list:
        """The shapes of the uniforms ``complete`` takes, in its order."""
        return [(self.num, s.flat[-1]) for _, s in self.backward]

    def _unravel(self, flat, names: tuple) -> dict:
        out = {}
        for n in reversed(names):  # row-major: the last name varies fastest
            out[n] = ops.mod(flat, self.cards[n])
            flat = ops.floordiv(flat, self.cards[n])
        return out

    def assign(self, state: tuple, values: dict, x) -> tuple:
        """The state once particle ``m`` adds the token ``x`` at the hidden cell
        ``values[.][m]``: its urns (``update``), and, where the state carries each hidden
        index's allocation history ``(particle, T)`` after the urns, column ``x[-1]`` (the
        token's position) of it."""
        count = len(self.families)
        tables = self.update(state[:count], values, x, 1.0)
        if len(state) == count:
            return tables
        rows = ops.new_arange(ops.astype(state[0], "int"), 0, self.num, 1)
        column = ops.add(ops.mul(rows, 0), x[-1])
        history = tuple(ops.scatter_set(h, (rows, column), values[n])
                        for h, n in zip(state[count:], self.hidden))
        return tables + history

    def update(self, tables: tuple, values: dict, x, delta: float) -> tuple:
        """The urns with ``delta`` tokens added at the cell ``(x, values[.][m])`` of particle
        ``m``: one scatter per family on its flattened table (each particle has its own row,
        so the indices are distinct and a set of ``A + delta`` is the add)."""
        rows = ops.new_arange(ops.astype(tables[0], "int"), 0, self.num, 1)
        out = []
        for table, fam in zip(tables, self.families):
            size, strides = self.strides[fam]
            flat = ops.mul(rows, size)
            for (n, pos), stride in zip(fam, strides):
                v = x[pos] if pos is not None else values[n]
                flat = ops.add(flat, ops.mul(v, stride) if stride != 1 else v)
            out.append(_bump(table, flat, delta))
        return tuple(out)


def _bump(table, flat, delta: float):
    """``table`` plus ``delta`` at the flat indices ``flat`` (distinct)."""
    cells = ops.reshape(table, (-1,))
    cells = ops.scatter_set(cells, (flat,), ops.add(ops.getitem(cells, (flat,)), delta))
    return ops.reshape(cells, tuple(table.shape))


def token_plan(key: tuple, model, num_particles: int) -> TokenPlan:
    """The ``TokenPlan`` of ``model`` for ``num_particles``, cached by ``key`` (the model's
    structure: the plan depends on names and cardinalities only).

    Example:
        >>> from funsor_core.algorithms.smc.model import AllocationModel
        >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, ("i", "j"), 1.0, 1.0)
        >>> token_plan(("ij",), m, 3).steps  # no hidden index: nothing to eliminate
        ()
    """
    plan = _PLANS.get((key, num_particles))
    if plan is None:
        plan = _PLANS[key, num_particles] = TokenPlan(model, num_particles)
    return plan
