"""Tensor variable elimination on plated factor graphs, and sums over Markov chains.

``partial_sum_product`` is Algorithm 1 of "Tensor Variable Elimination for Plated Factor
Graphs" (Obermeyer et al., 2019): factors are grouped by their set of plates (their ordinal);
starting from the deepest ordinal, each connected group of factors is multiplied, its local
variables are summed out, and the plates it no longer needs are product-reduced, which moves
the result to a shallower ordinal. ``sequential_sum_product`` eliminates a time dimension by a
parallel scan of depth ``log2(T)``.

Example:
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> sum_product(ops.add, ops.mul, [f], eliminate=frozenset({"j"})).data
    array([3., 3.])
"""

from __future__ import annotations

from collections import defaultdict

from funsor_core import ops
from funsor_core.array_terms import Slice
from funsor_core.contraction import Contraction
from funsor_core.domains import Bint
from funsor_core.tensor import Tensor, is_array
from funsor_core.terms import Funsor, Number, Variable

__all__ = ["partial_sum_product", "sum_product", "naive_sequential_sum_product",
           "sequential_sum_product", "PlateError"]


class PlateError(ValueError):
    """The factor graph has the forbidden plate minor: no exact elimination order exists."""


def _components(factors, sum_vars):
    # Connected components of factors that share a variable of sum_vars. Groups are kept or
    # dropped by position, never compared: ``==`` on funsors is elementwise and builds a term.
    groups: list = []
    for f in factors:
        names = sum_vars.intersection(f.inputs)
        factors_of, names_of = [], set(names)
        kept = []
        for g in groups:
            if g[1] & names:
                factors_of.extend(g[0])
                names_of.update(g[1])
            else:
                kept.append(g)
        factors_of.append(f)
        groups = kept + [(factors_of, names_of)]
    return groups


def _product(prod_op, factors):
    result = factors[0]
    for f in factors[1:]:
        result = prod_op(result, f)
    return result


def partial_sum_product(sum_op, prod_op, factors, eliminate=frozenset(), plates=frozenset()):
    """Eliminate ``eliminate`` from a plated factor graph, returning a list of factors.

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        factors: funsors whose inputs include plate names (Bint inputs in ``plates``).
        eliminate: names to eliminate; plates among them are product-reduced.
        plates: the plate names. A plate not in ``eliminate`` is kept as an input of the
            results (one factor graph per value of it).

    Raises:
        PlateError: the graph has the forbidden plate minor (two variables in two different
            plates used by one factor in both), naming the plates and the variables.

    Example:
        >>> a = fc.Tensor(np.ones(2), {"a": fc.Bint[2]})
        >>> ab = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
        >>> [float(f.data) for f in partial_sum_product(ops.add, ops.mul, [a, ab],
        ...                                      frozenset("ab"), frozenset("b"))]
        [2.0]
    """
    eliminate, plates = frozenset(eliminate), frozenset(plates)
    # A plate that is not eliminated is an ordinary batch input, as in funsor: each of its
    # values indexes a separate factor graph, so it stays an input of the result instead of
    # being product-reduced when a variable outside it is summed out.
    plates = plates & eliminate
    sum_vars = eliminate - plates
    var_to_ordinal: dict = {}
    ordinal_to_factors = defaultdict(list)
    for f in factors:
        ordinal = plates.intersection(f.inputs)
        ordinal_to_factors[ordinal].append(f)
        for var in sum_vars.intersection(f.inputs):
            var_to_ordinal[var] = var_to_ordinal.get(var, ordinal) & ordinal
    ordinal_to_vars = defaultdict(set)
    for var, ordinal in var_to_ordinal.items():
        ordinal_to_vars[ordinal].add(var)

    results = []
    while ordinal_to_factors:
        leaf = max(ordinal_to_factors, key=len)
        leaf_factors = ordinal_to_factors.pop(leaf)
        leaf_vars = frozenset(ordinal_to_vars[leaf])
        for group, _ in _components(leaf_factors, leaf_vars):
            f = _product(prod_op, group)
            local = leaf_vars.intersection(f.inputs)
            if local:
                f = f.reduce(sum_op, local)
            remaining = sum_vars.intersection(f.inputs)
            if not remaining:
                results.append(f.reduce(prod_op, leaf & eliminate))
                continue
            new_plates = frozenset().union(*(var_to_ordinal[v] for v in remaining))
            if new_plates == leaf:
                raise PlateError(_minor_message(remaining, var_to_ordinal, leaf))
            f = f.reduce(prod_op, leaf - new_plates)
            ordinal_to_factors[new_plates].append(f)
    return results


def _minor_message(remaining, var_to_ordinal, leaf) -> str:
    names = sorted(remaining)
    for u in names:
        for v in names:
            p = sorted(var_to_ordinal[u] - var_to_ordinal[v])
            q = sorted(var_to_ordinal[v] - var_to_ordinal[u])
            if p and q:
                return (f"intractable plated factor graph: variable '{u}' is in plate '{p[0]}' "
                        f"and variable '{v}' is in plate '{q[0]}', but a factor in plates "
                        f"{sorted(leaf)} uses both (the forbidden plate minor). Sum one of them "
                        "out by hand, or move it out of its plate.")
    return (f"intractable plated factor graph: variables {names} meet in plates {sorted(leaf)} "
            "(the forbidden plate minor)")


