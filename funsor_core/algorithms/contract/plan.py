"""Contraction plans: the pairwise order in which to contract a product of factors, as data.

Planning (which pair to contract next) is structural: it depends on the names of each
factor's inputs, their sizes and the names kept, never on values. A plan is computed once per
structure with ``opt_einsum``'s path search ("auto": optimal for a few factors, greedy for
many), cached, and then executed any number of times:

- ``plan.run_arrays(sum_op, prod_op, arrays)`` contracts arrays with the semiring kernels of
  ``algorithms.kernels``: the exact rule's fast path for Tensors;
- ``plan.run_terms(red_op, bin_op, reduced_vars, terms)`` builds one pairwise ``Contraction``
  term per step through the interpreter, so that any interpretation sees each step (a tape
  records it, an optimizer rewrites with it, exact evaluates it).

Under ``jax.jit`` planning happens once, at trace time: shapes are static.

Example:
    >>> plan = plan_contraction((("i", "j"), ("j", "k"), ("k",)), {"i": 2, "j": 3, "k": 4},
    ...                         ("i",))
    >>> len(plan.steps), plan.output
    (2, ('i',))
    >>> a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones(4)
    >>> plan.run_arrays(ops.add, ops.mul, [a, b, c])
    array([12., 12.])
"""

from __future__ import annotations

import itertools
import math
import operator
import types
from collections import Counter
from collections.abc import Sequence

import opt_einsum

from funsor_core import ops
from funsor_core.algorithms.compiled.cost import BUDGETS, check_intermediate
from funsor_core.algorithms.contract.forest import FOREST_SEMIRINGS, plan_forest, run_forest
from funsor_core.algorithms.contract.kernels import (
    ascii_equation,
    log_pair_run,
    log_pair_spec,
    pair,
    reduce_dims,
)
from funsor_core.algorithms.contract.linear_space import run_log_plan, run_log_plan_traced
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import FastCache, cached
from funsor_core.terms.base import Funsor
from funsor_core.terms.contraction import Contraction

__all__ = ["ContractionPlan", "plan_contraction", "plan_tensors", "plan_terms",
           "contraction_cost", "step_costs", "STEP_COST"]

_MAX_PLANS = 1024
# Plans whose largest intermediate is below this many entries skip the memory check unless
# a ``memory_budget`` context is active (``compiled.cost``: free memory from 256 MiB).
_UNCHECKED_ENTRIES = 1 << 25
# Eager jax (arrays, or the tracers of an eager jax.grad) compiles every primitive once per
# new shape, and the level-batched forest's concatenations, gathers and scatters take new
# shapes with each new structure (and as many again for their derivatives): a plan of up to
# this many steps runs pairwise instead, whose small broadcasts repeat shapes across steps
# and models (NumPyro's test_elbo_enumerate_plates_7: 20 compilations fewer on a first call).
_EAGER_PAIRWISE_STEPS = 64


class _Shape:
    # opt_einsum plans from anything with a .shape.
    __slots__ = ("shape",)

    def __init__(self, shape: tuple) -> None:
        self.shape = shape


