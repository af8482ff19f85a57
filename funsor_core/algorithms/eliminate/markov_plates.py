"""Plated variable elimination where some plates are Markov chains, and plate unrolling.

``plate_to_step`` describes the plates: ``{"i": {}}`` is an ordinary plate (independent
copies), and ``{"time": {("x_0", "x_prev", "x_curr")}}`` a Markov dimension, whose chains are
tuples ``init + prev + (curr,)``: for history ``h`` the ``h`` initial-state names, the ``h``
previous-state names (oldest first) and the current-state name. A transition factor has
inputs ``time``, ``x_prev`` and ``x_curr``; the initial factors have ``x_0`` and no ``time``.
Eliminating ``time`` scans the chain, sums out the final state and renames the previous-state
names of the first step to the initial-state names, so the chain joins its initial factors.
Users import these names from ``funsor_core.sum_product``.

Example:
    >>> from funsor_core.sum_product import modified_partial_sum_product
    >>> init = fc.Tensor(np.ones(2), {"x_0": fc.Bint[2]})
    >>> trans = fc.Tensor(np.ones((3, 2, 2)), {"time": fc.Bint[3], "x_prev": fc.Bint[2],
    ...                                        "x_curr": fc.Bint[2]})
    >>> [r] = modified_partial_sum_product(ops.add, ops.mul, [init, trans],
    ...     frozenset({"time", "x_0", "x_prev", "x_curr"}),
    ...     {"time": frozenset({("x_0", "x_prev", "x_curr")})})
    >>> float(r.data)  # 2**4 paths x_0 .. x_3
    16.0
"""

from __future__ import annotations

from funsor_core.algorithms.chains.term_lagged import _LAG, sarkka_bilmes_product
from funsor_core.algorithms.eliminate.graph import (
    PlateError,
    _components,
    _minor_message,
    _ordinals,
    _product,
    _reduce,
)
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Variable
from funsor_core.terms.markov import MarkovProduct

__all__ = ["modified_partial_sum_product", "dynamic_partial_sum_product", "partial_unroll"]


def _check_plate_to_step(plate_to_step, max_history=None, caller=""):
    if not isinstance(plate_to_step, dict):
        raise TypeError(f"{caller}: plate_to_step must be a dict from plate names to chains, "
                        f"got {type(plate_to_step).__name__}")
    for plate, chains in plate_to_step.items():
        for chain in chains or ():
            if (not isinstance(chain, tuple) or len(chain) < 3 or len(chain) % 2 == 0
                    or not all(isinstance(n, str) for n in chain)):
                raise ValueError(
                    f"{caller}: plate '{plate}' has chain {chain!r}; a chain is a tuple of "
                    "2 * history + 1 names (initial states, previous states, current state), "
                    "e.g. ('x_0', 'x_prev', 'x_curr')")
            if max_history is not None and len(chain) // 2 > max_history:
                raise ValueError(
                    f"{caller}: chain {chain!r} of plate '{plate}' has history "
                    f"{len(chain) // 2}, but only history {max_history} is supported here; "
                    "use dynamic_partial_sum_product for longer histories")


