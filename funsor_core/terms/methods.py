"""The term-building methods of every funsor, installed on ``Funsor`` when the terms package
loads (``terms/base.py`` imports this module): ``f(i=0)`` and ``f(x="y")`` build ``Subs``,
``f.reduce(op, "i")`` builds ``Reduce``, ``f.align(names)`` builds ``Align``, ``f[...]`` builds
``Unary(getitem)`` or a gather, and ``f.input_vars`` the ``Variable`` of each input.

They live beside the terms they build (not in ``terms/funsor.py``, which knows no other term)
so that the import graph stays a tree. The hot cases (``f(i=0)``, ``f.reduce(op, "i")``,
``f(x="y")``) first ask the first rule's eager program for a one-frame answer, and otherwise
run the rules directly when the interpretation would only run them
(``engine/fast_path.py``): the same rules, the same errors, the same term.

Example:
    >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> f(i=1).data, f.reduce(ops.add, "i").data, f.align(("j", "i")).data.shape
    (array([3., 4., 5.]), array([3., 5., 7.]), (3, 2))
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.engine.fast_path import eager_programs, eager_rules, run_rules
from funsor_core.engine.protocol import _hook
from funsor_core.terms.conversion import _BINT_NUMBERS, _subs_value
from funsor_core.terms.funsor import Funsor
from funsor_core.terms.generic import Align, Reduce, Subs, Unary
from funsor_core.terms.inputs import (
    _normalize_index,
    reduce_constant,
    reduce_moment,
    split_reduced_vars,
)
from funsor_core.terms.leaves import Variable

__all__: list = []

# The first rule's one-frame answers for ``f(i=0)`` and ``f.reduce(op, "i")`` (live tables).
_EAGER_SUBS = eager_programs("eager_subs_int")
_EAGER_REDUCE = eager_programs("eager_reduce_name")
# ... and for ``f(x="y")``: ``program(f, {"x": "y", ...})`` answers what the first rule answers
# for the substitution of ``Variable("y", f.inputs["x"])`` (names not inputs of f ignored), or
# None (then the Variables and the Subs are built).
_EAGER_RENAME = eager_programs("eager_subs_rename")
_STR = frozenset([str])  # (every value a str: renaming, decided by one C-level pass)
_INPUT_MOMENTS = frozenset([ops.mean, ops.var, ops.std])


def _input_vars(self) -> frozenset:
    """The free inputs as a frozenset of Variables, as in funsor.

    Example:
        >>> f = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> f.input_vars == frozenset({fc.Variable("i", fc.Bint[2])})
        True
    """
    return frozenset(Variable(k, d) for k, d in self.inputs.items())



def _call(self, *args, **kwargs):
    """Substitute values for inputs, by name or positionally in the order of ``inputs``: a
    number, an array, a funsor, or a str (renaming the input).

    Example:
        >>> f = fc.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), {"i": fc.Bint[2], "j": fc.Bint[2]})
        >>> f(i=1, j=0).item(), f(1, 0).item(), f(i="k").inputs
        (3.0, 3.0, {'k': Bint[2], 'j': Bint[2]})
    """
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



def _eager_rename(term: Funsor, names: dict) -> Funsor | None:
    """The first rule's answer for ``term(**names)`` (every value a str) from its eager
    program, or None."""
    rules = eager_rules((Subs, type(term), tuple))
    fast = _EAGER_RENAME.get(rules[0]) if rules else None
    return None if fast is None else fast(term, names)



def _reduce(self, op: ops.Op, reduced_vars=None) -> Funsor:
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



def _align(self, names) -> Funsor:
    """Reorder inputs so that ``names`` come first, in that order (the function is the same;
    a Tensor's data is transposed to match).

    Example:
        >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> g = f.align(("j", "i"))
        >>> tuple(g.inputs), g(j=2, i=1).item()  # f at row 1, column 2: 1 * 3 + 2
        (('j', 'i'), 5.0)
    """
    names = tuple(names)
    if names == tuple(self.inputs)[: len(names)]:
        return self
    unknown = [n for n in names if n not in self.inputs]
    if unknown:
        raise ValueError(f"cannot align by {unknown}: not inputs of {dict(self.inputs)}")
    if len(set(names)) != len(names):
        raise ValueError(f"cannot align by {list(names)}: a name appears twice")
    return Align(self, names)



def _getitem(self, index):
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


def _install(name: str, fn, wrap=None) -> None:
    fn.__name__, fn.__qualname__ = name, f"Funsor.{name}"
    setattr(Funsor, name, wrap(fn) if wrap else fn)


_install("input_vars", _input_vars, property)
_install("__call__", _call)
_install("reduce", _reduce)
_install("align", _align)
_install("__getitem__", _getitem)
