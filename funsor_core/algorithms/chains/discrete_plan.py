"""Discrete Markov products on arrays: from the term to a cached plan, and back.

A discrete chain's step is a Tensor, or a ``prod_op``-product of Tensors built lazily (a
shared transition matrix plus per-step observation vectors stay apart: ``tensor_factors``).
Everything structural is planned once per structure and cached (``ChainPlan``,
``FusedPlan``): how each factor's data is permuted and reshaped into a kernel operand
``(T or 1, *batch, P or 1, C or 1)``, which factors of a contraction are boundary vectors,
the names and shape of the result. A call then only moves arrays and runs
``discrete.chain_product``: no terms per step, and little Python per call.

``contract_markov_tensor`` evaluates ``Contraction(sum_op, prod_op, V, (mp, *others))``
where ``V`` sums the chain's first prev or last curr states: the factors of those states
become boundary vectors, so the sequential carry is a vector (an HMM's forward or backward
algorithm, ``O(T K^2)``) instead of a transition matrix.

Example:
    >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> markov_tensor(ops.add, ops.mul, [t], fc.Variable("t", fc.Bint[3]), (("x", "y"),),
    ...               (("x", "y"),), "parallel").data.tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import (
    device_of,
    get_markov_strategy,
    record_choice,
    recorded_choices,
)
from funsor_core.algorithms.chains.discrete import chain_product
from funsor_core.algorithms.chains.discrete_masked import masked_factors
from funsor_core.algorithms.chains.discrete_tree import UNIT
from funsor_core.algorithms.chains.evaluate import chain_strategy
from funsor_core.algorithms.chains.factors import tensor_factors
from funsor_core.analysis.sign import distributes
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.cache import cached
from funsor_core.terms.base import Number

__all__ = ["tensor_factors", "tensor_layout", "markov_tensor", "contract_markov_tensor",
           "chain_operands"]


def tensor_layout(inputs, time: str, step: tuple) -> tuple:
    """``(order, batch names, prev names, curr names)``: the order to align a chain's inputs
    to so that its data reshapes to ``(T, *batch, P, C)``.

    Example:
        >>> tensor_layout({"y": 0, "b": 0, "t": 0, "x": 0}, "t", (("x", "y"),))
        (['t', 'b', 'x', 'y'], ['b'], ['x'], ['y'])
    """
    prevs = [p for p, _ in step]
    currs = [c for _, c in step]
    skip = set(prevs) | set(currs) | {time}
    batch = [n for n in inputs if n not in skip]
    order = ([time] if time in inputs else []) + batch + prevs + currs
    return order, batch, prevs, currs


def _signature(term) -> tuple:
    # What a plan depends on: the class and the inputs (names and domains, in order).
    if type(term) is Tensor:
        return (Tensor, term._ikey)
    return (type(term), tuple(term.inputs.items()))


class _Recipe:
    """How one Tensor's data becomes an array of ``shape`` in the layout ``names``: permute
    its dims to the layout's order, insert size-1 dims, expand where needed, reshape."""

    __slots__ = ("perm", "unflat", "expand", "shape")

    def __init__(self, own: list, names: list, sizes: list, groups: list):
        # groups: runs of layout positions merged into one dim of ``shape`` (P, C); a
        # factor holding some but not all names of a run is expanded over the others.
        order = [n for n in names if n in own]
        self.perm = None if order == own else tuple(own.index(n) for n in order)
        unflat = [sizes[i] if n in own else 1 for i, n in enumerate(names)]
        full = list(unflat)
        for run in groups:
            if any(names[i] in own for i in run):
                for i in run:
                    full[i] = sizes[i]
        self.unflat = tuple(unflat)
        self.expand = None if full == unflat else tuple(full)
        shape, at = [], 0
        for run in groups:
            while at < run[0]:
                shape.append(full[at])
                at += 1
            shape.append(math.prod(full[i] for i in run))
            at = run[-1] + 1
        shape += full[at:]
        self.shape = tuple(shape)

    def apply(self, data):
        if self.perm is not None:
            data = ops.permute(data, self.perm)
        if self.expand is not None:
            data = ops.expand(ops.reshape(data, self.unflat), self.expand)
        return ops.reshape(data, self.shape)


