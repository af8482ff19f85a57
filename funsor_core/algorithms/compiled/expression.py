"""Compile once, run many: a lazy sum-product expression with free parameters becomes a
``Program`` of array calls.

An expression such as ``sum_product(ops.logaddexp, ops.add, factors, eliminate)`` built
under ``lazy`` is a ``Contraction`` whose terms are constant Tensors and parameters indexed
by discrete names (``Variable("f", Reals[2, 3])["u", "x"]``). ``compile(expr)`` reads its
structure once, plans it (cached by structure: a second expression of the same structure
reuses the plan) and returns a program that takes the parameters' arrays by name and runs
only array calls: no term is built, no rule fires (``program.runs`` counts runs). It runs
batched (a discrete name that is not eliminated, e.g. an evidence batch, is a kept axis),
under ``jax.jit``, and differentiates on torch and jax. A plated ``sum_product`` compiles
too: each plate's product ``Reduce(prod_op, inner, plates)`` is a sub-program of ``inner``
keeping the plates as batch dims, reduced over them inside the program (nested plates
nest). A ``MarkovProduct`` of one parameter over ``(time, prev, curr)`` is one call to the
chain kernel (``algorithms.chains``); other Markov products raise NotImplementedError.

Example:
    >>> from interpretations.lazy import lazy
    >>> f = fc.Variable("f", fc.Reals[2])["x"]
    >>> g = fc.Variable("g", fc.Reals[2, 3])["x", "y"]
    >>> with lazy:
    ...     expr = fc.sum_product(ops.add, ops.mul, [f, g], frozenset({"x", "y"}))
    >>> program = compile(expr)
    >>> float(program(f=np.array([0.5, 0.5]), g=np.ones((2, 3))))
    3.0
"""

from __future__ import annotations

import math
import numbers
import weakref

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.discrete import chain_product
from funsor_core.algorithms.compiled.cost import check_budget
from funsor_core.algorithms.compiled.functional import (
    FunctionalError,
    row_flags,
    table_is_functional,
)
from funsor_core.algorithms.compiled.functional import functional as declare
from funsor_core.algorithms.compiled.gradients import may_differentiate, run_model_gradient
from funsor_core.algorithms.compiled.lowering import SEMIRINGS
from funsor_core.algorithms.compiled.program import Plan, _semiring, plan_structure
from funsor_core.atoms.tensor import Tensor
from funsor_core.atoms.tensor_idioms import Getitem
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_of
from funsor_core.ops.op import is_array_type
from funsor_core.terms.base import Binary, Funsor, Number, Reduce, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.traversal import reinterpret

__all__ = ["Program", "compile", "cost", "extract_elimination"]

_UNSUPPORTED = ("compile(): cannot compile {what}. Compiled elimination takes a sum-product "
                "of factors over discrete names in the semirings (add, mul) or (logaddexp, "
                "add): each factor a Tensor, a scalar parameter Variable, or a parameter "
                "indexed by discrete names, Variable('f', Reals[2, 3])['u', 'x']. "
                "{hint}")


_MARKOV_HINT = ("Other Markov products are not compiled yet (issue 30): build the chain "
                "under lazy with a parameter over time, fc.sequential_sum_product(..., "
                "Variable('t', Reals[T, K, K])['time', 'prev', 'curr'], 'time', {'prev': "
                "'curr'}), which unrolls into steps that compile, or evaluate it with "
                "fc.sum_product.")


def _unsupported(what: str, hint: str = "") -> NotImplementedError:
    return NotImplementedError(_UNSUPPORTED.format(what=what, hint=hint))


def _semiring_of(expr: Funsor):
    # The (sum_op, prod_op) of the outermost reduction (or product) of the expression. A
    # Reduce by ops.add is a sum in linear space or a plate's product in log space: look
    # inside it for a reduction that tells; one by ops.mul is a plate's product in linear.
    stack = [expr]
    while stack:
        t = stack.pop()
        if isinstance(t, Contraction) and t.red_op is not None and t.reduced_vars:
            return t.red_op, t.bin_op
        if isinstance(t, Reduce) and t.op in (ops.add, ops.mul):
            if t.op is ops.mul:
                return ops.add, ops.mul
            stack.append(t.arg)
        elif isinstance(t, Reduce):
            sum_op = t.op
            prod = next((p for s, p in SEMIRINGS if s is sum_op), None)
            return sum_op, prod
        if isinstance(t, Contraction):
            stack.extend(t.terms)
        elif isinstance(t, Binary):
            stack.extend((t.lhs, t.rhs))
    if isinstance(expr, (Binary, Contraction)):
        op = expr.op if isinstance(expr, Binary) else expr.bin_op
        return next(((s, p) for s, p in SEMIRINGS if p is op), (None, op))
    return ops.add, ops.mul


