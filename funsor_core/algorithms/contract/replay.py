"""The array program of a planned elimination of Tensors: the one recorder and the one
evaluator of the fast path (``funsor_core.engine.fast_path``).

``plan_elimination`` (``algorithms.eliminate.schedule``) turns the structure of a plated
elimination into a ``Schedule``: which values each Contraction or Reduce combines. Run as
terms, every step pays for building the term, finding its rule and the rule's way to its
kernel: some microseconds a step, most of the time of a small plated model.
``compile_elimination`` turns a schedule of Tensors into an ``ArrayProgram``: one call per
step to the array implementation that the step's rule registered (``contract_planned_arrays``
with the cached plan of ``plan_tensors`` per Contraction, ``reduce_array`` per Reduce), with
the operands' order and the plans worked out once, from structure alone.

A program stands in for the terms only where that changes nothing observable:
``ArrayProgram.run`` asks ``fast_path`` (the one guard) for each step's term which
implementation its first rule registered, under the interpreter's own cached resolution, so
a rule registered later is seen at once. A user rule registered for one of those patterns is
more specific, or comes first by registration; a hook, a wrapping interpretation or the debug
log are on the way; ``lazy`` or a tape builds terms: then ``run`` answers None and the caller
builds the terms.

Nothing here reads values: under ``jax.jit`` a program runs at trace time on tracers, making
the calls the rules would make.

Example:
    >>> from funsor_core.sum_product import sum_product
    >>> f = fc.Tensor(np.full((2, 3), 2.0), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> g = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
    >>> sum_product(ops.add, ops.mul, [f, g], frozenset("ij"), frozenset("i")).item()
    12.0
"""

from __future__ import annotations

from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple

from funsor_core import ops
from funsor_core.algorithms.contract.fused import fuse_steps, straight_line
from funsor_core.algorithms.contract.kernels import SEMIRINGS
from funsor_core.algorithms.contract.plan import plan_tensors
from funsor_core.atoms.int_range import FLOAT_DTYPES, is_float_dtype
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.fast_path import builds_as_is, fast_path
from funsor_core.engine.interpreter import _DEFAULT, _STATE_GET
from funsor_core.engine.patterns import type_key
from funsor_core.ops.op import kernel_generation
from funsor_core.terms.base import Reduce
from funsor_core.terms.contraction import Contraction

__all__ = ["ArrayProgram", "Check", "compile_elimination", "contract_planned_arrays",
           "reduce_array", "CONTRACT", "REDUCE"]

_DTYPE = attrgetter("dtype")
_UNBOUND = object()  # (``bind``: no answer kept yet; None is an answer)

# The kinds of schedule steps: a Contraction of a connected group over its variables (a lone
# factor is reduced by sum_op), and a Reduce by prod_op over plates.
CONTRACT, REDUCE = "contract", "reduce"

# An uninitialized Tensor, never read: dispatch keys depend on argument types only, so the
# keys of a program's terms are computed from structure by typing a probe.
_A_TENSOR = object.__new__(Tensor)


def contract_planned_arrays(sum_op, prod_op, plan, *arrays):
    """The array implementation of a ``"contraction"`` step: ``plan`` (from ``plan_tensors``
    of the terms' inputs, in the order the Contraction sorts them) run on their arrays, as
    ``contract_tensors`` does for a Contraction of scalar real Tensors in a kernel semiring.

    Example:
        >>> plan, _ = plan_tensors(((("i", fc.Bint[2]),), (("i", fc.Bint[2]),)), frozenset("i"))
        >>> float(contract_planned_arrays(ops.add, ops.mul, plan, np.ones(2), np.ones(2)))
        2.0
    """
    return plan.run_arrays(sum_op, prod_op, arrays)


def reduce_array(op, axes: tuple, x):
    """The array implementation of a ``"reduce"`` step: ``op``'s array reduction over
    ``axes``, as the Reduce rule of a real Tensor computes it.

    Example:
        >>> reduce_array(ops.add, (1,), np.ones((2, 3)))
        array([3., 3.])
    """
    return ops.REDUCE_OPS[op](x, axis=axes)


