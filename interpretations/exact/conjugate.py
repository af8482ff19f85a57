"""Exact conjugate updates of distribution funsors (the math: ``funsor_core/distribution/
conjugate.py``).

- Marginal: ``(prior(p) + lik(p, x)).reduce(logaddexp, p)`` is the compound distribution of
  ``x`` (Beta-Bernoulli, Beta-Binomial, Dirichlet-Categorical, Dirichlet-Multinomial,
  Gamma-Poisson, Gamma-Gamma), for any ``x``, observed or not.
- Conditioning: with an observed ``x`` (Tensors throughout), ``prior(p) + lik(p, x)`` is
  rewritten to ``posterior(p) + evidence``, the evidence a Tensor. Further observations
  update the posterior in turn; reducing over ``p`` then drops the (normalized) posterior.
  Only where the evidence is concrete and finite: an observation outside the support (or a
  value traced under ``jax.jit``, which cannot be checked) leaves the sum as it is, and the
  marginal rule still evaluates it exactly.
- Plates: ``lik.reduce(add, plates)`` over i.i.d. observations of a Bernoulli, Binomial,
  Categorical, Multinomial or Poisson is one likelihood of their counts plus a Tensor.

Example:
    >>> from funsor_core.distribution import Beta, BernoulliProbs
    >>> p = fc.Variable("p", fc.Real)
    >>> x = fc.Tensor(np.array([1.0, 1.0, 0.0]), {"i": fc.Bint[3]})
    >>> joint = Beta(1.0, 1.0, value=p) + BernoulliProbs(p, value=x).reduce(ops.add, "i")
    >>> post = [t for t in joint.terms if type(t).__name__ == "Beta"][0]
    >>> post.concentration1.item(), post.concentration0.item()
    (3.0, 2.0)
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.distribution.array_math import concrete
from funsor_core.distribution.base import Distribution
from funsor_core.distribution.conjugate import (
    collapse_plate,
    compound,
    conjugate_pairs,
    conjugate_param,
    posterior,
)
from funsor_core.engine.interpreter import Tuple
from funsor_core.terms.base import Funsor, Reduce
from funsor_core.terms.contraction import Contraction
from interpretations.exact import exact


def _rest(terms: tuple, i: int, j: int) -> tuple:
    return tuple(t for k, t in enumerate(terms) if k not in (i, j))


# sum_p prior(p) + lik(p, x) = compound(x).
@exact.register(Contraction, ops.LogaddexpOp, ops.AddOp, frozenset, Tuple[Funsor, ...])
def exact_contraction_conjugate_marginal(red_op, bin_op, reduced_vars, terms):
    for i, j in conjugate_pairs(terms):
        name = terms[i].value.name
        if name in reduced_vars:
            marginal = compound(terms[i], terms[j])
            return Contraction(red_op, bin_op, reduced_vars - {name},
                               _rest(terms, i, j) + (marginal,))
    return None


# prior(p) + lik(p, x) = posterior(p) + compound(x), for an observed x.
@exact.register(Contraction, (type(None), ops.LogaddexpOp), ops.AddOp, frozenset,
                Tuple[Funsor, ...])
def exact_contraction_conjugate_update(red_op, bin_op, reduced_vars, terms):
    for i, j in conjugate_pairs(terms):
        prior, lik = terms[i], terms[j]
        if prior.value.name in reduced_vars:
            continue  # the marginal rule is exact there, and needs no finite evidence
        name = conjugate_param(prior, lik)  # the parameter p (or c * p, c a constant)
        given = list(prior._args[:-1]) + [a for f, a in zip(lik.fields, lik._args) if f != name]
        if not all(isinstance(a, Tensor) for a in given):
            continue
        evidence = compound(prior, lik)
        if not isinstance(evidence, Tensor) or not _finite(evidence.data):
            continue
        post = posterior(prior, lik)
        if not isinstance(post, Distribution):
            continue
        return Contraction(red_op, bin_op, reduced_vars,
                           _rest(terms, i, j) + (post, evidence))
    return None


def _finite(data) -> bool:
    # Decided only on concrete values: under jax.jit the answer is unknown, so decline.
    if not concrete(data):
        return False
    return bool(np.isfinite(np.asarray(ops.to_numpy(data))).all())


# sum_i lik(p, x_i) = lik'(p, sum_i x_i) + a Tensor, for i.i.d. counts over plates i.
@exact.register(Reduce, ops.AddOp, Distribution, frozenset)
def exact_reduce_add_distribution_plate(op, arg, reduced_vars):
    if any(arg.inputs[n].dtype == "real" for n in reduced_vars if n in arg.inputs):
        return None
    collapsed = collapse_plate(arg, reduced_vars & arg.inputs.keys())
    if collapsed is None:
        return None
    lik, rest = collapsed
    return lik + rest
