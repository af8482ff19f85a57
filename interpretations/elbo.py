"""``Elbo(guide, approx_vars)``: replace a marginal likelihood by its evidence lower bound.

Within ``with Elbo(guide, approx_vars):``, a ``logaddexp`` reduction of a model over exactly
``approx_vars`` becomes ``Integrate(guide, model - guide, approx_vars)``
(``funsor_core.algorithms.variational.elbo``), as funsor's ``Elbo`` does.
The bound is evaluated by the
interpretation the ``Elbo`` was entered in: exactly under ``exact``, as a Monte Carlo
estimate under ``MonteCarlo`` (``with MonteCarlo(particle=...), Elbo(q, V):``). Reductions
over none of ``approx_vars`` are left to that interpretation.

Example:
    >>> from interpretations.elbo import Elbo
    >>> p = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> q = p - p.log_normalizer  # the exact posterior: the bound is tight
    >>> with Elbo(q, {"x"}):
    ...     bound = p.reduce(ops.logaddexp, "x")
    >>> bool(np.isclose(bound.data, p.log_normalizer.data))
    True
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.variational.elbo import elbo
from funsor_core.engine.interpreter import ENTERED, Interpretation
from funsor_core.terms.base import Funsor, Reduce, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["Elbo"]

_PARTIAL = ("Elbo({approx}): a reduction over {reduced} sums some but not all of the guide's "
            "variables; reduce over exactly {approx} inside the Elbo block (and over the "
            "others outside it)")


_MISSING = ("Elbo(guide, approx_vars): the guide has no input {missing}, whose inputs are "
            "{inputs}; the guide is a normalized log density over every approximated "
            "variable: add a factor for {missing} to it, or leave them out of approx_vars")


class Elbo(Interpretation):
    """Evidence lower bounds in place of ``logaddexp`` reductions (see the module docstring).

    Args:
        guide: a normalized log density over ``approx_vars`` (the approximate posterior).
        approx_vars: the names (or Variables) it approximates.

    Example:
        >>> q = fc.Tensor(np.log(np.array([0.5, 0.5])), {"i": fc.Bint[2]})
        >>> sorted(Elbo(q, {fc.Variable("i", fc.Bint[2])}).approx_vars)
        ['i']
    """

    stateful = True

    def __init__(self, guide: Funsor, approx_vars) -> None:
        super().__init__("elbo", fallback=ENTERED)
        if isinstance(approx_vars, (str, Variable)):
            approx_vars = (approx_vars,)
        if not isinstance(guide, Funsor):
            raise TypeError(f"Elbo(guide, approx_vars): the guide must be a funsor (a log "
                            f"density), got {type(guide).__name__}")
        self.guide = guide
        self.approx_vars = frozenset(v.name if isinstance(v, Variable) else v
                                     for v in approx_vars)
        missing = sorted(self.approx_vars - guide.inputs.keys())
        if missing:
            raise ValueError(_MISSING.format(missing=missing, inputs=dict(guide.inputs)))


# logaddexp_V model = E_guide[model - guide] + KL(guide || posterior) >= the bound.
@Elbo.register(Contraction, object, object, frozenset, tuple)
def elbo_contraction(state, red_op, bin_op, reduced_vars, terms):
    if red_op is not ops.logaddexp or bin_op not in (ops.add, None):
        return None
    return _bound(state, reduced_vars, terms)


@Elbo.register(Reduce, object, Funsor, frozenset)
def elbo_reduce(state, op, arg, reduced_vars):
    if op is not ops.logaddexp:
        return None
    return _bound(state, reduced_vars, (arg,))


def _bound(state, reduced_vars, terms):
    if not reduced_vars & state.approx_vars:
        return None
    if reduced_vars != state.approx_vars:
        raise NotImplementedError(_PARTIAL.format(approx=sorted(state.approx_vars),
                                                  reduced=sorted(reduced_vars)))
    model = terms[0]
    for t in terms[1:]:
        model = model + t
    # Evaluate the bound below this interpretation: the integral's own reductions over
    # approx_vars (a marginal, a normalizer) must not be turned into bounds again.
    with state.rest():
        return elbo(model, state.guide, state.approx_vars)
