"""Tensor variable elimination on plated factor graphs (Algorithm 1 of Obermeyer et al., 2019).

The graph and its walk are in ``algorithms.eliminate.graph``. Tensor factors follow a
``Schedule`` planned once per structure (``algorithms.eliminate.schedule``); other factors,
a ``plate_to_scale`` and graphs whose real plates are unrolled walk the graph on terms.
Users import these names from ``funsor_core.sum_product``.

Example:
    >>> from funsor_core.sum_product import sum_product
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> sum_product(ops.add, ops.mul, [f], eliminate=frozenset({"j"})).data
    array([3., 3.])
"""

from __future__ import annotations

from operator import attrgetter

from funsor_core import ops
from funsor_core.algorithms.eliminate.built_steps import build_steps
from funsor_core.algorithms.eliminate.graph import (
    PlateError,
    _check_plates_of_kept_vars,
    _contract,
    _names,
    _ordinals,
    _partition,
    _product,
    _reduce,
    _unroll_real_plate,
    check_domains,
    eliminate_graph,
)
from funsor_core.algorithms.eliminate.schedule import plan_elimination, run_schedule, structure_of
from funsor_core.analysis.sign import check_distributes, distributes
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.cache import FastCache
from funsor_core.ops.op import Op
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.inputs import DomainError

__all__ = ["PlateError", "check_plated_semiring", "partial_sum_product", "sum_product",
           "recorded_program", "_partition"]

# Product-reducing a plate of size n raises each value to the n-th power in the semiring, so
# subsampling a plate to a fraction of its size is corrected by the matching power: ``pow`` for
# ``mul``, ``mul`` for ``add`` (the log semiring).
PRODUCT_TO_POWER = {ops.mul: ops.pow, ops.add: ops.mul}


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
    if isinstance(factors, Funsor):  # one factor, given bare: as a list of one
        factors = [factors]
    elif type(factors) not in _SEQUENCES:
        factors = _factor_list(factors)
    key = None
    if (plate_to_scale is None and type(factors) in _SEQUENCES and factors
            and set(map(type, factors)) == _TENSOR_ONLY):
        # (C-level passes: 2,000 factors for a 1,000-variable tree)
        key = (sum_op, prod_op, eliminate, plates, pedantic, tuple(map(_IKEY, factors)),
               tuple(map(_OUTPUT, factors)))
        try:
            schedule = _KNOWN_GRAPHS.data.get(key)
        except TypeError:  # unhashable names: the full path checks them
            schedule = key = None
        if schedule is not None:
            return _run_known(schedule, factors)
    # One graph, one backend, checked here from the leaves' array types: a lazy program
    # whose first mixed Contraction is built only when it is evaluated would fail far from
    # this call (at apply_optimizer) otherwise.
    if not (isinstance(sum_op, Op) and isinstance(prod_op, Op)):
        raise TypeError(f"sum_product takes ops of funsor_core.ops as (sum_op, prod_op), e.g. "
                        f"(ops.logaddexp, ops.add); got ({sum_op!r}, {prod_op!r})")
    try:
        check_backends("run sum_product over these factors", factors, _FactorLabels(factors))
    except AttributeError:  # a factor that is no funsor has no arrays: name it
        _check_funsors(factors)
        raise
    eliminate = _names(eliminate, factors, "eliminate")
    plates = _names(plates, factors, "plates")
    if (sum_op, prod_op) not in ops.DISTRIBUTIVE_OPS:
        _check_groups_semiring(sum_op, prod_op, factors, eliminate - plates)
        if plates & eliminate:
            check_plated_semiring(sum_op, prod_op, factors, eliminate, plates)
    structure = None if plate_to_scale else structure_of(sum_op, prod_op, factors)
    if structure is not None:
        schedule = plan_elimination(sum_op, prod_op, structure, eliminate, plates, pedantic)
        if schedule is not None:
            if key is not None and schedule.program is not None:
                _KNOWN_GRAPHS.put(key, schedule)
            return run_schedule(schedule, factors)
    if plate_to_scale and pow_op is None:
        if prod_op not in PRODUCT_TO_POWER:
            raise ValueError(f"plate_to_scale needs pow_op for prod_op={prod_op}; only "
                             f"{sorted(map(str, PRODUCT_TO_POWER))} have a default")
        pow_op = PRODUCT_TO_POWER[prod_op]
    if pedantic:
        _check_plates_of_kept_vars(factors, eliminate, plates)
    if plates & eliminate:
        check_domains(f.inputs.items() for f in factors)
        _check_plate_domains(factors, plates & eliminate)
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
    steps = _TermSteps(sum_op, prod_op, pow_op, plate_to_scale)
    return eliminate_graph(factors, sum_vars, plates, steps)


# Graphs of Tensors planned before, by what every check above and the schedule are functions
# of: the ops, the names as given, the factors' input keys and outputs. A hit skips those
# checks (their answer was "pass" for this key) and the planning; the one check that reads
# the arrays (one backend) is the program's own (a single array type) or, where its guard
# declines (``lazy``, a rule or hook on the way), ``check_backends`` before the terms are
# built, as the full path does.
_KNOWN_GRAPHS = FastCache("eliminate.known_tensor_graphs", 1024)
_IKEY, _OUTPUT, _DATA = attrgetter("_ikey"), attrgetter("output"), attrgetter("data")
_TENSOR_ONLY, _SEQUENCES = {Tensor}, (list, tuple)