class ContractionPlan:
    """A pairwise contraction order for operands named by their dims.

    Attributes:
        operands: the dim names of each operand, in order (the structure it was planned for).
        output: the names the result keeps, in order.
        steps: ``(i, j, keep)`` per step: operands ``i`` and ``j`` of the current list are
            removed and their contraction, with dims ``keep``, is appended; ``j`` is ``None``
            for a step that reduces operand ``i`` alone.
        symbols: one character per name, for the array kernels.

    Example:
        >>> plan = plan_contraction((("a", "b"), ("b",)), {"a": 2, "b": 3}, ("a",))
        >>> plan.steps
        ((0, 1, ('a',)),)
    """

    __slots__ = ("operands", "output", "steps", "symbols", "sizes", "_letters", "_equations",
                 "_scaled", "_log_specs", "_forest", "_peak", "_peak_step")

    def __init__(self, operands: tuple, output: tuple, steps: tuple, symbols: dict,
                 sizes: dict | None = None) -> None:
        self.operands = operands
        self.output = output
        self.steps = steps
        self.symbols = symbols
        self.sizes = {} if sizes is None else dict(sizes)
        sym = symbols.__getitem__
        operand_letters = tuple("".join(map(sym, names)) for names in operands)
        letter_steps = tuple((i, j, "".join(map(sym, keep))) for i, j, keep in steps)
        self._letters = (operand_letters, letter_steps, "".join(map(sym, output)))
        self._peak = 0  # entries of the largest step result, and that step's letters
        self._peak_step = ""
        self._equations = self._step_equations(operand_letters, letter_steps)
        # Whether a log-semiring run goes through linear space (algorithms.scaled): for two
        # or more pairwise steps, one exp per operand instead of one logsumexp per step. (A
        # single step is left to kernels.pair, which picks broadcast or shifted einsum by
        # the step's shape.)
        self._scaled = sum(1 for _, j, _ in steps if j is not None) > 1
        self._log_specs = None  # per step, kernels.log_pair_spec: worked out on first use
        self._forest = False  # algorithms.contract.forest's level plan (None: not a forest)

    @property
    def forest(self):
        """The level-batched plan (``algorithms.contract.forest``) of this contraction, or
        None where it is not tree-shaped or batching by level saves no array calls.

        Example:
            >>> ops_ = (("a", "b"), ("a", "c"), ("a", "d"), ("b",), ("c",), ("d",))
            >>> plan_contraction(ops_, dict.fromkeys("abcd", 2), ()).forest
            ForestPlan(4 dims, 1 levels)
        """
        if self._forest is False:
            self._forest = plan_forest(self.operands, self.sizes, self.output)
        return self._forest

    def level_batched(self, sum_op, prod_op) -> bool:
        """Whether ``run_arrays`` contracts floating arrays in this semiring level by level
        (``algorithms.contract.forest``): a tree-shaped graph, a semiring with a batched
        kernel, and fewer array calls than one per step.

        Example:
            >>> star = [("r", c) for c in "abcdefghij"] + [(c,) for c in "rabcdefghij"]
            >>> plan = plan_contraction(star, dict.fromkeys("rabcdefghij", 2), ())
            >>> plan.level_batched(ops.logaddexp, ops.add), plan.level_batched(ops.add, ops.mul)
            (True, False)
        """
        if prod_op is not ops.add or sum_op not in FOREST_SEMIRINGS or len(self.operands) < 9:
            return False
        forest = self.forest
        return forest is not None and forest.pays(len(self.steps))

    def _log_step_specs(self) -> tuple:
        # The log-space steps that kernels.pair would compute by broadcasting, with their
        # letters worked out (None for the other steps, left to kernels.pair).
        size = {self.symbols[n]: k for n, k in self.sizes.items()}
        letters, specs = list(self._letters[0]), []
        for i, j, keep in self._letters[1]:
            if j is None:
                letters.pop(i)
                specs.append(None)
            else:
                lx, ly = letters[i], letters[j]
                for k in sorted((i, j), reverse=True):
                    del letters[k]
                known = all(c in size for c in lx + ly)
                specs.append(log_pair_spec(lx, ly, keep, size) if known else None)
            letters.append(keep)
        self._log_specs = tuple(specs)
        return self._log_specs

    def _step_equations(self, operand_letters, letter_steps) -> tuple:
        # Per step: its einsum equation re-lettered to ASCII (None for a one-operand step or
        # one of more than 52 dims) and the log of the number of terms it sums, computed
        # once here rather than on every run.
        size = {self.symbols[n]: max(k, 1) for n, k in self.sizes.items()}
        letters, out = list(operand_letters), []
        for i, j, keep in letter_steps:
            if j is None:
                lx = letters.pop(i)
                equation, union = None, lx
            else:
                lx, ly = letters[i], letters[j]
                for k in sorted((i, j), reverse=True):
                    del letters[k]
                union = lx + "".join(c for c in ly if c not in lx)
                equation = ascii_equation(union, lx, ly, keep)
            log_n = math.log(math.prod(size.get(c, 1) for c in union if c not in keep))
            out.append((equation, log_n))
            entries = math.prod(size.get(c, 1) for c in keep)
            if entries > self._peak:
                self._peak, self._peak_step = entries, union
            letters.append(keep)
        return tuple(out)

    def __repr__(self) -> str:
        return f"ContractionPlan({len(self.operands)} operands, {len(self.steps)} steps)"

    def run_arrays(self, sum_op, prod_op, arrays: Sequence):
        """Contract ``arrays`` (one per operand, dims in the planned order) in the semiring
        ``(sum_op, prod_op)``; the result has the dims of ``output``.

        Example:
            >>> plan = plan_contraction((("a",), ("a",)), {"a": 2}, ())
            >>> float(plan.run_arrays(ops.logaddexp, ops.add, [np.zeros(2), np.zeros(2)]))
            0.6931471805599453
        """
        if len(arrays) != len(self.operands):
            raise ValueError(f"this plan contracts {len(self.operands)} operands, got "
                             f"{len(arrays)}")
        if self._peak > _UNCHECKED_ENTRIES or BUDGETS:
            self.check_memory(getattr(getattr(arrays[0], "dtype", None), "itemsize", 8))
        if len(arrays) == 2 and sum_op is ops.logaddexp and prod_op is ops.add:
            # One log-space step (each step of a plated elimination): its precomputed
            # broadcast, where it has one and its dims come out in the output's order.
            spec = (self._log_specs or self._log_step_specs())[0]
            if spec is not None and self._letters[1][0][2] == self._letters[2]:
                return log_pair_run(spec, arrays[0], arrays[1])
        items = list(arrays)
        if (len(items) > 8 and self.level_batched(sum_op, prod_op) and ops.is_floating(items[0])
                and not (len(self.steps) <= _EAGER_PAIRWISE_STEPS and _compiles_now(items[0]))):
            # A tree-shaped graph: a few batched calls per level instead of one per step.
            return run_forest(self._forest, sum_op, items)
        if sum_op is ops.logaddexp and prod_op is ops.add and self._scaled:
            # Linear space with tracked scales when the dtype's range provably holds it
            # (algorithms.contract.linear_space); else the exact log-space kernel at every
            # step. Under jax.jit, where some step is too large to broadcast, the same choice
            # by a traced bound and backend.cond.
            if all(map(ops.is_concrete, items)):
                result = run_log_plan(self, items)
            elif self._has_large_log_step():
                result = run_log_plan_traced(
                    self, items, lambda xs: self._run_steps(sum_op, prod_op, xs))
            else:
                result = None
            if result is not None:
                return result
        return self._run_steps(sum_op, prod_op, items)

    def pair_log_spec(self) -> tuple | None:
        """``(spec, shapes)`` of the one step by which ``run_arrays`` contracts two operands in
        the log semiring through ``log_pair_run`` (this plan being one step whose dims come
        out in the output's order): ``log_pair_spec``'s spec, and per operand the shape that
        its index of size-1 dims gives it (None: no index); None where ``run_arrays`` takes
        another route. For callers that repeat that step.

        Example:
            >>> plan = plan_contraction((("a",), ("a", "b")), {"a": 2, "b": 3}, ("b",))
            >>> plan.pair_log_spec()[1]  # the step broadcasts over (a, b), as ("a", "b") is
            ((2, 1), None)
        """
        if (len(self.operands) != 2 or self._peak > _UNCHECKED_ENTRIES
                or self.steps[0][:2] != (0, 1)):
            return None
        spec = (self._log_specs or self._log_step_specs())[0]
        if spec is None or self._letters[1][0][2] != self._letters[2]:
            return None
        size = {self.symbols[n]: k for n, k in self.sizes.items()}
        shapes = tuple(_indexed_shape(letters, perm, index, size)
                       for letters, (perm, index) in zip(self._letters[0], spec[:2]))
        return spec, shapes

    def check_memory(self, itemsize: int = 8) -> None:
        """Raise ``MemoryBudgetError`` (naming the largest step's names) when the largest
        intermediate of this plan is over the memory budget (``fc.memory_budget``, else the
        free memory): ``run_arrays`` asks before contracting anything.

        Example:
            >>> plan = plan_contraction((("i", "j"), ("j", "k")), {"i": 64, "j": 2, "k": 64},
            ...                         ("i", "k"))
            >>> try:
            ...     with fc.memory_budget(1024):
            ...         plan.check_memory()
            ... except fc.MemoryBudgetError as e:
            ...     print(str(e)[:31])
            this elimination needs 32.0 KiB
        """
        names = {v: k for k, v in self.symbols.items()}
        cluster = {names[c]: self.sizes.get(names[c], 1) for c in self._peak_step}
        check_intermediate(self._peak, cluster, itemsize)

    def _has_large_log_step(self) -> bool:
        # A pairwise step that sums something (log n > 0) and that kernels.pair would not
        # compute by one small broadcast. A step that sums nothing is one broadcast add (no
        # logsumexp): linear space would not make it cheaper, and its traced range check
        # and cond cost more than the plan, e.g. a fresh XLA compile per shape under eager
        # jax.grad. Structural only: the same answer eagerly and under jax.jit.
        specs = self._log_specs or self._log_step_specs()
        return any(spec is None and j is not None and log_n > 0.0
                   for spec, (_, j, _), (_, log_n) in zip(specs, self._letters[1],
                                                          self._equations))

    def _run_steps(self, sum_op, prod_op, items: list):
        # The plan's steps, each by the semiring's pairwise kernel.
        operand_letters, steps, output = self._letters
        letters, items = list(operand_letters), list(items)
        log = sum_op is ops.logaddexp and prod_op is ops.add
        specs = (self._log_specs or self._log_step_specs()) if log else (None,) * len(steps)
        for (i, j, keep), (equation, _), spec in zip(steps, self._equations, specs):
            if j is None:
                lx, x = letters.pop(i), items.pop(i)
                items.append(reduce_dims(x, lx, keep, sum_op))
            else:
                lx, x = letters[i], items[i]
                ly, y = letters[j], items[j]
                for k in sorted((i, j), reverse=True):
                    del letters[k], items[k]
                if spec is not None:
                    items.append(log_pair_run(spec, x, y))
                else:
                    items.append(pair(sum_op, prod_op, x, lx, y, ly, keep, equation))
            letters.append(keep)
        return reduce_dims(items[0], letters[0], output, sum_op)  # (identity when in order)

    def run_terms(self, red_op, bin_op, reduced_vars: frozenset, terms: Sequence) -> Funsor:
        """Build the contraction step by step as terms: one ``Contraction`` of two terms per
        step, each through the active interpretation.

        ``terms[k]`` must have the inputs ``operands[k]`` (in any order); the names of
        ``reduced_vars`` are reduced by ``red_op`` at the first step after which no other
        term uses them.

        Example:
            >>> x = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
            >>> y = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
            >>> plan = plan_terms((x, y), frozenset("j"))
            >>> plan.run_terms(ops.add, ops.mul, frozenset("j"), (x, y)).data
            array([3., 3.])
        """
        items = list(terms)
        names = [frozenset(t.inputs) for t in items]
        for i, j, keep in self.steps:
            keep = frozenset(keep)
            if j is None:
                x = items.pop(i)
                gone = names.pop(i) - keep
                items.append(x.reduce(red_op, gone & reduced_vars) if gone else x)
            else:
                x, y = items[i], items[j]
                gone = (names[i] | names[j]) - keep
                for k in sorted((i, j), reverse=True):
                    del items[k], names[k]
                elim = gone & reduced_vars
                items.append(Contraction(red_op if elim else None, bin_op, elim, (x, y)))
            names.append(keep)
        result = items[0]
        rest = reduced_vars.intersection(result.inputs)
        return result.reduce(red_op, rest) if rest else result


