"""Monte Carlo particles sharded over a mesh axis: ``sharded(mesh, particles={"particle":
"x"})`` entered inside a Monte Carlo interpretation (``MonteCarlo(rng_key=key,
particle=Bint[N])``) computes an ``Integrate`` that would be estimated with ``N`` particles
as ``N`` one-particle estimates, split over the devices of the mesh axis.

Particle ``i`` is drawn with its own key, the Monte Carlo interpretation's next key folded
with ``i`` (``jax.random.fold_in``, made on the device that draws it), by a fresh instance
of its kind with no sample inputs (``type(mc)(rng_key=k_i)``); each device evaluates its
block of particles (``vmap`` over its keys) and nothing is communicated: the estimate, a
Tensor over ``particle``, stays split along it, and the reduction that averages it
afterwards (``.reduce(ops.mean, "particle")``) is one all-reduce of the reduced size.
Because particle ``i``'s key does not depend on the devices, every mesh (one device
included) gives the same estimate with the same key. (These are not the numbers of
``MonteCarlo(particle=Bint[N])`` without ``sharded``, which draws all particles from one
key; they are equally distributed.)

Example:
    >>> one_particle_each(None, None, None, frozenset()) is None  # no Monte Carlo below
    True
"""

from __future__ import annotations

from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.terms.integrate import Integrate

__all__ = ["one_particle_each"]


class _NotLocal(Exception):
    """A particle's estimate that is not a Tensor (still lazy): left to the rest."""


def one_particle_each(interp, log_measure, integrand, reduced_vars: frozenset):
    """``Integrate(log_measure, integrand, reduced_vars)`` estimated particle by particle over
    the mesh of ``interp`` (a ``Sharded``), whose fallback draws (see the module docstring);
    None where it does not apply: no sharded sample input, the terms already drawn (they
    have it), or an estimate that is not a Tensor.

    Example:
        >>> one_particle_each(None, fc.Number(0.0), fc.Number(1.0), frozenset()) is None
        True
    """
    mc = getattr(interp, "base", None)
    inputs = getattr(mc, "sample_inputs", None)
    if inputs and not set(interp.particles) & set(inputs):
        # a misspelt name would otherwise draw every particle on one device, silently
        raise ValueError(f"sharded(particles={dict(interp.particles)}): the Monte Carlo "
                         f"interpretation entered outside has the sample inputs {inputs}, "
                         "none of them named in particles=")
    if not inputs or len(inputs) != 1:
        return None
    (name, domain), = inputs.items()
    if name not in interp.particles or name in log_measure.inputs or name in integrand.inputs:
        return None
    key = mc.keys.next(log_measure)
    backend, _ = interp.spmd(key, [name])
    if key is None or not backend.SPLITS_RNG_KEYS:
        return None
    out: list = []

    def one(k, terms):
        with mc.rest():  # below the Monte Carlo kind (and sharded): nothing re-sharded
            with type(mc)(rng_key=k):
                result = Integrate(*terms, reduced_vars)
        if type(result) is not Tensor:
            raise _NotLocal
        out.append(result)
        return result.data

    try:
        data = backend.shard_per_key(interp.mesh, one, key, domain.size,
                                     (log_measure, integrand), interp.mesh_axes(name))
    except _NotLocal:
        return None
    return Tensor(data, {name: Bint[domain.size], **out[0].inputs}, out[0].dtype)