def _run_known(schedule, factors) -> list:
    program = schedule.program
    data = list(map(_DATA, factors))
    arrays = program.run(data)
    if arrays is not None:
        # As ``run_schedule``: each result is what the rule of its last step builds.
        real, make = factors[0].output, Tensor.make
        return [make(x, dict(ikey), "real", ikey, real)  # (by position: no keyword parse)
                for x, ikey in zip(arrays, program.out_ikeys)]
    if len(set(map(type, data))) != 1:
        # (Tensors whose arrays are of one type are of one backend, and none is a numpy
        # scalar among other arrays: ``check_backends`` would pass them unchanged.)
        check_backends("run sum_product over these factors", factors, _FactorLabels(factors))
    return build_steps(schedule, factors)


# Semirings that ops.DISTRIBUTIVE_OPS leaves out: a lattice op (max, min, and, or) as sum_op and
# a prod_op nondecreasing in each argument, so that a * max(b, c) = max(a * b, a * c).
_LATTICE_SEMIRINGS = frozenset([
    (ops.max, ops.logaddexp), (ops.min, ops.logaddexp), (ops.max, ops.max), (ops.min, ops.min),
    (ops.max, ops.min), (ops.min, ops.max), (ops.and_, ops.or_), (ops.and_, ops.and_),
    (ops.or_, ops.or_),
])

_NOT_DISTRIBUTIVE = (
    "sum_product over plates: prod_op {prod} does not distribute over sum_op {sum}, so "
    "{var!r} (summed inside plate {plate!r}: {domain}) cannot be summed once per plate "
    "member and then multiplied along the plate; that gives a number that is not the sum "
    "over every assignment of the plate's copies of {var!r}. Pass a semiring (sum_op, "
    "prod_op) such as (ops.logaddexp, ops.add), (ops.add, ops.mul) or (ops.max, ops.add)"
    "{hint}"
)


_SUMMED_BEFORE_OUTER = (
    "sum_product over plates: prod_op {prod} does not distribute over sum_op {sum}, so "
    "{var!r} (summed inside plate {plate!r}) cannot be summed before the factor with inputs "
    "{inputs}, outside that plate, multiplies the sum; that gives a number that is not the "
    "sum over every assignment. Pass a semiring (sum_op, prod_op) such as "
    "(ops.logaddexp, ops.add), (ops.add, ops.mul) or (ops.max, ops.add), or drop the "
    "plates of one member (then every factor is multiplied before summing){hint}"
)


def check_plated_semiring(sum_op, prod_op, factors, eliminate, plates) -> None:
    """Raise ValueError where eliminating ``plates`` would sum a variable inside a plate of
    more than one member with a pair ``(sum_op, prod_op)`` that is no semiring: the plate's
    product of per-member sums equals the sum over all assignments only when ``prod_op``
    distributes over ``sum_op``. A plate of one member raises too where a factor outside it
    would multiply the sum of a variable inside it (the sum is taken first). Global variables
    (outside every eliminated plate) need no distribution, so such graphs keep funsor's answer.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "x": fc.Bint[3]})
        >>> check_plated_semiring(ops.add, ops.mul, [f], frozenset("ix"), frozenset("i"))
        >>> check_plated_semiring(ops.add, ops.add, [f], frozenset("ix"), frozenset("i"))
        Traceback (most recent call last):
        ...
        ValueError: sum_product over plates: prod_op ops.add does not distribute over ...
    """
    pair = (sum_op, prod_op)
    if pair in ops.DISTRIBUTIVE_OPS or pair in _LATTICE_SEMIRINGS:
        return
    plates = plates & eliminate
    var_to_ordinal = _ordinals(factors, plates, eliminate - plates)[0]
    domains = {n: d for f in factors for n, d in f.inputs.items() if n in plates}
    hint = (" (the arguments are swapped: sum_op comes first)"
            if (prod_op, sum_op) in ops.DISTRIBUTIVE_OPS else "")
    for var in sorted(var_to_ordinal):
        for plate in sorted(var_to_ordinal[var]):
            if domains[plate].size > 1:  # one member: the product is that member alone
                raise ValueError(_NOT_DISTRIBUTIVE.format(
                    prod=prod_op, sum=sum_op, var=var, plate=plate, domain=domains[plate],
                    hint=hint))
        # Plates of one member still order the sums: a variable inside a plate is summed
        # before the factors outside it multiply the result, and sum_v (a * b(v)) equals
        # a * sum_v b(v) only when prod_op distributes over sum_op.
        for f in factors:
            outside = sorted(var_to_ordinal[var] - plates.intersection(f.inputs))
            if outside:
                raise ValueError(_SUMMED_BEFORE_OUTER.format(
                    prod=prod_op, sum=sum_op, var=var, plate=outside[0], inputs=list(f.inputs),
                    hint=hint))