def _compiles_now(x) -> bool:
    # An op on x runs now and is compiled per new shape (eager jax); never under jax.jit.
    backend = backend_of(x)
    return backend.COMPILES and backend.value_known(x)


def _indexed_shape(letters: str, perm, index, size: dict) -> tuple | None:
    # The shape of an operand of dims ``letters`` permuted by ``perm`` and indexed by ``index``
    # (``kernels.log_pair_spec``'s ``None`` entries insert size-1 dims).
    if index is None:
        return None
    dims = iter(size[letters[k]] for k in (range(len(letters)) if perm is None else perm))
    return tuple(1 if i is None else next(dims) for i in index)


def plan_contraction(operands: Sequence[Sequence[str]], sizes: dict,
                     output: Sequence[str]) -> ContractionPlan:
    """The pairwise plan contracting operands with these dim names to the names ``output``.

    Cached by structure (names, sizes, output), so a same-shaped problem plans once.

    Args:
        operands: the dim names of each operand.
        sizes: the size of every name (cost estimates only; any positive number).
        output: the names kept, in the order the result has them.

    Example:
        >>> p = plan_contraction([["a", "b"], ["b", "c"]], {"a": 2, "b": 3, "c": 4}, ["a", "c"])
        >>> p is plan_contraction([["a", "b"], ["b", "c"]], {"a": 2, "b": 3, "c": 4}, ["a", "c"])
        True
    """
    operands = tuple(map(tuple, operands))
    output = tuple(output)
    used = dict.fromkeys(itertools.chain.from_iterable(operands))
    key_sizes = tuple(zip(used, map(sizes.__getitem__, used)))
    return _plan(operands, key_sizes, output)