class Check(NamedTuple):
    """A term an ``ArrayProgram`` stands for: its dispatch key (``deep``: whether the class
    keyed tuples by their elements then), and the kind of array implementation its first
    rule must have registered (None: no rule may match, it is built as it is). ``args`` type
    it again where a tuple pattern registered since changed the class's keys (None: the
    check fails then). Checks are told apart by ``(key, kind)``.

    Example:
        A program's one step stands for a Contraction whose first rule must have
        registered a ``"contraction"`` kernel:

        >>> i, j = ("i", fc.Bint[2]), ("j", fc.Bint[3])
        >>> program = compile_elimination(ops.add, ops.mul, (((i, j), fc.Real), ((j,), fc.Real)),
        ...                               [(CONTRACT, (0, 1), frozenset("j"))], (2,))
        >>> program.checks
        (Check(Contraction, kind='contraction'),)
    """

    key: tuple
    cls: type
    deep: bool
    kind: str | None
    args: tuple

    def __repr__(self) -> str:
        # Not the fields: ``args`` may hold the uninitialized probe Tensor, which no repr reads.
        return f"Check({self.cls.__name__}, kind={self.kind!r})"


def check_of(cls: type, args: tuple, kind: str | None, keep_args: bool = True) -> Check:
    """The ``Check`` of the term ``cls(*args)`` (``keep_args=False``: without keeping the
    arguments alive, e.g. arrays).

    Example:
        >>> check_of(fc.Tensor, (np.ones(2), (), "real"), None).key
        (<class 'funsor_core.atoms.tensor.Tensor'>, <class 'numpy.ndarray'>, <class 'tuple'>, <class 'str'>)
    """  # noqa: E501
    return Check(type_key(cls, args), cls, cls._deep_key, kind, args if keep_args else None)