def _collect(expr: Funsor, sum_op, prod_op):
    # Flatten nested products and reductions of one semiring: the terms, the names reduced
    # anywhere, and per nested reduction its names and the range of terms it covers.
    terms, reduced, scopes = [], set(), []
    stack = [(expr, None)]
    while stack:
        t, mark = stack.pop()
        if mark is not None:  # the end of a nested reduction: its terms are [start, now)
            scopes.append((mark[0], mark[1], len(terms)))
            continue
        names = frozenset()
        if isinstance(t, Contraction) and t.bin_op is prod_op and \
                (not t.reduced_vars or t.red_op is sum_op):
            names, children = t.reduced_vars, t.terms
        elif isinstance(t, Reduce) and t.op is sum_op:
            names, children = t.reduced_vars, (t.arg,)
        elif isinstance(t, Binary) and t.op is prod_op:
            children = (t.lhs, t.rhs)
        else:
            terms.append(t)
            continue
        names = frozenset(n.name if isinstance(n, Variable) else n for n in names)
        if names:
            reduced |= names
            stack.append((None, (names, len(terms))))
        stack.extend((c, None) for c in reversed(children))
    return terms, frozenset(reduced), scopes


def extract_elimination(expr: Funsor, semiring: tuple | None = None):
    """``(sum_op, prod_op, reduced_vars, terms)`` of a lazy sum-product expression (nested
    products and reductions of one semiring flattened, as ``sum_product`` nests them per
    connected component; a plate's product, ``Reduce(prod_op, ...)``, stays one term).

    Example:
        >>> t = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> extract_elimination(t)[3] == (t,)
        True
    """
    sum_op, prod_op = _semiring_of(expr) if semiring is None else semiring
    if (sum_op, prod_op) not in SEMIRINGS:
        what = (f"a reduction by {sum_op} of a product by {prod_op}" if sum_op and prod_op
                else f"a reduction by {sum_op}" if sum_op else f"a product by {prod_op}")
        raise _unsupported(what, "Evaluate other semirings (max-product, MAP) without "
                           "compiling: fc.reinterpret(expr), or fc.sum_product eagerly.")
    terms, reduced, scopes = _collect(expr, sum_op, prod_op)
    for names, start, stop in scopes:  # a bound name reused outside its reduction: refuse
        outside = [t for k, t in enumerate(terms) if not start <= k < stop]
        clash = names & frozenset(n for t in outside for n in t.inputs)
        if clash:
            raise _unsupported(f"{expr}: the reduced names {sorted(clash)} are also used "
                               "outside their reduction", "Rename the bound names apart.")
    return sum_op, prod_op, reduced, tuple(terms)


def _leaf(term: Funsor):
    """``(kind, value, names, sizes)``: a constant Tensor, or a parameter and its indices."""
    if not isinstance(term, (Tensor, Getitem, Variable)) and all(
            d.dtype != "real" for d in term.inputs.values()):
        # A ground subterm (``t.log()`` recorded under ``lazy``) is a constant: evaluate it
        # once, under the interpretation active at compile time.
        term = reinterpret(term)
    if isinstance(term, Tensor):
        if term.output.shape:
            raise _unsupported(f"a Tensor of output {term.output}")
        names = tuple(term.inputs)
        return "const", term.data, names, {n: term.inputs[n].size for n in names}
    if isinstance(term, MarkovProduct):
        return _markov_leaf(term)
    # Indices from the outside in: a name, or a constant (a lazily unrolled chain's step
    # ``t[3, "prev", "curr"]``), taken as a static slice of the parameter when it runs.
    index, t = [], term
    while isinstance(t, Getitem):
        if t.offset != 0 or not isinstance(t.index, (Variable, Number)):
            raise _unsupported(f"the index {t.index} of {term}")
        index.insert(0, t.index.name if isinstance(t.index, Variable) else int(t.index.data))
        t = t.arg
    if not isinstance(t, Variable) or t.output.dtype != "real":
        raise _unsupported(f"the term {term}")
    if len(t.output.shape) != len(index):
        raise _unsupported(f"{term}: a parameter must be indexed down to a scalar")
    names = tuple(i for i in index if isinstance(i, str))
    sizes = {i: s for i, s in zip(index, t.output.shape) if isinstance(i, str)}
    if len(names) == len(index):
        return "param", t.name, names, sizes
    at = tuple(slice(None) if isinstance(i, str) else i for i in index)
    return "param_at", (t.name, at), names, sizes


