"""The Delta atom: a point mass ``Delta(name, point, log_density=0)``.

As a log density over the new input ``name`` it is ``log_density`` where ``name == point`` and
``-inf`` elsewhere. Several independent point masses share one atom via funsor's ``terms``
form ``Delta(((name, (point, log_density)), ...))``. Rules: ``interpretations/exact/delta.py``.

Where we differ from funsor 0.4.8: reducing a Delta with ``logaddexp`` over its names gives
its ``log_density`` (the mass of the point), where funsor drops it and gives 0.

Example:
    >>> d = fc.Delta("x", fc.Number(1.5), 0.25)
    >>> d.inputs, d(x=1.5).data
    ({'x': Real}, 0.25)
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.analysis.affine import extract_affine_flat
from funsor_core.atoms.tensor import Tensor, align_tensors, backend_of
from funsor_core.domains import Real
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import (
    DomainError,
    Funsor,
    Number,
    Unary,
    Variable,
    merge_inputs,
    to_funsor,
)

__all__ = ["Delta", "TRACED_COEFFICIENT", "change_delta_variable", "delta_log_indicator",
           "independent_delta", "reweight_delta",
           "invert_affine", "plate_log_density", "reduce_delta", "reduce_delta_plates",
           "subs_delta"]

TRACED_COEFFICIENT = (
    "cannot substitute {name}=<affine in {y}> into a Delta under jax.jit: the coefficient of "
    "{y} is a traced array, so whether it is invertible (and hence whether the point mass moves "
    "to {y} with a Jacobian, or the substitution stays lazy) cannot be decided while tracing. "
    "Pass the coefficient as a concrete (non-traced) array or a Python number, e.g. "
    "Delta('x', p)(x=2.0 * y + b), or substitute a constant for {y} first."
)


_BAD_TERMS = ("Delta(terms) takes a tuple of (name, (point, log_density)) pairs, e.g. "
              "Delta((('x', (point, 0.0)),)), or Delta('x', point, log_density); "
              "got {terms!r:.120}")


class Delta(Funsor):
    """Point masses: ``Delta(name, point, log_density=0)`` or ``Delta(((name, (point,
    log_density)), ...))``.

    Args:
        name: the new input, whose domain is ``point.output``.
        point: a funsor (arrays and numbers are converted with ``to_funsor``).
        log_density: a real scalar funsor (or number), the log mass at the point.

    Example:
        >>> p = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
        >>> fc.Delta("x", p).inputs
        {'x': Real, 'i': Bint[2]}
    """

    __slots__ = ("terms", "fresh")
    fields = ("terms",)
    _atom = True
    sort_rank = 10

    @classmethod
    def _prepare(cls, name, point=None, log_density=0.0):
        if isinstance(name, str):
            if point is None:
                raise TypeError(f"Delta('{name}', point) needs a point")
            terms = ((name, (point, log_density)),)
        else:
            if point is not None:
                raise TypeError(_BAD_TERMS.format(terms=name))
            terms = tuple(name)
        result = []
        names = set()
        for item in terms:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(_BAD_TERMS.format(terms=terms))
            name, value = item
            if isinstance(value, tuple):
                if len(value) != 2:
                    raise TypeError(_BAD_TERMS.format(terms=terms))
                point, log_density = value
            else:
                point, log_density = value, 0.0
            if not isinstance(name, str):
                raise TypeError(f"a Delta's name must be a str, got {name!r}")
            if name in names:
                raise DomainError(f"Delta names '{name}' twice")
            names.add(name)
            point = to_funsor(point)
            log_density = to_funsor(log_density)
            if log_density.output.dtype != "real" or log_density.output.shape:
                raise DomainError(f"the log_density of Delta '{name}' must be a real scalar, "
                                  f"got output {log_density.output}")
            if name in point.inputs or name in log_density.inputs:
                raise DomainError(f"the point of Delta '{name}' cannot depend on '{name}'")
            result.append((name, (point, log_density)))
        if not result:
            raise ValueError("Delta needs at least one (name, (point, log_density))")
        check_backends("build a Delta", [x for _, pair in result for x in pair],
                       [f"the {w} of '{n}'" for n, _ in result for w in ("point",
                                                                         "log_density")])
        return (tuple(result),)

    def _setup(self):
        terms = self.terms
        self.fresh = frozenset(name for name, _ in terms)
        inputs: dict = {name: point.output for name, (point, _) in terms}
        for _, (point, log_density) in terms:
            inputs = merge_inputs(inputs, point.inputs, "Delta")
            inputs = merge_inputs(inputs, log_density.inputs, "Delta")
        self.inputs = inputs
        self.output = Real


# ---------------------------------------------------------------------------------------------
# The math behind the Delta rules (interpretations/exact/delta.py): pure functions of terms.
def delta_log_indicator(value: Funsor, point: Funsor, log_density: Funsor) -> Funsor | None:
    """``log_density`` where ``value == point`` (all output dims equal), ``-inf`` elsewhere;
    None unless all three are Tensors or Numbers.

    Example:
        >>> p = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
        >>> delta_log_indicator(fc.Number(1.0), p, fc.Number(0.5)).data
        array([-inf,  0.5])
    """
    if not all(isinstance(x, (Tensor, Number)) for x in (value, point, log_density)):
        return None
    if all(isinstance(x, Number) for x in (value, point, log_density)):
        return Number(log_density.data if value.data == point.data else -math.inf)
    inputs, (v, p, ld) = align_tensors(value, point, log_density)
    proto = backend_of(value, point, log_density)
    v, p, ld = ops.new_array(proto, v), ops.new_array(proto, p), ops.new_array(proto, ld)
    equal = v == p
    nd = len(point.shape)
    if nd:
        equal = ops.all(equal, axis=tuple(range(-nd, 0)))
    if not ops.is_floating(ld):  # an integer log density is real: -inf needs a float
        ld = ops.astype(ld, "real")
    ld = ld + ops.new_zeros(proto, tuple(equal.shape))
    data = ops.where(equal, ld, ops.full_like(ld, -math.inf))
    shape = tuple(d.size for d in inputs.values())
    data = ops.expand(data, shape) if tuple(data.shape) != shape else data
    return Tensor.make(data, inputs, "real")


def subs_delta(delta: Delta, subs: tuple) -> Funsor | None:
    """``delta(**subs)``: a Variable renames, a constant gives the log indicator, an affine
    value of one new real input changes variables (``change_delta_variable``); the points'
    and log densities' own inputs are substituted too. None when a value is of another kind.

    Example:
        >>> d = fc.Delta("x", fc.Number(1.0), 0.5)
        >>> subs_delta(d, (("x", fc.Variable("y", fc.Real)),)).inputs
        {'y': Real}
    """
    values = dict(subs)
    terms, logs = [], []
    for name, (point, log_density) in delta.terms:
        point = point(**values)
        log_density = log_density(**values)
        value = values.get(name)
        if value is None:
            terms.append((name, (point, log_density)))
        elif isinstance(value, Variable):
            terms.append((value.name, (point, log_density)))
        elif isinstance(value, (Tensor, Number)):
            logs.append(delta_log_indicator(value, point, log_density))
            if logs[-1] is None:
                return None
        else:
            avoid = set(delta.inputs).union(*(v.inputs for k, v in subs if k != name))
            terms.append(change_delta_variable(name, point, log_density, value, avoid))
            if terms[-1] is None:
                return None
    result = Delta(tuple(terms)) if terms else None
    for lp in logs:
        result = lp if result is None else result + lp
    return result


def change_delta_variable(name, point, log_density, value, avoid) -> tuple | None:
    """``(y, (point', log_density'))`` for ``Delta(name, point, log_density)(name=value)`` with
    ``value = y @ A + b`` affine in one new real ``y`` of ``x``'s domain:
    ``dirac(y @ A + b - p) = dirac(y - (p - b) @ A^-1) / |det A|``.

    None (decline) when ``value`` is not structurally affine in exactly one such ``y``, ``y``
    is used elsewhere (``avoid``), ``A`` is singular, or ``point`` is lazy.

    Raises:
        ValueError: ``TRACED_COEFFICIENT`` when ``A`` is traced (under ``jax.jit``). Eagerly a
            singular ``A`` declines and an invertible one moves the mass (with a Jacobian),
            and later substituting ``y`` gives different numbers in the two cases; a traced
            ``A`` cannot tell them apart, so neither guess is safe.

    Example:
        >>> y = fc.Variable("y", fc.Real)
        >>> name, (p, ld) = change_delta_variable("x", fc.Number(5.0), fc.Number(0.0),
        ...                                       2.0 * y + 1.0, set())
        >>> name, float(p.data), bool(np.isclose(ld.data, -np.log(2.0)))
        ('y', 2.0, True)
    """
    if type(value) is Unary and value.op in (ops.exp, ops.log) and type(value.arg) is Variable:
        return _change_by_exp_or_log(point, log_density, value, avoid)
    found = extract_affine_flat(value, host_if_constant=True)
    if found is None or len(found[1]) != 1:
        return None
    const, coeffs = found
    ((y, coeff),) = coeffs.items()
    if y in avoid or value.inputs[y] is not point.output:
        return None
    if _host(coeff.data) is None:
        raise ValueError(TRACED_COEFFICIENT.format(name=name, y=y))
    solved = invert_affine(point, const, coeff)
    if solved is None:
        return None
    new_point, log_abs_det = solved
    return y, (new_point, log_density - log_abs_det)


def _change_by_exp_or_log(point, log_density, value, avoid) -> tuple | None:
    # dirac(g(y) - p) = dirac(y - g^-1(p)) / |g'(g^-1(p))|, elementwise over the event dims:
    # g = exp: y = log p and |g'| = p, so the log density gains -sum(log p); a p <= 0 is not
    # in the range of exp, so there is no mass (-inf). g = log: y = exp(p), |g'| = exp(-p),
    # so it gains +sum(p).
    y = value.arg.name
    if y in avoid or value.arg.output is not point.output or not isinstance(point, (Tensor,
                                                                                     Number)):
        return None
    if value.op is ops.log:
        return y, (point.exp(), log_density + (point.sum() if point.output.shape else point))
    data = point.data
    if isinstance(point, Number):  # a scalar
        if data <= 0:
            return y, (Number(0.0), log_density + Number(-math.inf))
        return y, (point.log(), log_density - point.log())
    positive = ops.gt(data, 0)
    safe = ops.where(positive, data, ops.new_full(data, (), 1.0))
    logp = Tensor.make(ops.log(safe), point.inputs, point.dtype)
    out = len(point.output.shape)
    in_range = Tensor.make(ops.all(positive, tuple(range(-out, 0))) if out else positive,
                           point.inputs, 2)
    jac = logp.sum() if out else logp
    shift = Tensor.make(ops.where(in_range.data, ops.neg(jac.data),
                                  ops.new_full(jac.data, (), -math.inf)), point.inputs)
    return y, (logp, log_density + shift)


def invert_affine(point: Funsor, const: Tensor, coeff: Tensor) -> tuple[Tensor, Tensor] | None:
    """Solve ``y.flat @ coeff + const.flat == point.flat`` for ``y``, and give ``log|det coeff|``.

    This is the change of variables behind ``Delta("x", p, ld)(x=y @ A + b)``: the point mass
    moves to ``y = (p - b) @ A^-1`` and its log density drops by ``log|det A|``. The matrix
    must be concrete: its invertibility is checked on the host, and a traced matrix (under
    ``jax.jit``) gives None rather than a guess.

    Args:
        point: a Tensor or Number with ``n`` output elements.
        const, coeff: ``extract_affine_flat``'s constant (same output as ``point``) and coefficient
            (output ``Reals[n, n]``) of one real variable.

    Returns:
        ``(y, log_abs_det)``: Tensors over the merged Bint inputs, ``y`` with ``point``'s output;
        or ``None`` when ``point`` is lazy or ``coeff`` is singular or not concrete.

    Example:
        >>> a = fc.Tensor(np.array([[2.0, 0.0], [0.0, 4.0]]))
        >>> y, log_abs_det = invert_affine(fc.Tensor(np.array([5.0, 9.0])),
        ...                                fc.Tensor(np.ones(2)), a)
        >>> y.data, bool(np.isclose(log_abs_det.data, np.log(8.0)))
        (array([2., 2.]), True)
    """
    if not isinstance(point, (Tensor, Number)):
        return None
    host = _host(coeff.data)
    if host is None or not _invertible(host):
        return None
    # Everything in the point's backend (the coefficients may come from a numpy probe).
    proto = point.data if isinstance(point, Tensor) else backend_of(const, coeff)
    const = Tensor.make(ops.new_array(proto, const.data), const.inputs)
    coeff = Tensor.make(ops.new_array(proto, coeff.data), coeff.inputs)
    inputs, datas = align_tensors(point, const, coeff)
    nb, n = len(inputs), coeff.shape[-1]
    p, b = (_flatten(ops.new_array(proto, x), nb, n) for x in datas[:2])
    y = ops.matmul((p - b)[..., None, :], ops.inv(ops.new_array(proto, datas[2])))[..., 0, :]
    full = tuple(d.size for d in inputs.values())
    if tuple(y.shape) != full + (n,):
        y = ops.expand(y, full + (n,))
    y = ops.reshape(y, full + point.shape)
    log_abs_det = ops.new_array(proto, ops.logdet(coeff.data))  # numpy gives a scalar for 2-d
    return Tensor.make(y, inputs), Tensor.make(log_abs_det, coeff.inputs)


def _flatten(data, nb: int, n: int):
    # Aligned data has the nb batch dims first; a Number's data has none (broadcast them).
    lead = tuple(data.shape[:nb]) if len(data.shape) >= nb else (1,) * nb
    return ops.reshape(data, lead + (n,))


def _host(data):
    """``data`` as a numpy array, or None when it is traced (jax.jit) and cannot be read."""
    try:
        return np.asarray(ops.to_numpy(data))
    except Exception:  # a tracer: its value exists only when the compiled function runs
        return None


def _invertible(host) -> bool:
    """Whether every matrix in ``host`` is numerically invertible (singular values > n eps)."""
    s = np.linalg.svd(host, compute_uv=False)
    return bool((s[..., -1] > s[..., 0] * s.shape[-1] * np.finfo(s.dtype).eps).all())


# ---------------------------------------------------------------------------------------------
# Reductions.
def reduce_delta(delta: Delta, reduced_vars: frozenset) -> Funsor:
    """``logaddexp`` of ``delta`` over some of its names: their log densities (other names
    stay). The points' Bint inputs stay too, with a zero over them: the mass is 1 for every
    batch value, as in funsor.

    Example:
        >>> float(reduce_delta(fc.Delta("x", fc.Number(1.0), 0.5), frozenset("x")).data)
        0.5
    """
    terms = tuple(t for t in delta.terms if t[0] not in reduced_vars)
    result = Delta(terms) if terms else None
    for name, (_, log_density) in delta.terms:
        if name in reduced_vars:
            result = log_density if result is None else result + log_density
    batch = {k: d for k, d in delta.inputs.items() if d.dtype != "real"
             and k not in reduced_vars and k not in result.inputs}
    if batch:
        proto = backend_of(*(point for _, (point, _) in delta.terms))
        zeros = ops.new_zeros(proto, tuple(d.size for d in batch.values()))
        result = result + Tensor.make(zeros, batch)
    return result


def reduce_delta_plates(delta: Delta, plates: frozenset) -> Funsor | None:
    """``add`` of ``delta`` over Bint plates of its points and log densities:
    ``sum_i [ld_i + log 1(x == p_i)] = sum_i ld_i + log 1(all p_i == p_0) + log 1(x == p_0)``.
    None when a point is lazy.

    Example:
        >>> d = fc.Delta("x", fc.Number(1.0), fc.Tensor(np.array([0.5, 0.25]), {"i": fc.Bint[2]}))
        >>> float(reduce_delta_plates(d, frozenset("i"))(x=1.0).data)
        0.75
    """
    terms = []
    for name, (point, log_density) in delta.terms:
        log_density = plate_log_density(log_density, plates, delta.inputs)
        own = plates & point.inputs.keys()
        if own:
            first = point(**{v: 0 for v in own})
            all_equal = delta_log_indicator(point, first, Number(0.0))
            if all_equal is None:
                return None
            point, log_density = first, log_density + all_equal.reduce(ops.add, own)
        terms.append((name, (point, log_density)))
    return Delta(tuple(terms))


def plate_log_density(log_density: Funsor, plates: frozenset, inputs: dict) -> Funsor:
    """``sum`` of ``log_density`` over ``plates``; a plate it lacks multiplies by its size
    (``inputs`` gives the sizes).

    Example:
        >>> float(plate_log_density(fc.Number(0.5), frozenset("i"), {"i": fc.Bint[3]}).data)
        1.5
    """
    own = plates & log_density.inputs.keys()
    result = log_density.reduce(ops.add, own) if own else log_density
    copies = math.prod(inputs[v].size for v in plates - own)
    return result * float(copies) if copies != 1 else result


# ---------------------------------------------------------------------------------------------
# A weight joins a point mass; a plate of point masses is one point mass of stacked points.
def reweight_delta(delta: Delta, weight: Funsor, names) -> Delta:
    """``delta + weight`` as one Delta, for a ``weight`` free of the Delta's names: the weight
    joins the log density of the first of ``names`` (the sum is the same function).

    Example:
        >>> w = fc.Tensor(np.array([0.5, 0.25]), {"i": fc.Bint[2]})
        >>> d = reweight_delta(fc.Delta("x", fc.Number(1.0)), w, {"x"})
        >>> d(x=1.0).data
        array([0.5 , 0.25])
    """
    target = next(n for n, _ in delta.terms if n in names)
    return Delta(tuple((n, (p, ld + weight if n == target else ld))
                       for n, (p, ld) in delta.terms))


def independent_delta(delta: Delta, reals_var: str, bint_var: str,
                      diag_var: str) -> Delta | None:
    """``Independent(Delta(diag_var, p_i, ld_i), reals_var, bint_var, diag_var)``: the point
    mass at the stacked points ``P[i] = p_i`` with log density ``sum_i ld_i`` (a product over
    the plate of point masses is the point mass of their product space). None unless the
    Delta's only name is ``diag_var`` and its point is a Tensor or a Number.

    Example:
        >>> p = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
        >>> d = independent_delta(fc.Delta("x_i", p, 0.5), "x", "i", "x_i")
        >>> d.inputs, d.terms[0][1][0].data, float(d.terms[0][1][1].data)
        ({'x': Reals[2]}, array([1., 2.]), 1.0)
    """
    if len(delta.terms) != 1 or delta.terms[0][0] != diag_var:
        return None
    _, (point, log_density) = delta.terms[0]
    size = delta.inputs[bint_var].size
    if isinstance(point, Number) and point.dtype == "real":
        point = Tensor.make(ops.new_full(backend_of(log_density), (), float(point.data)), {})
    if not isinstance(point, Tensor):
        return None
    if bint_var in point.inputs:
        order = {k: d for k, d in point.inputs.items() if k != bint_var}
        data = ops.permute(point.data, tuple(list(point.inputs).index(k) for k in order)
                           + (list(point.inputs).index(bint_var),)
                           + tuple(range(len(point.inputs), len(point.data.shape))))
        stacked = Tensor.make(data, order, point.dtype)
    else:  # the same point on every row of the plate
        nb = len(point.inputs)
        data = ops.reshape(point.data, tuple(point.data.shape[:nb]) + (1,)
                           + tuple(point.data.shape[nb:]))
        data = ops.expand(data, tuple(point.data.shape[:nb]) + (size,)
                          + tuple(point.data.shape[nb:]))
        stacked = Tensor.make(data, dict(point.inputs), point.dtype)
    total = plate_log_density(log_density, frozenset({bint_var}), delta.inputs)
    return Delta(reals_var, stacked, total)
