"""``make_funsor``: a new term class, and its exact rule, from one type-hinted function.

The hints say what each argument is, and the declaration the class gets follows from them:

- ``Funsor``: a funsor argument; its inputs are inputs of the term.
- ``Bound``: a name bound by the term (a field in ``binds``); its domain is read off the
  inputs of the funsor arguments, and it is not an input of the term.
- ``Fresh[lambda x, ...: domain]``: a new name, an input of the term, whose domain is computed
  from the outputs of the named arguments (the value itself for a ``Value`` argument).
- ``Value[int]``: a plain Python value of that type (part of the dispatch pattern).
- ``Has[{"i"}]``: a funsor argument that should depend on the ``Bound`` argument ``i``; a
  term built lazily whose argument does not warns with a ``SyntaxWarning``.
- The return hint ``Fresh[...]`` computes the output domain.

The function body becomes a rule of the default interpretation (``exact``) for the new
class; it returns the evaluated term, or ``None`` to leave the term lazy.

Example:
    >>> from funsor_core.terms.factory import Bound, Fresh, make_funsor
    >>> @make_funsor
    ... def MatMul(x: fc.Funsor, y: fc.Funsor, i: Bound) -> Fresh[lambda x: x]:
    ...     return (x * y).reduce(ops.add, i)
    >>> x = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> y = fc.Tensor(np.ones(3), {"b": fc.Bint[3]})
    >>> MatMul(x, y, "b").data
    array([3., 3.])
"""

from __future__ import annotations

import inspect
import typing
import warnings

from funsor_core.engine.interpreter import _DEFAULT, Interpretation
from funsor_core.terms.base import Funsor, Variable, to_funsor

__all__ = ["Bound", "Fresh", "Has", "Value", "make_funsor"]


class _FreshMeta(type):
    def __getitem__(cls, fn):
        return Fresh(fn)


class Fresh(metaclass=_FreshMeta):
    """Hint ``Fresh[lambda x, y: domain]`` (or ``Fresh[Real]``): a domain computed from the
    domains of the named arguments.

    Example:
        >>> Fresh[lambda x: fc.Bint[x.shape[0]]](x=fc.Reals[3, 4])
        Bint[3]
    """

    def __init__(self, fn):
        if inspect.isfunction(fn):
            self.fn, self.args = fn, tuple(inspect.signature(fn).parameters)
        else:
            self.fn, self.args = (lambda: fn), ()

    def __call__(self, **domains):
        missing = [a for a in self.args if a not in domains]
        if missing:
            raise TypeError(f"Fresh[...] refers to {missing}, which are not Funsor, Bound, "
                            "Has or Value arguments")
        return self.fn(*(domains[a] for a in self.args))


class Bound:
    """Hint: the argument is a name bound by the term (not among its inputs).

    Example:
        >>> Bound.__name__
        'Bound'
    """


class _ValueMeta(type):
    def __getitem__(cls, value_type):
        return Value(value_type)


class Value(metaclass=_ValueMeta):
    """Hint ``Value[int]``: a plain Python value of that type; types cannot depend on funsors.

    Example:
        >>> Value[int].value_type
        <class 'int'>
    """

    def __init__(self, value_type):
        if isinstance(value_type, type) and issubclass(value_type, Funsor):
            raise TypeError(f"Value[{value_type.__name__}]: a domain cannot depend on a "
                            "funsor's value; hint funsor arguments as Funsor")
        self.value_type = value_type


class _HasMeta(type):
    def __getitem__(cls, bound):
        return Has(bound)


class Has(metaclass=_HasMeta):
    """Hint ``Has[{"i"}]``: a funsor argument that depends on the ``Bound`` argument ``i``.

    Example:
        >>> Has[{"i"}].bound
        {'i'}
    """

    def __init__(self, bound):
        if not isinstance(bound, set) or not all(isinstance(v, str) for v in bound):
            raise TypeError(f"Has[...] takes a set of argument names, got {bound!r}")
        self.bound = bound


def _is_funsor_hint(hint) -> bool:
    return hint is Funsor or isinstance(hint, Has)