def _markov_leaf(term: MarkovProduct):
    # A MarkovProduct of a parameter over (time, prev, curr): one call to the chain kernel
    # of ``algorithms.chains`` when the program runs, a factor over the free step names.
    try:
        kind, name, names, sizes = _leaf(term.trans)
    except NotImplementedError:  # a sum (transition + emission) or a constant: no leaf
        kind = names = None
    (prev, curr), (free_prev, free_curr) = term.step[0], term.step_names[0]
    time = term.time.name
    if kind != "param" or len(term.step) != 1 or set(names) != {time, prev, curr}:
        raise _unsupported(f"{term}", "A Markov product compiles when its transition is one "
                           "parameter indexed by exactly (time, prev, curr). " + _MARKOV_HINT)
    perm = tuple(names.index(n) for n in (time, prev, curr))
    strategy = "sequential" if term.strategy == "sequential" else "parallel"
    value = (name, None if perm == (0, 1, 2) else perm, term.sum_op, term.prod_op, strategy)
    return "markov", value, (free_prev, free_curr), {free_prev: sizes[prev],
                                                      free_curr: sizes[curr]}


class Program:
    """A compiled elimination: call it with the arrays of its parameters by name.

    Attributes:
        inputs: the parameter names it takes.
        output: the names of the result's dims, in order.
        plan: the ``Plan`` it runs (``plan.stats()`` for its costs).
        runs: how many times it ran.

    Example:
        >>> from interpretations.lazy import lazy
        >>> f = fc.Variable("f", fc.Reals[2, 3])["i", "j"]
        >>> with lazy:
        ...     prog = compile(f.reduce(ops.add, "j"))
        >>> prog.inputs, prog.output
        (('f',), ('i',))
        >>> data = np.arange(6.0).reshape(2, 3)
        >>> prog(f=data), data.sum(1)
        (array([ 3., 12.]), array([ 3., 12.]))
    """

    def __init__(self, plan: Plan, leaves: tuple, log: bool) -> None:
        self.plan = plan
        self.log = log
        self._leaves = leaves
        names = []
        for kind, v in leaves:
            if kind == "param":
                names.append(v)
            elif kind in ("param_at", "markov"):
                names.append(v[0])
            elif kind == "plate":
                names.extend(v[0].inputs)
        self.inputs = tuple(dict.fromkeys(names))
        self.output = plan.output
        self.runs = 0
        self.domains = {}  # parameter name -> domain, set by ``compile`` for the checks
        # Per declared functional slot whose table arrives at run time: (slot, axis of the
        # name it gives, that name); the stamps of the arrays last found functional there.
        self._slots = tuple((k, plan.scopes[k].index(out), out,
                             math.prod(plan.sizes[n] for n in plan.scopes[k] if n != out))
                            for k, (out, (kind, _)) in enumerate(zip(plan.functional, leaves))
                            if out is not None and kind != "const")
        self._seen = {}
        # Every declared slot: differentiating the replicated plan would give the gradient of
        # the replicas' product, not the model's (``gradients.py`` routes it to the model).
        self._declared = tuple(k for k, out in enumerate(plan.functional) if out is not None)

    def __call__(self, **params):
        missing = set(self.inputs) - set(params)
        if missing:
            unknown = sorted(set(params) - set(self.inputs))
            raise ValueError(f"this program needs the parameters {sorted(missing)}"
                             + (f"; unknown: {unknown}" if unknown else ""))
        for name, value in params.items():
            if isinstance(value, Funsor):
                raise TypeError(f"parameter {name!r} is a funsor ({type(value).__name__} over "
                                f"{dict(value.inputs)}); a program takes arrays: pass its "
                                f"array, e.g. {name}=t.data")
        proto = self._check(params) if self.domains else None
        self.runs += 1
        arrays = [params[v] if kind == "param" else v if kind == "const" and proto is None
                  else ops.new_array(proto, v) if kind == "const"
                  else params[v[0]][v[1]] if kind == "param_at"
                  else self._markov(v, params) if kind == "markov"
                  else self._plate(v, params) for kind, v in self._leaves]
        ok = self._check_functional(arrays) if self._slots else None
        if self._declared and may_differentiate(arrays, self._declared):
            data = run_model_gradient(self.plan, arrays, self.log, self._declared,
                                      self._names(self._declared))
        else:
            data = self.plan.run_arrays(arrays, self.log)
        return data if ok is None else ops.where(ok, data, float("nan"))

    def _check_functional(self, arrays: list):
        # The jointree replicates a declared factor and sums its name out of one side first:
        # exact only for a 0/1 function table. A concrete table that is not one is refused,
        # naming the parameter; a traced one (under jax.jit) cannot be refused, so the answer
        # is NaN unless it is one (never a wrong number). A table found functional is not
        # read again while the very same array is passed unchanged (see ``_stamp``).
        traced = {}  # out's size -> traced tables as (rows, size) matrices
        staged = []
        for k, axis, out, rows in self._slots:
            x, seen = arrays[k], self._seen.get(k)
            if seen is not None and seen[0]() is x and seen[1] == getattr(x, "_version", None):
                continue
            if not (isinstance(x, np.ndarray) or ops.is_concrete(x)):
                if axis != len(x.shape) - 1:
                    x = ops.permute(x, tuple(i for i in range(len(x.shape)) if i != axis)
                                    + (axis,))
                traced.setdefault(x.shape[-1], []).append(ops.reshape(x, (rows, x.shape[-1])))
                continue
            ok = table_is_functional(x, axis, self.log, rows)
            if not isinstance(ok, (bool, np.bool_)) and not ops.is_concrete(ok):
                # a concrete jax array closed over inside jax.jit: its check is staged too
                staged.append(ok)
                continue
            if not ok:
                raise self._not_functional(k, out, x)
            stamp = _stamp(x) if self._leaves[k][0] == "param" else None
            if stamp is not None:
                self._seen[k] = stamp
        # Traced: the tables' rows stacked by length, one check per length (a compiler's
        # fusion each; one per table cost ~1.5 us each under jax.jit on CPU).
        flags = [ops.all(row_flags(ms[0] if len(ms) == 1 else ops.cat(ms, 0), 1, self.log))
                 for ms in traced.values()] + staged
        flag = flags[0] if flags else None
        for f in flags[1:]:
            flag = ops.and_(flag, f)
        return flag

    def _names(self, slots) -> tuple:
        # The parameter (or plate product) behind each slot, for messages.
        return tuple(value if kind == "param" else value[0] if kind in ("param_at", "markov")
                     else "constant" if kind == "const"
                     else f"the plate product over {value[0].inputs}"
                     for kind, value in (self._leaves[k] for k in slots))

    def _not_functional(self, k: int, out: str, x) -> FunctionalError:
        # The message of ``functional()`` on the table (the first bad parent assignment),
        # prefixed with the parameter that carried it.
        (name,) = self._names((k,))
        names = self.plan.scopes[k]
        table = Tensor(ops.detach(x) if hasattr(x, "detach") else x,
                       {n: Bint[self.plan.sizes[n]] for n in names})
        try:
            declare(table, out, log=self.log)
        except FunctionalError as err:
            return FunctionalError(f"parameter {name!r}, declared by compile(functional="
                                   f"{{{out!r}: ...}}) to give {out!r}: {err}")
        return FunctionalError(f"parameter {name!r}, declared by compile(functional="
                               f"{{{out!r}: ...}}) to give {out!r}, is not a 0/1 function "
                               f"table over {dict(table.inputs)}")

    def _check(self, params: dict):
        # A wrong shape or a torch array against numpy/jax constants would otherwise fail deep
        # in an array call (a reshape, a matmul) without naming the parameter. Returns a jax
        # parameter when the constants are numpy arrays: they become jax arrays (no autograd
        # is lost), so a program compiled on numpy runs under jax.jit and jax.vmap too.
        extra = set(params) - set(self.inputs)
        if extra:
            raise ValueError(f"this program takes the parameters {list(self.inputs)}; "
                             f"unknown: {sorted(extra)}")
        consts = {backend_of(v) for kind, v in self._leaves
                  if kind == "const" and is_array_type(type(v))}
        proto = None
        for name, domain in self.domains.items():
            value = params[name]
            if not (is_array_type(type(value)) or isinstance(value, numbers.Number)):
                # A list passed the shape test (np.shape reads it) and then failed in a
                # kernel ("ops.reshape has no kernel for ... list") without naming it.
                raise TypeError(f"parameter {name!r} is a {type(value).__name__}; a program "
                                f"takes arrays (numpy, torch or jax) or numbers: pass "
                                f"np.asarray({name})")
            shape = tuple(np.shape(value)) if not hasattr(value, "shape") else tuple(value.shape)
            if shape != tuple(domain.shape):
                raise ValueError(f"parameter {name!r} is {domain}, shape {tuple(domain.shape)}; "
                                 f"got an array of shape {shape}")
            if len(consts) != 1 or not is_array_type(type(value)) or isinstance(value, np.generic):
                continue
            mine = backend_of(value)
            if consts == {mine}:
                continue
            (const,) = consts
            if not const.DIFFERENTIABLE and mine.COMPILES:
                proto = value  # constants without autodiff, into a compiling backend: no loss
            elif not (not mine.DIFFERENTIABLE and const.COMPILES):  # which reads them as is
                raise TypeError(f"parameter {name!r} holds {mine.NAME} arrays and the "
                                f"program's constant factors hold {const.NAME} arrays; "
                                "nothing is converted silently: pass arrays of the "
                                "constants' backend")
        return proto

    @staticmethod
    def _markov(value, params):
        name, perm, sum_op, prod_op, strategy = value
        x = params[name] if perm is None else ops.permute(params[name], perm)
        return chain_product(sum_op, prod_op, (x,), strategy)

    def _plate(self, sub, params):
        # A plate's product: its program keeps the plate names as batch dims, then one
        # reduction over them (a sum of logs in log space).
        program, axes = sub
        x = program(**params)
        return ops.sum(x, axes) if self.log else ops.prod(x, axes)

    def stats(self) -> dict:
        return self.plan.stats()

    def programs(self):
        """This program, then the sub-programs of its plates (depth first)."""
        yield self
        for kind, v in self._leaves:
            if kind == "plate":
                yield from v[0].programs()

    def __repr__(self) -> str:
        return f"Program(inputs={self.inputs}, output={self.output}, {self.plan!r})"