def _markov_partial_sum_product(sum_op, prod_op, factors, eliminate, plate_to_step,
                                scan_chain, caller):
    # Algorithm 1 with one change: factors that share an eliminated Markov dimension are one
    # group (they are linked through time), and that group's chain is eliminated by a scan
    # instead of a product over the dimension.
    eliminate = frozenset(eliminate)
    plates = frozenset(plate_to_step)
    sum_vars = eliminate - plates
    chains = {p: tuple(c) for p, c in plate_to_step.items() if c}
    markov_plates = frozenset(p for p in chains if p in eliminate)
    time_of: dict = {}  # a prev/curr name -> the eliminated Markov plates it steps along
    for p in markov_plates:
        for chain in chains[p]:
            for name in chain[len(chain) // 2:]:
                time_of.setdefault(name, set()).add(p)
    chain_vars = frozenset(time_of) & sum_vars
    var_to_ordinal, ordinal_to_factors, ordinal_to_vars = _ordinals(factors, plates, sum_vars)

    results = []
    while ordinal_to_factors:
        leaf = max(ordinal_to_factors, key=len)
        leaf_factors = ordinal_to_factors.pop(leaf)
        leaf_vars = frozenset(ordinal_to_vars[leaf])
        for group, names in _components(leaf_factors, leaf_vars | markov_plates):
            f = _reduce(sum_op, _product(prod_op, group), names - chain_vars - markov_plates)
            states = frozenset(names) & chain_vars
            if states:
                times = set().union(*(time_of[v] for v in states))
                if len(times) != 1:
                    raise PlateError(
                        f"{caller}: intractable! the chain variables {sorted(states)} step "
                        f"along several Markov dimensions {sorted(times)} in one factor "
                        "group; only one Markov dimension can be scanned at a time")
                time = times.pop()
                for v in sorted(sum_vars.intersection(f.inputs)):
                    if time in var_to_ordinal[v] and var_to_ordinal[v] < leaf:
                        raise PlateError(
                            f"{caller}: intractable! variable '{v}' lives in Markov dimension "
                            f"'{time}' but in fewer plates ({sorted(var_to_ordinal[v])}) than "
                            f"the chain ({sorted(leaf)}); it cannot be eliminated exactly")
                f = scan_chain(sum_op, prod_op, f, time, chains[time], states)
            remaining = sum_vars.intersection(f.inputs)
            if not remaining:
                results.append(_reduce(prod_op, f, leaf & eliminate))
                continue
            new_plates = frozenset().union(*(var_to_ordinal[v] for v in remaining))
            if new_plates == leaf:
                raise PlateError(_minor_message(remaining, var_to_ordinal, leaf))
            ordinal_to_factors[new_plates].append(_reduce(prod_op, f, leaf - new_plates))
    return results


def _scan_first_order(sum_op, prod_op, f, time, chains, states):
    # Chains of history 1: a Markov product with step {prev: curr}, then the final states are
    # summed and the first step's previous states become the initial states.
    chosen = [c for c in chains if c[-1] in states]
    step = {c[1]: c[2] for c in chosen if c[1] in f.inputs and c[2] in f.inputs}
    finals = frozenset(c[2] for c in chosen).intersection(f.inputs)
    if time in f.inputs:
        time_var = Variable(time, f.inputs[time])
        if step and finals:
            # The product is only built here (reflect), and summing its final states is one
            # Contraction, which exact evaluates as a backward filter: a vector carry,
            # O(T K^2), instead of composing T transition matrices.
            with reflect:
                f = MarkovProduct(sum_op, prod_op, f, time_var, step)
        else:
            f = MarkovProduct(sum_op, prod_op, f, time_var, step)
    f = _reduce(sum_op, f, finals)
    return f(**{c[1]: c[0] for c in chosen if c[1] in f.inputs})


def _scan_any_order(sum_op, prod_op, f, time, chains, states):
    # Chains of any history: name the previous states by their lag behind the current state
    # (x_prev -> _PREV_x_curr, an older x_prev_prev -> _PREV__PREV_x_curr), scan with
    # sarkka_bilmes_product, sum the final states, and give the lagged initial states their
    # initial-state names.
    to_lagged, to_init, currs = {}, {}, set()
    for chain in chains:
        history = len(chain) // 2
        init, prev, curr = chain[:history], chain[history:-1], chain[-1]
        if curr not in states and not states.intersection(prev):
            continue
        currs.add(curr)
        for i, (p, x0) in enumerate(zip(prev, init)):
            lagged = _LAG * (history - i) + curr
            to_lagged[p] = lagged
            to_init[lagged] = x0
    f = f(**{k: v for k, v in to_lagged.items() if k in f.inputs})
    if time in f.inputs:
        global_vars = frozenset(f.inputs) - {time} - currs - set(to_lagged.values())
        f = sarkka_bilmes_product(sum_op, prod_op, f, Variable(time, f.inputs[time]),
                                  global_vars)
    f = _reduce(sum_op, f, currs)
    return f(**{k: v for k, v in to_init.items() if k in f.inputs})


def _scan_dynamic(sum_op, prod_op, f, time, chains, states):
    # First-order chains (each (x_0, x_prev, x_curr), none whose prev is a state without its
    # curr) are the first-order scan's: a Markov product whose final states are summed in one
    # Contraction. Built directly, not as a Sarkka-Bilmes block scan of blocks of one step
    # (no lagged renames and time substitutions to build lazily and then evaluate); the same
    # sum, in another order of additions (last-digit differences). Longer histories: any order.
    if all(len(c) == 3 and (c[2] in states or c[1] not in states) for c in chains):
        return _scan_first_order(sum_op, prod_op, f, time, chains, states)
    return _scan_any_order(sum_op, prod_op, f, time, chains, states)


def modified_partial_sum_product(sum_op, prod_op, factors, eliminate=frozenset(),
                                 plate_to_step=None):
    """Eliminate plates and first-order Markov dimensions from a factor graph.

    Like :func:`partial_sum_product`, but a plate whose entry in ``plate_to_step`` lists
    chains is a Markov dimension, eliminated as a ``MarkovProduct`` whose final states are
    summed (a backward filter, evaluated with the strategy in force). When a Markov
    dimension is eliminated, ``factors`` must hold its transition factors and the initial
    factors (over the initial-state names) that the scan result is joined to.

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        factors: a list of funsors.
        eliminate: names to eliminate: variables, plates and Markov dimensions.
        plate_to_step: a dict from each plate to its chains (empty for an ordinary plate),
            e.g. ``{"i": {}, "time": frozenset({("x_0", "x_prev", "x_curr")})}``.

    Returns:
        A list of partially eliminated factors.

    Raises:
        ValueError: a chain is malformed or has history above 1.
        PlateError: the graph has the forbidden plate minor, or a chain variable cannot be
            scanned exactly; the message names the plates and variables.

    Example:
        >>> from funsor_core.sum_product import modified_partial_sum_product
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "a": fc.Bint[3]})
        >>> [r] = modified_partial_sum_product(ops.add, ops.mul, [f], frozenset("ia"),
        ...                                    {"i": {}})
        >>> float(r.data)  # (1 + 1 + 1) ** 2
        9.0
    """
    plate_to_step = {} if plate_to_step is None else plate_to_step
    _check_plate_to_step(plate_to_step, 1, "modified_partial_sum_product")
    return _markov_partial_sum_product(sum_op, prod_op, factors, eliminate, plate_to_step,
                                       _scan_first_order, "modified_partial_sum_product")


def dynamic_partial_sum_product(sum_op, prod_op, factors, eliminate=frozenset(),
                                plate_to_step=None):
    """Eliminate plates and Markov dimensions of any history from a factor graph.

    As :func:`modified_partial_sum_product`, but chains may have any history ``h``
    (``("x_0", "x_1", "x_pp", "x_p", "x_curr")`` for ``h = 2``); the time dimension is
    eliminated by :func:`sarkka_bilmes_product` (chains of history 1: by the Markov product
    of :func:`modified_partial_sum_product`, the same sum). Unlike funsor 0.4.8 this does not run
    ``apply_optimizer`` on the chain first: the chain is evaluated under the active
    interpretation.

    Raises:
        ValueError: a chain is malformed.
        PlateError: as in :func:`modified_partial_sum_product`.

    Example:
        >>> from funsor_core.sum_product import dynamic_partial_sum_product
        >>> init = fc.Tensor(np.ones((2, 2)), {"x_0": fc.Bint[2], "x_1": fc.Bint[2]})
        >>> trans = fc.Tensor(np.ones((3, 2, 2, 2)), {"t": fc.Bint[3], "x_pp": fc.Bint[2],
        ...                   "x_p": fc.Bint[2], "x_c": fc.Bint[2]})
        >>> [r] = dynamic_partial_sum_product(ops.add, ops.mul, [init, trans],
        ...     frozenset({"t", "x_0", "x_1", "x_pp", "x_p", "x_c"}),
        ...     {"t": frozenset({("x_0", "x_1", "x_pp", "x_p", "x_c")})})
        >>> float(r.data)  # 2**5 paths x_0 .. x_4
        32.0
    """
    plate_to_step = {} if plate_to_step is None else plate_to_step
    _check_plate_to_step(plate_to_step, None, "dynamic_partial_sum_product")
    return _markov_partial_sum_product(sum_op, prod_op, factors, eliminate, plate_to_step,
                                       _scan_dynamic, "dynamic_partial_sum_product")


def partial_unroll(factors, eliminate=frozenset(), plate_to_step=None):
    """Rewrite eliminated plates and Markov dimensions as copies of their variables.

    An ordinary plate ``i`` of size ``n`` is replaced by ``n`` copies of each factor in it,
    with each variable ``v`` in the plate renamed ``v_0 .. v_{n-1}``. A first-order Markov
    dimension with chain ``("x_0", "x_prev", "x_curr")`` is replaced by copies of its factors
    at each time ``t`` with ``x_prev -> x_t`` and ``x_curr -> x_{t+1}`` (the chain's initial
    name must end in ``_0``), other variables ``v`` in it becoming ``v_{t+1}``. Markov
    dimensions are unrolled before plates, so a chain inside a plate keeps its names while
    it is unrolled. Summing the returned variables out of the product of the returned factors
    is a brute-force reference for :func:`modified_partial_sum_product`.

    Args:
        factors: a list of funsors.
        eliminate: the variables, plates and Markov dimensions to unroll.
        plate_to_step: as in :func:`modified_partial_sum_product` (history at most 1).

    Returns:
        ``(factors, sum_vars, remaining_plates)``: the unrolled factors, the names to sum out
        of them, and the ``plate_to_step`` entries of the plates that were not unrolled.

    Raises:
        ValueError: a chain is malformed, or a variable in an unrolled plate is not
            eliminated (its copies would have no meaning outside the plate).

    Example:
        >>> from funsor_core.sum_product import partial_unroll
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "a": fc.Bint[3]})
        >>> fs, names, _ = partial_unroll([f], frozenset("ia"), {"i": {}})
        >>> [sorted(g.inputs) for g in fs], sorted(names)
        ([['a_0'], ['a_1']], ['a_0', 'a_1'])
    """
    plate_to_step = {} if plate_to_step is None else plate_to_step
    _check_plate_to_step(plate_to_step, 1, "partial_unroll")
    for chains in plate_to_step.values():
        for chain in chains or ():
            if not chain[0].endswith("_0"):
                raise ValueError(f"partial_unroll: the initial name of chain {chain!r} must end "
                                 "in '_0', e.g. ('x_0', 'x_prev', 'x_curr'): copies at time t "
                                 "are named x_t")
    eliminate = frozenset(eliminate)
    plates = frozenset(plate_to_step)
    sum_vars = set(eliminate - plates)
    var_to_ordinal: dict = {}
    for f in factors:
        ordinal = plates.intersection(f.inputs)
        for var in set(f.inputs) - plates:
            var_to_ordinal[var] = var_to_ordinal.get(var, ordinal) & ordinal

    def order(plate):
        # Markov dimensions first, the deepest (most plates around its chains) first.
        chains = plate_to_step[plate]
        if not chains:
            return 0
        return 1 + max(len(var_to_ordinal.get(c[1], ())) for c in chains)

    factors = list(factors)
    for plate in sorted((p for p in plates if p in eliminate), key=order, reverse=True):
        factors = _unroll_plate(factors, var_to_ordinal, sum_vars, plate,
                                plate_to_step[plate] or ())
    remaining = {p: s for p, s in plate_to_step.items() if p not in eliminate}
    return factors, frozenset(sum_vars), remaining


def _unroll_plate(factors, var_to_ordinal, sum_vars, plate, chains):
    # Updates var_to_ordinal and sum_vars in place; returns the new factors.
    size = next(f.inputs[plate].size for f in factors if plate in f.inputs)
    history = 1 if chains else 0
    inside = sorted(v for v, o in var_to_ordinal.items() if plate in o)
    kept = [v for v in inside if v not in sum_vars]
    if kept:
        raise ValueError(f"partial_unroll: variables {kept} live in plate '{plate}' but are not "
                         "eliminated; unroll a plate only together with all its variables")
    prev_base = {c[1]: c[0][:-2] for c in chains}
    curr_base = {c[2]: c[0][:-2] for c in chains}

    def copy_name(var, i):
        if var in prev_base:
            return f"{prev_base[var]}_{i}"
        if var in curr_base:
            return f"{curr_base[var]}_{i + 1}"
        return f"{var}_{i + history}"

    for var in inside:
        ordinal = var_to_ordinal.pop(var) - {plate}
        sum_vars.discard(var)
        for i in range(size):
            name = copy_name(var, i)
            sum_vars.add(name)
            var_to_ordinal[name] = var_to_ordinal.get(name, ordinal) & ordinal
    unrolled = []
    for f in factors:
        if plate not in f.inputs:
            unrolled.append(f)
            continue
        names = [v for v in inside if v in f.inputs]
        unrolled.extend(f(**{plate: i}, **{v: copy_name(v, i) for v in names})
                        for i in range(size))
    return unrolled

