"""Input bookkeeping shared by the term classes: merging the inputs of subterms (with a
clear error on a domain clash), checking substitutions, and normalizing output indices.

These helpers know no term class, so every term module can use them without importing
``funsor_core.terms.base``.

Example:
    >>> from funsor_core.terms.inputs import merge_inputs
    >>> merge_inputs({"i": fc.Bint[2]}, {"i": fc.Bint[2], "x": fc.Real})
    {'i': Bint[2], 'x': Real}
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

from funsor_core import ops
from funsor_core.domains import Bint, Domain, Real

__all__ = ["DomainError", "merge_inputs", "merge_all_inputs", "check_substitution",
           "index_to_python", "python_number", "reduce_constant", "reduce_domain",
           "reduce_moment", "split_reduced_vars"]


class DomainError(ValueError):
    """A name is used with two different domains, or a value has the wrong domain.

    Example:
        >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> x + fc.Tensor(np.ones(3), {"i": fc.Bint[3]})
        Traceback (most recent call last):
        ...
        funsor_core.terms.inputs.DomainError: cannot add: input 'i' is Bint[2] on the left ...
    """


_MISMATCH = (
    "cannot {what}: input '{name}' is {left} on the left but {right} on the right.\n"
    "A name must have one domain within an expression; rename one side, "
    "e.g. rhs({name}=\"{name}2\")."
)


def merge_inputs(lhs: dict, rhs: dict, what: str = "combine") -> dict:
    """Union of two input mappings (left order first); raises DomainError on a domain clash.

    Example:
        >>> merge_inputs({"i": fc.Bint[2]}, {"j": fc.Real})
        {'i': Bint[2], 'j': Real}
    """
    if lhs is rhs or not rhs or lhs == rhs:
        return lhs
    if not lhs:
        return rhs
    result = None
    for name, domain in rhs.items():
        other = lhs.get(name)
        if other is None:
            if result is None:
                result = dict(lhs)
            result[name] = domain
        elif other is not domain:
            raise DomainError(_MISMATCH.format(what=what, name=name, left=other, right=domain))
    return lhs if result is None else result


_ITEMS = operator.methodcaller("items")


def merge_all_inputs(terms, what: str = "combine") -> dict:
    """Union of the inputs of many terms, in order, in one pass (linear in the total number
    of inputs, where folding ``merge_inputs`` would copy the dict once per new name).

    Example:
        >>> merge_all_inputs([fc.Variable("x", fc.Real), fc.Variable("i", fc.Bint[2])])
        {'x': Real, 'i': Bint[2]}
    """
    if type(terms) in (tuple, list) and len(terms) > 8:
        # Domains are interned, so each term's inputs agree with the union iff they are a
        # subset of its items: C-level passes (update, then the subset test) for many terms,
        # the named loop below only to find and report a mismatch.
        result: dict = {}
        all_inputs = [t.inputs for t in terms]
        for inputs in all_inputs:
            result.update(inputs)
        items = result.items()
        if all(map(items.__ge__, map(_ITEMS, all_inputs))):
            return result
    result = {}
    for t in terms:
        for name, domain in t.inputs.items():
            other = result.setdefault(name, domain)
            if other is not domain:
                raise DomainError(_MISMATCH.format(what=what, name=name, left=other,
                                                   right=domain))
    return result


def _normalize_index(index, shape) -> tuple | None:
    # Slices are unhashable before Python 3.12, so an index is stored as tagged tuples.
    # None when a part is not basic (a name, a funsor, an array): the caller gathers instead.
    if not isinstance(index, tuple):
        index = (index,)
    result = []
    for i in index:
        if isinstance(i, slice):
            result.append(("slice", i.start, i.stop, i.step))
        elif i is None or i is Ellipsis:
            result.append(i)
        elif isinstance(i, numbers.Integral) and not getattr(i, "_is_funsor", False):
            result.append(int(i))
        else:
            return None
    return tuple(result)


def index_to_python(index: tuple) -> tuple:
    """Turn a stored (tagged) output index back into Python index objects.

    Example:
        >>> index_to_python((0, ("slice", None, 2, None), None))
        (0, slice(None, 2, None), None)
    """
    return tuple(slice(*i[1:]) if isinstance(i, tuple) else i for i in index)


def check_substitution(name: str, domain: Domain, value) -> None:
    """Raise DomainError unless ``value`` may be substituted for input ``name: domain``.

    Example:
        >>> check_substitution("i", fc.Bint[2], fc.Number(1, 2))  # fits: no error
        >>> check_substitution("i", fc.Bint[2], fc.Number(0.5))
        Traceback (most recent call last):
        ...
        funsor_core.terms.inputs.DomainError: cannot substitute a value of domain Real ...
    """
    out = value.output
    if out is domain:
        return
    raise DomainError(
        f"cannot substitute a value of domain {out} for input '{name}' of domain {domain}"
        + (": a real value cannot index a Bint input" if domain.dtype != "real"
           and out.dtype == "real" else ""))


# The one policy for ``reduced_vars`` (Funsor.reduce, Reduce, Contraction, Integrate):
#   1. It is a name, a Variable, or a set (or list, tuple) of names and Variables; None is
#      every input (for ``.reduce``).
#   2. A Variable stands for its name. If the name is an input, the Variable's domain must be
#      the input's domain: a mismatch raises DomainError naming both.
#   3. A name that is an input is reduced.
#   4. A Variable that is not an input: the term is constant along it, so reducing repeats
#      the value over the Variable's values, as in funsor (x + ... + x = n x, see
#      ``reduce_constant``); that needs a Bint domain (a real one raises ValueError).
#   5. A bare name that is not an input raises ValueError: it has no domain to repeat over,
#      and is most likely a typo.
# For Integrate the inputs are those of the measure. (``sum_product``'s ``eliminate`` is a set
# of graph variables and plates: names no factor has are ignored there, as in funsor.)
_NOT_INPUTS = (
    "cannot reduce over {names}: not inputs of {where}, whose inputs are {inputs}. A bare "
    "name has no domain to repeat over (is it a typo?); a Variable such as "
    "Variable('{first}', Bint[n]) repeats the value over its n values, as in funsor."
)


def split_reduced_vars(reduced_vars, inputs: dict, where: str = "this funsor"
                       ) -> tuple[frozenset, tuple]:
    """``(names, absent)``: the input names to reduce, and the Variables that are not inputs
    (to repeat over, see ``reduce_constant``), following the policy stated above.

    Raises:
        DomainError: a Variable's domain differs from the input of the same name.
        ValueError: a bare name is not an input.
        TypeError: an element is neither a name nor a Variable.

    Example:
        >>> inputs = {"i": fc.Bint[3]}
        >>> split_reduced_vars({"i", fc.Variable("k", fc.Bint[2])}, inputs)
        (frozenset({'i'}), (Variable('k', Bint[2]),))
        >>> split_reduced_vars(fc.Variable("i", fc.Bint[5]), inputs)
        Traceback (most recent call last):
        ...
        funsor_core.terms.inputs.DomainError: cannot reduce over Variable('i', Bint[5]): ...
    """
    if reduced_vars is None:
        return frozenset(inputs), ()
    if type(reduced_vars) is frozenset and reduced_vars.issubset(inputs.keys()):
        return reduced_vars, ()  # the common cases: names of inputs, or one name
    if type(reduced_vars) is str and reduced_vars in inputs:
        return frozenset((reduced_vars,)), ()
    if isinstance(reduced_vars, str) or getattr(reduced_vars, "_is_funsor", False):
        reduced_vars = (reduced_vars,)
    elif not isinstance(reduced_vars, (set, frozenset, list, tuple)):
        raise TypeError(f"reduced_vars must be a name, a Variable or a set of them, got "
                        f"{reduced_vars!r}")
    names, absent, missing = set(), {}, []
    for v in reduced_vars:
        if isinstance(v, str):
            if v in inputs:
                names.add(v)
            else:
                missing.append(v)
            continue
        name = getattr(v, "name", None)
        if not isinstance(name, str) or getattr(v, "inputs", None) != {name: v.output}:
            raise TypeError(f"reduced_vars holds names or Variables, got {v!r}")
        domain = inputs.get(name)
        if domain is not None:
            if domain is not v.output:
                raise DomainError(
                    f"cannot reduce over {v!r}: input '{name}' of {where} is {domain}, not "
                    f"{v.output}; use Variable('{name}', {domain}) or the name '{name}'")
            names.add(name)
        elif absent.setdefault(name, v) is not v and absent[name].output is not v.output:
            raise DomainError(f"cannot reduce over '{name}' as both {absent[name].output} and "
                              f"{v.output}")
    if missing:
        missing = sorted(set(missing))
        raise ValueError(_NOT_INPUTS.format(names=missing, where=where, inputs=dict(inputs),
                                            first=missing[0]))
    return frozenset(names), tuple(absent[k] for k in sorted(absent)) if absent else ()


def _as_domain(x) -> Domain:
    if isinstance(x, Domain):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return Bint[x]
    if x == "real":
        return Real
    raise TypeError(f"expected a domain such as Real or Bint[3], got {x!r}")


def _index_shape(index, shape) -> tuple:
    import numpy as np

    probe = np.empty(shape, dtype=np.int8)
    try:
        return probe[index_to_python(index)].shape
    except IndexError as e:  # numpy's words name an array; say it is the funsor's output
        raise IndexError(f"cannot index a funsor's output of shape {tuple(shape)} by "
                         f"{index_to_python(index)!r}: {e}; indexing acts on the output, not "
                         "the inputs (substitute an input instead: f(i=0))") from None


# Reducing over a variable the funsor does not depend on combines n equal values, for n the
# number of values of the variable: x + ... + x = n x, x * ... * x = x^n,
# log(e^x + ... + e^x) = x + log n, and min, max, and, or of equal values are that value.
_IDEMPOTENT = frozenset(["min", "max", "and_", "or_"])


def reduce_constant(f, op, variables) -> Any:
    """``op``-reduce ``f`` over Bint ``variables`` that are not among its inputs (funsor's
    semantics: ``f`` is the same for each of their values).

    Raises:
        ValueError: a variable is real (no finite number of values), or the op has no
            closed form here.

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> reduce_constant(x, ops.add, [fc.Variable("i", fc.Bint[4])]) is x * 4
        True
    """
    real = sorted(f"{v.name}: {v.output}" for v in variables if v.output.dtype == "real"
                  or v.output.shape)
    if real:
        raise ValueError(f"cannot reduce over {real}: they are not inputs of this funsor, and "
                         "only a Bint variable has a finite number of values to repeat it over")
    n = math.prod(v.output.size for v in variables)
    name = op.name
    if name == "add":
        return f * n
    if name == "mul":
        return f ** n
    if name == "logaddexp":
        return f + (math.log(n) if n else -math.inf)
    if name in _IDEMPOTENT and n:
        return f
    raise ValueError(f"cannot reduce with ops.{name} over {sorted(v.name for v in variables)} "
                     f"(not inputs of this funsor, {n} values): no closed form for it")


def reduce_moment(f, op, names: frozenset) -> Any:
    """Mean, variance or standard deviation of ``f`` over the Bint inputs ``names``, as funsor
    defines them: through the ``add`` reduction (they have no Reduce term of their own).

    Example:
        >>> f = fc.Tensor(np.array([1.0, 3.0]), {"i": fc.Bint[2]})
        >>> reduce_moment(f, ops.mean, frozenset({"i"})).data, f.reduce(ops.std, "i").data
        (array(2.), array(1.))
    """
    name = op.name
    if name == "std":
        return reduce_moment(f, ops.var, names).sqrt()
    if name == "var":
        # E[(f - E f)^2], with E the mean over the reduced inputs.
        diff = f - reduce_moment(f, ops.mean, names)
        return reduce_moment(diff * diff, ops.mean, names)
    names = names & f.inputs.keys()  # f is constant along a name it does not have
    if not names:
        return f
    real = sorted(n for n in names if f.inputs[n].dtype == "real")
    if real:
        raise ValueError(f"cannot take ops.{name} over the real inputs {real}: only Bint "
                         "inputs have a finite number of values to average over")
    count = math.prod(f.inputs[n].size for n in names)
    if count == 0:
        empty = sorted(n for n in names if f.inputs[n].size == 0)
        raise ValueError(f"cannot take ops.{name} over {empty}: "
                         f"{', '.join(str(f.inputs[n]) for n in empty)} has no values to "
                         "average (a mean of nothing is undefined)")
    return f.reduce(ops.add, names) * (1.0 / count)


def reduce_domain(op, domain: Domain, n: int) -> Domain:
    """The domain of an ``op``-reduction of ``n`` values of ``domain``: the same for reals;
    for ``Bint[k]`` the bound that ``n - 1`` binary ops give (``ops.infer_domain``): a sum of
    n values below k is below ``n (k - 1) + 1``, a product below ``(k - 1)^n + 1``, and min,
    max, and, or reach their bound after one step.

    Example:
        >>> [reduce_domain(op, fc.Bint[6], 3) for op in (ops.add, ops.mul, ops.max)]
        [Bint[16], Bint[126], Bint[6]]
    """
    if domain.dtype == "real" or n <= 1:
        return domain
    k, name = domain.dtype, op.name
    if name == "add":
        return Domain(n * (k - 1) + 1, domain.shape)
    if name == "mul":
        return Domain((k - 1) ** n + 1, domain.shape)
    return ops.infer_domain(op, domain, domain)


def python_number(data):
    """The Python number of a one-element array, for ``Number``; else the TypeError naming
    what a Number is not: a str or None, an array of several values, a traced array (no
    value to read; a Tensor holds it).

    Example:
        >>> python_number(np.array([2.5]))
        2.5
    """
    numel = getattr(data, "numel", None)  # torch's count; its .size is a method
    size = numel() if callable(numel) else getattr(data, "size", None)
    if size == 1 and hasattr(data, "item"):
        try:
            return data.item()
        except Exception as e:  # a traced array has no value to read
            raise TypeError(f"Number needs a concrete Python number, but {type(data).__name__} "
                            "has no value here (it is traced?); a traced array is a Tensor: "
                            "fc.Tensor(x)") from e
    if size is not None:
        raise TypeError(f"Number holds one number, got an array of shape "
                        f"{tuple(data.shape)}; an array is a Tensor: fc.Tensor(x, inputs)")
    raise TypeError(f"Number holds a number (int, float or bool), got {data!r}; an array is "
                    "a Tensor (fc.Tensor(x, inputs)), a name a Variable (fc.Variable(name, "
                    "domain))")