def _stamp(x):
    # (weak reference, torch's in-place version) of an array that cannot change unseen:
    # jax arrays are immutable, torch counts in-place writes, and a numpy array only when it
    # and every array it views are read-only (a read-only view of a writeable array can
    # change). None for anything else: it is checked on every call.
    if isinstance(x, np.ndarray):
        base = x
        while isinstance(base, np.ndarray):
            if base.flags.writeable:
                return None
            base = base.base
        if base is not None and not isinstance(base, bytes):
            return None
    elif not (hasattr(x, "_version") or type(x).__module__.startswith("jax")):
        return None
    try:
        return weakref.ref(x), getattr(x, "_version", None)
    except TypeError:
        return None


def _declare(functional: dict | None, log: bool) -> dict:
    # {id(term): name} of the declared functional factors; Tensor tables checked once here.
    declared = {}
    for out, term in (functional or {}).items():
        declare(term, out, log=log)  # out must be its input; Tensor tables checked here
        declared[id(term)] = out
    return declared


def _plate_leaf(term: Reduce, declared: dict, method: str, semiring: tuple, found: set):
    # ``Reduce(prod_op, inner, plates)``: ``inner`` compiled with the plates kept (a batch
    # dim each), the product over them done in the program; a leaf over the other names.
    plates = frozenset(n.name if isinstance(n, Variable) else n for n in term.reduced_vars)
    sub = _build(term.arg, declared, method, semiring, found)
    missing = plates - frozenset(sub.output)
    if missing:
        raise _unsupported(f"{term}: the plates {sorted(missing)} index no factor")
    axes = tuple(i for i, n in enumerate(sub.output) if n in plates)
    names = tuple(n for n in sub.output if n not in plates)
    return ("plate", (sub, axes)), names, {n: sub.plan.sizes[n] for n in names}


