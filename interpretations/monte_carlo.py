"""``MonteCarlo(rng_key=None, **sample_inputs)``: Monte Carlo estimates by sampling.

This module holds the interpretation kind and its rule for ``Approximate`` terms, the part
that the adjoint's backward pass uses (funsor's ``funsor.montecarlo``): an approximation of
``model`` guided by ``guide`` over ``V`` becomes ``model + Delta(V = x) + log Z - log g(x)``
with ``x`` drawn from the guide ``g`` (of normalizer ``Z``), an unbiased estimate of
``model`` once ``V`` is integrated out. ``sample_inputs`` (``particle=Bint[100]``) draws
independent particles; ``rng_key`` (an int seed, a generator, a jax key) makes runs
reproducible. Terms other than ``Approximate`` fall through to the interpretation that was
active when it was entered.

Example:
    >>> from interpretations.monte_carlo import MonteCarlo
    >>> t = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    >>> with MonteCarlo(rng_key=0, particle=fc.Bint[4]):
    ...     q = fc.Approximate(ops.logaddexp, t, t, "i")
    >>> sorted(q.inputs)
    ['i', 'particle']
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.adjoint.kinds import approximating
from funsor_core.algorithms.adjoint.points import KeyStream, draw, extract_samples, names_of
from funsor_core.atoms.delta import Delta
from funsor_core.engine.interpreter import ENTERED, Interpretation
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Funsor, Number, Variable

__all__ = ["MonteCarlo", "extract_samples"]


@approximating
class MonteCarlo(Interpretation):
    """Monte Carlo estimates (see the module docstring), as funsor's ``MonteCarlo``.

    Example:
        >>> MonteCarlo(rng_key=0, particle=fc.Bint[10]).sample_inputs
        {'particle': Bint[10]}
    """

    stateful = True

    def __init__(self, *, rng_key=None, **sample_inputs) -> None:
        super().__init__("monte_carlo", fallback=ENTERED)
        self.rng_key = rng_key
        self.keys = KeyStream(rng_key)
        self.sample_inputs = dict(sample_inputs)

    @property
    def sample_vars(self) -> frozenset:
        """The sample inputs as Variables (the ``batch_vars`` of a backward pass)."""
        return frozenset(Variable(k, d) for k, d in self.sample_inputs.items())


# Approximate(logaddexp | sample, m, g, V) = m + Delta(V = x) + log Z_g - g(x), x ~ g.
@MonteCarlo.register(Approximate, (type(ops.logaddexp), type(ops.sample)), Funsor, Funsor,
                     frozenset)
def monte_carlo_approximate(state, op, model, guide, approx_vars):
    names = names_of(approx_vars) & guide.inputs.keys()
    if not names:
        return model
    points, log_weight = draw(guide, names, state.sample_inputs, state.keys)
    if not points:
        return model
    delta = Delta(tuple((k, (v, Number(0.0))) for k, v in points.items()))
    return model + delta + log_weight
