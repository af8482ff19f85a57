"""Tensor variable elimination on plated factor graphs (Algorithm 1 of Obermeyer et al., 2019).

Factors are grouped by their set of plates (their ordinal). Starting from the deepest
ordinal, each connected group of factors is multiplied, its local variables are summed out,
and the plates it no longer needs are product-reduced, which moves the result to a shallower
ordinal. Users import these names from ``funsor_core.sum_product``.

Example:
    >>> from funsor_core.sum_product import sum_product
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> sum_product(ops.add, ops.mul, [f], eliminate=frozenset({"j"})).data
    array([3., 3.])
"""

from __future__ import annotations

from collections import defaultdict

from funsor_core import ops
from funsor_core.algorithms.contract.replay import CONTRACT as _CONTRACT
from funsor_core.algorithms.contract.replay import REDUCE as _REDUCE
from funsor_core.algorithms.contract.replay import compile_elimination
from funsor_core.analysis.sign import check_distributes, distributes
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Reals
from funsor_core.engine.interpreter import get_interpretation
from funsor_core.terms.base import Number, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import bound_name

__all__ = ["PlateError", "partial_sum_product", "sum_product", "recorded_program",
           "_partition"]

# Product-reducing a plate of size n raises each value to the n-th power in the semiring, so
# subsampling a plate to a fraction of its size is corrected by the matching power: ``pow`` for
# ``mul``, ``mul`` for ``add`` (the log semiring).
PRODUCT_TO_POWER = {ops.mul: ops.pow, ops.add: ops.mul}


class PlateError(ValueError):
    """The factor graph has the forbidden plate minor: no exact elimination order exists.

    Messages start with ``intractable!``, as funsor's do, then name the plates and variables.
    """


def _names(variables) -> frozenset:
    # Names or Variables (funsor passes either), as names. Names no factor has are ignored,
    # as in funsor: eliminating a variable of no factor leaves the graph as it is.
    if isinstance(variables, str) or getattr(variables, "_is_funsor", False):
        variables = (variables,)
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
    # ``_partition`` as lists and sets (the form algorithms.markov_plates consumes).
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


def _scale(pow_op, f, reduced_plates, plate_to_scale):
    scales = [plate_to_scale[p] for p in sorted(reduced_plates) if p in plate_to_scale]
    if not scales:
        return f
    scale = scales[0]
    for s in scales[1:]:
        scale = scale * s
    return pow_op(f, scale)