def _build(expr: Funsor, declared: dict, method: str, semiring: tuple | None = None,
           found: set | None = None):
    found = set() if found is None else found  # ids of the declared terms met as factors
    sum_op, prod_op, reduced, terms = extract_elimination(expr, semiring)
    log = _semiring(sum_op, prod_op)
    if reduced & frozenset(expr.inputs):
        raise _unsupported(f"{expr}: {sorted(reduced & frozenset(expr.inputs))} are both "
                           "reduced and free", "Rename the bound names apart.")
    leaves, scopes, outs, sizes = [], [], [], {}
    for term in terms:
        if isinstance(term, Reduce) and term.op is prod_op:
            leaf, names, term_sizes = _plate_leaf(term, declared, method, (sum_op, prod_op),
                                                  found)
        else:
            kind, value, names, term_sizes = _leaf(term)
            leaf = (kind, value)
        for n, s in term_sizes.items():
            if sizes.setdefault(n, s) != s:
                raise ValueError(f"compile(): {n!r} has sizes {sizes[n]} and {s}")
        leaves.append(leaf)
        scopes.append(names)
        outs.append(declared.get(id(term)))
        if id(term) in declared:
            found.add(id(term))
    keep = tuple(n for n in sizes if n not in reduced)
    plan = plan_structure(tuple(scopes), tuple(sizes.items()), tuple(outs), keep, method)
    return Program(plan, tuple(leaves), log)


