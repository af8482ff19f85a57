"""The generic composite terms: ``Unary``, ``Binary``, ``Reduce``, ``Subs`` and ``Align``,
with the domain checks that run when each is built (under every interpretation).

Example:
    >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    >>> with fc.reflect:  # build the terms as written, evaluating nothing
    ...     e = (x + 1).reduce(ops.add, "i")
    >>> type(e).__name__, type(e.arg).__name__, fc.reinterpret(e).item()  # 1 + 2 + 3
    ('Reduce', 'Binary', 6.0)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.domains import Domain
from funsor_core.engine.protocol import _hook, pending_setup, pending_slot
from funsor_core.terms.conversion import to_funsor
from funsor_core.terms.funsor import Funsor
from funsor_core.terms.inputs import (
    _index_shape,
    check_substitution,
    merge_inputs,
    reduce_constant,
    reduce_domain,
    split_reduced_vars,
)
from funsor_core.terms.leaves import Number

__all__ = ["Unary", "Binary", "Reduce", "Subs", "Align", "unary_domain", "binary_domains"]

_SIDES = ("the left term", "the right term")  # Binary's operands, in check_backends' message


class Unary(Funsor):
    """``op(arg)`` for a unary op (elementwise, or acting on the output dims).

    Example:
        >>> with fc.reflect:
        ...     u = fc.Unary(ops.exp, fc.Variable("y", fc.Real))
        >>> u.inputs, u(y=0.0)  # exp(0) = 1
        ({'y': Real}, Number(1.0, 'real'))
    """

    fields = ("op", "arg")

    def _setup(self):
        self.inputs = self.arg.inputs
        self.output = unary_domain(self.op, self.arg.output)


def unary_domain(op, domain: Domain) -> Domain:
    """The output domain of ``Unary(op, arg)`` for ``arg`` of output ``domain``.

    Example:
        >>> unary_domain(ops.exp, fc.Reals[2]), unary_domain(ops.getitem.bind(index=(0,)),
        ...                                                  fc.Reals[3, 2])
        (Reals[2], Reals[2])
    """
    if op.base is ops.getitem:
        shape = _index_shape(op.kwargs["index"], domain.shape)
        return Domain(domain.dtype, shape)
    return ops.infer_domain(op, domain)


def binary_domains(op, lhs, rhs) -> tuple:
    """``(inputs, output)`` of ``Binary(op, lhs, rhs)``: Binary's checks, raising on inputs
    of one name with two domains or outputs that do not broadcast.

    Example:
        >>> x = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> binary_domains(ops.add, x, fc.Number(1.0))
        ({'i': Bint[2]}, Real)
    """
    inputs = lhs.inputs
    if inputs is not rhs.inputs and inputs != rhs.inputs:  # (equal: the common case)
        inputs = merge_inputs(inputs, rhs.inputs, op.name)
    output = (ops.infer_domain_by_divisor(op, lhs.output, rhs.output, rhs.data)
              if type(rhs) is Number else ops.infer_domain(op, lhs.output, rhs.output))
    return inputs, output



class Binary(Funsor):
    """``op(lhs, rhs)``, broadcasting inputs by name and outputs by shape.

    Example:
        >>> with fc.reflect:
        ...     b = fc.Binary(ops.mul, fc.Variable("y", fc.Real), fc.Number(2.0))
        >>> b.inputs, b(y=3.0)  # 3 * 2
        ({'y': Real}, Number(6.0, 'real'))
    """

    fields = ("op", "lhs", "rhs")
    _stash = True  # pending_setup() holds (op, lhs, rhs, inputs, output) of the one being built

    @classmethod
    def _prepare(cls, op, lhs, rhs):
        # Check under every interpretation (two atoms' backends too), so a lazy term hides no
        # mistake; the inputs and output are kept for a _setup of these very arguments.
        if (la := type(lhs).arrays) and (ra := type(rhs).arrays) and type(
                getattr(lhs, la[0])) is not type(getattr(rhs, ra[0])):
            lhs, rhs = _hook("check_backends")(op.name, (lhs, rhs), _SIDES)
        inputs, output = binary_domains(op, lhs, rhs)
        (pending_slot(None) or pending_setup())[0] = (op, lhs, rhs, inputs, output)
        return op, lhs, rhs

    def _setup(self):
        op, lhs, rhs = self._args
        stash = (pending_slot(None) or pending_setup())[0]
        # The slot is this context's; a term built by a rule in between has other arguments.
        if stash is not None and stash[0] is op and stash[1] is lhs and stash[2] is rhs:
            self.inputs, self.output = stash[3], stash[4]
            return
        self.inputs = merge_inputs(lhs.inputs, rhs.inputs, op.name)
        self.output = (ops.infer_domain_by_divisor(op, lhs.output, rhs.output, rhs.data)
                       if type(rhs) is Number else ops.infer_domain(op, lhs.output, rhs.output))


class Reduce(Funsor):
    """``op``-reduction of ``arg`` over ``reduced_vars``: a name, a Variable or a set of them,
    with ``Funsor.reduce``'s policy (a Variable must have its input's domain; a Bint Variable
    that is not an input repeats ``arg`` over its values; a bare name that is not an input
    raises ValueError). The term stores the names of the reduced inputs.

    Example:
        >>> t = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> float(fc.Reduce(ops.add, t, frozenset({fc.Variable("i", fc.Bint[3])})).data)
        3.0
    """

    fields = ("op", "arg", "reduced_vars")
    binds = ("reduced_vars",)

    @classmethod
    def _prepare(cls, op, arg, reduced_vars):
        if op not in ops.REDUCE_OPS:
            name = f"ops.{op.name}" if isinstance(op, ops.Op) else repr(op)  # "add": no Op
            raise ValueError(f"cannot reduce with {name}: it is not an associative op "
                             "with a reduction; use one of "
                             f"{sorted(o.name for o in ops.REDUCE_OPS)}")
        # reduced_vars as Funsor.reduce documents; Variables that are not inputs repeat arg.
        names, absent = split_reduced_vars(reduced_vars, arg.inputs)
        if absent:
            arg = reduce_constant(arg, op, absent)
        return op, arg, names

    @staticmethod
    def _cons_key(args):
        # The op and the frozenset of names are keys as they are; arg by identity, as the
        # interpreter keys any term (a live Reduce keeps arg, so its id is not reused).
        op, arg, reduced_vars = args
        return (op, id(arg), reduced_vars)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.fields != Reduce.fields:  # (fields of its own: the generic key)
            cls._cons_key = None

    def _setup(self):
        reduced_vars, arg = self.reduced_vars, self.arg
        self.inputs = {k: d for k, d in arg.inputs.items() if k not in reduced_vars}
        output = arg.output
        if output.dtype != "real":  # a sum of integers may exceed each one's bound
            count = math.prod(arg.inputs[k].size for k in reduced_vars)
            output = reduce_domain(self.op, output, count)
        self.output = output


class Subs(Funsor):
    """Substitution ``arg(name=value, ...)``; ``subs`` is a tuple of ``(name, funsor)`` pairs
    (a dict is accepted; values that are not funsors are converted to the input's domain).

    Example:
        >>> f = fc.Tensor(np.array([10.0, 20.0, 30.0]), {"i": fc.Bint[3]})
        >>> fc.Subs(f, (("i", fc.Number(2, 3)),)).item(), fc.Subs(f, {"i": 0}).item()
        (30.0, 10.0)
    """

    fields = ("arg", "subs")

    @classmethod
    def _prepare(cls, arg, subs):
        if type(subs) is dict:
            subs = tuple(subs.items())
        inputs = arg.inputs
        if len(subs) == 1 and type(subs) is tuple:  # f(i=0): a checked Number, as it is
            name, value = subs[0]
            if type(value) is Number and inputs.get(name) is value.output:
                return arg, subs
        pairs, arrays = [], False
        for name, value in subs:
            domain = inputs.get(name)
            if domain is None:
                continue
            if not isinstance(value, Funsor):
                value = to_funsor(value, domain)
            if value.output is not domain:
                check_substitution(name, domain, value)
            arrays = arrays or type(value).arrays
            pairs.append((name, value))
        if arrays:  # values holding arrays: one backend (terms/backend_check.py)
            arg, *values = _hook("check_backends")("substitute", (arg, *(v for _, v in pairs)))
            pairs = [(name, v) for (name, _), v in zip(pairs, values)]
        return arg, tuple(pairs)

    def _setup(self):
        arg, subs = self._args
        names = {name for name, _ in subs}
        inputs = {k: d for k, d in arg.inputs.items() if k not in names}
        for _, value in subs:
            inputs = merge_inputs(inputs, value.inputs, "substitute")
        self.inputs = inputs
        self.output = arg.output


class Align(Funsor):
    """``Align(arg, names)``: the same function with inputs reordered, ``names`` first.

    Example:
        >>> f = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> fc.Align(f, ("j",)).inputs, fc.Align(f, ("j",)).data.shape
        ({'j': Bint[3], 'i': Bint[2]}, (3, 2))
    """

    fields = ("arg", "names")

    @classmethod
    def _prepare(cls, arg, names):
        # A name substituted away is dropped, the rest keep their order (.align checks names).
        return arg, tuple(n for n in names if n in arg.inputs)

    def _setup(self):
        arg, names = self._args
        inputs = {n: arg.inputs[n] for n in names}
        inputs.update(arg.inputs)
        self.inputs = inputs
        self.output = arg.output
