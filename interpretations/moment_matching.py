"""``moment_matching`` (alias ``MOMENTMATCHING``): collapse Gaussian mixtures as they are summed.

Summing a Bint input ``i`` out of ``Tensor(i) + Gaussian(i, x)`` with ``logaddexp`` gives a
mixture of Gaussians, which ``exact`` keeps as a lazy term (its number of components grows
with every such sum). Under ``moment_matching`` it becomes one Gaussian per assignment of the
remaining Bint inputs, with the mixture's normalizer, mean and covariance (the collapsing step
of interacting-multiple-model filters; section 4.4 of "Functional Tensors for Probabilistic
Programming"). Real inputs summed in the same reduction are integrated exactly first. Every
other term falls through to ``exact``, so the rule fires inside any contraction that an
algorithm builds: the steps of ``sequential_sum_product``, ``sum_product``, or the fold of
``funsor_core.algorithms.filter.windowed.windowed_filter``, where a switching linear dynamical
system keeps ``window`` switch states exact and collapses older ones.

A sum of Gaussians (``g1 + g2 + t``) keeps its summands side by side under ``moment_matching``
(``mixture.pending_sum``), where ``exact`` aligns and concatenates them into one Gaussian at
once: the sum is what a reduction collapses next, and the collapse places each summand in its
own layout once (its Gram matrix at its own batch shape). The value is the same; the term is a
``Contraction(None, add, {}, (g1, g2, t))`` of several Gaussians, which ``exact``'s rules
reduce and substitute into as before (a sum that ``exact`` would compress is ``exact``'s at
once); ``Integrate`` against it (a rule below), sampling it and ``fc.moments`` of it add the
summands into one first. Code that needs exactly one Gaussian (the argmax and precondition
adjoints) must do the same, ``gaussian_sum(*term.terms)``. Renaming a sum relabels its
summands.

A component whose precision is rank-deficient by its shapes (fewer rank columns than real
dimensions: a likelihood, a transition factor without its prior) has no mean or covariance, so
there is nothing to match: the sum stays a lazy mixture, exactly as ``exact`` keeps it (funsor
0.4.8 does the same), and adding factors that make it proper and reducing the real names later
gives the exact value. Algorithms rely on this: ``forward_backward`` under ``moment_matching``
carries backward messages (likelihoods) through such sums. A precision that is singular by
its values only (a zero column where the shapes promise full rank) raises a ValueError naming
the variable, eagerly; under ``jax.jit`` its moments are NaN.

The math is ``funsor_core.atoms.gaussian.moments``; it reads no values to decide anything, so
the rules are the same under ``jax.jit``.

Example:
    >>> from interpretations import moment_matching
    >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
    ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
    >>> with moment_matching:
    ...     m = g.reduce(ops.logaddexp, "i")
    >>> gaussian, log_weight = m.terms
    >>> round(float(gaussian.covariance[0, 0]), 12)  # 1 + 1: the spread of the two means
    2.0
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.gaussian.algebra import gaussian_sum, is_gaussian_sum, split_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.mixture import (
    collapse_args,
    collapse_sum,
    mixture_vars,
    pending_sum,
    rename_gaussian_names,
    rename_gaussian_sum,
    would_compress,
)
from funsor_core.atoms.gaussian.moments import collapse_layout
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Real
from funsor_core.engine.fast_path import register_array_program
from funsor_core.engine.interpreter import Interpretation, Tuple
from funsor_core.terms.base import Binary, Funsor, Number, Reduce, Subs
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate
from interpretations.exact import exact

__all__ = ["moment_matching", "MOMENTMATCHING"]

moment_matching = Interpretation("moment_matching", fallback=exact, doc=__doc__)
MOMENTMATCHING = moment_matching

AddOp, LogaddexpOp = type(ops.add), type(ops.logaddexp)


# g1 + g2 + t (+ ...) keeps its summands side by side: under moment matching a sum of
# Gaussians is integrated and collapsed next, and the collapse places each summand in its
# own layout once (``moments.collapse_mixture``), so aligning and concatenating them here
# would be done twice. A sum that exact would compress (rank past the threshold) is exact's.
@moment_matching.register(Binary, AddOp, (Gaussian, Contraction),
                          (Gaussian, Contraction, Tensor, Number))
@moment_matching.register(Binary, AddOp, (Tensor, Number), (Gaussian, Contraction))
def moment_matching_binary_add_gaussian_sums(op, lhs, rhs):
    return pending_sum(lhs, rhs)


def _pending_sum_of_scalars(op, lhs, rhs):
    # ``lhs + rhs`` in the operator's frame, without ``binary_domains``: for scalar outputs
    # its only check left is the inputs', which ``pending_sum`` makes with the same error.
    if lhs.output is not Real or rhs.output is not Real:
        return None
    return pending_sum(lhs, rhs)


register_array_program(moment_matching_binary_add_gaussian_sums, "eager_binary",
                       _pending_sum_of_scalars)


# (g + t + ...)(x=y): renaming a sum renames each summand's labels; no array changes. For
# ``f(x="y")`` the same from the names, without building the Variables (its eager program).
@moment_matching.register(Subs, Contraction, tuple)
def moment_matching_subs_gaussian_sum_rename(arg, subs):
    return rename_gaussian_sum(arg, subs) if is_gaussian_sum(arg) else None


register_array_program(moment_matching_subs_gaussian_sum_rename, "eager_subs_rename",
                       rename_gaussian_names)


# Integrate(g1 + g2 + t, f, V): exact's rules integrate against one Gaussian, so the summands
# are added into one first (as exact would have added them).
@moment_matching.register(Integrate, Contraction, Funsor, frozenset)
def moment_matching_integrate_gaussian_sum(log_measure, integrand, reduced_vars):
    if not is_gaussian_sum(log_measure) or len(split_gaussian_sum(log_measure)[0]) < 2:
        return None
    return Integrate(gaussian_sum(*log_measure.terms), integrand, reduced_vars)


# logaddexp_V (g + t + ...) straight to the collapse (the rule below, without first building
# the Contraction that normalize would make of the Reduce).
@moment_matching.register(Reduce, LogaddexpOp, (Gaussian, Contraction), frozenset)
def moment_matching_reduce_gaussian_sum(op, arg, reduced_vars):
    if isinstance(arg, Contraction) and not is_gaussian_sum(arg):
        return None
    terms = arg.terms if isinstance(arg, Contraction) else (arg,)
    return collapse_sum(reduced_vars, terms)


# logaddexp_V (t + g) with V holding Bint inputs of g: integrate the real names of V and sum
# the names only t has (exactly), then collapse the mixture over the rest to one Gaussian per
# remaining assignment, of the same normalizer, mean and covariance.
@moment_matching.register(Contraction, object, object, frozenset,
                          Tuple[(Gaussian, Tensor, Number), ...])
def moment_matching_contraction_gaussians(red_op, bin_op, reduced_vars, terms):
    if red_op is not ops.logaddexp or bin_op not in (ops.add, None):
        return None
    mixed = mixture_vars(reduced_vars, terms)
    if not mixed:
        return None
    result = collapse_sum(reduced_vars, terms)
    if result is not None:
        return result
    exact_vars = reduced_vars - mixed
    if exact_vars:  # the general way: exact reduces the rest, then this rule collapses
        inner = Contraction(red_op, bin_op, exact_vars, terms)
        if isinstance(inner, Contraction) and inner.reduced_vars:
            return None  # exact could not integrate: reducing again would come back here
        return inner.reduce(ops.logaddexp, mixed)
    return None


def _collapse_request(reduced_vars: frozenset, terms: tuple):
    """``(gaussians, dense, names, integrate)`` such that the rule, given
    ``(logaddexp, add, reduced_vars, terms)``, returns ``collapse_mixture`` of them without
    compressing first (None otherwise, or where ``collapse_mixture`` declines).

    The rule's registered ``"collapse"`` implementation (``engine.fast_path``), read by
    code that repeats one collapse on arrays (``windowed_filter``'s fused steps)."""
    mixed = mixture_vars(reduced_vars, terms)
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    if not mixed or len(gaussians) > 1 and would_compress(gaussians):
        return None
    dense = [t for t in terms if not isinstance(t, Gaussian)]
    g, ds, names, real = collapse_args(reduced_vars, mixed, gaussians, dense)
    gs = g if isinstance(g, tuple) else (g,)
    return (gs, ds, names, real) if collapse_layout(gs, ds, names, real) is not None else None


# The array program of this rule: windowed_filter repeats its collapse on arrays
# (algorithms.filter.fused), where the fast path's guard shows the rule runs first.
register_array_program(moment_matching_contraction_gaussians, "collapse", _collapse_request)
