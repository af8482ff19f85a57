"""Exact rules for MarkovProduct: discrete chains on pre-aligned arrays, Gaussian chains on
their square-root arrays, any other chain as pairwise contraction terms. The strategy
(parallel or sequential) comes from the term, the enclosing ``markov_strategy`` block, or the
cost model (``funsor_core.algorithms.chains.cost_model``); the math is in
``funsor_core.algorithms.chains`` (``evaluate``, ``discrete`` and ``gaussian_scan``).
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_masked import MaskedSteps, masked_factors
from funsor_core.algorithms.chains.discrete_plan import (
    contract_markov_tensor,
    markov_tensor,
    tensor_factors,
)
from funsor_core.algorithms.chains.evaluate import markov_terms
from funsor_core.algorithms.chains.gaussian_filter import contract_markov_gaussian
from funsor_core.algorithms.chains.gaussian_scan import (
    gaussian_chain_parts,
    gaussian_terms,
    markov_gaussian,
)
from funsor_core.algorithms.chains.masks import masked_steps
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.fast_path import array_program, fast_path
from funsor_core.engine.interpreter import Tuple
from funsor_core.engine.patterns import type_key
from funsor_core.ops import AssociativeOp, Op
from funsor_core.terms.base import Binary, Funsor, Number, Reduce, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.traversal import reinterpret
from interpretations.exact import exact

_ATOMS = (Tensor, Gaussian, Number)


# A real discrete chain: the T transition matrices in one array, multiplied in the semiring
# by a parallel scan or a sequential loop (no terms per step).
# (A product of Tensors built lazily keeps its factors apart: a shared matrix and per-step
# vectors.)
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, (Tensor, Contraction), Variable,
                tuple, tuple, object)
def exact_markov_product_tensor(sum_op, prod_op, trans, time, step, step_names, strategy):
    return _tensor_chain(sum_op, prod_op, trans, time, step, step_names, strategy)


def _tensor_chain(sum_op, prod_op, trans, time, step, step_names, strategy):
    # The chain of Tensor factors on arrays, or None where ``trans`` is not one.
    factors = tensor_factors(trans, prod_op) if step else None
    if factors is None:
        return None
    return markov_tensor(sum_op, prod_op, factors, time, step, step_names, strategy)


# Ragged steps (identity transitions where keep is 0), evaluated: the dense masked steps.
@exact.register(MaskedSteps, AssociativeOp, AssociativeOp, Funsor, Tensor, Variable, tuple)
def exact_masked_steps_tensor(sum_op, prod_op, trans, keep, time, step):
    if tensor_factors(trans, prod_op) is None or not all(
            isinstance(v, Variable) for pair in step for v in pair):
        return None
    return masked_steps(sum_op, prod_op, trans, time, {p.name: c.name for p, c in step},
                        mask=keep)


# A chain of ragged steps kept lazily: on arrays, the mask selecting the carried product.
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, MaskedSteps, Variable, tuple,
                tuple, object)
def exact_markov_product_masked_steps(sum_op, prod_op, trans, time, step, step_names,
                                      strategy):
    parts = masked_factors(trans, sum_op, prod_op) if step else None
    if parts is not None:
        return markov_tensor(sum_op, prod_op, parts[0], time, step, step_names, strategy,
                             keep=parts[1])
    # Lazy pieces left inside (a renaming under lazy): the steps rebuilt now, which makes
    # them the dense masked steps, and the chain of those.
    steps = reinterpret(trans)
    if type(steps) is MaskedSteps:
        return None
    return MarkovProduct(sum_op, prod_op, steps, time, step, step_names, strategy)


# A Gaussian chain over real states (plus a Tensor of constants): Kalman-style steps on the
# square-root arrays, by a parallel scan or a filter loop (lax.scan under jax).
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, (Gaussian, Contraction), Variable,
                tuple, tuple, object)
def exact_markov_product_gaussian(sum_op, prod_op, trans, time, step, step_names, strategy):
    return _gaussian_chain(sum_op, prod_op, trans, time, step, step_names, strategy)


def _gaussian_chain(sum_op, prod_op, trans, time, step, step_names, strategy):
    parts = gaussian_chain_parts(sum_op, prod_op, trans, time, step)
    if parts is None:
        return None
    return markov_gaussian(parts, step, step_names, strategy)


# A product of Tensors built lazily (a Binary tree), evaluated as the factored chain above;
# a sum of Gaussians built lazily (the README's HMM idiom with Gaussian steps) as the
# Gaussian chain.
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, Binary, Variable, tuple, tuple,
                object)
def exact_markov_product_binary(sum_op, prod_op, trans, time, step, step_names, strategy):
    result = _tensor_chain(sum_op, prod_op, trans, time, step, step_names, strategy)
    if result is None:
        result = _gaussian_chain(sum_op, prod_op, trans, time, step, step_names, strategy)
    return result


# Any other chain of atoms (sums of atoms included): the pairwise contractions as terms, so
# the interpretations in force see each step. A chain of lazy terms stays a MarkovProduct.
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, Funsor, Variable, tuple, tuple,
                object)
def exact_markov_product_funsor(sum_op, prod_op, trans, time, step, step_names, strategy):
    if not _evaluable(trans, prod_op) or isinstance(trans, Binary):
        return None
    return markov_terms(sum_op, prod_op, trans, time, step, step_names, strategy)


def _evaluable(trans, prod_op) -> bool:
    if isinstance(trans, _ATOMS) or type(trans)._atom:
        return True
    if type(trans) is MaskedSteps:
        return trans.prod_op is prod_op
    if isinstance(trans, Contraction) and not trans.reduced_vars and all(
            type(t)._atom for t in trans.terms):
        return True
    if tensor_factors(trans, prod_op) is not None:
        return True
    return prod_op is ops.add and isinstance(trans, Binary) and gaussian_terms(trans) is not None


# The reduction of a Markov product, or of a lazy sum holding one, is one Contraction (the
# normal form) for the rule below, before the generic rules tabulate the term over its Bint
# inputs (which would compose the T transition matrices first).
@exact.register(Reduce, Op, MarkovProduct, frozenset)
def exact_reduce_markov_product(op, arg, reduced_vars):
    if not reduced_vars or not _evaluable(arg.trans, arg.prod_op):
        return None
    return Contraction(op, None, reduced_vars, (arg,))


@exact.register(Reduce, Op, Contraction, frozenset)
def exact_reduce_contraction_markov_product(op, arg, reduced_vars):
    if (not reduced_vars or arg.red_op not in (None, op)
            or not any(isinstance(t, MarkovProduct) for t in arg.terms)):
        return None
    args = (op, arg.bin_op, arg.reduced_vars | reduced_vars, arg.terms)
    # Where building that Contraction would only run the rule below first (no user rule
    # ahead of it, no hook, log or wrapping interpretation: the fast path's one guard), its
    # chain is evaluated here without the term; the term is built where the chain does not
    # apply.
    chain = fast_path(type_key(Contraction, args), "markov_chain")
    if chain is not None and reduced_vars.issubset(arg.inputs.keys()):
        result = chain(*args)
        if result is not None:
            return result
    return Contraction(*args)


def _contract_chain(red_op, bin_op, reduced_vars, terms):
    chains = [t for t in terms if isinstance(t, MarkovProduct)]
    if red_op is None or len(chains) != 1:
        return None
    mp = chains[0]
    others = [t for t in terms if t is not mp]
    # A discrete chain first (it checks its factors itself): most calls end there.
    fused = contract_markov_tensor(red_op, bin_op, reduced_vars, mp, others)
    if fused is None:
        if not _evaluable(mp.trans, mp.prod_op):
            return None
        fused = contract_markov_gaussian(red_op, bin_op, reduced_vars, mp, others)
    if fused is None:
        value, rest, remaining = MarkovProduct(*mp._args), others, reduced_vars
        if isinstance(value, MarkovProduct):
            return None
    else:
        value, rest, remaining = fused
    if not rest:
        return value.reduce(red_op, remaining) if remaining else value
    return Contraction(red_op, bin_op, remaining, (value, *rest))


# A Markov product built lazily and then reduced together with the factors of its first prev
# or last curr states: a filter. The boundary factors fold into the chain as vectors (an HMM's
# forward algorithm: a vector carry, O(T K^2) instead of O(T K^3)); the rest is contracted
# with the result. Without a reduction the sum stays lazy (as a lazily built term does under
# exact), so that the reduction that follows sees the chain.
@exact.register(Contraction, object, object, frozenset,
                Tuple[(MarkovProduct, Tensor, Number, Gaussian), ...])
@array_program("markov_chain", _contract_chain)
def exact_contraction_markov_product(red_op, bin_op, reduced_vars, terms):
    return _contract_chain(red_op, bin_op, reduced_vars, terms)
