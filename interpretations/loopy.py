"""``LoopyBP`` and ``Gibbs``: loopy inference over discrete factors as interpretations.

Both are stateful interpretation kinds that fall back to the interpretation that was active
when they were entered, so every term they do not rewrite is left to it (Singh 2014: the
approximation is chosen by the interpretation, the model stays a term).

- ``LoopyBP(...)`` keeps a sum of discrete Tensors lazy (the factor list; the joint table is
  what BP avoids) and rewrites ``Contraction(logaddexp | max, add, V, tensors)``: a sum of
  at least two discrete Tensors reduced over ``V``. The names not in ``V`` index independent
  models (``loopy_bp``'s batch), so the result is the Bethe ``log Z`` (``log max`` for
  ``ops.max``) as a Tensor over them: exact on trees. The run is kept as ``.result``.
- ``Gibbs(num_samples, ...)`` rewrites ``Approximate(logaddexp | sample, model, guide, V)``
  whose model is a discrete Tensor or a sum of them over exactly ``V`` (sums of discrete
  Tensors stay lazy under it too): the result is the
  empirical measure ``Delta(V = x_p)`` over a ``particle`` input (``num_samples * num_chains``
  draws of blocked Gibbs, chains after one another; ``kernel="mh"``: Metropolis-Hastings,
  with a uniform or a user's ``proposal``). MCMC does not estimate the normalizer:
  each particle weighs ``0`` in log space, so ``Integrate(result, f, V)`` averaged over
  ``particle`` is the estimate of ``E_p[f]``. ``Integrate(model, f, V)`` itself is
  rewritten so: ``f`` at each particle, a Tensor over ``particle`` as ``MonteCarlo`` gives
  (equal to ``MonteCarlo``'s estimate when ``model`` is normalized; otherwise it is the
  normalized expectation, where ``MonteCarlo`` would also carry ``Z``).

Anything else (real inputs, a single Tensor under ``LoopyBP``, other ops) declines. A
reduction or ``Integrate`` of a sum of discrete Tensors that neither approximates (a sum
or min of log values; ``Integrate`` under ``LoopyBP``, or over some of the model's names
under ``Gibbs``) is computed by the interpretation entered before, with the sum as one
table: exactly, as without them.

Example:
    >>> from interpretations import LoopyBP
    >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> g = fc.Tensor(np.zeros((2, 3)), {"b": fc.Bint[2], "c": fc.Bint[3]})
    >>> with LoopyBP():
    ...     z = (f + g).reduce(ops.logaddexp, frozenset({"a", "b", "c"}))
    >>> round(float(np.exp(z.data)), 6)
    12.0
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.loopy.api import (
    check_bp_options,
    check_chain_options,
    loopy_bp,
    sample_chains,
)
from funsor_core.algorithms.loopy.mcmc import KERNELS
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.interpreter import ENTERED, Interpretation, Tuple, reflect
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Binary, Funsor, Number, Unary
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate

__all__ = ["LoopyBP", "Gibbs"]


class LoopyBP(Interpretation):
    """Belief propagation for discrete sum-product contractions (see the module docstring);
    the arguments are ``loopy_bp``'s.

    Example:
        >>> LoopyBP(schedule="residual").options["schedule"]
        'residual'
    """

    stateful = True

    def __init__(self, schedule: str = "flooding", damping: float = 0.0, tol: float = 1e-8,
                 max_iters: int = 1000, temperature: float = 1.0,
                 sparsity_threshold: float | None = None) -> None:
        super().__init__("loopy_bp", fallback=ENTERED)
        check_bp_options(schedule, damping, tol, max_iters, temperature, sparsity_threshold)
        self.options = dict(schedule=schedule, damping=damping, tol=tol, max_iters=max_iters,
                            temperature=temperature, sparsity_threshold=sparsity_threshold)
        self.result = None


class Gibbs(Interpretation):
    """Blocked Gibbs sampling for ``Approximate`` over discrete models (see the module
    docstring); the arguments are ``gibbs``'s.

    Example:
        >>> Gibbs(100, rng_key=0).num_samples
        100
    """

    stateful = True

    def __init__(self, num_samples: int, warmup: int = 0, num_chains: int = 1, rng_key=None,
                 thin: int = 1, kernel: str = "gibbs", proposal=None) -> None:
        super().__init__("gibbs", fallback=ENTERED)
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
        check_chain_options(num_samples, warmup, num_chains, thin)
        self.num_samples, self.warmup, self.num_chains = num_samples, warmup, num_chains
        self.rng_key, self.thin, self.kernel, self.proposal = rng_key, thin, kernel, proposal


# f + g of discrete Tensors (or lazy sums of them) stays the lazy sum: the factor list that
# BP runs on, never the joint table that exact would form.
@LoopyBP.register(Binary, object, Funsor, Funsor)
def loopy_bp_binary_add(bp, op, lhs, rhs):
    return _lazy_sum(op, lhs, rhs)


@Gibbs.register(Binary, object, Funsor, Funsor)
def gibbs_binary_add(gb, op, lhs, rhs):
    return _lazy_sum(op, lhs, rhs)


def _lazy_sum(op, lhs, rhs):
    if op in (ops.mul, ops.truediv):
        return _scaled_sum(op, lhs, rhs)
    if op is not ops.add:
        return None
    lhs_terms, rhs_terms = _tensor_terms(lhs), _tensor_terms(rhs)
    if lhs_terms is None or rhs_terms is None:
        return None
    return reflect.interpret(Contraction, (None, ops.add, frozenset(),
                                           tuple(lhs_terms + rhs_terms)))


# -(f_1 + ... + f_n) = (-f_1) + ... + (-f_n): again a factor list (c = -1 below).
@LoopyBP.register(Unary, type(ops.neg), Funsor)
def loopy_bp_unary_neg(bp, op, arg):
    return _negated_sum(op, arg)


@Gibbs.register(Unary, type(ops.neg), Funsor)
def gibbs_unary_neg(gb, op, arg):
    return _negated_sum(op, arg)


def _negated_sum(op, arg):
    terms = _tensor_terms(arg) if op is ops.neg else None
    if terms is None or len(terms) < 2:
        return None
    return reflect.interpret(Contraction, (None, ops.add, frozenset(), tuple(-t for t in terms)))


def _constant(x) -> bool:
    return type(x) is Number or (type(x) is Tensor and not x.inputs)


# c * (f_1 + ... + f_n) = c f_1 + ... + c f_n (and (f_1 + ... + f_n) / c): a constant times
# a sum of log-factors is again a factor list (tempering), kept lazy for BP, never left as a
# lazy product that no rule evaluates. (Multiplying the density by c is ``model + log c``.)
def _scaled_sum(op, lhs, rhs):
    if _constant(rhs) and not _constant(lhs):
        model, scale = lhs, rhs
    elif op is ops.mul and _constant(lhs) and not _constant(rhs):
        model, scale = rhs, lhs
    else:
        return None
    terms = _tensor_terms(model)
    if terms is None or len(terms) < 2:
        return None
    scaled = tuple(op(t, scale) if model is lhs else op(scale, t) for t in terms)
    return reflect.interpret(Contraction, (None, ops.add, frozenset(), scaled))


# logaddexp_V sum(tensors) ~ Bethe log Z over the names outside V (exact on trees).
@LoopyBP.register(Contraction, object, object, frozenset, Tuple[Tensor, ...])
def loopy_bp_contraction_tensors(bp, red_op, bin_op, reduced_vars, terms):
    if bin_op is not ops.add or len(terms) < 2:
        return None
    reduced = frozenset(_name(v) for v in reduced_vars)
    if not reduced or red_op is None:
        return None
    if red_op not in (ops.logaddexp, ops.max):
        # A reduction BP does not approximate (a sum of log values, a min) demands the
        # joint table: computed by the rest of the chain, where the sum of the factors is
        # not kept lazy (under this interpretation it would be, without end).
        return _by_the_rest(bp, red_op, bin_op, reduced_vars, terms)
    batch = tuple(dict.fromkeys(k for t in terms for k in t.inputs if k not in reduced))
    bp.result = loopy_bp(list(terms), red_op, batch=batch, **bp.options)
    return bp.result.log_z


# Gibbs approximates no reduction: each is computed by the rest of the chain, where the sum
# of the factors is not kept lazy (here ``(f + g).reduce(ops.add, V)`` materialized the sum,
# which this interpretation kept lazy, and reduced it again, without end: a RecursionError).
@Gibbs.register(Contraction, object, object, frozenset, Tuple[Tensor, ...])
def gibbs_contraction_tensors(gb, red_op, bin_op, reduced_vars, terms):
    if bin_op is not ops.add or red_op is None or not reduced_vars:
        return None
    return _by_the_rest(gb, red_op, bin_op, reduced_vars, terms)


def _by_the_rest(interp, red_op, bin_op, reduced_vars, terms):
    with interp.rest():
        return Contraction(red_op, bin_op, reduced_vars, terms)


# Integrate(sum of factors, f, V) that neither interpretation approximates (LoopyBP: any;
# Gibbs: V not all of the model's variables) is the rest of the chain's, as the module
# promises: there the sum is one table, so exact integrates it (a Tensor integrand), where
# the lazy sum matched none of its rules and the term stayed lazy until ``.data`` raised.
@LoopyBP.register(Integrate, Contraction, Funsor, frozenset)
def loopy_bp_integrate(bp, log_measure, integrand, reduced_vars):
    return _integrate_by_the_rest(bp, log_measure, integrand, reduced_vars)


def _integrate_by_the_rest(interp, log_measure, integrand, reduced_vars):
    terms = _tensor_terms(log_measure)
    if terms is None or len(terms) < 2:
        return None
    with interp.rest():
        measure = terms[0]
        for t in terms[1:]:
            measure = measure + t
        return Integrate(measure, integrand, reduced_vars)


# Approximate(logaddexp | sample, m, g, V) ~ Delta(V = x_p), x_p from blocked MCMC on m.
@Gibbs.register(Approximate, (type(ops.logaddexp), type(ops.sample)), Funsor, Funsor,
                frozenset)
def gibbs_approximate(gb, op, model, guide, approx_vars):
    return _empirical(gb, model, approx_vars)


# Integrate(m, f, V) ~ Integrate(Delta(V = x_p), f, V) = f(x_p): per particle, E_p[f] on
# average over them (p proportional to exp(m); MCMC has no normalizer, as for Approximate).
@Gibbs.register(Integrate, Funsor, Funsor, frozenset)
def gibbs_integrate(gb, log_measure, integrand, reduced_vars):
    points = _empirical(gb, log_measure, reduced_vars)
    if points is None:
        return _integrate_by_the_rest(gb, log_measure, integrand, reduced_vars)
    return Integrate(points, integrand, reduced_vars)


def _empirical(gb, model, names):
    """The empirical measure of ``gb``'s chains on ``model`` (a discrete Tensor or a sum of
    them over exactly ``names``), or None to decline."""
    terms = _tensor_terms(model)
    names = frozenset(_name(v) for v in names)
    if terms is None or frozenset(k for t in terms for k in t.inputs) != names:
        return None
    s = sample_chains(terms, gb.num_samples, gb.warmup, gb.num_chains, gb.rng_key,
                      kernel=gb.kernel, thin=gb.thin, proposal=gb.proposal)
    n = gb.num_samples * gb.num_chains
    points = []
    for name, t in s.items():
        data = ops.reshape(t.data, (n,))
        points.append((name, (Tensor(data, {"particle": Bint[n]}, t.dtype), Number(0.0))))
    return Delta(tuple(points))


def _name(v) -> str:
    return v if isinstance(v, str) else v.name


def _tensor_terms(model):
    if isinstance(model, Tensor):
        return [model]
    if isinstance(model, Binary) and model.op is ops.add:
        lhs, rhs = _tensor_terms(model.lhs), _tensor_terms(model.rhs)
        return None if lhs is None or rhs is None else lhs + rhs
    if (isinstance(model, Contraction) and model.red_op is None and model.bin_op is ops.add
            and all(isinstance(t, Tensor) for t in model.terms)):
        return list(model.terms)
    return None