def _compile(expr: Funsor, functional: dict | None, method: str) -> Program:
    semiring = _semiring_of(expr)
    log = SEMIRINGS.get(semiring, False)
    declared, found = _declare(functional, log), set()
    program = _build(expr, declared, method, semiring, found)
    stray = [out for key, out in declared.items() if key not in found]
    if stray:
        raise ValueError(f"compile(functional=...): the terms declared to give {stray} are not "
                         f"factors of the expression; pass the factor object itself, e.g. "
                         f"functional={{{stray[0]!r}: g}} where the expression multiplies g")
    program.domains = {n: expr.inputs[n] for n in program.inputs if n in expr.inputs}
    return program


def _check_expr(what: str, expr) -> None:
    if not isinstance(expr, Funsor):
        raise TypeError(f"{what}() takes a lazy funsor expression (e.g. a sum_product built "
                        f"under `with lazy:`), got {type(expr).__name__}; for factors given "
                        "as Tensors, fc.plan(factors, eliminate) plans them")


def compile(expr: Funsor, *, functional: dict | None = None, method: str = "auto",
            memory_budget: int | None = None, itemsize: int = 8) -> Program:
    """Compile a lazy sum-product expression to a reusable ``Program``.

    Args:
        expr: a ``Contraction`` or ``Reduce`` of a product, built under ``lazy`` (a plated
            ``sum_product`` included).
        functional: ``{name: term}``: the term (one of the expression's factors) that is a
            function giving ``name``: a Tensor term's table is checked here, a parameter's
            on each call (a ``FunctionalError`` naming the parameter, or, traced under
            ``jax.jit``, a NaN result, unless it is a 0/1 table with one 1 per assignment
            of the other names; an unchanged jax, torch or read-only numpy array is not
            read again). The gradient with respect to a declared table is the model's
            (``gradients.py``), on torch (when it ``requires_grad``) and jax (eagerly, under
            ``jit``, ``grad``, ``vmap``; second order too, a mixed derivative taken by
            reverse mode in the other parameters first included, unless an inner ``jit``
            hides the outer derivative: NaN then), at the cost of a run of the
            plan without declarations only when it is taken (``MemoryBudgetError`` naming
            the parameters if that exceeds the budget); the value is the fast run's, and
            so are the other parameters' gradients when no declared table is differentiated.
        method: the planner, as for ``fc.plan``.
        memory_budget: bytes; a plan needing more raises ``MemoryBudgetError``.

    Example:
        >>> from interpretations.lazy import lazy
        >>> f = fc.Variable("f", fc.Reals[3])["x"]
        >>> with lazy:
        ...     expr = f.reduce(ops.logaddexp, "x")
        >>> round(float(compile(expr)(f=np.zeros(3))), 4)
        1.0986
    """
    _check_expr("compile", expr)
    program = _compile(expr, functional, method)
    for p in program.programs():
        check_budget(p.plan.tree.stats(itemsize), memory_budget)
    return program


def cost(expr: Funsor, *, functional: dict | None = None, method: str = "auto",
         itemsize: int = 8) -> dict:
    """The plan's costs without running it (or allocating): ``flops``, ``peak_bytes``,
    ``max_rank``, ``max_binary_rank``, ``largest_cluster`` and the rest of ``stats()``; a
    plated expression's sub-programs (one per plate's product) under ``"plates"``.

    Example:
        >>> from interpretations.lazy import lazy
        >>> f = fc.Variable("f", fc.Reals[3, 4])["x", "y"]
        >>> with lazy:
        ...     expr = f.reduce(ops.add, "y")
        >>> cost(expr)["peak_bytes"], cost(expr)["flops"]  # messages: 3 float64 sums of 4
        (24, 24)
    """
    _check_expr("cost", expr)
    program = _compile(expr, functional, method)
    out = program.plan.tree.stats(itemsize)
    subs = list(program.programs())[1:]
    if subs:
        out["plates"] = [p.plan.tree.stats(itemsize) for p in subs]
    return out