class ChainPlan:
    """The static part of a discrete chain: one recipe per factor (None for a Number), the
    batch, state and result layouts, and the strategy problem's sizes."""

    def __init__(self, time, step, step_names, signatures, has_left, has_right):
        tname, duration = time.name, time.output.size
        inputs: dict = {}
        for _, items in signatures:
            for n, d in items:
                inputs.setdefault(n, d)
        order, batch, prevs, currs = tensor_layout(inputs, tname, step)
        self.has_time = tname in inputs
        names = order if self.has_time else [tname] + order
        sizes = [inputs[n].size if n in inputs else 1 for n in names]
        start = len(names) - len(prevs) - len(currs)
        groups = [list(range(start, start + len(prevs))),
                  list(range(start + len(prevs), len(names)))]
        self.recipes = tuple(
            None if cls is Number else _Recipe([n for n, _ in items], names, sizes, groups)
            for cls, items in signatures)
        self.ndim = len(names) - len(prevs) - len(currs) + 2
        self.bshape = tuple(inputs[n].size for n in batch)
        self.psizes = tuple(inputs[n].size for n in prevs)
        self.states = math.prod(self.psizes)
        self.batch_size = math.prod(self.bshape)
        self.duration = duration
        self.power = None if self.has_time or duration == 1 else duration
        free = {}
        for (p, c), (free_p, free_c) in zip(step, step_names):
            free[p], free[c] = free_p, free_c
        self.free = free
        self.bdomains = {n: inputs[n] for n in batch}
        self.prev_domains = {free[n]: inputs[n] for n in prevs}
        self.curr_domains = {free[n]: inputs[n] for n in currs}
        out = dict(self.bdomains)
        shape = self.bshape
        if not has_left:
            out.update(self.prev_domains)
            shape += self.psizes
        if not has_right:
            out.update(self.curr_domains)
            shape += self.psizes
        self.out_inputs = out
        self.out_ikey = tuple(out.items())
        self.out_shape = shape
        self._choices: dict = {}

    def strategy(self, requested, sum_op, prod_op, factors, proto, vector: bool) -> str:
        """``chain_strategy`` for this chain, remembered per setting, backend and device:
        the cost model reads nothing else of a semiring's chain (a pair that is one only over
        nonnegative factors looks at their values, every call)."""
        if (sum_op, prod_op) in ops.NONNEGATIVE_DISTRIBUTIVE_OPS:
            return chain_strategy(requested, sum_op, prod_op, factors, proto, self.states,
                                  self.batch_size, self.duration, vector)
        key = (requested, get_markov_strategy(), type(proto), device_of(proto), sum_op,
               prod_op, vector)
        choice = self._choices.get(key)
        if choice is None:
            with recorded_choices() as log:
                name = chain_strategy(requested, sum_op, prod_op, factors, proto,
                                      self.states, self.batch_size, self.duration, vector)
            choice = self._choices[key] = (name, log[-1] if log else None)
        if choice[1] is not None:
            record_choice(choice[1])  # the decision a cache hit repeats
        return choice[0]

    def arrays(self, factors, proto) -> tuple:
        return tuple(
            ops.new_full(proto, (1,) * self.ndim, float(f.data)) if r is None else r.apply(f.data)
            for f, r in zip(factors, self.recipes))


@cached("chains.discrete_plan.chains", maxsize=512)
def _chain_plan(time, step, step_names, signatures, has_left, has_right) -> ChainPlan:
    return ChainPlan(time, step, step_names, signatures, has_left, has_right)


def _proto(factors):
    for f in factors:
        if type(f) is Tensor:
            return f.data
    raise ValueError("a discrete chain needs a Tensor factor")


