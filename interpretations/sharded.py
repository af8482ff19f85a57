"""Rules of ``sharded(mesh, plates=..., time=...)`` (the kind and its state are in
``funsor_core.algorithms.sharding.kind``, the math in ``.plates`` and ``.chains``): a
reduction over a sharded plate is the local reduction plus one collective; a Markov product
of Tensors or of Gaussians (sum-product or max-plus), or a switching chain under
``moment_matching`` (``.mixed_chains``), over a sharded time is the three-phase scan; an
``Integrate``
with sharded particles, one estimate per particle split over the devices. Everything else
declines, to the interpretation that was active when ``sharded`` was entered.

Example:
    >>> import jax, jax.numpy as jnp
    >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    >>> x = fc.Tensor(jnp.arange(6.0), {"data": fc.Bint[6]})
    >>> with sharded(mesh, plates={"data": "x"}):
    ...     total = x.reduce(ops.add, "data")
    >>> float(total.data)
    15.0
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.factors import tensor_factors
from funsor_core.algorithms.chains.gaussian_scan import gaussian_chain_parts
from funsor_core.algorithms.sharding.chains import shard_markov_tensor
from funsor_core.algorithms.sharding.gaussian_chains import shard_markov_gaussian
from funsor_core.algorithms.sharding.gaussian_plates import shard_plate_gaussian
from funsor_core.algorithms.sharding.kind import Sharded, sharded
from funsor_core.algorithms.sharding.mixed_chains import is_switching_chain, shard_markov_mixed
from funsor_core.algorithms.sharding.particles import one_particle_each
from funsor_core.algorithms.sharding.plates import shard_plate_reduction
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.ops import AssociativeOp, Op
from funsor_core.terms.base import Funsor, Reduce, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate
from funsor_core.terms.markov import MarkovProduct

__all__ = ["Sharded", "sharded"]

_MIXED_CHAIN = ("sharded(...): the Markov product over the sharded time '{name}' has real "
                "inputs {reals} but is neither a Gaussian chain in (logaddexp, add) or (max, "
                "add) nor a switching chain (a sum of Gaussians and Tensors with discrete and "
                "real step pairs); sharding it over time is not implemented (issue #33). "
                "Leave '{name}' out of time={{...}} to run it on one device")


# red_{V} (t_1 * ... * t_n) with a sharded plate i in V = red over devices of the same
# reduction on each device's block of i (one collective).
@Sharded.register(Contraction, object, object, frozenset, tuple)
def sharded_contraction_plate(interp, red_op, bin_op, reduced_vars, terms):
    interp.note(reduced_vars, *terms)
    return shard_plate_reduction(interp, red_op, bin_op, reduced_vars, terms)


# red_V t with a sharded plate in V: the same, for a single Tensor.
@Sharded.register(Reduce, Op, Tensor, frozenset)
def sharded_reduce_tensor_plate(interp, op, arg, reduced_vars):
    interp.note(reduced_vars, arg)
    return shard_plate_reduction(interp, op, None, reduced_vars, (arg,))


# sum_{i in plate} g_i for Gaussians g_i = the concatenation of each device's block sum (rows).
@Sharded.register(Reduce, Op, Gaussian, frozenset)
def sharded_reduce_gaussian_plate(interp, op, arg, reduced_vars):
    interp.note(reduced_vars, arg)
    return shard_plate_gaussian(interp, op, arg, reduced_vars)


# M_1 ... M_T over a sharded t = S_1 ... S_P, S_p the product of device p's block of steps.
@Sharded.register(MarkovProduct, AssociativeOp, AssociativeOp, Funsor, Variable, tuple, tuple,
                  object)
def sharded_markov_product_tensor(interp, sum_op, prod_op, trans, time, step, step_names,
                                  strategy):
    interp.note((time.name,), trans, chain=True)
    if time.name not in interp.time:
        return None
    factors = tensor_factors(trans, prod_op) if step else None
    if factors is not None:
        return shard_markov_tensor(interp, sum_op, prod_op, factors, time, step, step_names,
                                   strategy)
    maximize = sum_op is ops.max and prod_op is ops.add
    # (the chain's arrays are the same in both semirings; only the elimination differs)
    parts = gaussian_chain_parts(ops.logaddexp if maximize else sum_op, prod_op, trans, time,
                                 step)
    if parts is not None:
        return shard_markov_gaussian(interp, parts, time, step, step_names, strategy, maximize)
    if is_switching_chain(trans, time, step):  # moment-matched block by block
        return shard_markov_mixed(interp, sum_op, prod_op, trans, time, step, step_names)
    reals = sorted(k for k, d in trans.inputs.items() if d.dtype == "real")
    if reals:
        raise NotImplementedError(_MIXED_CHAIN.format(name=time.name, reals=reals))
    return None


def _evaluated(interp, term):
    # A MarkovProduct over a sharded time, built lazily (``reflect``), evaluated by the rule
    # above; any other term as it is.
    if type(term) is MarkovProduct and term.time.name in interp.time:
        return MarkovProduct(*(getattr(term, f) for f in MarkovProduct.fields))
    return term


# red_V (chain over sharded t) = red_V (its three-phase product): a chain built lazily and
# then reduced (the filter form ``exact`` would run on one device), as ``markov_marginals``
# and ``markov_map`` build it, so that their derivatives run sharded too.
@Sharded.register(Reduce, Op, MarkovProduct, frozenset)
def sharded_reduce_markov_product(interp, op, arg, reduced_vars):
    interp.note(reduced_vars, arg)
    value = _evaluated(interp, arg)
    return None if value is arg else value.reduce(op, reduced_vars)


@Sharded.register(Contraction, object, object, frozenset, tuple)
def sharded_contraction_markov_product(interp, red_op, bin_op, reduced_vars, terms):
    values = tuple(_evaluated(interp, t) for t in terms)
    if all(v is t for v, t in zip(values, terms)):
        return None
    return Contraction(red_op, bin_op, reduced_vars, values)


# Any other reduction declines; its names are recorded for the check on leaving the block.
@Sharded.register(Reduce, Op, Funsor, frozenset)
def sharded_reduce_funsor_seen(interp, op, arg, reduced_vars):
    interp.note(reduced_vars, arg)


# E_m[f] with N particles of a sharded sample input = the N one-particle estimates, each with
# its own key, split over the devices (no collective until the estimate is reduced).
@Sharded.register(Integrate, Funsor, Funsor, frozenset)
def sharded_integrate_particles(interp, log_measure, integrand, reduced_vars):
    interp.note(reduced_vars, log_measure, integrand)
    if not interp.particles:
        return None
    return one_particle_each(interp, log_measure, integrand, reduced_vars)