@cached("contract.plans", maxsize=_MAX_PLANS, fast=True)
def _plan(operands: tuple, sizes: tuple, output: tuple) -> ContractionPlan:
    missing = set(output).difference(*map(set, operands)) if operands else set(output)
    if missing:
        raise ValueError(f"contraction output names {sorted(missing)} are not dims of any "
                         "operand")
    size = dict(sizes)
    symbols = {n: opt_einsum.get_symbol(k) for k, n in enumerate(size)}
    if len(operands) <= 2:
        path = [(0, 1)] if len(operands) == 2 else [(0,)]
    else:
        sym = symbols.__getitem__
        eq = ",".join("".join(map(sym, names)) for names in operands) + "->" + "".join(
            map(sym, output))
        # opt_einsum's cost model needs sizes >= 1; a dim of size 0 contracts to nothing.
        shapes = [_Shape(tuple(max(size[n], 1) for n in names)) for names in operands]
        path, _ = opt_einsum.contract_path(eq, *shapes, shapes=False, optimize="auto")
    # Track operands by identity: opt_einsum's positions index the current list, from which a
    # step removes its operands and to which it appends its result. ``count`` holds how many
    # current operands have each name, so a step's kept names cost its own names, not a scan
    # of every operand (a 1,000-step chain's plan was quadratic).
    current = list(enumerate(operands))
    count = Counter(n for names in operands for n in set(names))
    fresh = len(operands)
    steps = []
    out_set = set(output)
    for step in path:
        uids = [current[p][0] for p in step]
        first = True
        # A step of k > 2 operands (rare) becomes k - 1 pairwise steps.
        while uids:
            if first:
                pos = sorted(step[:2])
            else:
                pos = [k for k, (uid, _) in enumerate(current) if uid in uids[:2]]
            first = False
            names = [current[k][1] for k in pos]
            for ns in names:
                count.subtract(set(ns))
            union = tuple(dict.fromkeys(n for ns in names for n in ns))
            keep = tuple(n for n in union if n in out_set or count[n] > 0)
            steps.append((pos[0], pos[1] if len(pos) > 1 else None, keep))
            for k in reversed(pos):
                del current[k]
            current.append((fresh, keep))
            count.update(set(keep))
            uids = [fresh] + uids[2:] if len(uids) > 2 else []
            fresh += 1
    return ContractionPlan(operands, output, tuple(steps), symbols, size)


