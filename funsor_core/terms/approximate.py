"""``Approximate(op, model, guide, approx_vars)``: a request to approximate ``model`` in the
variables ``approx_vars``, guided by ``guide`` (funsor's ``funsor.terms.Approximate``).

The term means ``model``: under ``exact`` it evaluates to ``model`` itself. An interpretation
that approximates replaces it with something that agrees with ``model`` once ``op`` reduces
the approximated variables: a point mass at the guide's mode (``argmax_approximate``), at its
mean (``mean_approximate``), a Gaussian with the model's curvature there
(``laplace_approximate``), or a sample from the guide (Monte Carlo, posterior sampling).

The backward pass of the adjoint (``funsor_core.algorithms.adjoint``) wraps each message to
an eliminated variable in an ``Approximate``, with the local posterior as the guide: that is
how the same pass gives marginals (exact), a MAP assignment (argmax) or posterior samples.

Example:
    >>> model = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    >>> Approximate(ops.logaddexp, model, model, "i") is model  # exact: the model itself
    True
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.terms.base import Funsor, Variable, merge_inputs, to_funsor

__all__ = ["Approximate"]


def _as_variables(approx_vars, inputs: dict) -> frozenset:
    # Names or Variables (one, or a collection), as a frozenset of Variables of ``inputs``.
    if approx_vars is None:
        return frozenset(Variable(k, d) for k, d in inputs.items())
    if isinstance(approx_vars, (str, Funsor)):
        approx_vars = (approx_vars,)
    out = set()
    for v in approx_vars:
        if isinstance(v, str):
            if v not in inputs:
                raise ValueError(f"cannot approximate in '{v}': it is not an input of the model "
                                 f"or the guide, whose inputs are {dict(inputs)}")
            v = Variable(v, inputs[v])
        elif not isinstance(v, Variable):
            raise TypeError(f"approx_vars are names or Variables, got {v!r}")
        elif v.name in inputs and inputs[v.name] is not v.output:
            raise ValueError(f"cannot approximate in '{v.name}' as {v.output}: it is "
                             f"{inputs[v.name]} in the model or guide")
        out.add(v)
    return frozenset(out)


class Approximate(Funsor):
    """``model``, to be approximated in ``approx_vars`` with the help of ``guide``.

    Args:
        op: the associative op under which the approximation must agree with ``model``
            (``ops.logaddexp`` for densities, ``ops.max`` for MAP, ``ops.sample``).
        model: the exact funsor.
        guide: a funsor of the same output, e.g. a posterior over ``approx_vars``.
        approx_vars: names or Variables (one or a set); variables that are inputs of
            neither ``model`` nor ``guide`` are dropped (as after a substitution).

    Example:
        >>> g = fc.Tensor(np.array([0.0, 2.0]), {"i": fc.Bint[2]})
        >>> a = fc.Approximate(ops.max, fc.Number(0.0), g, "i")
        >>> a.inputs  # exact evaluates it to the model, here a constant
        {}
    """

    fields = ("op", "model", "guide", "approx_vars")

    @classmethod
    def _prepare(cls, op, model, guide, approx_vars=None):
        if not isinstance(op, ops.AssociativeOp):
            raise TypeError(f"Approximate needs an associative op (ops.logaddexp, ops.max, "
                            f"ops.sample, ...), got {op!r}")
        model, guide = to_funsor(model), to_funsor(guide)
        if model.output is not guide.output:
            raise ValueError(f"Approximate: the model has output {model.output} but the guide "
                             f"has output {guide.output}; they must agree")
        inputs = merge_inputs(model.inputs, guide.inputs, "approximate")
        approx_vars = _as_variables(approx_vars, inputs)
        approx_vars = frozenset(v for v in approx_vars if v.name in inputs)
        return op, model, guide, approx_vars

    def _setup(self):
        self.inputs = merge_inputs(self.model.inputs, self.guide.inputs, "approximate")
        self.output = self.model.output


def _approximate_method(self, op, guide, approx_vars=None):
    """``Approximate(op, self, guide, approx_vars)`` (all inputs of ``guide`` when None), as
    funsor's ``Funsor.approximate``.

    Example:
        >>> x = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> x.approximate(ops.logaddexp, x, "i") is x
        True
    """
    if approx_vars is None:
        approx_vars = frozenset(Variable(k, d) for k, d in guide.inputs.items())
    return Approximate(op, self, guide, approx_vars)


Funsor.approximate = _approximate_method