def partial_sum_product(sum_op, prod_op, factors, eliminate=frozenset(), plates=frozenset(),
                        pedantic=False, pow_op=None, plate_to_scale=None):
    """Eliminate ``eliminate`` from a plated factor graph, returning a list of factors.

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        factors: funsors whose inputs include plate names (Bint inputs in ``plates``).
        eliminate: names (or Variables) to eliminate; plates among them are product-reduced.
            Names that no factor has are ignored, as in funsor (unlike ``Funsor.reduce``).
        plates: the plate names. A plate not in ``eliminate`` is kept as an input of the
            results (one factor graph per value of it).
        pedantic: raise if a kept (not eliminated) variable lives in an eliminated plate.
        pow_op: the semiring power, used with ``plate_to_scale``; by default ``ops.pow`` for
            ``prod_op=ops.mul`` and ``ops.mul`` for ``prod_op=ops.add``.
        plate_to_scale: a dict from plate names to scales: the product over a plate is
            raised to that power, as if the plate were ``scale`` times larger (subsampling).

    Raises:
        PlateError: the graph has the forbidden plate minor (two variables in two different
            plates used by one factor in both), naming the plates and the variables. Where
            the variables inside one of those plates are all real, the plate is unrolled
            instead (their copies along it become one vector variable), exactly and at a cost
            polynomial in the plate size, as funsor 0.4.8 does; Bint variables raise.

    Example:
        >>> from funsor_core.sum_product import partial_sum_product
        >>> a = fc.Tensor(np.ones(2), {"a": fc.Bint[2]})
        >>> ab = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
        >>> [float(f.data) for f in partial_sum_product(ops.add, ops.mul, [a, ab],
        ...                                      frozenset("ab"), frozenset("b"))]
        [2.0]
    """
    eliminate, plates = _names(eliminate), _names(plates)
    key = None if plate_to_scale else _schedule_key(sum_op, prod_op, factors, eliminate,
                                                    plates, pedantic)
    if key is not None:
        schedule = _SCHEDULES.get(key)
        if schedule is not None:
            return _replay(schedule, sum_op, prod_op, factors)
    if plate_to_scale and pow_op is None:
        if prod_op not in PRODUCT_TO_POWER:
            raise ValueError(f"plate_to_scale needs pow_op for prod_op={prod_op}; only "
                             f"{sorted(map(str, PRODUCT_TO_POWER))} have a default")
        pow_op = PRODUCT_TO_POWER[prod_op]
    if pedantic:
        _check_plates_of_kept_vars(factors, eliminate, plates)
    # A plate that is not eliminated is an ordinary batch input, as in funsor: each of its
    # values indexes a separate factor graph, so it stays an input of the result instead of
    # being product-reduced when a variable outside it is summed out.
    plates = plates & eliminate
    sum_vars = eliminate - plates
    if (sum_op, prod_op) in ops.NONNEGATIVE_DISTRIBUTIVE_OPS and not distributes(
            sum_op, prod_op, factors):
        # max_x (a * b(x)) = a * max_x b(x) needs a >= 0: without a known sign, multiply
        # everything before reducing (exact); plates cannot be eliminated that way.
        check_distributes(sum_op, prod_op, factors if plates else (),
                          "sum_product over plates")
        product = _product(prod_op, list(factors)) if factors else None
        return [] if product is None else [_reduce(sum_op, product, sum_vars)]
    var_to_ordinal, ordinal_to_factors, ordinal_to_vars = _ordinals(factors, plates, sum_vars)
    graph = _Graph(var_to_ordinal, ordinal_to_factors, ordinal_to_vars, sum_vars)
    # Records the steps, by the positions of their operands, for a replay (key is None: not
    # recorded).
    record = _Recorder(factors) if key is not None else None

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
            f = _contract(sum_op, prod_op, group, names)
            if record is not None:
                record.step(_CONTRACT, group, names, f)
            remaining = graph.sum_vars.intersection(f.inputs)
            if not remaining:
                f = _reduce_recorded(record, prod_op, f, leaf)
                if plate_to_scale:
                    f = _scale(pow_op, f, leaf, plate_to_scale)
                results.append(f)
                continue
            new_plates = frozenset().union(*(var_to_ordinal[v] for v in remaining))
            if new_plates == leaf:
                # The forbidden minor. Real variables can still be eliminated exactly by
                # stacking their copies along a plate into one vector variable.
                record = None  # substitutes into pending factors: not a replayable schedule
                f = _unroll_real_plate(f, remaining, leaf, graph, pending)
                remaining = graph.sum_vars.intersection(f.inputs)
                new_plates = frozenset().union(*(var_to_ordinal[v] for v in remaining))
            f = _reduce_recorded(record, prod_op, f, leaf - new_plates)
            if plate_to_scale:
                f = _scale(pow_op, f, leaf - new_plates, plate_to_scale)
            ordinal_to_factors[new_plates].append(f)
    schedule = record.schedule(results, sum_op, prod_op) if record is not None else None
    if schedule is not None:
        if len(_SCHEDULES) >= _MAX_SCHEDULES:
            _SCHEDULES.clear()
        _SCHEDULES[key] = schedule
    return results


# ---------------------------------------------------------------------------------------------
# Replaying an elimination. For Tensor factors every decision above (ordinals, components,
# which plates to product-reduce) depends on the factors' inputs only, never on their values:
# it is recorded once per structure as a list of steps and replayed. The replay builds the
# same terms through the active interpretation (part of the key, with the semiring, the names
# and ``pedantic``), so every interpretation still sees each Contraction and Reduce; or, where
# building them provably makes the kernel calls of the exact rules and nothing else, it makes
# those calls on the arrays (algorithms.array_replay).
_SCHEDULES: dict = {}
_MAX_SCHEDULES = 1024


def _schedule_key(sum_op, prod_op, factors, eliminate, plates, pedantic):
    # None (no replay) unless every factor is a Tensor and the semiring distributes without
    # a sign condition (the (max, mul) route reads the factors' values).
    if (sum_op, prod_op) in ops.NONNEGATIVE_DISTRIBUTIVE_OPS:
        return None
    ikeys = []
    for f in factors:
        if type(f) is not Tensor:
            return None
        ikeys.append((f._ikey, f.output))
    return (get_interpretation(), sum_op, prod_op, eliminate, plates, pedantic, tuple(ikeys))