def make_funsor(fn, interpretation: Interpretation | None = None) -> type:
    """A term class named after ``fn``, declared from its type hints (see the module
    docstring), and ``fn`` registered as its rule on ``interpretation`` (default: the default
    interpretation, ``exact``).

    Example:
        >>> from funsor_core.terms.factory import Fresh, make_funsor
        >>> @make_funsor
        ... def Double(x: fc.Funsor) -> Fresh[lambda x: x]:
        ...     return None  # no rule: the term stays as it is
        >>> Double(fc.Variable("z", fc.Real)).inputs
        {'z': Real}
    """
    hints = typing.get_type_hints(fn)
    if "return" not in hints or not isinstance(hints["return"], Fresh):
        raise TypeError(f"make_funsor({fn.__name__}) needs a return hint Fresh[...]")
    output_hint = hints.pop("return")
    names = tuple(inspect.signature(fn).parameters)
    for name in names:
        hint = hints.get(name)
        if not (hint in (Funsor, Bound) or isinstance(hint, (Fresh, Value, Has))):
            raise TypeError(f"make_funsor({fn.__name__}): argument '{name}' has hint {hint!r}; "
                            "use Funsor, Bound, Fresh[...], Value[...] or Has[...]")
    kinds = tuple(hints[n] for n in names)

    def dependent(args) -> dict:
        # The domains Fresh lambdas see: outputs of funsor and bound args, Value args as is.
        return {n: a if isinstance(h, Value) else a.output
                for n, h, a in zip(names, kinds, args)
                if h is Bound or _is_funsor_hint(h) or isinstance(h, Value)}

    def _prepare(cls, *args):
        if len(args) != len(names):
            raise TypeError(f"{cls.__name__} takes {len(names)} arguments {names}, got "
                            f"{len(args)}")
        args = list(args)
        for i, (name, hint) in enumerate(zip(names, kinds)):
            if _is_funsor_hint(hint):
                args[i] = to_funsor(args[i])
            elif isinstance(hint, Value) and not isinstance(args[i], hint.value_type):
                raise TypeError(f"{cls.__name__}: argument '{name}' must be a "
                                f"{hint.value_type.__name__}, got {args[i]!r}")
        for i, (name, hint) in enumerate(zip(names, kinds)):
            if hint is Bound and not isinstance(args[i], Variable):
                found = [a.inputs[args[i]] for a in args
                         if isinstance(a, Funsor) and args[i] in a.inputs]
                if not found:
                    raise ValueError(f"{cls.__name__}: cannot infer the domain of the bound "
                                     f"name {name}={args[i]!r}: no funsor argument has it "
                                     "as an input")
                args[i] = Variable(args[i], found[0])
        domains = dependent(args)
        for i, hint in enumerate(kinds):
            if isinstance(hint, Fresh):
                args[i] = to_funsor(args[i], hint(**domains))
        return tuple(args)

    def _setup(self):
        args = self._args
        inputs: dict = {}
        for name, hint, arg in zip(names, kinds, args):
            if _is_funsor_hint(hint):
                inputs.update(arg.inputs)
                if isinstance(hint, Has):
                    for b in hint.bound:
                        var = args[names.index(b)]
                        if var.name not in arg.inputs:
                            warnings.warn(
                                f"{type(self).__name__}: argument {name} does not depend on "
                                f"the bound variable {var.name} (argument {b}); is {b} "
                                f"always an input of {name}?", SyntaxWarning, stacklevel=2)
        bound = {a.name for h, a in zip(kinds, args) if h is Bound}
        for name in bound:
            inputs.pop(name, None)
        for hint, arg in zip(kinds, args):
            if isinstance(hint, Fresh):
                inputs.update((k, d) for k, d in arg.inputs.items() if k not in bound)
        self.inputs = inputs
        self.output = output_hint(**dependent(args))

    ns = {
        "fields": names,
        "binds": tuple(n for n, h in zip(names, kinds) if h is Bound),
        "_prepare": classmethod(_prepare),
        "_setup": _setup,
        "__doc__": fn.__doc__ or f"Term made by make_funsor from {fn.__name__}.",
        "__module__": getattr(fn, "__module__", __name__),
    }
    result = type(fn.__name__, (Funsor,), ns)
    if interpretation is None:
        interpretation = _DEFAULT[0]
        if interpretation.name == "reflect":
            raise RuntimeError("make_funsor needs funsor_core imported (it registers its rule "
                               "on the default interpretation, exact)")

    def rule(*args):
        return fn(*args)

    rule.__name__ = f"{interpretation.name}_{fn.__name__.lower()}"
    pattern = tuple(h.value_type if isinstance(h, Value) else Funsor for h in kinds)
    interpretation.register(result, *pattern)(rule)
    return result