def sum_product(sum_op, prod_op, factors, eliminate=frozenset(), plates=frozenset()):
    """Eliminate variables from a plated factor graph and multiply what is left.

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        eliminate: names to sum out; plates among them are product-reduced.
        plates: the plate names; a plate not in ``eliminate`` stays an input of the result.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> fc.sum_product(ops.add, ops.mul, [f], eliminate=frozenset({"j"})).data
        array([3., 3.])
    """
    results = partial_sum_product(sum_op, prod_op, factors, eliminate, plates)
    if not results:
        return Number(ops.UNITS[prod_op])
    return _product(prod_op, results)


def _time_name(time) -> str:
    return time.name if isinstance(time, Variable) else time


def _check_chain(trans, time: str, step: dict) -> None:
    # A step name that is not an input would be silently "substituted" into nothing, and the
    # scan would return numbers for a chain that does not exist; say which names are missing.
    missing = [n for n in (*step, *step.values()) if n not in trans.inputs]
    if missing:
        raise ValueError(
            f"sequential sum-product: {missing} are not inputs of the transition factor, whose "
            f"inputs are {list(trans.inputs)}; every prev/curr name of step={step} must be an "
            "input, e.g. trans(t, x_prev, x_curr) with step={'x_prev': 'x_curr'}")


def _prototype_array(term):
    # Any array of the chain, to build index arrays on its backend; None for a symbolic chain.
    todo = [term]
    while todo:
        node = todo.pop()
        leaves, _ = type(node).tree_flatten(node)
        for leaf in leaves:
            if is_array(leaf):
                return leaf
            if isinstance(leaf, Funsor):
                todo.append(leaf)
    return None


def _steps(proto, time: str, start: int, stop: int, step: int, duration: int):
    # The time indices range(start, stop, step), as a new ``time`` input. With an array at
    # hand this is an index Tensor, not a Slice: under ``lazy`` a later round substitutes into
    # it, and Subs(Tensor, Number/Tensor) evaluates exactly, whereas Subs(Slice, Slice) has no
    # rule (and a Cat of unequal parts, funsor's way, cannot be substituted into at all).
    if proto is None:
        return Slice(time, start, stop, step, duration)
    return Tensor.make(ops.new_arange(proto, start, stop, step),
                       {time: Bint[len(range(start, stop, step))]}, duration)


def _compose(sum_op, prod_op, first, second, step: dict, drop: dict):
    # (first o second)(prev, curr) = sum_mid first(prev, mid) * second(mid, curr).
    x = first(**drop)
    y = second(**{prev: drop[curr] for prev, curr in step.items()})
    return Contraction(sum_op, prod_op, frozenset(drop.values()), (x, y))


def naive_sequential_sum_product(sum_op, prod_op, trans, time, step):
    """Eliminate a Markov chain's time input one step at a time (a reference for tests).

    Args:
        trans: a factor with inputs ``time`` and the prev/curr names of ``step``.
        time: the time input (a Variable or a name).
        step: a mapping from prev names to curr names.

    Returns:
        A factor of the first step's prev names and the last step's curr names.

    Raises:
        ValueError: a name of ``step`` is not an input of ``trans``.

    Example:
        >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> naive_sequential_sum_product(ops.add, ops.mul, t, "t", {"x": "y"}).data
        array([[4., 4.],
               [4., 4.]])
    """
    time = _time_name(time)
    step = dict(step)
    _check_chain(trans, time, step)
    if time not in trans.inputs:
        return trans  # a factor without a time input is a chain of one step, as in funsor
    drop = {curr: f"_drop_{curr}" for curr in step.values()}
    result = trans(**{time: 0})
    for t in range(1, trans.inputs[time].size):
        result = _compose(sum_op, prod_op, result, trans(**{time: t}), step, drop)
    return result


def sequential_sum_product(sum_op, prod_op, trans, time, step):
    """Eliminate a Markov chain's time input by a parallel scan (depth ``log2(T)``).

    Pairs of adjacent steps are contracted at once along a halved time input, so the work
    is ``T`` contractions in ``log2(T)`` batched rounds. When a round has an odd number of
    steps, the last one is set aside and composed back at the end (at most ``log2(T)`` extra
    contractions). Unlike funsor 0.4.8 this never builds a ``Cat``, so Gaussian chains of any
    length, and lazy chains, evaluate exactly.

    Raises:
        ValueError: a name of ``step`` is not an input of ``trans``.

    Example:
        >>> t = fc.Tensor(np.ones((5, 2, 2)), {"t": fc.Bint[5], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> sequential_sum_product(ops.add, ops.mul, t, "t", {"x": "y"}).data
        array([[16., 16.],
               [16., 16.]])
    """
    time = _time_name(time)
    step = dict(step)
    _check_chain(trans, time, step)
    if time not in trans.inputs:
        return trans  # a factor without a time input is a chain of one step, as in funsor
    drop = {curr: f"_drop_{curr}" for curr in step.values()}
    duration = trans.inputs[time].size
    proto = _prototype_array(trans)
    # Segments peeled off odd rounds, latest in time first; each covers the steps right
    # after the segments still in ``trans`` and right before the previously peeled one.
    tails = []
    while duration > 1:
        if duration % 2:
            tails.append(trans(**{time: duration - 1}))
            trans = trans(**{time: _steps(proto, time, 0, duration - 1, 1, duration)})
            duration -= 1
        x = trans(**{time: _steps(proto, time, 0, duration, 2, duration)})
        y = trans(**{time: _steps(proto, time, 1, duration, 2, duration)})
        trans = _compose(sum_op, prod_op, x, y, step, drop)
        duration //= 2
    result = trans(**{time: 0})
    for tail in reversed(tails):
        result = _compose(sum_op, prod_op, result, tail, step, drop)
    return result