def plan_tensors(ikeys: tuple, reduced_vars: frozenset) -> tuple:
    """``(plan, out_ikey)`` for contracting scalar Tensors with inputs ``ikeys`` (each a tuple
    of ``(name, Bint domain)`` pairs, in data order) over ``reduced_vars``: the plan, and the
    inputs of the result (the kept names, in first-seen order).

    Depends on the structure only, so it is cached by it: a same-shaped contraction pays one
    dict lookup.

    Example:
        >>> ij = (("i", fc.Bint[2]), ("j", fc.Bint[3]))
        >>> plan, out = plan_tensors((ij, ij[1:]), frozenset("j"))
        >>> plan.run_arrays(ops.add, ops.mul, [np.ones((2, 3)), np.ones(3)]), out
        (array([3., 3.]), (('i', Bint[2]),))
    """
    key = (ikeys, reduced_vars)
    entry = _TENSOR_PLANS.data.get(key)
    if entry is None:
        domains: dict = {}
        for ikey in ikeys:
            domains.update(ikey)
        out_names = tuple(n for n in domains if n not in reduced_vars)
        sizes = {n: d.size for n, d in domains.items()}
        plan = plan_contraction([tuple(n for n, _ in ikey) for ikey in ikeys], sizes, out_names)
        entry = _TENSOR_PLANS.put(key, (plan, tuple((n, domains[n]) for n in out_names)))
    return entry


# Plans of Tensor contractions by (inputs of each factor, names reduced): on the eager path.
_TENSOR_PLANS = FastCache("contract.tensor_plans", maxsize=4096)


# Plans of many terms that keep their inputs as interned key tuples (Tensors, Gaussians), by
# (the key tuples, names reduced): a 2,000-term Contraction that recurs (``apply_optimizer``
# of a model built per call) plans in one lookup instead of merging 2,000 input dicts.
_TERM_PLANS = FastCache("contract.term_plans", maxsize=256)
_IKEY, _SLOT = operator.attrgetter("_ikey"), types.MemberDescriptorType


