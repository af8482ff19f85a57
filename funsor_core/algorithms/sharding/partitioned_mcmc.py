"""Synchronously partitioned MCMC over a device mesh (Singh 2014, ch. 4, Algorithm 4.1).

Each round: PARTITION the variables (``partitions``: one of ``R`` partitionings fixed before
sampling, in turn), SAMPLE every partition in parallel, COMBINE by concatenation. A partition
updates only its *active* variables, those whose Markov blanket lies inside it (ch. 4.1.1),
by the blocked sweep of ``loopy.mcmc`` (colour after colour, Gibbs or Metropolis-Hastings).
The factors an active variable reads are all local to its partition, so the partitions'
updates touch disjoint factor sets: the round equals the blocked sweep restricted to the
active variables, in any order of the partitions, and each colour's update is a Gibbs (or
MH) step of variables independent given the rest. Every round therefore leaves the exact
distribution invariant, for any partitioning chosen independently of the state (ch. 4.3.2).

The partitions are a batch sharded over a mesh axis: the ``P`` partitions' index lists (an
array ``(P, colours, m)``) are split over the devices, each device sweeps its own partitions
with their own random numbers, and ONE all-gather per round brings every partition's active
values (``P x chains x a`` ints: each moved variable once) to every device, which
concatenates them into the state. A round's uniforms are one counter-based draw
``(P, ...)`` whose row ``p`` belongs to partition ``p``: jax's partitionable threefry lets
each device generate only its own rows (no communication), and row ``p`` is the same
whichever device holds it and however ``P`` is padded, so every mesh gives the samples of
one device with the same key. Without a mesh the same program runs the
partitions as a batch on one device, on any backend.

Example:
    >>> f = fc.Tensor(np.log(np.array([[3.0, 1.0], [1.0, 3.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> s = partitioned_mcmc([f], 100, num_partitions=1, num_chains=50, rng_key=0)
    >>> bool(abs((s["a"].data == s["b"].data).mean() - 0.75) < 0.05)
    True
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
from funsor_core.algorithms.loopy.mcmc import KERNELS, SamplerPlan
from funsor_core.algorithms.loopy.runners import cached_plan
from funsor_core.algorithms.sharding.partitions import PartitionPlan, make_partitions
from funsor_core.sampling.keys import KeyStream

__all__ = ["partitioned_mcmc", "PartitionedSampler"]

_NO_SPMD = ("partitioned_mcmc(mesh=...) splits the partitions over a device mesh, which the "
            "{backend} backend cannot do: build the factors from jax arrays "
            "(fc.set_backend('jax')), or leave mesh=None to run the partitions on one device")


class PartitionedSampler:
    """The arrays of one model's partitioned rounds: the sampler's edge tables (from
    ``loopy.mcmc.SamplerPlan``) and the partitions' index lists (``PartitionPlan``).

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> s = PartitionedSampler(FactorGraph.build([f]), np.zeros((1, 2), np.int64))
        >>> s.parts.local_vars.shape  # (R, P, colours, m)
        (1, 1, 2, 1)
    """

    def __init__(self, graph: FactorGraph, ids: np.ndarray, num_partitions: int | None = None,
                 multiple: int = 1, kernel: str = "gibbs") -> None:
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
        self.plan = SamplerPlan(graph)
        self.parts = PartitionPlan(graph, ids, num_partitions, multiple)
        self.kernel = kernel
        E = graph.num_edges
        # One more variable (index V, state 0) whose edges are all the padding edge E.
        self.var_edges = np.concatenate([graph.var_edges, np.full((1, graph.var_edges.shape[1]),
                                                                  E, np.int64)])
        self.sizes = np.array(list(graph.sizes) + [1], dtype=np.int64)
        self.ncol = self.parts.local_vars.shape[2]
        self.colour_of = [self.parts.colors == c for c in range(self.ncol)]

    def logits(self, flat, x, variables):
        """``(C, n, D)``: the log conditionals of ``variables`` ``(n,)`` (an index array,
        ``V`` for padding) given the states ``x`` ``(C, V)``, from their Markov blankets:
        ``sum_{a ∋ i} log psi_a(x_a[i := s])`` read from the flat tables (``loopy.mcmc``)."""
        plan, D = self.plan, self.plan.graph.D
        x_ext = ops.cat([x, ops.new_zeros(x, (x.shape[0], 1))], 1)
        edges = ops.new_array(x, self.var_edges)[variables]  # (n, deg)
        base = ops.new_array(x, plan.off)[edges]
        for m in range(plan.other_var.shape[1]):
            base = base + x_ext[:, ops.new_array(x, plan.other_var[:, m])[edges]] * \
                ops.new_array(x, plan.other_stride[:, m])[edges]
        steps = ops.new_array(x, plan.stride)[edges][..., None] * ops.new_array(x, np.arange(D))
        return ops.sum(flat[base[..., None] + steps], axis=2)

    def draw(self, logits, x, variables, u):
        """New states ``(C, n)`` of ``variables`` from ``logits`` and uniforms ``u``
        ``(C, n, D)`` (Gibbs by Gumbel-max) or ``(C, n, 2)`` (MH: a uniform proposal on
        the variable's states, accepted with ``min(1, p(x') / p(x))``)."""
        if self.kernel == "gibbs":
            return ops.argmax(logits - ops.log(-ops.log(ops.clamp(u, min=1e-300))), axis=-1)
        d = ops.astype(ops.new_array(x, self.sizes)[variables], "real")
        proposal = ops.astype(u[..., 0] * d, "int")  # floor: uniform on the d_i states
        states = ops.new_array(x, np.arange(logits.shape[-1]))
        cur = ops.cat([x, ops.new_zeros(x, (x.shape[0], 1))], 1)[:, variables]
        gain = (ops.sum(ops.where(states == proposal[..., None], logits, 0.0), axis=-1)
                - ops.sum(ops.where(states == cur[..., None], logits, 0.0), axis=-1))
        return ops.where(ops.log(u[..., 1]) < gain, proposal, cur)


def _sweeps(sampler, index, local_vars, act_vars, x, owner, slot, flat, u_all):
    """One device's part of a round: blocked sweeps of its partitions ``(Pb, ...)``
    (partition ``index * Pb + q`` is row ``q``) with their uniforms ``u_all`` ``(Pb, sweeps
    * colours, C, m, width)``, then its active values ``(Pb, C, a)``."""
    Pb, ncol, m = local_vars.shape
    C, width = x.shape[0], u_all.shape[-1]
    sweeps = u_all.shape[1] // ncol
    first = index * Pb
    mine = (owner >= first) & (owner < first + Pb)
    place = ops.clamp((owner - first) * m + slot, min=0, max=Pb * m - 1)
    for s in range(sweeps):
        for c in range(ncol):
            variables = ops.reshape(local_vars[:, c], (Pb * m,))
            u = ops.reshape(ops.permute(u_all[:, s * ncol + c], (1, 0, 2, 3)),
                            (C, Pb * m, width))
            new = sampler.draw(sampler.logits(flat, x, variables), x, variables, u)
            update = mine & ops.new_array(mine, sampler.colour_of[c])
            x = ops.where(update[None], new[:, place], x)
    x_ext = ops.cat([x, ops.new_zeros(x, (C, 1))], 1)
    return ops.permute(x_ext[:, act_vars], (1, 0, 2))


def _combine(x, stack, active, owner, act_slot, shape):
    # The state with every active variable's new value: stack (P, C, a) in partition order.
    P, C, a = shape
    flat = ops.reshape(ops.permute(stack, (1, 0, 2)), (C, P * a))
    return ops.where(active[None], flat[:, ops.clamp(owner, min=0) * a + act_slot], x)


def run_partitioned(sampler: PartitionedSampler, init, num_rounds: int, rng_key=None,
                    mesh=None, axes: tuple = ("x",), sweeps: int = 1):
    """``(num_rounds, C, V)``: the states after each partitioned round of ``C`` chains
    started at ``init`` ``(C, V)``; round ``r`` uses partitioning ``r % R``. With ``mesh``,
    the partitions are split over its ``axes`` (one all-gather per round).

    Example:
        >>> f = fc.Tensor(np.log(np.eye(2) + 1e-300), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> s = PartitionedSampler(FactorGraph.build([f]), np.zeros((1, 2), np.int64))
        >>> xs = run_partitioned(s, np.zeros((3, 2), np.int64), 4, rng_key=0)
        >>> bool((xs[..., 0] == xs[..., 1]).all())
        True
    """
    plan, parts = sampler.plan, sampler.parts
    module = backend_of_graph(plan.graph)
    flat = plan.flat_table()
    R, P = parts.local_vars.shape[:2]
    x0 = init if type(init) is type(flat) else ops.new_array(flat, np.asarray(init, np.int64))
    C = x0.shape[0]
    key = KeyStream(rng_key).next(flat)
    width = plan.graph.D if sampler.kernel == "gibbs" else 2
    shape = (P, sweeps * sampler.ncol, C, parts.local_vars.shape[-1], width)
    splits = module.SPLITS_RNG_KEYS and key is not None
    a = parts.act_vars.shape[-1]
    tables = [ops.new_array(x0, t) for t in (parts.local_vars, parts.act_vars, parts.owner,
                                              parts.slot, parts.act_slot)]
    active = ops.new_array(x0, parts.active)

    def local(index, lv, av, u, x, owner, slot, flat):
        return _sweeps(sampler, index, lv, av, x, owner, slot, flat, u)

    def body(x, xs):
        r, k = xs
        lv, av, owner, slot, act_slot = (t[r] for t in tables)
        # The round's uniforms, partition p's at row p: a counter-based draw, so row p does
        # not depend on P's padding, and sharded over the devices each makes its own rows.
        u = module.rand(shape, rng_key=k if splits else key)
        arrays = [lv, av, u, x, owner, slot, flat]
        if mesh is None:
            stack = local(0, *arrays)
        else:
            stack = module.shard_all_gather(mesh, local, lambda s: s, arrays,
                                            [0, 0, 0, None, None, None, None], axes)
            stack = ops.reshape(stack, (P, C, a))
        x = _combine(x, stack, active[r], owner, act_slot, (P, C, a))
        return x, x

    rounds = ops.new_array(x0, np.arange(num_rounds) % R)
    keys = ops.stack(module.split_key(key, num_rounds), 0) if splits else rounds
    return module.scan(body, x0, (rounds, keys))[1]


def partitioned_mcmc(factors, num_samples: int, mesh=None, axis="x", *,
                     num_partitions: int | None = None, partitions="neighborhood",
                     num_partitionings: int = 4, partition_seed: int = 0, sweeps: int = 1,
                     warmup: int = 0, num_chains: int = 1, thin: int = 1, rng_key=None,
                     kernel: str = "gibbs", init=None) -> Samples:
    """Synchronously partitioned MCMC (Singh 2014, ch. 4) of the model ``sum(factors)``,
    its partitions a batch sharded over the mesh axis ``axis`` (see the module docstring).

    Args:
        factors: discrete log-factor Tensors.
        num_samples, warmup, thin, num_chains, rng_key, init: as ``funsor_core.loopy.gibbs``;
            a round (re-partition, sweep, combine) per kept or dropped sample.
        mesh, axis: a ``jax.sharding.Mesh`` and the mesh axis (or tuple of axes) splitting
            the partitions; None: the partitions as a batch on one device (any backend).
        num_partitions: ``P`` (default: the devices along ``axis``, 1 without a mesh).
        partitions: ``"neighborhood"`` (breadth-first blocks, ch. 4.2.3), ``"random"``
            (ch. 4.2.1), or an int array ``(R, V)`` of partition ids per variable (in order
            of first appearance in ``factors``), used in turn.
        num_partitionings, partition_seed: ``R`` and the seed of the strategies.
        sweeps: blocked sweeps per partition between two combines.
        kernel: ``"gibbs"`` or ``"mh"``.

    Returns:
        ``Samples`` as ``gibbs`` returns them.

    Raises:
        ValueError: a variable is never active (no partitioning keeps its blanket with it).

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 3.0]])), {"a": fc.Bint[1], "b": fc.Bint[2]})
        >>> s = partitioned_mcmc([f], 100, num_chains=50, rng_key=0)
        >>> bool(abs(s["b"].data.mean() - 0.75) < 0.05)
        True
    """
    require_concrete("partitioned_mcmc", num_samples=num_samples, warmup=warmup,
                     num_chains=num_chains, thin=thin, sweeps=sweeps,
                     num_partitions=num_partitions, num_partitionings=num_partitionings)
    check_chain_options(num_samples, warmup, num_chains, thin)
    if not (isinstance(sweeps, (int, np.integer)) and sweeps >= 1):
        raise ValueError(f"partitioned_mcmc: sweeps must be an int >= 1, got {sweeps!r}")
    graph = FactorGraph.build(list(factors))
    require_values(graph, "partitioned_mcmc")
    axes = (axis,) if isinstance(axis, str) else tuple(axis)
    devices = _devices(graph, mesh, axes)
    parts = devices if num_partitions is None else num_partitions
    if not (isinstance(parts, (int, np.integer)) and parts >= 1):
        raise ValueError(f"partitioned_mcmc: num_partitions must be an int >= 1, got {parts!r}")
    ids = make_partitions(graph, parts, partitions, num_partitionings, partition_seed)
    sampler = PartitionedSampler(graph, ids, parts, devices, kernel)
    rounds = warmup + num_samples * thin
    if init is None:
        init = np.zeros((num_chains, len(graph.names)), np.int64)
    states = run_partitioned(sampler, init, rounds, rng_key, mesh, axes, sweeps)
    states = checked_states(cached_plan(graph, SamplerPlan), states, "partitioned_mcmc")
    return samples_of_states(graph, states[warmup::thin], num_samples, num_chains)


def _devices(graph: FactorGraph, mesh, axes: tuple) -> int:
    if mesh is None:
        return 1
    backend = backend_of_graph(graph)
    if not getattr(backend, "SHARDS", False):
        raise TypeError(_NO_SPMD.format(backend=backend.NAME))
    sizes = backend.mesh_sizes(mesh)
    missing = [a for a in axes if a not in sizes]
    if missing:
        raise ValueError(f"partitioned_mcmc: mesh axis {missing[0]!r} is not in the mesh, "
                         f"whose axes are {sizes}")
    return int(np.prod([sizes[a] for a in axes]))

