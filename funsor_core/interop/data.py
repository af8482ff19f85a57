"""Conversion between funsors and arrays, and ``@function``.

Example:
    >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> fc.to_data(f, name_to_dim={"j": -2, "i": -1}).shape
    (3, 2)
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.domains import Bint, Domain
from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.engine.cache import FastCache
from funsor_core.engine.interpreter import get_interpretation
from funsor_core.terms.base import (
    TERM_HOOKS,
    DomainError,
    Funsor,
    Number,
    Variable,
    register_term_hook,
)
from funsor_core.terms.constant import Constant
from funsor_core.terms.product import ProductDomain, Tuple
from funsor_core.terms.reshaping import Function, Stack
from funsor_core.terms.traversal import children, reinterpret

__all__ = ["to_data", "array_to_funsor", "function", "LazyTermError", "NoDataError",
           "ConversionError", "SeveralValuesError"]


class LazyTermError(NotImplementedError, ValueError):
    """A number was demanded from a term that is still lazy (a ``ValueError`` too, which is
    what funsor raises for ``to_data`` of a term with free variables).

    Example:
        >>> fc.to_data(fc.Variable("x", fc.Real))
        Traceback (most recent call last):
        ...
        funsor_core.interop.data.LazyTermError: ...
    """


class SeveralValuesError(TypeError, ValueError):
    """``float(f)``, ``int(f)`` or ``f.item()`` of a funsor holding several values: a
    TypeError (as ``float()`` of a sequence), and a ValueError, which numpy's ``.item()``
    raises and funsor 0.4.8 passes through.

    Example:
        >>> try:
        ...     float(fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}))
        ... except ValueError as e:
        ...     print(type(e).__name__, isinstance(e, TypeError))
        SeveralValuesError True
    """


class ConversionError(TypeError, ValueError):
    """A value with no funsor form (None, a slice, an object): a TypeError, and a ValueError
    as funsor 0.4.8's ``to_funsor`` raises.

    Example:
        >>> try:
        ...     fc.to_funsor(None)
        ... except TypeError as e:
        ...     print(type(e).__name__, isinstance(e, ValueError))
        ConversionError True
    """


class NoDataError(LazyTermError, AttributeError):
    """``.data`` of a term that is not a Tensor or Number (an AttributeError too, so that
    ``getattr(term, "data", default)`` still works).

    Example:
        >>> getattr(fc.Variable("x", fc.Real), "data", "no data")
        'no data'
    """


_NOT_A_NUMBER = (
    "{where} needs a number, but this {cls} is a function of its free inputs {inputs}: "
    "substitute values for them or reduce them first, e.g. .reduce(ops.logaddexp, {names})."
)


_LAZY = (
    "{where} needs a number, but this term is still lazy:\n  {term}\n"
    "No rule of the active interpretations matches ({pattern}). Active interpretations: "
    "{chain}.{hint}"
)

_RECORDED = (
    "{where} needs a number, but this term is still lazy:\n  {term}\n"
    "It was recorded (built under `with lazy:` or another recording interpretation); the "
    "active interpretations ({chain}) evaluate it: call fc.reinterpret(term) first.{hint}"
)


_GAUSSIAN_TO_DATA = (
    "\nA Normal or MultivariateNormal whose value is a Variable is a Gaussian under exact; "
    "to convert it to a torch distribution, build it (or call to_funsor) under `with lazy:`, "
    "which keeps the distribution term.")


def _lazy_error(expr: Funsor, where: str, cls: type = LazyTermError) -> LazyTermError:
    if type(expr)._atom:  # a Gaussian, Delta or Variable: evaluated, but not a number
        names = sorted(expr.inputs)
        return cls(_NOT_A_NUMBER.format(where=where, cls=type(expr).__name__,
                                        inputs=dict(expr.inputs), names=names))
    culprit = _innermost_lazy(expr)
    pattern = ", ".join([type(culprit).__name__] + [
        type(a).__name__ for a in culprit._args if isinstance(a, Funsor)])
    hint = ""
    if any(d.dtype == "real" for d in expr.inputs.values()):
        real = sorted(k for k, d in expr.inputs.items() if d.dtype == "real")
        hint = (f"\nIts free real inputs {real} have no value: substitute values for them or "
                "integrate them out.")
    elif expr.inputs:
        hint = f"\nIts free inputs are {dict(expr.inputs)}."
    reals = _reduced_reals(culprit)
    if reals:
        hint += _ESTIMATE.format(reals=reals)
    template = _RECORDED if _evaluates(culprit) else _LAZY
    return cls(template.format(where=where, term=repr(culprit), pattern=pattern,
                               chain=" -> ".join(get_interpretation().chain()), hint=hint))


def _evaluates(term: Funsor) -> bool:
    # A term built under `lazy` whose pattern the active interpretation does have a rule
    # for: saying "no rule matches" would send the user looking for a missing rule.
    try:
        return type(reinterpret(term))._atom
    except Exception:  # the error being built is the one to report
        return False


_ESTIMATE = (
    "\nIt sums or integrates out the real inputs {reals}, which has no closed form here (a "
    "product of mixtures, a nonlinear function of a Gaussian): to estimate it, evaluate it "
    "under `with MonteCarlo(rng_key=0, particle=Bint[1000]):` (interpretations.MonteCarlo), "
    "or collapse Gaussian mixtures under `with moment_matching:`.")


def _reduced_reals(term: Funsor) -> list:
    # The real names a reduction or integral binds: exact has closed forms for Gaussians
    # only, so these are the ones a Monte Carlo estimate would sample.
    names = {getattr(v, "name", v) for v in getattr(term, "reduced_vars", None) or ()}
    domains = {}
    for child in children(term):
        domains.update(child.inputs)
    return sorted(n for n in names if n in domains and domains[n].dtype == "real")


def _innermost_lazy(expr: Funsor) -> Funsor:
    # Walk down while some child is itself a non-atom: the deepest such term is the one whose
    # pattern had no rule. A child with inputs its parent lacks is lazy only because the parent
    # binds them (an Integrate or Reduce over a free variable): the parent is the culprit.
    node = expr
    while True:
        lazy_kids = [c for c in children(node) if not type(c)._atom
                     and c.inputs.keys() <= node.inputs.keys()]
        if not lazy_kids:
            return node
        node = lazy_kids[0]


def to_data(x: Any, name_to_dim: dict | None = None):
    """The array (or number) of a Tensor or Number.

    Args:
        x: a funsor with no inputs, or a Tensor whose inputs are all named in ``name_to_dim``.
        name_to_dim: maps input names to negative batch dims of the result.

    Raises:
        LazyTermError: if ``x`` is a lazy term (names the pattern that had no rule).

    Example:
        >>> fc.to_data(fc.Number(2.0))
        2.0
    """
    if not isinstance(x, Funsor):
        return x
    if isinstance(x, Number):
        return x.data
    if type(x) is Stack and all(type(p) is Number for p in x.parts):
        # A Stack of Numbers stays a Stack under exact; it converts as its Tensor does.
        x = Tensor(x.data, dict(x.inputs), x.dtype)
    if not isinstance(x, Tensor):
        if hasattr(x, "to_data"):
            return x.to_data(name_to_dim)
        if type(x) is Constant:
            tagged = _constant_to_data(x, name_to_dim)
            if tagged is not None:
                return tagged
        error = _lazy_error(x, "to_data()")
        if not isinstance(x, Variable) and any(d.dtype == "real" for d in x.inputs.values()):
            error.args = (error.args[0] + _GAUSSIAN_TO_DATA,)
        raise error
    if not x.inputs:
        return x.data
    if name_to_dim is None:
        raise ValueError(f"to_data() of a Tensor with inputs {dict(x.inputs)} needs name_to_dim, "
                         "e.g. name_to_dim={'i': -1}")
    missing = set(x.inputs) - set(name_to_dim)
    if missing:
        raise ValueError(f"name_to_dim lacks inputs {sorted(missing)} of {dict(x.inputs)}")
    dims = [name_to_dim[n] for n in x.inputs]
    if (any(not isinstance(d, (int, np.integer)) or d >= 0 for d in dims)
            or len(set(dims)) < len(dims)):
        raise ValueError(f"name_to_dim={name_to_dim} must give the inputs {list(x.inputs)} "
                         "distinct negative batch dims (counted from the right of the batch "
                         "shape, before the output's dims), e.g. {'i': -2, 'j': -1}")
    # Pad only to the leftmost dim of x's own inputs (as funsor 0.4.8 does): names of
    # name_to_dim that x lacks add no leading size-1 dims (numpyro's infer_discrete
    # passes every enumerated name, and its values must keep the site's own shape).
    batch_ndim = max(-name_to_dim[n] for n in x.inputs)
    order = sorted(x.inputs, key=lambda n: name_to_dim[n])
    data = x.align(tuple(order)).data
    shape = [1] * batch_ndim
    for n in order:
        shape[batch_ndim + name_to_dim[n]] = x.inputs[n].dtype
    return ops.reshape(data, tuple(shape) + x.shape)


def _constant_to_data(x: Constant, name_to_dim: dict | None):
    # A backend with provenance-tagged arrays (torch's ProvenanceTensor) gives the array of
    # x.arg tagged with the constant inputs, as funsor 0.4.8 does; others have no such value.
    data = to_data(x.arg, name_to_dim)
    tag = getattr(backend_of(data, None), "with_provenance", None)
    return None if tag is None else tag(data, frozenset(x._args[0]))


# type -> whether its values are arrays tagged with a provenance (a backend's
# TAGGED_ARRAY_TYPE, torch's ProvenanceTensor): to_funsor pays one dict lookup for it.
_TAGGED_TYPES = FastCache("interop.tagged_array_types", 1024)


def _is_tagged_type(x: Any) -> bool:
    tagged = getattr(backend_of(x, None), "TAGGED_ARRAY_TYPE", None)
    return tagged is not None and isinstance(x, tagged)


def array_to_funsor(x: Any, output: Domain | None = None, dim_to_name: dict | None = None):
    """Convert an array (or nested list) into a Tensor; see ``to_funsor``.

    Objects that are not arrays are first offered to the ``object_to_funsor`` hook, where
    one is installed (``funsor_core.distribution`` converts ``torch.distributions`` objects).
    An array tagged with a provenance (torch's ``ProvenanceTensor``) becomes a ``Constant``
    along the tagged ``(name, domain)`` pairs, in name order.

    Example:
        >>> t = fc.array_to_funsor(np.zeros((2, 3)), fc.Real, {-2: "i", -1: "j"})
        >>> dict(t.inputs), t.output
        ({'i': Bint[2], 'j': Bint[3]}, Real)
    """
    tagged = _TAGGED_TYPES.data.get(type(x))
    if tagged is None:
        tagged = _TAGGED_TYPES.put(type(x), _is_tagged_type(x))
    if tagged:
        data, provenance = backend_of(x).provenance_of(x)
        return Constant(tuple(sorted(provenance, key=lambda pair: pair[0])),
                        array_to_funsor(data, output, dim_to_name))
    if not is_array(x):
        convert = TERM_HOOKS.get("object_to_funsor")
        result = None if convert is None else convert(x, output, dim_to_name)
        if result is not None:
            return result
        if not isinstance(x, (list, tuple)) and not hasattr(x, "__array__"):
            # None, a slice or any other object would become a 0-d object array.
            raise ConversionError(_NOT_CONVERTIBLE.format(typ=type(x).__name__, x=x) +
                            (_SLICE_HINT if isinstance(x, slice) else ""))
        x = backend_module().asarray(x)
    if output is not None and not isinstance(output, Domain):
        raise TypeError(f"array_to_funsor: output must be a domain (fc.Real, fc.Reals[2], "
                        f"fc.Bint[3]) or None, got {output!r}; name batch dims with "
                        "dim_to_name={-1: 'i'}")
    dtype = "real" if output is None else output.dtype
    if dtype != "real" and ops.is_floating(x):
        # Whole numbers held as floats (Pyro enumerates Bernoulli sites as 0.0/1.0) become
        # integers when a Bint output is asked for, as funsor 0.4.8 accepts them; Tensor
        # itself still refuses float data for a Bint dtype.
        whole = ops.astype(x, "int")
        if ops.is_concrete(x):
            if bool((whole != x).any()):  # would be truncated silently
                values = np.asarray(ops.to_numpy(x))
                frac = values[values != np.round(values)]
                raise DomainError(f"cannot convert floats to {output}: the values must be "
                                  f"whole numbers (0.0, 1.0, ...), got {frac.ravel()[:3]}")
        else:
            # Traced (jax.jit): 1.5 cannot raise, and truncating it to 1 would be a plausible
            # wrong number. A non-whole value becomes the out-of-range index -1, which every
            # traced gather already turns into NaN (or declines for Bint data), never a value.
            whole = ops.where(whole == x, whole, ops.full_like(whole, -1))
        x = whole
    out_shape = () if output is None else output.shape
    if dim_to_name is None:
        if output is not None and tuple(x.shape) != out_shape:
            raise DomainError(f"an array of shape {tuple(x.shape)} cannot have output {output} "
                              "without dim_to_name naming its batch dims")
        return Tensor(x, (), dtype)
    if not isinstance(dim_to_name, Mapping):
        raise TypeError(f"dim_to_name must be a dict from negative batch dims to names, e.g. "
                        f"{{-2: 'i', -1: 'j'}}, got {dim_to_name!r}")
    batch_shape = tuple(x.shape[: len(x.shape) - len(out_shape)])
    if tuple(x.shape[len(batch_shape):]) != out_shape:
        raise DomainError(
            f"array shape {tuple(x.shape)} does not end with output shape {out_shape}")
    nb = len(batch_shape)
    names = []
    keep = []
    for i, size in enumerate(batch_shape):
        name = dim_to_name.get(i - nb)
        if name is None and size != 1:
            raise DomainError(
                f"batch dim {i - nb} of size {size} has no name in dim_to_name={dim_to_name}: "
                f"batch dims count from the right of the batch shape {batch_shape}, which "
                f"excludes the output shape {out_shape}" + _positive_keys(dim_to_name, nb))
        if size == 1:
            # A dim of size 1 broadcasts: it names no input, even when named (as in funsor
            # 0.4.8), so a value broadcast over a plate does not claim the plate at size 1.
            continue
        names.append((name, Bint[size]))
        keep.append(i)
    if len(keep) < nb:  # size-1 dims dropped (else x is already the Tensor's data)
        x = ops.reshape(x, tuple(batch_shape[i] for i in keep) + out_shape)
    inputs = dict(names)  # (a dict takes Tensor's fast path for a signature seen before)
    if len(inputs) < len(names):  # two dims of one name: say which dims
        repeated = sorted({n for n, _ in names if [m for m, _ in names].count(n) > 1})
        raise DomainError(f"dim_to_name={dim_to_name} names the batch dims of shape "
                          f"{batch_shape} with {repeated} twice; each batch dim needs its own "
                          "name")
    return Tensor(x, inputs, dtype)


def _positive_keys(dim_to_name, nb: int) -> str:
    # funsor's dims are negative; a user counting from the left (0, 1) gets the fix spelled out.
    if not any(isinstance(k, int) and k >= 0 for k in dim_to_name):
        return ""
    fixed = {k - nb if isinstance(k, int) and 0 <= k < nb else k: v
             for k, v in dim_to_name.items()}
    return f"; the keys are negative dims, e.g. dim_to_name={fixed}"


_NOT_CONVERTIBLE = ("cannot convert a {typ} ({x!r}) to a funsor: expected a Funsor, a number, a "
                    "name (str, a Variable) or an array.")
_SLICE_HINT = (" A window of a Bint input is a Slice term, e.g. f(i=fc.Slice('i2', 0, 2, 1, n)) "
               "for states 0 and 1 of i: Bint[n] as a new input i2: Bint[2].")


# -- @function ---------------------------------------------------------------------------------
_NO_HINTS = (
    "@function without domains reads them from type hints, but {name}() lacks {missing}: "
    "annotate every argument and the return, e.g. def {name}(x: Reals[3]) -> Real, or give "
    "the domains, e.g. @function(Reals[3], Real)."
)


def function(*signature) -> Callable | Funsor:
    """Lift a backend function to a funsor: ``@function(Reals[3, 4], Reals[4, 5], Reals[3, 5])``
    (input domains, then the output domain), or bare ``@function`` reading the domains from
    type hints.

    The result is a lazy ``Function`` of one ``Variable`` per argument, named after the
    function's parameters (``fn.__name__``'s ``x``, ``y``), as in funsor: call it positionally
    or by name to substitute values. Exact evaluation calls ``fn`` on arrays with the named
    batch dims on the left (aligned across arguments), so ``fn`` must broadcast over them.
    An output ``Tuple[Real, Bint[8]]`` (or ``Product[...]``) makes a ``Tuple`` of Functions,
    one per part, sharing one call of ``fn``.

    Raises:
        TypeError: a domain is not a domain, a hint is missing, or the arity does not match.

    Example:
        >>> @fc.function(fc.Reals[2], fc.Real)
        ... def norm2(x):
        ...     return (x ** 2).sum(-1)
        >>> norm2.inputs, norm2(np.array([3.0, 4.0])).item()
        ({'x': Reals[2]}, 25.0)
    """
    if len(signature) == 1 and callable(signature[0]) and not _is_domain(signature[0]):
        fn = signature[0]
        annotated = _annotated(fn)
        hints = typing.get_type_hints(annotated)
        names = tuple(n for n in _param_names(annotated) or () if n != "*")
        missing = [n for n in names if n not in hints] + (
            ["the return"] if "return" not in hints else [])
        if missing:
            raise TypeError(_NO_HINTS.format(name=getattr(fn, "__name__", "fn"),
                                             missing=missing))
        return _lift(fn, tuple(hints[n] for n in names), hints["return"], names)
    if not signature:
        raise TypeError("@function needs input domains and an output domain, e.g. "
                        "@function(Reals[2], Real), or type hints with a bare @function")
    *input_domains, output = signature
    for d in input_domains:
        if not isinstance(d, Domain):
            raise TypeError(f"@function input domains must be domains such as Real or Bint[3], "
                            f"got {d!r}")
    return functools.partial(_lift_positional, tuple(input_domains), _as_output(output))


def _annotated(fn: Callable) -> Callable:
    """Where ``fn``'s type hints are: the function itself, or for a callable object (a torch
    ``nn.Module``, whose instance ``__annotations__`` are its class's attribute annotations)
    its annotated ``forward`` or ``__call__`` method."""
    if inspect.isroutine(fn) or inspect.isclass(fn) or isinstance(fn, functools.partial):
        return fn
    for attr in ("forward", "__call__"):
        method = getattr(fn, attr, None)
        if inspect.ismethod(method) and getattr(method, "__annotations__", None):
            return method
    return fn


def _is_domain(x) -> bool:
    return isinstance(x, (Domain, ProductDomain)) or typing.get_origin(x) is tuple


def _as_output(output):
    """A Domain, or a ProductDomain for a (nested) ``Tuple[...]``/``Product[...]`` output."""
    if isinstance(output, (Domain, ProductDomain)):
        return output
    if typing.get_origin(output) is tuple or isinstance(output, tuple):
        parts = typing.get_args(output) if not isinstance(output, tuple) else output
        return ProductDomain(tuple(_as_output(p) for p in parts))
    raise TypeError(f"@function's output must be a domain or Tuple[...] of domains, "
                    f"got {output!r}")


def _param_names(fn: Callable) -> tuple | None:
    """The names of ``fn``'s positional parameters (``None`` for a builtin without a signature,
    such as ``torch.matmul``; a ``*args`` parameter ends the list with ``"*"``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = tuple(p.name for p in params if p.kind in kinds)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        names += ("*",)
    return names


