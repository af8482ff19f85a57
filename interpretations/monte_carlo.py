"""``MonteCarlo(rng_key=None, **sample_inputs)``: estimate what has no closed form by sampling.

A stateful interpretation kind (alias ``MONTECARLO``; ``monte_carlo`` is a default instance
with no particle input and no seed). It falls back to the interpretation that was active when
it was entered, and rewrites (section 4.5 and appendix B.3 of "Functional Tensors for
Probabilistic Programming"):

- ``Integrate(m, f, V)`` against a Gaussian measure (possibly plus a Tensor): exact where the
  integral has a closed form (affine, quadratic and Gaussian integrands such as the
  ``log p - log q`` of a Gaussian ELBO); otherwise the real names of ``V`` are drawn from
  ``m`` by reparameterized sampling, ``m -> Delta(x) + log Z``, and the Delta is substituted
  into ``f`` (exactly: Bint names of ``V`` are then summed). ``f`` is split by linearity
  through sums and differences: its parts with a closed form are integrated exactly, together,
  and only the rest is sampled, with one draw (``p + lik - q``: the prior and entropy exact).
- ``Integrate(m, f, V)`` against any other measure that can be sampled (a Tensor over Bint
  names of ``V``, a distribution): ``V`` is drawn from ``m``; a discrete draw is weighted
  by the normalizer and a DiCE factor ``exp(log p - stop_gradient(log p))``, which is one in
  value, so that the derivatives of the estimate, of every order, are unbiased.
- ``logaddexp`` reductions over real names of a Gaussian and terms that ``exact`` cannot
  integrate (``log ∫ exp(g(x) + sigmoid(x)) dx``) draw those names from the Gaussian, as
  above; a reduction that ``exact`` evaluates stays exact (cheap sums, marginals).
- ``ops.sample`` reductions always sample (``exact`` computes them as ``logaddexp``).
- Deltas stay exact: integrating a point mass substitutes its point.

``sample_inputs`` (``particle=Bint[1000]``) adds independent draws along new Bint inputs:
the estimate is per particle, its mean over them the Monte Carlo average. Draws made in one
block share the particle inputs, so a name drawn given another drawn earlier is drawn
jointly with it. ``rng_key`` seeds the draws (``funsor_core.sampling.keys.KeyStream``): the same
seed gives the same numbers on each backend, eagerly and under ``jax.jit``, where a jax key
may be traced.

Example:
    >>> from interpretations import MonteCarlo
    >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> x = fc.Variable("x", fc.Real)
    >>> with MonteCarlo(rng_key=0, particle=fc.Bint[20000]):
    ...     estimate = fc.Integrate(g - g.log_normalizer, x.exp(), "x")  # E[e^x] = e^0.5
    >>> bool(abs(estimate.reduce(ops.mean, "particle").data - np.exp(0.5)) < 0.05)
    True
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.adjoint.kinds import approximating
from funsor_core.algorithms.adjoint.points import draw, names_of
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.algebra import dense_sum, is_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.expectation import expectable
from funsor_core.atoms.gaussian.expectation_arrays import check_mass
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Domain
from funsor_core.engine.backend import backend_module
from funsor_core.engine.interpreter import ENTERED, Interpretation
from funsor_core.sampling.draw import extract_samples, sample
from funsor_core.sampling.keys import KeyStream
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Binary, Funsor, Number, Reduce, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate

__all__ = ["MonteCarlo", "MONTECARLO", "monte_carlo", "extract_samples"]

_NOT_BINT = ("MonteCarlo(**sample_inputs): '{name}' is {domain!r}; sample inputs are new Bint "
             "inputs that index independent draws, e.g. MonteCarlo(particle=Bint[1000])")


@approximating
class MonteCarlo(Interpretation):
    """Monte Carlo estimates of integrals and reductions (see the module docstring).

    Args:
        rng_key: None (each backend's global random state), an int seed, a numpy or torch
            ``Generator``, or a jax PRNG key (possibly traced under ``jax.jit``).
        sample_inputs: new Bint inputs indexing independent draws (``particle=Bint[100]``).

    Example:
        >>> mc = MonteCarlo(rng_key=0, particle=fc.Bint[3])
        >>> x = fc.Variable("x", fc.Real)
        >>> q = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> with mc:  # E[x^2] has a closed form: exact, still one value per particle
        ...     second = fc.Integrate(q - q.log_normalizer, x * x, "x")
        >>> mc.sample_inputs, second.data.round(6).tolist()
        ({'particle': Bint[3]}, [1.0, 1.0, 1.0])
    """

    stateful = True

    def __init__(self, rng_key=None, **sample_inputs: Domain) -> None:
        super().__init__("monte_carlo", fallback=ENTERED)
        for name, domain in sample_inputs.items():
            if not isinstance(domain, Domain) or domain.dtype == "real" or domain.shape:
                raise TypeError(_NOT_BINT.format(name=name, domain=domain))
            if domain.size < 1:  # a mean over no draws would divide by zero
                raise ValueError(f"MonteCarlo(**sample_inputs): '{name}' is {domain!r}; a sample "
                                 "input needs at least one draw")
        self.rng_key = rng_key
        self.keys = KeyStream(rng_key)
        self.sample_inputs = dict(sample_inputs)

    @property
    def sample_vars(self) -> frozenset:
        """The sample inputs as Variables."""
        return frozenset(Variable(k, d) for k, d in self.sample_inputs.items())

    def draw(self, measure: Funsor, names: frozenset) -> Funsor:
        """A sample of the log density ``measure`` over ``names`` (``atoms.sampling.sample``)
        with this instance's sample inputs and its next key."""
        return sample(measure, names, self.sample_inputs, self.keys.next(measure))


MONTECARLO = monte_carlo = MonteCarlo()


def _terms(term: Funsor) -> tuple:
    """The summands of a sum (``Contraction(None, add, {}, terms)``), or the term itself."""
    if isinstance(term, Contraction) and term.red_op is None and term.bin_op is ops.add:
        return term.terms
    return (term,)


def _split_closed_form(names: frozenset, integrand: Funsor) -> tuple:
    """``integrand`` as ``closed + sampled``: the summands whose expectation over the reals
    ``names`` of a Gaussian has a closed form, and the others (each None when empty).

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> closed, sampled = _split_closed_form(frozenset("x"), x * x - x.sigmoid())
        >>> sorted(closed.inputs), type(sampled).__name__
        (['x'], 'Unary')
    """
    plus, minus = _signed_terms(integrand)
    groups = {True: ([], []), False: ([], [])}
    for side, parts in ((0, plus), (1, minus)):
        for part in parts:
            groups[expectable(names, part)][side].append(part)

    def rebuild(plus, minus):
        if not plus and not minus:
            return None
        total = dense_sum(plus) if plus else None
        for part in minus:
            total = -part if total is None else total - part
        return total

    return rebuild(*groups[True]), rebuild(*groups[False])


def _signed_terms(term: Funsor) -> tuple[list, list]:
    """The summands of ``term`` added and subtracted, through sums and differences (of real
    scalars: ``a - b`` is ``a + (-b)`` elementwise).

    Example:
        >>> x, y, z = (fc.Variable(n, fc.Real) for n in "xyz")
        >>> [len(side) for side in _signed_terms(x + y - z)]
        [2, 1]
    """
    if isinstance(term, Binary) and term.op is ops.sub:
        lp, lm = _signed_terms(term.lhs)
        rp, rm = _signed_terms(term.rhs)
        return lp + rm, lm + rp
    parts = _terms(term)
    if len(parts) == 1:
        return [term], []
    plus, minus = [], []
    for part in parts:
        tp, tm = _signed_terms(part)
        plus += tp
        minus += tm
    return plus, minus


def _real_names(term: Funsor, names) -> frozenset:
    return frozenset(n for n in names if n in term.inputs and term.inputs[n].dtype == "real")


# ---------------------------------------------------------------------------------------------
# Integrate(m, f, V): exact when it has a closed form and m is Gaussian; a point mass is exact;
# otherwise V is drawn from m and the sample integrated exactly.
@MonteCarlo.register(Integrate, Funsor, Funsor, frozenset)
def monte_carlo_integrate(mc, log_measure, integrand, reduced_vars):
    gaussian = isinstance(log_measure, Gaussian) or is_gaussian_sum(log_measure)  # (no Delta)
    if gaussian:
        result = mc.defer(Integrate, (log_measure, integrand, reduced_vars))
        if not isinstance(result, Integrate):
            return _with_sample_inputs(mc, result)  # a closed form (or a partial reduction)
        names = _real_names(log_measure, reduced_vars)
        if not names:
            return _with_sample_inputs(mc, result)
        closed, sampled = _split_closed_form(names, integrand)
        if closed is not None and sampled is not None:
            # Linearity: the parts with a closed form stay exact, integrated together (one
            # set of moments: the prior and entropy terms of an ELBO ``p - q``, a lower-
            # variance estimate), the others are sampled together (one draw).
            return (Integrate(log_measure, closed, reduced_vars)
                    + Integrate(log_measure, sampled, reduced_vars))
    elif any(isinstance(t, Delta) for t in _terms(log_measure)):
        # exact substitutes the points; what is left comes back here
        return _with_sample_inputs(mc, mc.defer(Integrate, (log_measure, integrand,
                                                            reduced_vars)))
    else:
        names = reduced_vars
        domains = {**integrand.inputs, **log_measure.inputs}
        if any(domains[v].dtype != "real" and domains[v].size == 0 for v in reduced_vars
               if v in domains):
            # an empty domain: nothing to draw, and the exact sum is 0 (no term)
            return _with_sample_inputs(mc, mc.defer(Integrate, (log_measure, integrand,
                                                                reduced_vars)))
    try:
        drawn = mc.draw(log_measure, names)
    except NotImplementedError:  # a measure sample() does not know: leave it to the chain
        return None
    if drawn is log_measure:
        return None
    if gaussian:  # a Gaussian's draw: its weight is its log mass (the point masses' is 0)
        weights = [t for t in _terms(drawn) if isinstance(t, Tensor)]
        if weights:
            check_mass(weights[0] if len(weights) == 1 else sum(weights[1:], weights[0]),
                       names)
    return Integrate(drawn, integrand, reduced_vars)


def _with_sample_inputs(mc, result: Funsor) -> Funsor:
    """``result`` broadcast over the sample inputs it lacks: a closed form is the same for
    every particle, and a program that asked for ``particle`` reduces over it afterwards
    (funsor's ``Integrate(q, p - q, "z").reduce(ops.mean, "particle")``). The arrays are
    expanded (a view where the backend has one), not copied.

    Example:
        >>> mc = MonteCarlo(particle=fc.Bint[3])
        >>> _with_sample_inputs(mc, fc.Number(2.0)).inputs
        {'particle': Bint[3]}
    """
    missing = {k: d for k, d in mc.sample_inputs.items() if k not in result.inputs}
    if not missing:
        return result
    sizes = tuple(d.size for d in missing.values())
    if isinstance(result, Number):
        data = backend_module().asarray(result.data, "real" if result.dtype == "real" else "int")
        return Tensor.make(ops.expand(data, sizes), dict(missing), result.dtype)
    if isinstance(result, Tensor):
        data = ops.expand(result.data, sizes + tuple(result.data.shape))
        return Tensor.make(data, {**missing, **result.inputs}, result.dtype)
    if isinstance(result, Gaussian):
        return Gaussian.make(ops.expand(result.white_vec, sizes + tuple(result.white_vec.shape)),
                             ops.expand(result.prec_sqrt, sizes + tuple(result.prec_sqrt.shape)),
                             {**missing, **result.inputs})
    if is_gaussian_sum(result):
        # Broadcast one summand (the dense one if any): the sum then has every input.
        terms = list(result.terms)
        at = next((i for i, t in enumerate(terms) if not isinstance(t, Gaussian)), 0)
        terms[at] = _with_sample_inputs(mc, terms[at])
        return dense_sum(terms)
    if isinstance(result, Integrate):
        return result  # still lazy: the sample inputs appear where it is evaluated
    # Any other closed form (a product of a Gaussian sum and a density, say): add a zero
    # broadcast over the sample inputs, which changes no value.
    zero = ops.expand(backend_module().asarray(0.0, "real"), sizes)
    return result + Tensor.make(zero, dict(missing), "real")


# logaddexp_V (g + e) with real names of V in the Gaussian g and e not integrable in closed
# form: x ~ g, g -> Delta(x) + log Z. Reductions exact evaluates stay exact.
@MonteCarlo.register(Contraction, object, object, frozenset, tuple)
def monte_carlo_contraction(mc, red_op, bin_op, reduced_vars, terms):
    if red_op is ops.sample and bin_op in (ops.add, None):
        return _sample_reduction(mc, reduced_vars, terms)
    if red_op is not ops.logaddexp or bin_op not in (ops.add, None):
        return None
    if not any(isinstance(t, Gaussian) and _real_names(t, reduced_vars) for t in terms):
        return None
    result = mc.defer(Contraction, (red_op, bin_op, reduced_vars, terms))
    if not (isinstance(result, Contraction) and result.red_op is ops.logaddexp
            and result.bin_op in (ops.add, None)):
        return result
    gaussians = [t for t in result.terms if isinstance(t, Gaussian)]
    names = frozenset().union(*(_real_names(g, result.reduced_vars) for g in gaussians))
    if not names:
        return result
    rest = tuple(t for t in result.terms if not isinstance(t, Gaussian))
    drawn = mc.draw(dense_sum(gaussians), names)
    return Contraction(ops.logaddexp, ops.add, result.reduced_vars, (drawn,) + rest)


# Reduce(ops.sample, f, V) = the same as a Contraction of the single term f.
@MonteCarlo.register(Reduce, type(ops.sample), Funsor, frozenset)
def monte_carlo_reduce_sample(mc, op, arg, reduced_vars):
    if op is not ops.sample:
        return None
    return _sample_reduction(mc, reduced_vars, _terms(arg))


def _sample_reduction(mc, reduced_vars, terms):
    """Estimate ``logaddexp_V sum(terms)`` by drawing ``V``: the real names from the
    Gaussians among ``terms`` (given the Bint names), then the Bint names from the Tensors,
    which then include the normalizers the first draw left."""
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    real = frozenset().union(*(_real_names(g, reduced_vars) for g in gaussians))
    if real:
        drawn = mc.draw(dense_sum(gaussians), real)
        others = tuple(t for t in terms if not isinstance(t, Gaussian))
        inner = Contraction(ops.logaddexp, ops.add, real, _terms(drawn) + others)
        rest = reduced_vars - real
        return inner.reduce(ops.sample, rest) if rest else inner
    tensors = [t for t in terms if isinstance(t, Tensor) and reduced_vars & t.inputs.keys()]
    if not tensors:
        return None
    density = dense_sum(tensors)
    drawn = mc.draw(density, reduced_vars & density.inputs.keys())
    others = tuple(t for t in terms if not any(t is u for u in tensors))
    return Contraction(ops.logaddexp, ops.add, reduced_vars, _terms(drawn) + others)


# Approximate(logaddexp | sample, m, g, V) = m + Delta(V = x) + log Z_g - g(x), x ~ g: the
# backward pass of a sampling adjoint; unbiased for m once V is integrated out.
@MonteCarlo.register(Approximate, (type(ops.logaddexp), type(ops.sample)), Funsor, Funsor,
                     frozenset)
def monte_carlo_approximate(mc, op, model, guide, approx_vars):
    names = names_of(approx_vars) & guide.inputs.keys()
    if not names:
        return model
    points, log_weight = draw(guide, names, mc.sample_inputs, mc.keys)
    if not points:
        return model
    delta = Delta(tuple((k, (v, Number(0.0))) for k, v in points.items()))
    return model + delta + log_weight