def _run_chain(plan: ChainPlan, sum_op, prod_op, factors, strategy, left, right,
               keep=None) -> Tensor:
    proto = _proto(factors)
    arrays = plan.arrays(factors if keep is None else [*factors, keep], proto)
    empty = [a for a in arrays if 0 in tuple(a.shape)]
    if empty:
        # An empty batch or state space: the kernels' max shifts have nothing to reduce.
        # Entries of an empty output are none; a sum over no states is the semiring's zero.
        # (The sums of the empty operands are exactly 0: they keep autodiff's graph, which
        # markov_marginals and markov_map differentiate.)
        link = sum(ops.sum(a) for a in empty)
        unit = ops.new_zeros(proto, plan.out_shape) + ops.UNITS[sum_op] + link
        return Tensor.make(unit, plan.out_inputs, "real", ikey=plan.out_ikey)
    mask = None
    if keep is not None:  # the last recipe is the mask's: (T, *batch, 1, 1) -> (T, *batch)
        arrays, mask = arrays[:-1], arrays[-1][..., 0, 0] > 0.5
    strategy = plan.strategy(strategy, sum_op, prod_op, factors, proto,
                             left is not None or right is not None)
    out = chain_product(sum_op, prod_op, arrays, strategy, left, right, plan.power, mask)
    if tuple(out.shape) != plan.out_shape:
        out = ops.reshape(out, plan.out_shape)
    return Tensor.make(out, plan.out_inputs, "real", ikey=plan.out_ikey)


def chain_operands(factors: list, time, step: tuple, step_names: tuple) -> tuple:
    """``(plan, arrays)``: the cached plan of a discrete chain whose step is the product of
    ``factors`` and its kernel operands ``(T or 1, *batch, P or 1, C or 1)``, for callers
    that run the kernel themselves (``algorithms.sharding``, per device block).

    Example:
        >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> plan, arrays = chain_operands([t], fc.Variable("t", fc.Bint[3]), (("x", "y"),),
        ...                               (("x", "y"),))
        >>> arrays[0].shape, plan.out_inputs
        ((3, 2, 2), {'x': Bint[2], 'y': Bint[2]})
    """
    plan = _chain_plan(time, step, step_names, tuple(map(_signature, factors)), False, False)
    return plan, plan.arrays(factors, _proto(factors))


def markov_tensor(sum_op, prod_op, factors: list, time, step: tuple, step_names: tuple,
                  strategy, keep: Tensor | None = None) -> Tensor:
    """The Markov product of a discrete chain whose step is the ``prod_op``-product of
    ``factors`` (Tensors and Numbers, from ``tensor_factors``), on their arrays; with
    ``keep`` (a 0/1 Tensor over time and batch names, ``MaskedSteps``) the steps where it is
    0 are identity transitions.

    Example:
        >>> t = fc.Tensor(np.ones((2, 2, 2)), {"t": fc.Bint[2], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> markov_tensor(ops.add, ops.mul, [t], fc.Variable("t", fc.Bint[2]), (("x", "y"),),
        ...               (("x", "y"),), "sequential").inputs
        {'x': Bint[2], 'y': Bint[2]}
    """
    signatures = tuple(map(_signature, factors if keep is None else [*factors, keep]))
    plan = _chain_plan(time, step, step_names, signatures, False, False)
    return _run_chain(plan, sum_op, prod_op, factors, strategy, None, None, keep)