class ArrayProgram:
    """The array calls of a planned elimination of Tensors.

    Attributes:
        steps: ``(check, static arguments, operand positions)`` per step: the implementation
            that ``checks[check]``'s rule registered is called with the static arguments,
            then the operands. The values are the factors' arrays, then each step's result.
        outputs: the positions of the results; ``out_ikeys`` their Tensors' inputs.
        checks: the ``Check`` of each term the steps stand for.

    Example:
        ``sum_j a[i, j] b[j]``, one planned contraction; under ``lazy`` it declines (None:
        the caller builds the terms, which ``lazy`` records).

        >>> from interpretations import exact, lazy
        >>> i, j = ("i", fc.Bint[2]), ("j", fc.Bint[3])
        >>> program = compile_elimination(ops.add, ops.mul, (((i, j), fc.Real), ((j,), fc.Real)),
        ...                               [(CONTRACT, (0, 1), frozenset("j"))], (2,))
        >>> a, b = np.arange(6.0).reshape(2, 3), np.array([1.0, 10.0, 100.0])
        >>> program, program.run([a, b], exact), a @ b
        (ArrayProgram(1 steps, 1 results), [array([210., 543.])], array([210., 543.]))
        >>> program.run([a, b], lazy) is None
        True
    """

    __slots__ = ("steps", "outputs", "out_ikeys", "checks", "n_inputs", "_builtin", "_fused")

    def __init__(self, steps, outputs, out_ikeys, checks, n_inputs: int | None = None) -> None:
        self.steps, self.outputs, self.out_ikeys, self.checks = steps, outputs, out_ikeys, checks
        self.n_inputs = n_inputs  # how many arrays ``run`` takes (None: not recorded)
        # The implementations the built-in rules registered, per check: where ``bind`` finds
        # exactly these, the steps may run as ``fuse_steps`` resolved them for the arrays'
        # type (kept per (type, kernel generation); False: nothing to gain).
        self._builtin = [_BUILTIN.get(c.kind) for c in checks]
        self._fused: dict = {}

    def __repr__(self) -> str:
        return f"ArrayProgram({len(self.steps)} steps, {len(self.outputs)} results)"

    def with_checks(self, checks: tuple) -> ArrayProgram:
        """This program, also checking ``checks`` (e.g. that the factors' Tensors would be
        built as they are, for a caller that skips building them)."""
        seen = {(c.key, c.kind) for c in self.checks}
        extra = []
        for c in checks:
            if (c.key, c.kind) not in seen:
                seen.add((c.key, c.kind))
                extra.append(c)
        return ArrayProgram(self.steps, self.outputs, self.out_ikeys,
                            self.checks + tuple(extra), self.n_inputs)

    def bind(self, interp=None) -> list | None:
        """The implementation to call per check under ``interp`` (default: the active one),
        or None where building some term would do anything else (``fast_path``).

        The answer is a function of the rules ``interp`` dispatches to, so it is kept in
        ``interp``'s ``_direct`` table (under this program, hashed by identity), which is
        cleared whenever a rule, a chain or the debug switch changes, as ``eager_program``'s
        answers are: one lookup per call instead of one per check."""
        if interp is None:
            state = _STATE_GET(None)
            interp = _DEFAULT[0] if state is None else state[0]
        impls = interp._direct.get(self, _UNBOUND)
        if impls is _UNBOUND:
            impls = interp._direct_box.put(self, self._bind(interp))
        return impls

    def _bind(self, interp) -> list | None:
        impls = []
        for key, cls, deep, kind, args in self.checks:
            if cls._deep_key is not deep:  # a tuple pattern registered since: keys changed
                if args is None:
                    return None
                key = type_key(cls, args)
            if kind is None:
                if not builds_as_is(key, interp):
                    return None
                impls.append(None)
                continue
            impl = fast_path(key, kind, interp)
            if impl is None:
                return None
            impls.append(impl)
        return impls

    def run(self, arrays, interp=None) -> list | None:
        """The results' arrays from the factors' arrays (in the planned order), or None where
        the fast path may not stand in for the terms under ``interp`` (the caller builds
        them): a guard declines, there are no factors, the arrays are of several types
        (the terms would report the mix) or some are not float arrays (the rules cast them)."""
        if not arrays:
            return None
        # The guard first: under ``lazy`` it declines before the arrays are looked at.
        impls = self.bind(interp)
        if impls is None:
            return None
        # (C-level passes: a 1,000-variable tree has 2,000 arrays, and a torch ``.dtype`` read
        # costs ~0.1 us; a Python loop doubled that.)
        if len(set(map(type, arrays))) != 1:
            return None
        if not set(map(_DTYPE, arrays)) <= FLOAT_DTYPES:
            for x in arrays:
                if x.dtype not in FLOAT_DTYPES and not is_float_dtype(x):
                    return None  # (int data labelled Real: the terms' rules compute in floats)
        fused = self._fused_steps(arrays[0]) if impls == self._builtin else None
        if fused is not None:
            n, fns = fused
            if n == len(arrays):
                return fns(*arrays)  # one generated function (``straight_line``)
        values = list(arrays)
        if fused is None or fused[0] >= 0:  # a generated function of another arity: the loop
            for check, static, pos in self.steps:
                values.append(impls[check](*static, *[values[k] for k in pos]))
        else:
            append = values.append
            for fn, pos in fns:
                append(fn(*[values[k] for k in pos]))
        return [values[k] for k in self.outputs]

    def _fused_steps(self, sample) -> tuple | None:
        # ``fuse_steps`` for arrays of the type of ``sample``, resolved once per (type, kernel
        # generation); a handful of types meet one program (numpy, torch, jax's tracers).
        # (n, fn): a function of n arrays (``straight_line``); (-1, [(step fn, positions)]):
        # a program too long for one.
        key = (type(sample), kernel_generation())
        fns = self._fused.get(key)
        if fns is None:
            if len(self._fused) >= 8:
                self._fused.clear()
            fused = fuse_steps(self.steps, sample)
            if fused:  # (step function, operand positions); a step without one: its impl
                fused = [(fn or partial(self._builtin[check], *static), pos)
                         for fn, (check, static, pos) in zip(fused, self.steps)]
                n = self.n_inputs
                run = None if n is None else straight_line(fused, n, self.outputs)
                fused = (-1, fused) if run is None else (n, run)
            fns = self._fused[key] = fused or False
        return fns or None