_GROUPS_NOT_DISTRIBUTIVE = (
    "sum_product: prod_op {prod} does not distribute over sum_op {sum}, so the {n} groups "
    "of factors that share no summed variable cannot be summed apart and then multiplied: "
    "{var!r} ({domain}) is summed in one group while the factors {others} of another lack it, "
    "and each of their values would have to be repeated once per value of {var!r}. Pass a "
    "semiring (sum_op, prod_op) such as (ops.logaddexp, ops.add), (ops.add, ops.mul) or "
    "(ops.max, ops.add), or multiply the factors first and reduce the product{hint}"
)


def _check_groups_semiring(sum_op, prod_op, factors, sum_vars) -> None:
    # Summing each connected group of factors apart and multiplying the group sums equals
    # the sum over all assignments only when prod_op distributes over sum_op:
    # sum_x (b(x) + c) = sum_x b(x) + |x| * c under (add, add), not sum_x b(x) + c.
    if (sum_op, prod_op) in _LATTICE_SEMIRINGS or not sum_vars or len(factors) < 2:
        return
    groups = _partition(list(factors), sum_vars)
    if len(groups) < 2:
        return
    for group, names in groups:
        if names:
            var = min(names)
            domain = next(f.inputs[var] for f in group if var in f.inputs)
            others = next(g for g, _ in groups if g is not group)
            hint = (" (the arguments are swapped: sum_op comes first)"
                    if (prod_op, sum_op) in ops.DISTRIBUTIVE_OPS else "")
            raise ValueError(_GROUPS_NOT_DISTRIBUTIVE.format(
                prod=prod_op, sum=sum_op, n=len(groups), var=var, domain=domain,
                others=[list(f.inputs) for f in others], hint=hint))


def _factor_list(factors) -> list:
    # Any iterable of funsors (a generator, dict values), read once; a dict itself would be
    # read as its keys, the factors' names, and a str as letters.
    if isinstance(factors, (dict, str)) or not hasattr(factors, "__iter__"):
        raise TypeError(f"sum_product: factors must be a list of funsors, got "
                        f"{type(factors).__name__}" + (
                            "; for a dict of factors pass list(factors.values())"
                            if isinstance(factors, dict) else ""))
    return list(factors)


def _check_funsors(factors) -> None:
    for i, f in enumerate(factors):
        if not isinstance(f, Funsor):
            raise TypeError(f"sum_product: factor {i} is a {type(f).__name__}, not a funsor; "
                            "make it one first, e.g. fc.Tensor(array, {'i': fc.Bint[n]})")


def _check_plate_domains(factors, plates) -> None:
    # A plate is a Bint input whose members are multiplied; a real one has no members (its
    # product was left a lazy term where a number was asked for).
    for i, f in enumerate(factors):
        for name in plates.intersection(f.inputs):
            domain = f.inputs[name]
            if domain.dtype == "real" or domain.shape:
                raise DomainError(f"sum_product: plate {name!r} is {domain} in factor {i}; a "
                                  "plate is a Bint[n] input, whose n members are multiplied")


class _FactorLabels:
    # "factor i (inputs ...)" for check_backends' message, made only when it raises.
    def __init__(self, factors):
        self.factors = factors

    def __getitem__(self, i: int) -> str:
        return f"factor {i} (inputs {list(getattr(self.factors[i], 'inputs', {}))})"


class _TermSteps:
    # EliminationSteps on terms, built through the active interpretation (any factors; a
    # plate_to_scale; a graph whose real plates are unrolled).
    __slots__ = ("sum_op", "prod_op", "pow_op", "plate_to_scale")

    def __init__(self, sum_op, prod_op, pow_op, plate_to_scale):
        self.sum_op, self.prod_op = sum_op, prod_op
        self.pow_op, self.plate_to_scale = pow_op, plate_to_scale

    def contract(self, group, names):
        return _contract(self.sum_op, self.prod_op, group, names)

    def reduce(self, f, plates):
        f = _reduce(self.prod_op, f, plates)
        if self.plate_to_scale:
            f = _scale(self.pow_op, f, plates, self.plate_to_scale)
        return f

    def unroll(self, f, remaining, leaf, graph, pending):
        return _unroll_real_plate(f, remaining, leaf, graph, pending)


def recorded_program(sum_op, prod_op, factors, eliminate, plates):
    """The ``ArrayProgram`` of ``partial_sum_product``'s schedule for Tensor factors of this
    structure (``pedantic=False``, no ``plate_to_scale``), or None when there is none. A
    caller that keeps it runs it with ``ArrayProgram.run``, which checks the fast path's
    guard each time.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> recorded_program(ops.add, ops.mul, [f], frozenset("ij"), frozenset("i"))
        ArrayProgram(2 steps, 1 results)
    """
    structure = structure_of(sum_op, prod_op, factors)
    if structure is None:
        return None
    schedule = plan_elimination(sum_op, prod_op, structure, _names(eliminate, factors),
                                _names(plates, factors, "plates"),
                                False)  # the key partial_sum_product uses: one cache entry
    return None if schedule is None else schedule.program


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
