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

import operator

from funsor_core import ops
from funsor_core.domains import Bint, Domain
from funsor_core.engine.backend import backend_module
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import (
    DomainError,
    Funsor,
    Number,
    Variable,
    merge_inputs,
    to_funsor,
)
from funsor_core.terms.inputs import reduce_domain

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
    The new input is stored as the subterm ``reals``, a ``Variable`` (``.reals_var`` is its
    name), so substituting a value for it reaches the term like any other substitution and
    leaves ``Independent(fn, value, bint_var, diag_var)``, which ``exact`` evaluates.

    Example:
        >>> f = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]}) * fc.Variable("x_i", fc.Real)
        >>> g = fc.Independent(f, "x", "i", "x_i")
        >>> g.inputs, g.reals_var
        ({'x': Reals[2]}, 'x')
        >>> float(g(x=np.array([3.0, 4.0])).data)  # 1 * 3 + 2 * 4
        11.0
    """

    fields = ("fn", "reals", "bint_var", "diag_var")
    binds = ("bint_var", "diag_var")

    @classmethod
    def _prepare(cls, fn, reals_var, bint_var, diag_var):
        bint_var, diag_var = (v.name if isinstance(v, Variable) else v
                              for v in (bint_var, diag_var))
        if bint_var not in fn.inputs or fn.inputs[bint_var].dtype == "real":
            raise DomainError(f"Independent needs a Bint input '{bint_var}' of fn, whose inputs "
                              f"are {dict(fn.inputs)}")
        if diag_var not in fn.inputs:
            # No coordinate to read: a plain product over the plate, with no new input.
            name = reals_var.name if isinstance(reals_var, Variable) else reals_var
            return fn, name, bint_var, diag_var
        diag = fn.inputs[diag_var]
        domain = Domain(diag.dtype, (fn.inputs[bint_var].size,) + diag.shape)
        if isinstance(reals_var, str):
            reals_var = Variable(reals_var, domain)
        elif not isinstance(reals_var, Funsor):
            reals_var = to_funsor(reals_var, domain)
        if reals_var.output is not domain:
            raise DomainError(f"Independent's {cls._reals_label(reals_var)} must have domain "
                              f"{domain} ({fn.inputs[bint_var]} rows of '{diag_var}': {diag}), "
                              f"got {reals_var.output}")
        clash = {bint_var, diag_var} & reals_var.inputs.keys()
        if clash and not isinstance(reals_var, Variable):
            raise DomainError(f"Independent's value for the real input depends on "
                              f"{sorted(clash)}, which the term binds; rename them first")
        return fn, reals_var, bint_var, diag_var

    @staticmethod
    def _reals_label(reals):
        return f"input '{reals.name}'" if isinstance(reals, Variable) else "value"

    @property
    def reals_var(self):
        """The name of the new real input (None once a value was substituted for it)."""
        reals = self.reals
        if isinstance(reals, str):
            return reals
        return reals.name if isinstance(reals, Variable) else None

    def _setup(self):
        fn, reals, bint_var, diag_var = self._args
        inputs = {k: d for k, d in fn.inputs.items() if k not in (bint_var, diag_var)}
        if isinstance(reals, Funsor):
            inputs = merge_inputs(inputs, reals.inputs, "Independent")
        self.inputs = inputs
        # A product over the plate is a sum of log densities: an integer output widens as a
        # sum of n values does (the output of the Reduce it stands for).
        self.output = reduce_domain(ops.add, fn.output, fn.inputs[bint_var].size)


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
        _check_part_domains(parts, "stack")
        parts = check_backends("stack", parts, [f"part {k}" for k in range(len(parts))])
        return name, parts

    def _setup(self):
        name, parts = self._args
        inputs = {name: Bint[len(parts)]}
        for p in parts:
            inputs = merge_inputs(inputs, p.inputs, "stack")
        self.inputs = inputs
        self.output = parts[0].output

    @property
    def data(self):
        """The array of a Stack of Numbers (kept a Stack, as in funsor, so that its parts stay
        those Numbers); any other Stack is lazy and raises as ``Funsor.data`` does."""
        parts = self._args[1]
        if not all(type(p) is Number for p in parts):
            return Funsor.data.fget(self)
        dtype = self.output.dtype
        return backend_module().asarray([p.data for p in parts],
                                        "real" if dtype == "real" else "int")


def _check_part_domains(parts: tuple, what: str, skip: str | None = None) -> None:
    # Checked where the term is built: the exact rule would otherwise fail in the backend's
    # broadcasting ("operands could not be broadcast"), naming neither input nor part.
    seen: dict = {}
    for k, p in enumerate(parts):
        for n, d in p.inputs.items():
            if n == skip:
                continue
            first = seen.setdefault(n, (k, d))
            if first[1] is not d:
                raise DomainError(f"cannot {what}: input '{n}' is {first[1]} in part {first[0]} "
                                  f"but {d} in part {k}; a name must have one domain in all "
                                  f"parts (rename one, e.g. part({n}=\"{n}2\"))")


class Cat(Funsor):
    """``Cat(name, parts, part_name)``: concatenate parts along their input ``part_name``,
    giving a new input ``name`` whose size is the sum of the parts' sizes.

    Example:
        >>> x = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
        >>> y = fc.Tensor(np.array([3.0]), {"i": fc.Bint[1]})
        >>> c = fc.Cat("i", (x, y))
        >>> c.inputs["i"], c.data
        (Bint[3], array([1., 2., 3.]))
    """

    fields = ("name", "parts", "part_name")
    binds = ("part_name",)  # each part's own index; ``name`` is the concatenated one

    @classmethod
    def _prepare(cls, name, parts, part_name=None):
        part_name = name if part_name is None else part_name
        parts = tuple(parts)
        if not parts:
            raise ValueError(f"Cat along '{name}' needs at least one part")
        for k, p in enumerate(parts):
            if part_name not in p.inputs:
                raise DomainError(f"Cat part lacks input '{part_name}': {dict(p.inputs)}")
            if p.output is not parts[0].output:
                raise DomainError(f"Cat parts must share one output (as funsor asserts): part 0 "
                                  f"is {parts[0].output}, part {k} is {p.output}")
        _check_part_domains(parts, "concatenate", part_name)
        parts = check_backends("concatenate", parts, [f"part {k}" for k in range(len(parts))])
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


_SLICE_NOT_INT = (
    "Slice {name!r}: {what} must be a concrete integer, got {value!r} of type {kind}: the "
    "window's bounds set its input's domain Bint[size], which has no value while traced "
    "(under jax.jit). To pick entries by traced indices, substitute a Tensor of Bint values, "
    "e.g. f(i=fc.Tensor(idx, {{'n': fc.Bint[len(idx)]}}, size)).")


def _slice_int(name, what, value) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(_SLICE_NOT_INT.format(name=name, what=what, value=value,
                                              kind=type(value).__name__)) from None


class Slice(Funsor):
    """``Slice(name, start, stop, step, dtype)``: input ``name`` indexing ``range(start, stop,
    step)``, valued in ``Bint[dtype]``. ``f(i=Slice("i", 0, 10, 2))`` takes every other ``i``.

    Example:
        >>> x = fc.Tensor(np.arange(5.0), {"i": fc.Bint[5]})
        >>> x(i=fc.Slice("i", 0, 5, 2, 5)).data
        array([0., 2., 4.])
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
        start, stop, step, dtype = (_slice_int(name, what, v) for what, v in zip(
            ("start", "stop", "step", "dtype"), (start, stop, step, dtype)))
        if step <= 0 or start < 0 or stop > dtype:
            raise DomainError(f"Slice {name}[{start}:{stop}:{step}] does not fit in Bint[{dtype}]")
        return name, start, stop, step, dtype

    def _setup(self):
        name, start, stop, step, dtype = self._args
        self.slice_args = (start, stop, step)
        size = max(0, -(-(stop - start) // step))
        self.inputs = {name: Bint[size]}
        self.output = Bint[dtype]

    @property
    def slice(self) -> slice:
        """The Python slice this term indexes by.

        Example:
            >>> fc.Slice("i", 1, 7, 2).slice
            slice(1, 7, 2)
        """
        return slice(*self.slice_args)


class Function(Funsor):
    """A backend function lifted by ``@fc.function``: ``fn(*args)`` with fixed domains.

    Example:
        >>> sin = fc.function(fc.Real, fc.Real)(np.sin)
        >>> float(sin(fc.Number(0.0)).data), type(sin(fc.Variable("x", fc.Real))).__name__
        (0.0, 'Function')
    """

    fields = ("fn", "output", "args")

    @classmethod
    def _prepare(cls, fn, output, args):
        return fn, output, check_backends(f"call {getattr(fn, '__name__', 'a function')}",
                                          tuple(args))

    def _setup(self):
        fn, output, args = self._args
        inputs = {}
        for a in args:
            inputs = merge_inputs(inputs, a.inputs, getattr(fn, "__name__", "apply"))
        self.inputs = inputs
        self.output = output


# =============================================================================================
# Conversion.