# The implementations that ``fuse_steps`` knows how to resolve, by the kind of their check.
_BUILTIN = {"contraction": contract_planned_arrays, "reduce": reduce_array}


def _sorted_positions(pos: tuple, ikeys: list) -> tuple:
    # The order Contraction sorts Tensors in (``terms.contraction.term_sort_key``: their sorted
    # input names; stable).
    def key(k):
        names = [n for n, _ in ikeys[k]]
        return tuple(sorted(names)) if len(names) > 1 else tuple(names)

    return tuple(sorted(pos, key=key))


def _consistent(structure: tuple) -> bool:
    # One domain per name: otherwise building the terms raises, naming the clash.
    domains: dict = {}
    for ikey, _ in structure:
        for name, d in ikey:
            if domains.setdefault(name, d) != d:
                return False
    return True


def compile_elimination(sum_op, prod_op, structure: tuple, steps, outputs) -> Any:
    """The ``ArrayProgram`` of a schedule of Tensors, or None where a step is not a kernel
    call of the exact rules (a product without reduction, a non-real or non-scalar value, a
    semiring without a kernel, names of two domains).

    Args:
        structure: ``(inputs key, output domain)`` per factor.
        steps: ``(kind, operand positions, names)`` per step (``CONTRACT`` or ``REDUCE``);
            values are the factors, then each step's result.
        outputs: the positions of the results.

    Example:
        >>> i, j = ("i", fc.Bint[2]), ("j", fc.Bint[3])
        >>> program = compile_elimination(ops.add, ops.mul, (((i, j), fc.Real),),
        ...                               [(REDUCE, (0,), frozenset("j"))], (1,))
        >>> program.out_ikeys
        ((('i', Bint[2]),),)
        >>> from interpretations import exact
        >>> program.run([np.full((2, 3), 2.0)], exact)
        [array([8., 8.])]
    """
    if (sum_op, prod_op) not in SEMIRINGS or sum_op is ops.or_:
        return None
    if not all(out.dtype == "real" and not out.shape for _, out in structure):
        return None
    if not _consistent(structure):
        return None
    ikeys = [ikey for ikey, _ in structure]
    program, checks = [], {}
    for kind, pos, names in steps:
        if kind == CONTRACT and len(pos) > 1:
            if not names:
                return None  # a product alone: Binary terms, not a kernel call
            pos = _sorted_positions(pos, ikeys)
            plan, out_ikey = plan_tensors(tuple(ikeys[k] for k in pos), names)
            check = check_of(Contraction, (sum_op, prod_op, names, (_A_TENSOR,) * len(pos)),
                             "contraction")
            static = (sum_op, prod_op, plan)
        else:
            op = sum_op if kind == CONTRACT else prod_op
            ikey = ikeys[pos[0]]
            axes = tuple(i for i, (n, _) in enumerate(ikey) if n in names)
            if not axes or len(axes) != len(names):
                return None
            out_ikey = tuple(pair for pair in ikey if pair[0] not in names)
            check = check_of(Reduce, (op, _A_TENSOR, names), "reduce")
            static = (op, axes)
        index = checks.setdefault((check.key, check.kind), (len(checks), check))[0]
        program.append((index, static, tuple(pos)))
        ikeys.append(out_ikey)
    return ArrayProgram(tuple(program), tuple(outputs), tuple(ikeys[k] for k in outputs),
                        tuple(c for _, c in checks.values()), len(structure))