# -- boundaries summed inside the chain ---------------------------------------------------------
class FusedPlan:
    """Which terms of a contraction are the chain's left / right boundary factors (by
    position) and which stay outside, with the recipes of the boundary factors."""

    def __init__(self, reduced_vars, others, chain_args):
        time, step, step_names, signatures = chain_args
        free = {}
        for (p, c), (free_p, free_c) in zip(step, step_names):
            free[p], free[c] = free_p, free_c
        fp = frozenset(free[p] for p, _ in step)
        fc = frozenset(free[c] for _, c in step)
        # The chain's own inputs: its factors' names but time, step names renamed.
        names = frozenset(free.get(n, n) for _, items in signatures for n, _ in items
                          if n != time.name)
        rest, sides = [], []
        for i, (cls, items) in enumerate(others):
            own = frozenset(n for n, _ in items)
            if cls not in (Tensor, Number) or not own <= names or (own & fp and own & fc):
                rest.append(i)
            else:
                sides.append(i)
        outside = frozenset().union(*(frozenset(n for n, _ in others[i][1]) for i in rest))
        use_left = fp <= reduced_vars and not outside & fp
        use_right = fc <= reduced_vars and not outside & fc
        left, right = [], []
        for i in sides:
            own = frozenset(n for n, _ in others[i][1])
            if own & fp and use_left:
                left.append(i)
            elif own & fc and use_right:
                right.append(i)
            else:
                rest.append(i)
        self.ok = use_left or use_right
        if not self.ok:
            return
        self.chain = _chain_plan(time, step, step_names, signatures, use_left, use_right)
        self.left = self._side(left, others, self.chain.prev_domains) if use_left else None
        self.right = self._side(right, others, self.chain.curr_domains) if use_right else None
        self.rest = tuple(sorted(rest))
        summed = (fp if use_left else frozenset()) | (fc if use_right else frozenset())
        self.remaining = reduced_vars - summed

    def _side(self, idx, others, state_domains):
        # Recipes to (*batch or 1, P or 1) for the factors of one boundary.
        layout = {**self.chain.bdomains, **state_domains}
        names = list(layout)
        sizes = [d.size for d in layout.values()]
        run = list(range(len(self.chain.bdomains), len(names)))
        shape = self.chain.bshape + (self.chain.states,)
        recipes = tuple(
            (i, None if others[i][0] is Number else
             _Recipe([n for n, _ in others[i][1]], names, sizes, [run])) for i in idx)
        return recipes, shape

    def boundary(self, side, others, prod_op, proto):
        recipes, shape = side
        if not recipes:
            return UNIT  # summed with no factor: the chain needs no array of units
        value = None
        for i, recipe in recipes:
            x = others[i].data if recipe is None else recipe.apply(others[i].data)
            value = x if value is None else prod_op(value, x)
        if not hasattr(value, "shape") or tuple(value.shape) != shape:
            unit = ops.new_full(proto, shape, float(ops.UNITS[prod_op]))
            value = unit if value is None else prod_op(unit, value)
        return value


@cached("chains.discrete_plan.fused", maxsize=512)
def _fused_plan(reduced_vars, others, chain_args) -> FusedPlan:
    return FusedPlan(reduced_vars, others, chain_args)


def contract_markov_tensor(red_op, bin_op, reduced_vars: frozenset, mp, others: list):
    """``Contraction(red_op, bin_op, reduced_vars, (mp, *others))`` for a discrete Markov
    product ``mp`` whose first prev or last curr states are summed out, with the factors of
    those states folded in as boundary vectors (see the module docstring).

    Returns ``(value, rest, remaining_vars)``: the chain with its boundaries, the factors that
    stay outside (batch-only factors, factors of other names) and what is left to reduce;
    or None when no boundary can be summed inside the chain.

    Example:
        >>> from interpretations import lazy
        >>> t = fc.Tensor(np.ones((4, 2, 2)), {"t": fc.Bint[4], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> with lazy:
        ...     mp = fc.MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"})
        >>> init = fc.Tensor(np.array([1.0, 0.0]), {"x": fc.Bint[2]})
        >>> value, rest, names = contract_markov_tensor(ops.add, ops.mul,
        ...                                             frozenset({"x", "y"}), mp, [init])
        >>> float(value.data), rest, names  # 2 ** 4 paths from x = 0
        (16.0, [], frozenset())
    """
    sum_op, prod_op = mp.sum_op, mp.prod_op
    if red_op is not sum_op or bin_op not in (None, prod_op) or not mp.step:
        return None
    factors, keep = tensor_factors(mp.trans, prod_op), None
    if factors is None:
        parts = masked_factors(mp.trans, sum_op, prod_op)
        if parts is None:
            return None
        factors, keep = parts
    if (sum_op, prod_op) not in ops.DISTRIBUTIVE_OPS or (
            (sum_op, prod_op) in ops.NONNEGATIVE_DISTRIBUTIVE_OPS
            and not distributes(sum_op, prod_op, (*factors, *others))):
        return None
    chain_args = (mp.time, mp.step, mp.step_names,
                  tuple(map(_signature, factors if keep is None else [*factors, keep])))
    plan = _fused_plan(reduced_vars, tuple(map(_signature, others)), chain_args)
    if not plan.ok:
        return None
    proto = _proto(factors)
    left = None if plan.left is None else plan.boundary(plan.left, others, prod_op, proto)
    right = None if plan.right is None else plan.boundary(plan.right, others, prod_op, proto)
    value = _run_chain(plan.chain, sum_op, prod_op, factors, mp.strategy, left, right, keep)
    return value, [others[i] for i in plan.rest], plan.remaining
