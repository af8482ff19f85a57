"""Terms that reshape array structure: ``Lambda`` (an input becomes an output dim),
``Independent`` (a product over a plate read as one vector input), ``Stack``, ``Cat``,
``Slice`` (an arange input) and ``Function`` (a user function of
funsors). They build on ``terms`` (the base class and generic terms).

Example:
    >>> f = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    >>> fc.Lambda(fc.Variable("i", fc.Bint[3]), f).output
    Reals[3]
"""

from __future__ import annotations

from funsor_core.domains import Bint, Domain, Reals
from funsor_core.terms import (
    DomainError,
    Funsor,
    Variable,
    merge_inputs,
    to_funsor,
)

__all__ = ["Lambda", "Independent", "Stack", "Cat", "Slice", "Function"]


class Lambda(Funsor):
    """``Lambda(var, expr)``: turn the Bint input ``var`` of ``expr`` into its leftmost output dim.

    Example:
        >>> f = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> fc.Lambda(fc.Variable("i", fc.Bint[3]), f).output
        Reals[3]
    """

    fields = ("var", "expr")
    binds = ("var",)

    @classmethod
    def _prepare(cls, var, expr):
        if isinstance(var, str):
            var = Variable(var, expr.inputs[var])
        if var.output.dtype == "real" or var.output.shape:
            raise DomainError(f"Lambda needs a Bint variable, got {var.name}: {var.output}")
        if var.name in expr.inputs and expr.inputs[var.name] is not var.output:
            raise DomainError(f"Lambda variable '{var.name}' is {var.output} but the body has it "
                              f"as {expr.inputs[var.name]}")
        return var, expr

    def _setup(self):
        var, expr = self._args
        self.inputs = {k: d for k, d in expr.inputs.items() if k != var.name}
        self.output = Domain(expr.output.dtype, (var.output.size,) + expr.output.shape)


class Independent(Funsor):
    """``Independent(fn, reals_var, bint_var, diag_var)``: a product over ``bint_var`` of ``fn``
    with ``diag_var`` read as the ``bint_var``-th row of a new real input ``reals_var``.

    Equals ``fn(diag_var=reals_var[bint_var]).reduce(ops.add, bint_var)`` for log densities.
    """

    fields = ("fn", "reals_var", "bint_var", "diag_var")
    binds = ("bint_var", "diag_var")

    @classmethod
    def _prepare(cls, fn, reals_var, bint_var, diag_var):
        names = []
        for v in (reals_var, bint_var, diag_var):
            names.append(v.name if isinstance(v, Variable) else v)
        reals_var, bint_var, diag_var = names
        if bint_var not in fn.inputs or fn.inputs[bint_var].dtype == "real":
            raise DomainError(f"Independent needs a Bint input '{bint_var}' of fn, whose inputs "
                              f"are {dict(fn.inputs)}")
        return fn, reals_var, bint_var, diag_var

    def _setup(self):
        fn, reals_var, bint_var, diag_var = self._args
        n = fn.inputs[bint_var].size
        inputs = {k: d for k, d in fn.inputs.items() if k not in (bint_var, diag_var)}
        if diag_var in fn.inputs:
            inputs[reals_var] = Reals[(n,) + fn.inputs[diag_var].shape]
        self.inputs = inputs
        self.output = fn.output



class Stack(Funsor):
    """``Stack(name, parts)``: a new input ``name: Bint[len(parts)]`` selecting a part.

    Example:
        >>> s = fc.Stack("i", (fc.Number(1.0), fc.Number(2.0)))
        >>> s.inputs, s.data
        ({'i': Bint[2]}, array([1., 2.]))
    """

    fields = ("name", "parts")

    @classmethod
    def _prepare(cls, name, parts):
        parts = tuple(to_funsor(p) for p in parts)
        if not parts:
            raise ValueError("Stack needs at least one part")
        out = parts[0].output
        for p in parts:
            if p.output is not out:
                raise DomainError(f"Stack parts must share one output, got {out} and {p.output}")
            if name in p.inputs:
                raise DomainError(f"Stack name '{name}' is already an input of a part")
        return name, parts

    def _setup(self):
        name, parts = self._args
        inputs = {name: Bint[len(parts)]}
        for p in parts:
            inputs = merge_inputs(inputs, p.inputs, "stack")
        self.inputs = inputs
        self.output = parts[0].output


class Cat(Funsor):
    """``Cat(name, parts, part_name)``: concatenate parts along their input ``part_name``,
    giving a new input ``name`` whose size is the sum of the parts' sizes."""

    fields = ("name", "parts", "part_name")

    @classmethod
    def _prepare(cls, name, parts, part_name=None):
        part_name = name if part_name is None else part_name
        parts = tuple(parts)
        for p in parts:
            if part_name not in p.inputs:
                raise DomainError(f"Cat part lacks input '{part_name}': {dict(p.inputs)}")
        return name, parts, part_name

    def _setup(self):
        name, parts, part_name = self._args
        size = sum(p.inputs[part_name].size for p in parts)
        inputs = {}
        for p in parts:
            rest = {k: d for k, d in p.inputs.items() if k != part_name}
            inputs = merge_inputs(inputs, rest, "cat")
        self.inputs = {name: Bint[size], **inputs}
        self.output = parts[0].output


class Slice(Funsor):
    """``Slice(name, start, stop, step, dtype)``: input ``name`` indexing ``range(start, stop,
    step)``, valued in ``Bint[dtype]``. ``f(i=Slice("i", 0, 10, 2))`` takes every other ``i``.
    """

    __slots__ = ("name", "slice_args")
    fields = ("name", "start", "stop", "step", "dtype")
    _atom = True

    @classmethod
    def _prepare(cls, name, start=0, stop=None, step=1, dtype=None):
        if stop is None:
            start, stop = 0, start
        if dtype is None:
            dtype = stop
        if step <= 0 or start < 0 or stop > dtype:
            raise DomainError(f"Slice {name}[{start}:{stop}:{step}] does not fit in Bint[{dtype}]")
        return name, start, stop, step, dtype

    def _setup(self):
        name, start, stop, step, dtype = self._args
        self.slice_args = (start, stop, step)
        size = max(0, -(-(stop - start) // step))
        self.inputs = {name: Bint[size]}
        self.output = Bint[dtype]


class Function(Funsor):
    """A backend function lifted by ``@fc.function``: ``fn(*args)`` with fixed domains."""

    fields = ("fn", "output", "args")

    @classmethod
    def _prepare(cls, fn, output, args):
        return fn, output, tuple(args)

    def _setup(self):
        fn, output, args = self._args
        inputs = {}
        for a in args:
            inputs = merge_inputs(inputs, a.inputs, getattr(fn, "__name__", "apply"))
        self.inputs = inputs
        self.output = output


# =============================================================================================
# Conversion.