def _lift_positional(input_domains: tuple, output, fn: Callable):
    n = len(input_domains)
    names = _param_names(fn)
    if names is None or (names and names[-1] == "*" and len(names) - 1 < n):
        # No signature, or *args: the arguments without a parameter name get one by position.
        known = () if names is None else names[:-1]
        names = known + tuple(f"x{i}" for i in range(len(known), n))
    if len(names) > n:
        required = [m for m in names[n:] if m != "*" and _has_no_default(fn, m)]
        if required:  # e.g. @function(Reals[2]) on f(x): Reals[2] is the output domain
            raise TypeError(
                f"@function on {getattr(fn, '__name__', 'fn')}(): got {n} input domain(s) "
                f"{list(input_domains)} and the output {output}, so the parameters "
                f"{required} have no domain; list one domain per parameter, then the output "
                "domain, e.g. @function(Reals[2], Real)")
        names = names[:n]
    return _lift(fn, input_domains, output, names)


def _has_no_default(fn: Callable, name: str) -> bool:
    return inspect.signature(fn).parameters[name].default is inspect.Parameter.empty


def _lift(fn: Callable, input_domains: tuple, output, names: tuple) -> Funsor:
    output = _as_output(output)
    if len(input_domains) != len(names):
        raise TypeError(f"{getattr(fn, '__name__', 'fn')}() takes {len(names)} arguments "
                        f"{list(names)} but {len(input_domains)} input domains were given")
    args = tuple(Variable(n, d) for n, d in zip(names, input_domains))
    if isinstance(output, ProductDomain):
        return _nested(_SharedCall(fn), args, output)
    return Function(fn, output, args)


