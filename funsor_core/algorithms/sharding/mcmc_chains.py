"""Independent MCMC chains of the loopy-graph sampler split over a mesh axis.

``num_chains`` chains of blocked Gibbs or Metropolis-Hastings (``loopy.mcmc``) share nothing
but the model, so they need no communication at all: each device runs its own block of
chains (``ceil(C / P)`` of them, the last devices' blocks padded and the padding dropped),
``vmap``-ed over them, and the samples stay split along the chain axis where they were
drawn (the compiled program holds no collective until the user reduces them).

Chain ``c`` has its own key, made on the device that runs it: the sampler's key (the one
``run_chains`` would draw from ``rng_key``) folded with ``c``. It therefore does not depend
on the devices, and chain ``c`` is exactly ``run_chains(plan, init[c:c + 1], rounds,
rng_key=fold_in(key, c))`` on one device: every mesh, one device included, gives the same
samples with the same key. (They are not the samples of ``gibbs(..., num_chains=C)``, whose
chains share one draw per round; they are equally distributed.)

Example:
    >>> _chain_order(np.zeros((3, 5, 1, 2))).shape  # (C, rounds, 1, V) -> (rounds, C, V)
    (5, 3, 2)
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.api import (
    Samples,
    check_chain_options,
    checked_states,
    require_concrete,
    samples_of_states,
)
from funsor_core.algorithms.loopy.graph import FactorGraph, backend_of_graph, require_values
from funsor_core.algorithms.loopy.mcmc import KERNELS, SamplerPlan, checked_proposal, sweep_rounds
from funsor_core.algorithms.loopy.runners import cached_plan
from funsor_core.sampling.keys import KeyStream

__all__ = ["sharded_chains"]

_NO_SPMD = ("sharded_chains(...) splits the chains over a device mesh, which the {backend} "
            "backend cannot do: build the factors from jax arrays (fc.set_backend('jax')), or "
            "run funsor_core.loopy.gibbs / mh on one device")
_NO_KEY = ("sharded_chains(...) needs rng_key (an int seed or a jax key): each chain's key is "
           "that key folded with the chain's index")


def _chain_order(states):
    # (C, rounds, 1, V) per chain -> (rounds, C, V), as run_chains returns them.
    return ops.permute(states[:, :, 0], (1, 0, 2))


def _mesh_axes(graph: FactorGraph, mesh, axis) -> tuple:
    backend = backend_of_graph(graph)
    if not getattr(backend, "SHARDS", False):
        raise TypeError(_NO_SPMD.format(backend=backend.NAME))
    axes = (axis,) if isinstance(axis, str) else tuple(axis)
    sizes = backend.mesh_sizes(mesh)
    missing = [a for a in axes if a not in sizes]
    if missing:
        raise ValueError(f"sharded_chains: mesh axis {missing[0]!r} is not in the mesh, whose "
                         f"axes are {sizes}; name one of them as axis=")
    return backend, axes


def sharded_chains(factors, num_samples: int, mesh, axis="x", *, kernel: str = "gibbs",
                   warmup: int = 0, num_chains: int = 1, thin: int = 1, rng_key=None,
                   temperature=1.0, init=None, proposal=None) -> Samples:
    """``num_chains`` independent chains of blocked MCMC on the model ``sum(factors)``, split
    over the mesh axis ``axis`` (see the module docstring): chain ``c`` with its own key, on
    the device that holds it, with no communication.

    Args:
        factors: discrete log-factor Tensors of jax arrays.
        num_samples, warmup, thin, temperature, init, proposal: as ``funsor_core.loopy.mh``.
        mesh, axis: a ``jax.sharding.Mesh`` and the mesh axis (or tuple of axes) splitting
            the chains.
        kernel: ``"gibbs"`` or ``"mh"``.
        num_chains: ``C``; need not divide by the devices.
        rng_key: an int seed or a jax key (required).

    Returns:
        ``Samples`` as ``gibbs`` returns them (over ``particle``, and ``chain`` when ``C > 1``),
        their arrays split over the devices along the chains.

    Raises:
        TypeError: the factors' backend cannot split arrays over a mesh (not jax).
        ValueError: no ``rng_key``, an axis the mesh lacks, an ``init`` not ``(C, V)``.

    Example:
        (A run on 8 devices, checked against one: ``examples/sharded.py``; a compile costs
        ~1 s, too long for a doctest. The factors must be jax arrays:)

        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> sharded_chains([f], 100, "a mesh", num_chains=64, rng_key=0)
        Traceback (most recent call last):
        ...
        TypeError: sharded_chains(...) splits the chains over a device mesh, which the numpy ...
    """
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
    require_concrete("sharded_chains", num_samples=num_samples, warmup=warmup,
                     num_chains=num_chains, thin=thin, temperature=temperature)
    check_chain_options(num_samples, warmup, num_chains, thin)
    if rng_key is None:
        raise ValueError(_NO_KEY)
    plan = cached_plan(FactorGraph.build(list(factors)), SamplerPlan)
    graph = plan.graph
    require_values(graph, "sharded_chains")
    backend, axes = _mesh_axes(graph, mesh, axis)
    rounds = warmup + num_samples * thin
    temps = (np.full(rounds, float(temperature)) if np.ndim(temperature) == 0
             else np.asarray(temperature, float))
    if temps.shape != (rounds,):
        raise ValueError(f"temperature: one per round ({rounds}), got shape {temps.shape}")
    flat = plan.flat_table()
    if init is None:
        init = np.zeros((num_chains, len(graph.names)), np.int64)
    x0 = init if type(init) is type(flat) else ops.new_array(flat, np.asarray(init, np.int64))
    if tuple(x0.shape) != (num_chains, len(graph.names)):
        raise ValueError(f"init: one row of states per chain, (num_chains, V) = "
                         f"({num_chains}, {len(graph.names)}); got shape {tuple(x0.shape)}")
    log_q = None if proposal is None else checked_proposal(plan, proposal, flat)
    key = KeyStream(rng_key).next(flat)

    def one_chain(k, c, operands):
        flat, x0, inv_t, log_q = operands
        start = ops.astype(x0[c][None], "int")
        return sweep_rounds(plan, flat, start, inv_t, KeyStream(k).next(flat), kernel, True,
                            log_q)

    operands = (flat, x0, ops.new_array(flat, 1.0 / temps), log_q)
    states = _chain_order(backend.shard_per_key(mesh, one_chain, key, num_chains, operands,
                                                axes, indexed=True))
    states = checked_states(plan, states, "sharded_chains", proposal)
    return samples_of_states(graph, states[warmup::thin], num_samples, num_chains, rounds)

