"""Exact rules for MarkovProduct: discrete chains on pre-aligned arrays, Gaussian chains on
their square-root arrays, any other chain as pairwise contraction terms. The strategy
(parallel or sequential) comes from the term, the enclosing ``markov_strategy`` block, or the
cost model (``funsor_core.algorithms.scan``); the math is ``funsor_core.algorithms.markov``,
``scan_tensor`` and ``scan_gaussian``.
"""

from __future__ import annotations

from funsor_core.algorithms.markov import contract_markov_tensor, markov_tensor, markov_terms
from funsor_core.algorithms.scan_gaussian import gaussian_chain_parts, markov_gaussian
from funsor_core.atoms.gaussian.gaussian import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Real
from funsor_core.engine.interpreter import Tuple
from funsor_core.ops import AssociativeOp
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct
from interpretations.exact import exact

_ATOMS = (Tensor, Gaussian, Number)


# A real discrete chain: the T transition matrices in one array, multiplied in the semiring
# by a parallel scan or a sequential loop (no terms per step).
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, Tensor, Variable, tuple, tuple,
                object)
def exact_markov_product_tensor(sum_op, prod_op, trans, time, step, step_names, strategy):
    if trans.output is not Real or not step:
        return None
    return markov_tensor(sum_op, prod_op, trans, time, step, step_names, strategy)


# A Gaussian chain over real states (plus a Tensor of constants): Kalman-style steps on the
# square-root arrays, by a parallel scan or a filter loop (lax.scan under jax).
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, (Gaussian, Contraction), Variable,
                tuple, tuple, object)
def exact_markov_product_gaussian(sum_op, prod_op, trans, time, step, step_names, strategy):
    parts = gaussian_chain_parts(sum_op, prod_op, trans, time, step)
    if parts is None:
        return None
    return markov_gaussian(parts, step, step_names, strategy)


# Any other chain of atoms (sums of atoms included): the pairwise contractions as terms, so
# the interpretations in force see each step. A chain of lazy terms stays a MarkovProduct.
@exact.register(MarkovProduct, AssociativeOp, AssociativeOp, Funsor, Variable, tuple, tuple,
                object)
def exact_markov_product_funsor(sum_op, prod_op, trans, time, step, step_names, strategy):
    if not _evaluable(trans):
        return None
    return markov_terms(sum_op, prod_op, trans, time, step, step_names, strategy)


def _evaluable(trans) -> bool:
    if isinstance(trans, _ATOMS) or type(trans)._atom:
        return True
    return isinstance(trans, Contraction) and not trans.reduced_vars and all(
        type(t)._atom for t in trans.terms)


# A Markov product built lazily and then contracted with the factors of its first prev or
# last curr states, which are summed: a filter. The boundary factors fold into the chain as
# vectors (an HMM's forward algorithm: a vector carry, O(T K^2) instead of O(T K^3)); the
# rest is contracted with the result. A chain that cannot be fused is evaluated first.
@exact.register(Contraction, object, object, frozenset,
                Tuple[(MarkovProduct, Tensor, Number, Gaussian), ...])
def exact_contraction_markov_product(red_op, bin_op, reduced_vars, terms):
    chains = [t for t in terms if isinstance(t, MarkovProduct)]
    if len(chains) != 1 or not _evaluable(chains[0].trans):
        return None
    mp = chains[0]
    others = [t for t in terms if t is not mp]
    fused = None
    if red_op is not None:
        fused = contract_markov_tensor(red_op, bin_op, reduced_vars, mp, others)
    if fused is None:
        value, rest, remaining = MarkovProduct(*mp._args), others, reduced_vars
        if isinstance(value, MarkovProduct):
            return None
    else:
        value, rest, remaining = fused
    if not rest:
        return value.reduce(red_op, remaining) if remaining else value
    return Contraction(red_op, bin_op, remaining, (value, *rest))
