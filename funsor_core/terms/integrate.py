"""``Integrate(log_measure, integrand, reduced_vars)``: the integral of ``integrand`` against
the measure whose log density is ``log_measure``, over the names ``reduced_vars``.

For a discrete measure this is ``sum over reduced_vars of exp(log_measure) * integrand``; a
Delta measure evaluates the integrand at its point. Rules: ``interpretations/exact/
integrate.py``.

Example:
    >>> p = fc.Tensor(np.log(np.array([0.25, 0.75])), {"i": fc.Bint[2]})
    >>> f = fc.Tensor(np.array([4.0, 8.0]), {"i": fc.Bint[2]})
    >>> float(fc.Integrate(p, f, "i").data)
    7.0
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import DomainError, Funsor, merge_inputs, to_funsor
from funsor_core.terms.inputs import reduce_constant, split_reduced_vars

__all__ = ["Integrate"]


class Integrate(Funsor):
    """The integral of ``integrand`` against ``exp(log_measure)`` over ``reduced_vars``.

    Args:
        log_measure: a real scalar funsor, the log density of the measure.
        integrand: a funsor.
        reduced_vars: a name, a Variable, or a set of them, with ``Funsor.reduce``'s policy
            for the inputs of ``log_measure`` (a Variable must have its input's domain; a
            Bint Variable that neither the measure nor the integrand has repeats the measure
            over its values; a Bint input of the integrand alone is summed, each value
            counted once, as in funsor; a real one raises ValueError).

    Example:
        >>> d = fc.Delta("x", fc.Number(2.0))
        >>> fc.Integrate(d, fc.Variable("x", fc.Real) * 3, "x").data
        6.0
    """

    fields = ("log_measure", "integrand", "reduced_vars")
    binds = ("reduced_vars",)

    @classmethod
    def _prepare(cls, log_measure, integrand, reduced_vars):
        log_measure, integrand = check_backends(
            "integrate", (to_funsor(log_measure), to_funsor(integrand)),
            ("the measure", "the integrand"), deep=True)
        if log_measure.output.dtype != "real" or log_measure.shape:
            raise DomainError(f"Integrate needs a real scalar log_measure, got output "
                              f"{log_measure.output}")
        inputs = merge_inputs(log_measure.inputs, integrand.inputs, "integrate")
        names, absent = split_reduced_vars(reduced_vars, inputs, "the measure or integrand")
        only = names - log_measure.inputs.keys()
        if any(inputs[n].dtype == "real" for n in only):
            raise ValueError(f"cannot integrate over {sorted(only)}: real inputs of the "
                             "integrand but not of the measure, whose inputs are "
                             f"{dict(log_measure.inputs)}")
        if only:
            # A Bint name the measure lacks counts each value once, as in funsor:
            # sum_k exp(m) f(k) = exp(m) sum_k f(k).
            integrand = integrand.reduce(ops.add, only)
            names = names - only
        if absent:  # n copies of the measure: its log density plus log n
            log_measure = reduce_constant(log_measure, ops.logaddexp, absent)
        return log_measure, integrand, names

    def _setup(self):
        log_measure, integrand, reduced_vars = self._args
        inputs = merge_inputs(log_measure.inputs, integrand.inputs, "integrate")
        self.inputs = {k: d for k, d in inputs.items() if k not in reduced_vars}
        self.output = integrand.output
