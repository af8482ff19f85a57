"""SPMD glue of the jax backend for ``funsor_core.algorithms.sharding``: a function of local
blocks run on every device of a ``jax.sharding.Mesh`` by ``jax.shard_map``, followed by ONE
collective (an all-reduce, or an all-gather of one small summary per device); and the
collectives of a compiled program, read from its HLO. ``backends.jax`` re-exports them, so
the core finds them on the backend module and never imports jax.

Example:
    >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    >>> float(shard_all_reduce(mesh, lambda i, a: a.sum(0), [jnp.arange(4.0)], [0], ("x",),
    ...                        ops.add))
    6.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np  # noqa: F401  (the doctests use it)
from jax.sharding import NamedSharding, PartitionSpec

from funsor_core import ops

__all__ = ["SHARDS", "mesh_sizes", "shard_all_reduce", "shard_all_gather", "shard_per_key",
           "compiled_collectives", "hlo_collectives"]

# This backend runs a program over a device mesh (``jax.shard_map``, jax >= 0.6 spells it
# ``jax.shard_map``; older jax had only ``jax.experimental.shard_map.shard_map``).
SHARDS = True
_shard_map = getattr(jax, "shard_map", None)
if _shard_map is None:  # pragma: no cover  (jax < 0.6)
    from jax.experimental.shard_map import shard_map as _shard_map

# The all-reduce of each reduction op that XLA has one for.
_ALL_REDUCE = {ops.add: jax.lax.psum, ops.max: jax.lax.pmax, ops.min: jax.lax.pmin}
# HLO instructions that move data between devices.
# (A result is one shape, or a tuple of them where XLA combined several collectives into one.)
_COLLECTIVE = re.compile(r"=\s*(\([^)]*\)|\S+)\s+(all-reduce|all-gather|reduce-scatter|"
                         r"all-to-all|collective-permute|collective-broadcast)(?:-start)?\(")


def mesh_sizes(mesh) -> dict:
    """``{axis name: number of devices}`` of a ``jax.sharding.Mesh``.

    Example:
        >>> mesh_sizes(jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",)))
        {'x': 1}
    """
    if not isinstance(mesh, jax.sharding.Mesh):
        raise TypeError(f"sharded(mesh, ...) needs a jax.sharding.Mesh, got {type(mesh).__name__}")
    return dict(mesh.shape)


def _split(mesh, fn: Callable, arrays: Sequence, dims: Sequence, axes) -> tuple:
    # ``fn(index, *blocks)`` on each device, the arrays (zero-padded along a split dim to
    # ``P * ceil(n / P)`` where the devices do not divide ``n``; ``fn`` masks the padding,
    # knowing ``index``), the in_specs and the mesh axes of all the splits. One split:
    # ``axes`` a tuple of mesh axis names, ``dims[i]`` the dim of array ``i`` it splits (None:
    # replicated), ``index`` the device's place along ``axes``. Several (one per sharded
    # plate): ``axes`` a list of such tuples, ``dims[i]`` a tuple of one dim (or None) per
    # split, ``index`` a tuple of places. A padded array is first constrained to be
    # replicated: left free, XLA's partitioner may split it over part of the mesh and then
    # reshuffle the padded blocks between devices (a collective-permute on a 4 x 2 mesh).
    several = not (axes and isinstance(axes[0], str))
    groups = list(axes) if several else [tuple(axes)]
    counts = [math.prod(mesh.shape[a] for a in g) for g in groups]
    specs, padded = [], []
    for x, ds in zip(arrays, dims):
        ds = tuple(ds) if several else (ds,)
        spec, pad = [None] * x.ndim, [(0, 0)] * x.ndim
        for group, count, d in zip(groups, counts, ds):
            if d is not None:
                spec[d] = group
                pad[d] = (0, -x.shape[d] % count)
        if any(p[1] for p in pad):  # padded from a replicated copy, sliced on each device
            whole = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec()))
            x = jnp.pad(whole, pad)
        specs.append(PartitionSpec(*spec))
        padded.append(x)

    def local(*blocks):
        index = tuple(jax.lax.axis_index(g) for g in groups)
        return fn(index if several else index[0], *blocks)

    return local, tuple(specs), padded, tuple(a for g in groups for a in g)


def shard_all_reduce(mesh, fn: Callable, arrays: Sequence, dims: Sequence, axes: tuple,
                     op) -> object:
    """``op``-reduce over the devices of the mesh ``axes`` of ``fn(index, *blocks)``: each
    device runs ``fn`` on its blocks of ``arrays`` (dim ``dims[i]`` of array ``i`` split
    into ``ceil(n / P)``-long blocks, the last ones padded with zeros; None: the whole
    array) and its ``index`` along ``axes``, then one all-reduce (``psum``, ``pmax``,
    ``pmin``); the result is the same on every device. Several splits (sharded plates): a
    list of ``axes`` tuples, ``dims[i]`` a tuple per array and ``index`` a tuple; the
    all-reduce runs over all their axes at once.

    Example:
        >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
        >>> float(shard_all_reduce(mesh, lambda i, a: a.max(0), [jnp.arange(4.0)], [0],
        ...                        ("x",), ops.max))
        3.0
    """
    reduce = _ALL_REDUCE[op]
    local, specs, arrays, axes = _split(mesh, fn, arrays, dims, axes)
    return _shard_map(lambda *xs: reduce(local(*xs), axes), mesh=mesh, in_specs=specs,
                      out_specs=PartitionSpec())(*arrays)


def shard_all_gather(mesh, fn: Callable, combine: Callable, arrays: Sequence,
                     dims: Sequence, axes: tuple) -> object:
    """``combine(stack of fn(index, *blocks) over the devices of the mesh axes)``: the blocks
    as in ``shard_all_reduce``; ONE all-gather stacks the results along a new leading axis
    (in mesh order), and every device combines the stack (an invariant gather: the backward
    pass needs no second collective).

    Example:
        >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
        >>> float(shard_all_gather(mesh, lambda i, a: a.sum(0), lambda s: s.sum(0),
        ...                        [jnp.arange(4.0)], [0], ("x",)))
        6.0
    """
    local, specs, arrays, axes = _split(mesh, fn, arrays, dims, axes)

    def gathered(*xs):
        return combine(jax.lax.all_gather(local(*xs), axes, to="invarying"))

    return _shard_map(gathered, mesh=mesh, in_specs=specs, out_specs=PartitionSpec())(*arrays)


def shard_per_key(mesh, fn: Callable, key, count: int, operands, axes: tuple,
                  indexed: bool = False) -> object:
    """``stack([fn(fold_in(key, i), operands) for i < count])`` with the ``i`` split over the
    devices of the mesh ``axes``: each device makes the keys of its own block of ``i`` (no
    communication; padded where the devices do not divide ``count``, then dropped) and
    ``vmap``s ``fn`` over them, ``operands`` (a pytree: funsor terms are) replicated. The
    result ``(count, ...)`` stays split along its first axis, so what reduces it afterwards
    runs where it lies. ``indexed``: ``fn(fold_in(key, i), i, operands)`` (a padded ``i``
    clamped to ``count - 1``, so that it indexes the operands' rows).

    Example:
        >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
        >>> key = jax.random.PRNGKey(0)
        >>> out = shard_per_key(mesh, lambda k, a: k + a, key, 3, 1, ("x",))
        >>> bool((out[2] == jax.random.fold_in(key, 2) + 1).all())
        True
    """
    shards = math.prod(mesh.shape[a] for a in axes)
    block = -(-count // shards)
    leaves, tree = jax.tree_util.tree_flatten(operands)

    def local(key, *leaves):
        args = jax.tree_util.tree_unflatten(tree, leaves)
        first = jax.lax.axis_index(axes) * block
        index = first + jnp.arange(block)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(index)
        if indexed:
            return jax.vmap(lambda k, i: fn(k, i, args))(keys, jnp.minimum(index, count - 1))
        return jax.vmap(lambda k: fn(k, args))(keys)

    # jit: run eagerly, a shard_map dispatches its body op by op (a scan of 200 Gibbs rounds:
    # 35 s instead of one compile of ~1.5 s); inside the user's jit it is inlined.
    out = jax.jit(_shard_map(local, mesh=mesh, in_specs=(PartitionSpec(),) * (1 + len(leaves)),
                             out_specs=PartitionSpec(axes)))(key, *leaves)
    return out[:count] if block * shards != count else out


def compiled_collectives(fn: Callable, *args) -> list[tuple[str, str]]:
    """``[(kind, result shape)]`` of the collectives in the compiled program of
    ``jax.jit(fn)(*args)``, read from its HLO text (``all-reduce``, ``all-gather``, ...).

    Example:
        >>> compiled_collectives(lambda x: x + 1, jnp.zeros(2))
        []
    """
    return hlo_collectives(jax.jit(fn).lower(*args).compile().as_text())


def hlo_collectives(text: str) -> list[tuple[str, str]]:
    """``[(kind, result shape)]`` of the collectives in the HLO ``text`` of a compiled program
    (``jax.jit(f).lower(...).compile().as_text()``).

    Example:
        >>> hlo_collectives("%x = f64[8,3]{1,0} all-gather(%y), dimensions={0}")
        [('all-gather', 'f64[8,3]{1,0}')]
        >>> hlo_collectives("%z = (f64[], f64[3]{0}) all-reduce(%a, %b), to_apply=%add")
        [('all-reduce', '(f64[], f64[3]{0})')]
    """
    return [(m.group(2), m.group(1)) for m in _COLLECTIVE.finditer(text)]