def plan_terms(terms: Sequence[Funsor], reduced_vars: frozenset) -> ContractionPlan:
    """The plan contracting ``terms`` (any atoms) over the names ``reduced_vars``.

    Bint inputs count with their size; a real input counts as one more than its number of
    elements (Gaussian steps cost about the cube of their real dimension).

    Example:
        >>> x = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> plan_terms((x, x), frozenset("j")).output
        ('i',)
    """
    if len(terms) > 8:
        kinds = set(map(type, terms))
        if len(kinds) == 1 and type(getattr(kinds.pop(), "_ikey", None)) is _SLOT:
            # The plan depends on the inputs only, and they are ``dict(_ikey)``.
            key = (tuple(map(_IKEY, terms)), reduced_vars)
            plan = _TERM_PLANS.data.get(key)
            if plan is None:
                plan = _TERM_PLANS.put(key, _plan_terms(terms, reduced_vars))
            return plan
    return _plan_terms(terms, reduced_vars)


def _plan_terms(terms: Sequence[Funsor], reduced_vars: frozenset) -> ContractionPlan:
    all_inputs = [t.inputs for t in terms]
    merged: dict = {}
    for inputs in all_inputs:  # (C-level passes: a 2,000-term Contraction plans per call)
        merged.update(inputs)
    costs = {d: d.size if d.dtype != "real" else math.prod(d.shape) + 1
             for d in set(merged.values())}
    sizes = {name: costs[d] for name, d in merged.items()}
    output = tuple(n for n in sizes if n not in reduced_vars)
    return plan_contraction(tuple(map(tuple, all_inputs)), sizes, output)


def contraction_cost(plan: ContractionPlan, sizes: dict) -> int:
    """The number of elements the steps of ``plan`` broadcast over (a cost estimate).

    Example:
        >>> plan = plan_contraction((("a", "b"), ("b", "c")), {"a": 2, "b": 3, "c": 4}, ("a",))
        >>> contraction_cost(plan, {"a": 2, "b": 3, "c": 4})
        24
    """
    current = [tuple(names) for names in plan.operands]
    total = 0
    for i, j, keep in plan.steps:
        if j is None:
            total += math.prod(sizes[n] for n in current[i])
            del current[i]
        else:
            union = set(current[i]) | set(current[j])
            total += math.prod(sizes[n] for n in union)
            for k in sorted((i, j), reverse=True):
                del current[k]
        current.append(keep)
    return total



# The fixed cost of one pairwise step built as a term (interpreter, rule, array calls), in the
# units of ``step_costs``: one multiply-add of a dense factorization. Measured on Gaussian
# chains (2026-11, numpy, one core): a pairwise Gaussian step costs about 0.5 ms whatever its
# size, a dense factorization about 3 ns per unit, so a chain of scalar Gaussians is cheaper
# contracted as one joint factor up to about 400 steps and pairwise beyond.
STEP_COST = 1.5e5


def step_costs(terms: Sequence[Funsor], plan: ContractionPlan) -> tuple:
    """``(joint, planned)``: estimated costs of contracting ``terms`` as one joint factor and
    along ``plan`` (which must be planned for these terms), each step costing ``STEP_COST``
    plus ``B * n**3`` for a factor of ``B`` Bint assignments over ``n`` real coordinates
    (``B`` alone when it has no real input): the factorization a Gaussian marginal needs.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> terms = (g, g(x="y"), g(x="z"))
        >>> joint, planned = step_costs(terms, plan_terms(terms, frozenset("xyz")))
        >>> joint < planned  # three scalar Gaussians: cheaper as one
        True
    """
    domains: dict = {}
    for t in terms:
        domains.update(t.inputs)

    def cost(names) -> float:
        batch, real = 1.0, 0
        for n in names:
            d = domains[n]
            if d.dtype == "real":
                real += math.prod(d.shape)
            else:
                batch *= d.size
        return STEP_COST + batch * max(real, 1) ** 3

    current = [frozenset(names) for names in plan.operands]
    planned = 0.0
    for i, j, keep in plan.steps:
        union = current[i] if j is None else current[i] | current[j]
        planned += cost(union)
        for k in sorted((i,) if j is None else (i, j), reverse=True):
            del current[k]
        current.append(frozenset(keep))
    return cost(domains), planned