class _Recorder:
    # Positions of the values of an elimination (the factors, then each step's result) and
    # the steps that made them: (kind, operand positions, names).
    __slots__ = ("slot", "values", "steps", "ok")

    def __init__(self, factors):
        self.values = list(factors)  # kept alive, so that ids stay unique
        self.slot = {id(f): k for k, f in enumerate(self.values)}
        self.steps = []
        # A value met twice (one factor given twice, a result that is an earlier value)
        # has no single position: such an elimination is not recorded.
        self.ok = len(self.slot) == len(self.values)

    def step(self, kind, operands, names, result):
        if result is operands[0] and (kind == _REDUCE or len(operands) == 1):
            return  # nothing done: the result is its operand, at its position already
        self.steps.append((kind, tuple(self.slot[id(g)] for g in operands), names))
        if id(result) in self.slot:
            self.ok = False
        self.slot[id(result)] = len(self.values)
        self.values.append(result)

    def schedule(self, results, sum_op, prod_op) -> tuple | None:
        # (steps, outputs, the ArrayProgram of the steps or None)
        if not self.ok:
            return None
        steps, outputs = tuple(self.steps), tuple(self.slot[id(f)] for f in results)
        return steps, outputs, compile_elimination(sum_op, prod_op, self.values, steps, outputs)


def _reduce_recorded(record, prod_op, f, plates):
    names = frozenset(plates).intersection(f.inputs)
    if not names:
        return f
    result = f.reduce(prod_op, names)
    if record is not None:
        record.step(_REDUCE, (f,), names, result)
    return result


def _replay(schedule, sum_op, prod_op, factors) -> list:
    steps, outputs, program = schedule
    if program is not None:
        arrays = [f.data for f in factors]
        # Other array types than the recording's might mix backends, which the terms report.
        if tuple(map(type, arrays)) == program.arg_types and program.applies(
                get_interpretation()):
            real = factors[0].output
            return [Tensor.make(x, dict(ikey), "real", ikey=ikey, output=real)
                    for x, ikey in zip(program.run(arrays), program.out_ikeys)]
    values = list(factors)
    for kind, operands, names in steps:
        if kind == _CONTRACT:
            values.append(_contract(sum_op, prod_op, [values[k] for k in operands], names))
        else:
            values.append(values[operands[0]].reduce(prod_op, names))
    return [values[k] for k in outputs]


def recorded_program(sum_op, prod_op, factors, eliminate, plates):
    """The ``ArrayProgram`` recorded by ``partial_sum_product`` for Tensor factors of this
    structure under the active interpretation (``pedantic=False``, no ``plate_to_scale``),
    or None when there is none. A caller that keeps it checks ``applies`` before each run.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> args = (ops.add, ops.mul, [f], frozenset("ij"), frozenset("i"))
        >>> _ = partial_sum_product(*args)
        >>> recorded_program(*args)
        ArrayProgram(2 steps, 1 results)
    """
    key = _schedule_key(sum_op, prod_op, factors, _names(eliminate), _names(plates), False)
    schedule = _SCHEDULES.get(key) if key is not None else None
    return None if schedule is None else schedule[2]


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


def sum_product(sum_op, prod_op, factors, eliminate=frozenset(), plates=frozenset(),
                pedantic=False, pow_op=None, plate_to_scale=None):
    """Eliminate variables from a plated factor graph and multiply what is left.

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        eliminate: names to sum out; plates among them are product-reduced.
        plates: the plate names; a plate not in ``eliminate`` stays an input of the result.
        pedantic, pow_op, plate_to_scale: as in :func:`partial_sum_product`.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> fc.sum_product(ops.add, ops.mul, [f], eliminate=frozenset({"j"})).data
        array([3., 3.])
        >>> r = fc.sum_product(ops.add, ops.mul, [f], frozenset("ij"), frozenset("i"),
        ...                    plate_to_scale={"i": 2})
        >>> float(r.data)  # ((1 + 1 + 1) * (1 + 1 + 1)) ** 2
        81.0
    """
    results = partial_sum_product(sum_op, prod_op, factors, eliminate, plates, pedantic,
                                  pow_op, plate_to_scale)
    if not results:
        return Number(ops.UNITS[prod_op])
    return _product(prod_op, results)
