"""The plated factor graph that tensor variable elimination walks (Algorithm 1 of Obermeyer
et al., 2019), and the walk itself, generic in what a step does.

Factors are grouped by their set of plates (their ordinal). Starting from the deepest
ordinal, each connected group of factors is multiplied, its local variables are summed out,
and the plates it no longer needs are product-reduced, which moves the result to a shallower
ordinal. ``eliminate_graph`` makes those decisions from the factors' input names only; an
``EliminationSteps`` carries them out: on terms (``algorithms.eliminate.plated``), or on
placeholders that only record them (``algorithms.eliminate.schedule``, planning).

Example:
    >>> a = fc.Tensor(np.ones(2), {"a": fc.Bint[2]})
    >>> ab = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> [len(ts) for ts, _ in _partition([a, ab], frozenset("b"))]
    [1, 1]
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Protocol

from funsor_core.domains import Reals
from funsor_core.terms.base import Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.inputs import DomainError
from funsor_core.terms.traversal import bound_name

__all__ = ["PlateError", "EliminationSteps", "eliminate_graph", "_partition"]


class PlateError(ValueError):
    """The factor graph has the forbidden plate minor: no exact elimination order exists.

    Messages start with ``intractable!``, as funsor's do, then name the plates and variables.

    Example:
        >>> from funsor_core.sum_product import sum_product
        >>> f = fc.Tensor(np.ones((2, 2, 3, 4)), {"x": fc.Bint[2], "y": fc.Bint[2],
        ...                                     "i": fc.Bint[3], "j": fc.Bint[4]})
        >>> g = fc.Tensor(np.ones((2, 3)), {"x": fc.Bint[2], "i": fc.Bint[3]})
        >>> h = fc.Tensor(np.ones((2, 4)), {"y": fc.Bint[2], "j": fc.Bint[4]})
        >>> sum_product(ops.logaddexp, ops.add, [f, g, h], frozenset("xyij"), frozenset("ij"))
        Traceback (most recent call last):
        ...
        funsor_core.algorithms.eliminate.graph.PlateError: intractable! ...
    """


_STR_NAMES = (
    "{arg}={value!r} is a str, but no factor has an input {value!r}: {arg} takes a set of "
    "names, e.g. {arg}=frozenset({chars}) for the names {chars}, or {arg}=frozenset({{{value!r}}}) "
    "for one name. The factors' inputs are {inputs}."
)


def _names(variables, factors=None, arg: str = "eliminate") -> frozenset:
    # Names or Variables (funsor passes either), as names. Names no factor has are ignored,
    # as in funsor: eliminating a variable of no factor leaves the graph as it is. A bare str
    # is one name only when a factor has it: "ix" for {"i", "x"} (funsor's frozenset("ix")
    # idiom) would otherwise be silently ignored; funsor 0.4.8 refuses every str.
    if isinstance(variables, str):
        if factors is not None and not any(variables in f.inputs for f in factors):
            inputs = sorted({n for f in factors for n in f.inputs})
            chars = "{" + ", ".join(repr(c) for c in dict.fromkeys(variables)) + "}"
            raise TypeError(_STR_NAMES.format(arg=arg, value=variables, chars=chars,
                                              inputs=inputs))
        variables = (variables,)
    elif getattr(variables, "_is_funsor", False):
        variables = (variables,)
    elif type(variables) is frozenset and set(map(type, variables)) <= {str}:
        return variables  # (the common case: 1,000 names checked at C speed)
    return frozenset(v if isinstance(v, str) else v.name for v in variables)


def _partition(terms, sum_vars) -> list:
    """The connected components of the bipartite graph joining each term to the names of
    ``sum_vars`` it has: a list of ``(terms, names)`` pairs, one per component, in the order of
    each component's first term (terms keep their order). A term with none of ``sum_vars`` is a
    component of its own; names of ``sum_vars`` that no term has are in none.

    funsor's private ``funsor.sum_product._partition``; its tests call it. Union-find on the
    names, so a graph of thousands of factors costs linear time.

    Example:
        >>> a = fc.Tensor(np.ones(2), {"a": fc.Bint[2]})
        >>> ab = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
        >>> b = fc.Tensor(np.ones(3), {"b": fc.Bint[3]})
        >>> [(len(ts), sorted(vs)) for ts, vs in _partition([a, ab, b], frozenset("b"))]
        [(1, []), (2, ['b'])]
        >>> [(len(ts), sorted(vs)) for ts, vs in _partition([a, ab, b], frozenset("ab"))]
        [(3, ['a', 'b'])]
    """
    sum_vars = frozenset(sum_vars)
    if len(terms) == 1:
        return [(tuple(terms), sum_vars.intersection(terms[0].inputs))]
    parent: dict = {}

    def root(name):
        while True:
            up = parent[name]
            if up == name:
                return name
            parent[name] = parent[up]  # path halving
            name = up

    names_of = []
    for t in terms:
        names = sum_vars.intersection(t.inputs)
        names_of.append(names)
        first = None
        for n in names:
            parent.setdefault(n, n)
            if first is None:
                first = root(n)
            else:
                r = root(n)
                if r != first:
                    parent[r] = first
    # Group by the root of a term's names; terms without names stand alone. Components are
    # compared by position, never by value: == on funsors builds a term.
    order: list = []
    by_root: dict = {}
    for t, names in zip(terms, names_of):
        if not names:
            order.append(([t], []))
            continue
        r = root(next(iter(names)))
        group = by_root.get(r)
        if group is None:
            group = by_root[r] = ([], [])
            order.append(group)
        group[0].append(t)
        group[1].append(names)
    return [(tuple(ts), frozenset().union(*vs)) for ts, vs in order]


def _components(factors, sum_vars) -> list:
    # ``_partition`` as lists and sets (the form algorithms.eliminate.markov_plates consumes).
    return [(list(ts), set(vs)) for ts, vs in _partition(factors, sum_vars)]


def _product(prod_op, factors):
    result = factors[0]
    for f in factors[1:]:
        result = prod_op(result, f)
    return result


def _contract(sum_op, prod_op, factors, names):
    # One Contraction of a connected group over its variables ``names`` (all inputs of its
    # factors): exact plans its order (never multiplying the whole group out), and any other
    # interpretation sees the group as one term.
    if len(factors) == 1:
        return _reduce(sum_op, factors[0], names)
    return Contraction(sum_op if names else None, prod_op, names, tuple(factors))


def _reduce(op, f, names):
    # Reduce only over the names ``f`` has: a factor that was constant in a plate never had it.
    names = frozenset(names).intersection(f.inputs)
    return f.reduce(op, names) if names else f


def _ordinals(factors, plates, sum_vars):
    # The ordinal of a factor is its set of plates; a variable's ordinal is the intersection of
    # the ordinals of the factors that use it (the plates it is replicated in).
    var_to_ordinal: dict = {}
    ordinal_to_factors = defaultdict(list)
    ordinal_to_vars = defaultdict(set)
    if not plates:  # one ordinal: every factor and variable outside all plates
        empty = frozenset()
        ordinal_to_factors[empty] = list(factors)
        used = set()
        for f in factors:
            used.update(sum_vars.intersection(f.inputs))
        var_to_ordinal = dict.fromkeys(used, empty)
        ordinal_to_vars[empty] = used
        return var_to_ordinal, ordinal_to_factors, ordinal_to_vars
    for f in factors:
        ordinal = plates.intersection(f.inputs)
        ordinal_to_factors[ordinal].append(f)
        for var in sum_vars.intersection(f.inputs):
            var_to_ordinal[var] = var_to_ordinal.get(var, ordinal) & ordinal
    for var, ordinal in var_to_ordinal.items():
        ordinal_to_vars[ordinal].add(var)
    return var_to_ordinal, ordinal_to_factors, ordinal_to_vars


def check_domains(inputs_per_factor) -> None:
    """Raise ``DomainError`` where two factors give one name two domains: a plate reduced
    factor by factor never multiplies them, so nothing else would notice (a wrong number).

    Example:
        >>> check_domains([(("n", fc.Bint[2]),), (("n", fc.Bint[3]),)])
        Traceback (most recent call last):
        ...
        funsor_core.terms.inputs.DomainError: sum_product: 'n' is Bint[2] in factor 0 but ...
    """
    seen: dict = {}
    for k, items in enumerate(inputs_per_factor):
        for name, domain in items:
            first = seen.setdefault(name, (k, domain))
            if first[1] != domain:
                raise DomainError(f"sum_product: {name!r} is {first[1]} in factor {first[0]} "
                                  f"but {domain} in factor {k}; a name has one domain in a "
                                  "factor graph (a plate too: each factor is reduced over it "
                                  "on its own, so the sizes are never compared otherwise)")


def _check_plates_of_kept_vars(factors, eliminate, plates):
    # A variable that is kept but lives in a plate that is product-reduced would be multiplied
    # across the plate's values as if it were shared; ``pedantic`` makes that an error.
    common: dict = {}
    for f in factors:
        ordinal = plates.intersection(f.inputs)
        for var in set(f.inputs) - plates - eliminate:
            common[var] = common.get(var, eliminate) & ordinal
    for var, inside in sorted(common.items()):
        if inside:
            raise ValueError(
                f"cannot eliminate plate '{sorted(inside)[0]}': the kept variable '{var}' lives "
                "inside it, so the result would need one copy of it per plate value. Eliminate "
                f"'{var}' too, or keep the plate.")


class _Graph:
    # The plated factor graph being eliminated: a variable's ordinal (its plates), the
    # factors of each ordinal not yet contracted, the variables of each ordinal, and the
    # variables still to sum out.
    __slots__ = ("var_to_ordinal", "ordinal_to_factors", "ordinal_to_vars", "sum_vars")

    def __init__(self, var_to_ordinal, ordinal_to_factors, ordinal_to_vars, sum_vars):
        self.var_to_ordinal = var_to_ordinal
        self.ordinal_to_factors = ordinal_to_factors
        self.ordinal_to_vars = ordinal_to_vars
        self.sum_vars = sum_vars


def _unroll_real_plate(f, remaining, leaf, graph, pending):
    # f lies in the plates ``leaf`` and its remaining variables span all of them: Algorithm 1
    # cannot reduce a plate of f (Theorem 1's minor). When every remaining variable inside some
    # plate p is real, its copies v_0 .. v_{n-1} along p are one vector variable v' of
    # Reals[n, ...] with v = v'[p]: substituting that in every factor is an exact change of
    # variables (reducing over all copies is reducing over v'), and v' lies outside p, so f
    # can then be product-reduced over p. A Gaussian grows by n times the variable's size:
    # polynomial in the plate size, where unrolling a Bint variable would be exponential, so a
    # minor over Bint variables raises. funsor 0.4.8 does the same for reals.
    candidates = []
    for p in sorted(leaf):
        inside = sorted(v for v in remaining if p in graph.var_to_ordinal[v])
        if inside and all(f.inputs[v].dtype == "real" for v in inside):
            candidates.append((f.inputs[p].size, p, inside))
    if not candidates:
        raise PlateError(_minor_message(remaining, graph.var_to_ordinal, leaf))
    size, p, inside = min(candidates)
    index = Variable(p, f.inputs[p])
    subs = {}
    for v in inside:
        name = bound_name(v)  # summed out before partial_sum_product returns
        subs[v] = Variable(name, Reals[(size,) + f.inputs[v].shape])[index]
        old = graph.var_to_ordinal.pop(v)
        graph.var_to_ordinal[name] = old - {p}
        graph.ordinal_to_vars[old].discard(v)
        graph.ordinal_to_vars[old - {p}].add(name)
        graph.sum_vars = (graph.sum_vars - {v}) | {name}

    def substituted(factors):
        return [g(**{k: x for k, x in subs.items() if k in g.inputs}) if subs.keys() & g.inputs
                else g for g in factors]

    for ordinal, factors in graph.ordinal_to_factors.items():
        graph.ordinal_to_factors[ordinal] = substituted(factors)
    pending[:] = [[substituted(group), names] for group, names in pending]
    return substituted([f])[0]


def _minor_message(remaining, var_to_ordinal, leaf) -> str:
    names = sorted(remaining)
    for u in names:
        for v in names:
            p = sorted(var_to_ordinal[u] - var_to_ordinal[v])
            q = sorted(var_to_ordinal[v] - var_to_ordinal[u])
            if p and q:
                return (f"intractable! variable '{u}' is in plate '{p[0]}' "
                        f"and variable '{v}' is in plate '{q[0]}', but a factor in plates "
                        f"{sorted(leaf)} uses both (the forbidden plate minor). Sum one of them "
                        "out by hand, or move it out of its plate.")
    return (f"intractable! variables {names} meet in plates {sorted(leaf)} "
            "(the forbidden plate minor)")


class EliminationSteps(Protocol):
    """What ``eliminate_graph`` asks to be done; each method returns the new value, which has
    ``inputs`` (names, or a mapping keyed by names).

    Example:
        The steps on Tensors in ``(add, mul)``: ``sum_x x(x) prod_i y(x, i)``.

        >>> class Sums:
        ...     def contract(self, group, names):
        ...         prod = group[0]
        ...         for g in group[1:]:
        ...             prod = prod * g
        ...         return prod.reduce(ops.add, names)
        ...     def reduce(self, f, plates):
        ...         return f.reduce(ops.mul, plates & f.inputs.keys())
        >>> x = fc.Tensor(np.array([0.3, 0.7]), {"x": fc.Bint[2]})
        >>> y = fc.Tensor(np.arange(1.0, 7.0).reshape(2, 3), {"x": fc.Bint[2], "i": fc.Bint[3]})
        >>> (total,) = eliminate_graph([x, y], frozenset("x"), frozenset("i"), Sums())
        >>> bool(np.isclose(total.data, (x.data * y.data.prod(1)).sum()))
        True
    """

    def contract(self, group: list, names: frozenset) -> Any:
        """Multiply ``group`` and sum out ``names`` (all of them inputs of the group)."""

    def reduce(self, f: Any, plates: frozenset) -> Any:
        """Product-reduce ``f`` over ``plates`` (names it may lack: those are skipped)."""

    def unroll(self, f: Any, remaining: frozenset, leaf: frozenset, graph: _Graph,
               pending: list) -> Any:
        """``f`` meets the forbidden minor: unroll a real plate, or raise ``PlateError``."""


def eliminate_graph(factors, sum_vars: frozenset, plates: frozenset,
                    steps: EliminationSteps) -> list:
    """Eliminate ``sum_vars`` and ``plates`` from ``factors`` by Algorithm 1, asking ``steps``
    to carry out each contraction and plate reduction; returns the results (their product is
    the total).

    Example:
        >>> class Names:  # values are frozensets of input names
        ...     def contract(self, group, names):
        ...         return Value(frozenset().union(*(g.inputs for g in group)) - names)
        ...     def reduce(self, f, plates):
        ...         return Value(f.inputs - plates)
        >>> class Value:
        ...     def __init__(self, inputs): self.inputs = inputs
        >>> [sorted(r.inputs) for r in eliminate_graph(
        ...     [Value(frozenset("x")), Value(frozenset("ix"))], frozenset("x"),
        ...     frozenset("i"), Names())]
        [[]]
    """
    var_to_ordinal, ordinal_to_factors, ordinal_to_vars = _ordinals(factors, plates, sum_vars)
    graph = _Graph(var_to_ordinal, ordinal_to_factors, ordinal_to_vars, sum_vars)
    results = []
    while ordinal_to_factors:
        leaf = max(ordinal_to_factors, key=len)
        leaf_factors = ordinal_to_factors.pop(leaf)
        leaf_vars = frozenset(ordinal_to_vars[leaf])
        # (factors, their leaf variables) per connected component; unrolling a plate below
        # rewrites pending factors but never their leaf variables.
        pending = [[list(group), names] for group, names in _partition(leaf_factors, leaf_vars)]
        while pending:
            group, names = pending.pop(0)
            f = steps.contract(group, names)
            remaining = graph.sum_vars.intersection(f.inputs)
            if not remaining:
                results.append(steps.reduce(f, leaf))
                continue
            new_plates = frozenset().union(*(var_to_ordinal[v] for v in remaining))
            if new_plates == leaf:
                # The forbidden minor. Real variables can still be eliminated exactly by
                # stacking their copies along a plate into one vector variable.
                f = steps.unroll(f, remaining, leaf, graph, pending)
                remaining = graph.sum_vars.intersection(f.inputs)
                new_plates = frozenset().union(*(var_to_ordinal[v] for v in remaining))
            ordinal_to_factors[new_plates].append(steps.reduce(f, leaf - new_plates))
    return results
