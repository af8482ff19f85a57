"""The term language: the Funsor base class and the generic (non-atom) terms.

Every term class is built through ``FunsorMeta.__call__``: arguments are normalized and
checked by the class's ``_prepare`` (so a mistake raises at once, under every interpretation),
then the active interpretation rewrites or builds the term.

Example:
    >>> x = fc.Variable("x", fc.Real)
    >>> (x + 1).inputs
    {'x': Real}
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from funsor_core import ops
from funsor_core.domains import Bint, Domain, Real
from funsor_core.engine.cache import FastCache
from funsor_core.engine.fast_path import eager_programs, eager_rules, run_rules
from funsor_core.engine.protocol import (  # noqa: F401  (re-exported)
    TERM_HOOKS,
    FunsorMeta,
    Term,
    TypeHints,
    _hook,
    pending_setup,
    pending_slot,
    register_term_hook,
)
from funsor_core.ops.op import is_scalar
from funsor_core.terms.inputs import (  # noqa: F401  (re-exported)
    _MISMATCH,
    DomainError,
    _as_domain,
    _index_shape,
    _normalize_index,
    check_substitution,
    index_to_python,
    merge_all_inputs,
    merge_inputs,
    python_number,
    reduce_constant,
    reduce_domain,
    reduce_moment,
    split_reduced_vars,
)

__all__ = [
    "Funsor", "FunsorMeta", "Variable", "Number", "Unary", "Binary", "Reduce", "Subs",
    "Align", "to_funsor", "is_atom",
    "merge_inputs", "merge_all_inputs", "DomainError",
]


# The first rule's one-frame answers for ``f(i=0)`` and ``f.reduce(op, "i")`` (live tables).
_EAGER_SUBS = eager_programs("eager_subs_int")
_EAGER_REDUCE = eager_programs("eager_reduce_name")
# ... and for ``f(x="y")``: ``program(f, {"x": "y", ...})`` answers what the first rule answers
# for the substitution of ``Variable("y", f.inputs["x"])`` (names not inputs of f ignored), or
# None (then the Variables and the Subs are built).
_EAGER_RENAME = eager_programs("eager_subs_rename")


class Funsor(Term):
    """Base of all terms: a lazy function of named, typed inputs into an output domain.

    A term class declares its constructor arguments once; the rest is derived::

        class Reduce(Funsor):
            fields = ("op", "arg", "reduced_vars")   # constructor args, stored as attributes
            binds = ("reduced_vars",)                # fields naming variables bound inside
            arrays = ()                              # fields holding backend arrays

    and defines ``_prepare`` (normalize and check the arguments, at construction under every
    interpretation) and ``_setup`` (compute ``inputs`` and ``output``). Slots, ``bound``,
    alpha-renaming, substitution, pickling and JAX pytree flattening follow from the
    declaration.

    Attributes:
        inputs: ordered mapping of free variable names to domains.
        output: the domain of the value.

    Example:
        >>> f = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> (f * 2).reduce(ops.add, "i").item()
        6.0
    """

    __slots__ = ()
    __annotations__ = TypeHints()

    @property
    def dtype(self):
        return self.output.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.output.shape

    def __bool__(self) -> bool:
        if not self.inputs and not self.shape:
            return bool(_hook("to_data")(self))
        raise TypeError(
            f"the truth value of a funsor with inputs {self.inputs} and output {self.output} is "
            "ambiguous; reduce it first, or compare its data")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"a funsor of output {self.output} has no len()")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def input_vars(self) -> frozenset:
        """The free inputs as a frozenset of Variables, as in funsor.

        Example:
            >>> f = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
            >>> f.input_vars == frozenset({fc.Variable("i", fc.Bint[2])})
            True
        """
        return frozenset(Variable(k, d) for k, d in self.inputs.items())

    @property
    def data(self):
        """The array of a Tensor, the number of a Number; any other term raises NoDataError
        (a LazyTermError naming the pattern with no rule, or the free inputs of an atom)."""
        raise _hook("lazy_error")(self, ".data")

    def item(self):
        """The Python number of a funsor with no inputs and a scalar output."""
        data = _hook("to_data")(self)
        return data.item() if hasattr(data, "item") else data

    # -- substitution, reduction, alignment ----------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Substitute values for inputs, by name or positionally in the order of ``inputs``."""
        if not args:
            inputs = self.inputs
            if len(kwargs) == 1:  # the hot case f(i=0): no generator, no loop
                ((k, v),) = kwargs.items()
                domain = inputs.get(k)
                if domain is None:
                    return self
                if type(v) is int:
                    rules = eager_rules((Subs, type(self), tuple))
                    fast = _EAGER_SUBS.get(rules[0]) if rules else None
                    if fast is not None and (result := fast(self, k, v)) is not None:
                        return result  # the first rule's answer in one frame
                    number = _BINT_NUMBERS.data.get((v, domain))  # built before: no to_funsor
                    if number is not None and number.output is domain:
                        # Subs._prepare keeps these args as they are: run the rules directly.
                        subs = ((k, number),)
                        return (run_rules(rules, Subs, (self, subs)) if rules
                                else Subs(self, subs))
                elif type(v) is str and (result := _eager_rename(self, kwargs)) is not None:
                    return result
                return Subs(self, ((k, v if isinstance(v, Funsor) else _subs_value(k, v, domain)),))
            if _STR.issuperset(map(type, kwargs.values())) and (
                    result := _eager_rename(self, kwargs)) is not None:
                return result  # renaming: no Variables built
            pairs = tuple((k, v if isinstance(v, Funsor) else _subs_value(k, v, inputs[k]))
                          for k, v in kwargs.items() if k in inputs)
            return Subs(self, pairs) if pairs else self
        if len(args) > len(self.inputs):
            raise ValueError(f"got {len(args)} positional values but only {len(self.inputs)} "
                             f"inputs {tuple(self.inputs)}")
        subs = dict(zip(self.inputs, args))
        for name, value in kwargs.items():
            if name in subs:
                raise ValueError(f"input '{name}' given both positionally and by name")
            subs[name] = value
        pairs = tuple((k, _subs_value(k, v, self.inputs[k])) for k, v in subs.items()
                      if k in self.inputs)
        if not pairs:
            return self
        return Subs(self, pairs)

    def reduce(self, op: ops.Op, reduced_vars=None) -> Funsor:
        """Reduce with ``op`` over input variables: a name, a Variable, or a set of them
        (None = all inputs). One policy for every reduction (``terms/inputs.py``): a Variable
        must have its input's domain; a Bint Variable that is not an input repeats the value
        over its values (as in funsor: ``x.reduce(ops.add, Variable("i", Bint[4])) is x * 4``);
        a bare name that is not an input raises ValueError.

        Example:
            >>> f = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
            >>> f.reduce(ops.logaddexp, "j").data
            array([1.09861229, 1.09861229])
        """
        if type(reduced_vars) is str and reduced_vars in self.inputs and op in ops.REDUCE_OPS:
            rules = eager_rules((Reduce, type(op), type(self), frozenset))
            fast = _EAGER_REDUCE.get(rules[0]) if rules else None
            if fast is not None and (result := fast(op, self, reduced_vars)) is not None:
                return result  # the first rule's answer in one frame
        names, absent = split_reduced_vars(reduced_vars, self.inputs)
        if op in _INPUT_MOMENTS:
            return reduce_moment(self, op, names)
        if names and not absent and op in ops.REDUCE_OPS:
            # Reduce._prepare's checks have passed (a reduction op, input names): when the
            # interpretation only runs its rules, run them directly.
            rules = eager_rules((Reduce, type(op), type(self), frozenset))
            if rules:
                return run_rules(rules, Reduce, (op, self, names))
        result = Reduce(op, self, names) if names else self
        return reduce_constant(result, op, absent) if absent else result

    def reshape(self, shape) -> Funsor:
        """The same function with its output reshaped (inputs untouched), as funsor's.

        Example:
            >>> f = fc.Tensor(np.arange(12.0).reshape(2, 6), {"i": fc.Bint[2]})
            >>> f.reshape((2, 3)).output, f.reshape((3, -1))(i=1).data[0]
            (Reals[2, 3], array([6., 7.]))
        """
        return ops.reshape(self, shape)

    def align(self, names) -> Funsor:
        """Reorder inputs so that ``names`` come first, in that order."""
        names = tuple(names)
        if names == tuple(self.inputs)[: len(names)]:
            return self
        unknown = [n for n in names if n not in self.inputs]
        if unknown:
            raise ValueError(f"cannot align by {unknown}: not inputs of {dict(self.inputs)}")
        return Align(self, names)

    def sample(self, sampled_vars, sample_inputs=None, rng_key=None):
        """Draw samples of ``sampled_vars`` (see ``funsor_core.sampling.draw.sample``)."""
        return _hook("sample")(self, sampled_vars, sample_inputs, rng_key)

    # -- reductions over output dims (``sum``, ``max``, ... are installed from a table below) -
    def std(self, axis=None, ddof=0, keepdims=False):
        return ops.std(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def var(self, axis=None, ddof=0, keepdims=False):
        return ops.var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def __getitem__(self, index):
        """Index the output (not the inputs), as funsor does.

        Ints, slices, ``None`` and ``...`` index as in numpy. A name ``"i"`` (or a
        ``Variable("i", Bint[n])``) turns that output dim into the input ``i``, so
        ``Tensor(data)["i", "j"]`` names the two leading dims. Any funsor with a ``Bint[n]``
        output selects along a dim of size ``n`` (a gather), and its inputs join the result's.

        Example:
            >>> x = fc.Tensor(np.arange(6.0).reshape(2, 3))
            >>> x[1].data, x["i"].inputs, x[:, "j"].output
            (array([3., 4., 5.]), {'i': Bint[2]}, Reals[2])
        """
        normalized = _normalize_index(index, self.shape)
        if normalized is None:  # names or funsors among the parts
            return _hook("getitem")(self, index if type(index) is tuple else (index,))
        return Unary(ops.getitem.bind(index=normalized), self)


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


_SIDES = ("the left term", "the right term")  # Binary's operands, in check_backends' message
# The operator methods (``f + g``, ``-f``, ``f.sum()``) are installed by terms/operators.py.
_INPUT_MOMENTS = frozenset([ops.mean, ops.var, ops.std])


def is_atom(x: Any) -> bool:
    """Whether ``x`` is an atom term (Tensor, Gaussian, Delta, Number, Variable, Slice)."""
    return getattr(type(x), "_atom", False)


# =============================================================================================
# Generic terms.
class Variable(Funsor):
    """A free variable: ``Variable("x", Real)``.

    Example:
        >>> fc.Variable("i", fc.Bint[3]).inputs
        {'i': Bint[3]}
    """

    fields = ("name", "output")
    _atom = True

    @classmethod
    def _prepare(cls, name, output=Real):
        if not isinstance(name, str):
            raise TypeError(f"a Variable's name must be a str, got {name!r}")
        return name, _as_domain(output)

    def _setup(self):
        self.output = output = self._args[1]
        self.inputs = {self.name: output}


class Number(Funsor):
    """A scalar constant: ``Number(0.5)`` or an integer ``Number(2, 3)`` of ``Bint[3]``.

    Example:
        >>> (fc.Number(2.0) * 3).data
        6.0
    """

    fields = ("data", "dtype")
    _atom = True
    sort_rank = 80

    @classmethod
    def _prepare(cls, data, dtype="real"):
        if dtype == "real" and type(data) is float:
            return data, dtype
        if isinstance(dtype, Domain):
            dtype = dtype.dtype
        if not isinstance(data, numbers.Number):
            data = python_number(data)
        if dtype != "real":
            if type(data) is bool:  # a bool is the Bint value 0 or 1, as in funsor
                data = int(data)
            elif type(data) is float and data.is_integer():  # 2.0 names the value 2
                data = int(data)
            if type(dtype) is not int and isinstance(dtype, numbers.Integral) and not isinstance(
                    dtype, bool):
                dtype = int(dtype)  # a numpy int bound (a shape entry) is the int bound
            if type(dtype) is not int or dtype < 0:
                raise DomainError(f"Number({data!r}, {dtype!r}): a dtype is 'real' or an int "
                                  "bound n (the values 0 .. n-1 of Bint[n]), e.g. Number(2, 3)")
            if not isinstance(data, numbers.Integral):
                raise DomainError(f"Number({data!r}) cannot have dtype {dtype!r}: a Bint[n] "
                                  "value must be an integer")
            if not 0 <= data < dtype:
                raise DomainError(f"Number({data}) is out of range for Bint[{dtype}]")
        return data, dtype

    @staticmethod
    def _cons_key(args):
        # -0.0 == 0.0 (and hashes the same) but 1 / -0.0 = -inf: key floats by their sign too.
        data = args[0]
        if type(data) is float:
            return (float, data, math.copysign(1.0, data), args[1])
        return (type(data), data, args[1])

    def _setup(self):
        dtype = self._args[1]
        self.inputs = {}
        self.output = Real if dtype == "real" else Bint[dtype]

    @property
    def dtype(self):
        return self.output.dtype


class Unary(Funsor):
    """``op(arg)`` for a unary op (elementwise, or acting on the output dims)."""

    fields = ("op", "arg")

    def _setup(self):
        self.inputs = self.arg.inputs
        self.output = unary_domain(self.op, self.arg.output)


def unary_domain(op, domain: Domain) -> Domain:
    if op.base is ops.getitem:
        shape = _index_shape(op.kwargs["index"], domain.shape)
        return Domain(domain.dtype, shape)
    return ops.infer_domain(op, domain)


class Binary(Funsor):
    """``op(lhs, rhs)``, broadcasting inputs by name and outputs by shape."""

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
    """Substitution ``arg(name=value, ...)``; ``subs`` is a tuple of ``(name, funsor)`` pairs."""

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
    """``Align(arg, names)``: the same function with inputs reordered, ``names`` first."""

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


def _eager_rename(term: Funsor, names: dict) -> Funsor | None:
    """The first rule's answer for ``term(**names)`` (every value a str) from its eager
    program, or None."""
    rules = eager_rules((Subs, type(term), tuple))
    fast = _EAGER_RENAME.get(rules[0]) if rules else None
    return None if fast is None else fast(term, names)


_STR = frozenset([str])  # (every value a str: renaming, decided by one C-level pass)

# Integer constants are substituted in hot loops (``f(i=0)``); keep them built once.
# Bounded, so that a loop over fresh integers or fresh Bint sizes keeps memory flat.
_BINT_NUMBERS = FastCache("terms.bint_numbers", 4096)


def _subs_value(name: str, value, domain: Domain) -> Funsor:
    """``to_funsor(value, domain)`` for ``f(name=value)``: a bad value's error names the input."""
    try:
        return to_funsor(value, domain)
    except DomainError as e:
        raise DomainError(f"substituting {name}={value!r} into an input of domain {domain}: "
                          f"{e}") from None
    except TypeError as e:  # a value of no funsor form (None, a slice, an object)
        raise type(e)(f"substituting {name}={value!r} into an input of domain {domain}: "
                      f"{e}") from e


def to_funsor(x, output: Domain | None = None, dim_to_name=None) -> Funsor:
    """Convert a number, array, name or funsor into a funsor.

    Args:
        x: a Funsor, Python number, array, or a string (a Variable of domain ``output``).
        output: the expected output domain; checked for funsors, used for the rest.
        dim_to_name: for arrays, a mapping from batch dims (negative ints, counted from the
            left of the output shape) to input names; unnamed batch dims must have size 1,
            and dims of size 1 name no input (they broadcast, as in funsor).

    Example:
        >>> fc.to_funsor(np.zeros((2, 1, 3)), fc.Reals[3], {-2: "i"}).inputs
        {'i': Bint[2]}
    """
    if type(x) is int and output is not None:  # f(i=0): a Bint Number built before
        number = _BINT_NUMBERS.data.get((x, output))
        if number is not None:
            return number
    if isinstance(x, Funsor):
        if output is not None and x.output is not output:
            raise DomainError(f"expected a funsor of output {output}, got {x.output}")
        return x
    if isinstance(x, str):
        if output is None:
            raise ValueError(f"to_funsor('{x}') needs an output domain to make a Variable")
        return Variable(x, output)
    if isinstance(x, numbers.Number) or is_scalar(x):  # numpy scalars too (backend_check)
        x = x.item() if hasattr(x, "item") else x
        if output is None or output.dtype == "real":
            if output is not None and output.shape:
                raise DomainError(f"a scalar cannot have output {output}")
            return Number(x)
        if output.shape:
            raise DomainError(f"a scalar cannot have output {output}")
        key = (x, output)
        number = _BINT_NUMBERS.data.get(key) if type(x) is int else None
        if number is None:
            number = Number(x, output.dtype)
            if type(x) is int:
                _BINT_NUMBERS.put(key, number)
        return number
    if isinstance(x, (list, set, frozenset, dict)):
        raise ValueError(_NOT_ARRAY.format(kind=type(x).__name__))
    return _hook("array_to_funsor")(x, output, dim_to_name)


_NOT_ARRAY = ("to_funsor does not convert a {kind}, as funsor does not: a set or dict has no "
              "array form, and a list is ambiguous (which dims are inputs?). Make an array "
              "first, e.g. fc.Tensor(np.array(values), {{'i': fc.Bint[n]}}).")
