"""Exact rules for Integrate against Tensor, Number and Delta measures.

Gaussian measures are handled by the Gaussian rules; nothing here matches them.
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.delta import Delta, reweight_delta
from funsor_core.atoms.tensor import Tensor, backend_of, null_set_product
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate
from interpretations.exact import exact


# Integrate(m, f, V) over a discrete measure = sum_V exp(m) * f. The log measure is shifted
# by its max over V before exp (and the shift multiplied back), so that large log weights
# neither overflow nor underflow.
@exact.register(Integrate, Tensor, Funsor, frozenset)
def exact_integrate_tensor(log_measure, integrand, reduced_vars):
    if not isinstance(integrand, (Tensor, Number)):
        integrand = _ground_summed(log_measure, integrand, reduced_vars)
    if not isinstance(integrand, (Tensor, Number)):
        if reduced_vars & integrand.inputs.keys():
            return None
        # An integrand free of the summed names (a function of other variables) comes out.
        return log_measure.reduce(ops.logaddexp, reduced_vars).exp() * integrand
    shift = log_measure.reduce(ops.max, reduced_vars)
    if isinstance(shift, Tensor):
        data = shift.data
        shift = Tensor.make(ops.where(ops.isfinite(data), data, ops.full_like(data, 0.0)),
                            shift.inputs)
    elif not ops.isfinite(shift.data):
        shift = Number(0.0)
    weights = (log_measure - shift).exp()
    # 0 where the measure is 0 (0 log 0 = 0 in an ELBO), not 0 * inf = NaN.
    product = null_set_product(weights, integrand)
    result = product.reduce(ops.add, reduced_vars & product.inputs.keys())
    return result * shift.exp()


# Integrate(c, f, V) for a constant log measure c = exp(c) * sum_V f: nothing to integrate
# (V empty, a site with no enumerated inputs in an ELBO), or a sum of a discrete integrand.
@exact.register(Integrate, Number, Funsor, frozenset)
def exact_integrate_number(log_measure, integrand, reduced_vars):
    if not reduced_vars:
        return log_measure.exp() * integrand
    if not isinstance(integrand, (Tensor, Number)):
        return None
    return log_measure.exp() * integrand.reduce(ops.add, reduced_vars & integrand.inputs.keys())


def _ground_summed(log_measure: Tensor, integrand: Funsor, reduced_vars: frozenset) -> Funsor:
    """``integrand`` with an arange substituted for each Bint name it reads, so that a lazy
    function of finite variables (``Variable("b", Bint[2])``, ``a + b * t``) becomes a Tensor
    the sum can take; unchanged where a summed name is real (nothing to enumerate)."""
    names = reduced_vars & integrand.inputs.keys()
    if not names or any(integrand.inputs[n].dtype == "real" for n in names):
        return integrand
    return log_measure.materialize(integrand)


# Integrate(Delta(x=p, log_density=w), f, {x}) = exp(w) * f(x=p).
@exact.register(Integrate, Delta, Funsor, frozenset)
def exact_integrate_delta(log_measure, integrand, reduced_vars):
    names = reduced_vars & log_measure.fresh
    if not names:
        return None
    subs = {n: p for n, (p, _) in log_measure.terms if n in names and n in integrand.inputs}
    integrand = integrand(**subs) if subs else integrand
    rest = tuple(t for t in log_measure.terms if t[0] not in names)
    remaining = reduced_vars - names
    densities = [ld for n, (_, ld) in log_measure.terms if n in names]
    if not rest and not remaining and all(_is_zero(ld) for ld in densities):
        return integrand  # unit point masses (a Monte Carlo sample's): exp(0) * f is f
    log_density = Number(0.0)
    for ld in densities:
        log_density = log_density + ld
    measure = log_density + Delta(rest) if rest else log_density
    if not remaining:
        return measure.exp() * integrand
    # A batch input of the points (x_i = p_i) that the log density lacks is still summed
    # over: sum_i exp(w) f(p_i, i). Keep it in the measure as a zero log weight, so that the
    # sum counts every i (an input that vanished from both sides would be dropped instead).
    lost = {n: log_measure.inputs[n] for n in sorted(remaining) if n not in measure.inputs}
    if lost:
        proto = backend_of(*(p for _, (p, _) in log_measure.terms))
        zeros = ops.new_zeros(proto, tuple(d.size for d in lost.values()))
        measure = measure + Tensor(zeros, lost)
    return Integrate(measure, integrand, remaining)


def _is_zero(term) -> bool:
    # Decided by structure: a Number holds a Python scalar, never a traced value.
    return isinstance(term, Number) and term.data == 0


# Integrate(Delta(x=p) + w, f, {x}) = exp(w) * Integrate(Delta(x=p), f, {x}) for a weight w
# (Tensors and Numbers) free of x: the form a Monte Carlo sample takes (funsor_core.sampling.draw).
# When Bint inputs are integrated too (a weighted empirical distribution, {x, i}), the weight
# joins the Delta's log density, and the Delta rule sums over them.
# (The integrand is typed `object` so that this pattern differs from the Gaussian-sum rule's.)
@exact.register(Integrate, Contraction, object, frozenset)
def exact_integrate_delta_sum(log_measure, integrand, reduced_vars):
    if not (log_measure.red_op is None and log_measure.bin_op is ops.add):
        return None
    deltas = [t for t in log_measure.terms if isinstance(t, Delta)]
    dense = [t for t in log_measure.terms if isinstance(t, (Tensor, Number))]
    if len(deltas) != 1 or len(deltas) + len(dense) != len(log_measure.terms):
        return None
    (delta,) = deltas
    names = reduced_vars & delta.fresh
    if not names or any(delta.fresh & t.inputs.keys() for t in dense):
        return None
    weight = dense[0]
    for t in dense[1:]:
        weight = weight + t
    if reduced_vars <= delta.fresh:
        return weight.exp() * Integrate(delta, integrand, reduced_vars)
    return Integrate(reweight_delta(delta, weight, names), integrand, reduced_vars)