def _nested(fn: Callable, args: tuple, output) -> Funsor:
    if not isinstance(output, ProductDomain):
        return Function(fn, output, args)
    return Tuple(tuple(_nested(_Part(fn, i), args, part)
                       for i, part in enumerate(output.__args__)))


class _SharedCall:
    """``fn`` remembering its last call, so that the parts of a tuple-valued function,
    evaluated one after another on the same arrays, call ``fn`` once (compared by identity:
    cheap, and never wrong, only sometimes a miss)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "fn")
        self._last: tuple | None = None

    def __call__(self, *args):
        last = self._last
        if last is not None and len(last[0]) == len(args) and all(
                a is b for a, b in zip(last[0], args)):
            return last[1]
        result = self.fn(*args)
        self._last = (args, result)
        return result


class _Part:
    """Part ``i`` of the tuple that ``fn`` returns."""

    def __init__(self, fn: Callable, i: int) -> None:
        self.fn, self.i = fn, i
        self.__name__ = f"{getattr(fn, '__name__', 'fn')}_{i}"

    def __call__(self, *args):
        result = self.fn(*args)
        if not isinstance(result, tuple):
            raise TypeError(f"{self.__name__[:-len(str(self.i)) - 1]}() has a Tuple output "
                            f"but returned {type(result).__name__}, not a tuple")
        return result[self.i]


def to_number(expr: Funsor, where: str = "float()"):
    """The one value of a funsor, for ``float(f)`` and ``int(f)``: a Tensor or Number that
    holds one element (funsor's ``float(tensor)`` converts any one-element array too).

    Raises:
        LazyTermError: ``expr`` is lazy, or an atom that is no number (a Gaussian).
        SeveralValuesError: ``expr`` holds several values (a TypeError and a ValueError):
            its inputs and output are named.

    Example:
        >>> float(fc.Tensor(np.array(2.5))), int(fc.Number(3.0))
        (2.5, 3)
    """
    if not isinstance(expr, (Tensor, Number)):
        raise _lazy_error(expr, where)
    size = math.prod(d.size for d in expr.inputs.values()) * math.prod(expr.shape)
    if size != 1:
        raise SeveralValuesError(
            f"{where} needs a funsor of one value, but this one has inputs {dict(expr.inputs)} "
            f"and output {expr.output} ({size} values); reduce or substitute its inputs "
            "first, e.g. float(f.reduce(ops.logaddexp)), or read f.data")
    data = expr.data
    return data.item() if hasattr(data, "item") else data


def _data_error(expr: Funsor, where: str) -> LazyTermError:
    return _lazy_error(expr, where, NoDataError)


register_term_hook("to_data", to_data)
register_term_hook("to_number", to_number)
register_term_hook("lazy_error", _data_error)
register_term_hook("array_to_funsor", array_to_funsor)
