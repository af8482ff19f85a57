"""Distribution objects that wrap another one, converted by what they hold (duck typing).

Libraries built on ``torch.distributions`` (Pyro) add wrappers that are no family of their
own: a mask (``base_dist`` and ``_mask``), an expansion (``base_dist`` and
``_expanded_sizes``), a point mass (``v``, ``log_density`` and ``event_dim``). funsor-core
imports none of those libraries: each wrapper is recognised by the attributes it carries, and
converted into the funsor of the same log density:

- masked: ``mask * base`` where ``mask`` is 1.0 where the site counts and 0.0 where it is
  masked (so the masked log density is 0 there, as Pyro's ``scale_and_mask`` gives);
- expanded: the base expanded by its own ``expand`` (families broadcast their parameters),
  else the base plus a zero over the new named batch dims;
- point mass: the ``Delta`` family ``Delta(v, log_density)``; under ``r`` reinterpreted dims
  its log density is the sum of ``log_density`` over them (one point mass per entry).

Example:
    >>> import torch
    >>> class Masked(torch.distributions.Distribution):  # a wrapper by its attributes
    ...     def __init__(self, base_dist, mask):
    ...         self.base_dist, self._mask = base_dist, mask
    ...         super().__init__(base_dist.batch_shape, validate_args=False)
    >>> base = torch.distributions.Poisson(torch.tensor([1.0, 2.0]))
    >>> d = Masked(base, torch.tensor([True, False]))
    >>> f = fc.to_funsor(d, fc.Real, {-1: "i"})
    >>> f(value=1.0).data
    tensor([-1.0000, 0.0000])
"""

from __future__ import annotations

from collections.abc import Callable

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.distribution.registry import FAMILIES
from funsor_core.domains import Bint, Real, Reals
from funsor_core.terms.base import to_funsor

__all__ = ["wrapper_to_funsor"]

# convert(raw, dim_to_name, reinterpreted) -> funsor: the converter of the wrapped object.
Convert = Callable[[object, dict, int], object]


def wrapper_to_funsor(raw, dim_to_name: dict, reinterpreted: int, convert: Convert):
    """The funsor of a wrapper distribution ``raw`` (None if ``raw`` is no wrapper).

    ``reinterpreted`` counts the rightmost batch dims of ``raw`` that an enclosing
    ``Independent`` sums (they become batch output dims); ``convert`` converts what
    ``raw`` wraps.

    Example:
        A point mass at 0.5 and 1.5 (batch dim ``i``): its log density is 0 at its point,
        -inf elsewhere; an object that is no wrapper gives None.

        >>> class Point:  # recognised by its attributes
        ...     v, log_density, event_dim = np.array([0.5, 1.5]), 0.0, 0
        ...     batch_shape, event_shape = (2,), ()
        >>> f = wrapper_to_funsor(Point(), {-1: "i"}, 0, convert=None)
        >>> f(value=fc.Tensor(np.array([0.5, 0.0]), {"i": fc.Bint[2]})).data
        array([  0., -inf])
        >>> wrapper_to_funsor(object(), {}, 0, convert=None) is None
        True
    """
    if hasattr(raw, "base_dist") and hasattr(raw, "_mask"):
        return _masked(raw, dim_to_name, reinterpreted, convert)
    if hasattr(raw, "base_dist") and hasattr(raw, "_expanded_sizes"):
        return _expanded(raw, dim_to_name, reinterpreted, convert)
    if all(hasattr(raw, a) for a in ("v", "log_density", "event_dim")):
        return _point_mass(raw, dim_to_name, reinterpreted)
    return None


def _masked(raw, dim_to_name, reinterpreted, convert):
    base = convert(raw.base_dist, dim_to_name, reinterpreted)
    mask = raw._mask
    if isinstance(mask, bool):  # Pyro keeps a Python bool as it is
        return base if mask else 0.0 * base
    mask = ops.astype(mask, "real")
    if reinterpreted:
        mask = _outer_mask(mask, tuple(raw.batch_shape), reinterpreted)
    return to_funsor(mask, Real, dim_to_name) * base


def _outer_mask(mask, batch: tuple, reinterpreted: int):
    """The mask over the outer batch dims, when it is constant over the ``reinterpreted``
    rightmost ones (an Independent sums those: a mask varying inside an event is no factor
    on the sum)."""
    outer = len(batch) - reinterpreted
    shape = (1,) * (len(batch) - len(mask.shape)) + tuple(mask.shape)
    mask = ops.reshape(mask, shape)
    inner = tuple(range(outer, len(batch)))
    if any(shape[d] != 1 for d in inner):
        # Pyro stores masks expanded to the batch shape, so the shape alone rarely decides;
        # the values do (distribution objects hold concrete torch arrays).
        top = ops.amax(mask, inner)
        if not bool(ops.all(ops.amin(mask, inner) == top)):
            raise NotImplementedError(
                f"a mask varies over the {reinterpreted} rightmost batch dims of {batch} that "
                "an enclosing Independent sums: no funsor form here; mask whole events")
        return top
    return ops.reshape(mask, shape[:outer])


def _expanded(raw, dim_to_name, reinterpreted, convert):
    try:
        expanded = raw.base_dist.expand(raw.batch_shape)
    except NotImplementedError:  # torch's default: the base cannot expand itself
        expanded = raw
    if type(expanded) is not type(raw):  # the base broadcast its own parameters
        return convert(expanded, dim_to_name, reinterpreted)
    if reinterpreted:
        raise NotImplementedError(f"an Independent of {type(raw).__name__} whose base does "
                                  "not expand itself has no funsor form here")
    # The same log density at every new batch entry: the base plus a zero over the new dims.
    result = convert(raw.base_dist, dim_to_name, 0)
    batch = tuple(raw.batch_shape)
    proto = _any_array(raw.base_dist)
    for d, name in dim_to_name.items():
        if -len(batch) <= d < 0 and name not in result.inputs and batch[d] != 1:
            result = result + Tensor(ops.new_zeros(proto, (batch[d],)), {name: Bint[batch[d]]})
    return result


def _any_array(dist):
    # An array the distribution (or what it wraps) holds: the type and device of new zeros.
    for value in vars(dist).values():
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return value
    if hasattr(dist, "base_dist"):
        return _any_array(dist.base_dist)
    raise NotImplementedError(f"{type(dist).__name__} holds no array to take a type from")


def _point_mass(raw, dim_to_name, reinterpreted):
    delta = FAMILIES["Delta"]
    batch = tuple(raw.batch_shape)
    event = tuple(raw.event_shape)
    out_batch = batch[len(batch) - reinterpreted:]
    v = to_funsor(raw.v, Reals[out_batch + event], dim_to_name)
    log_density = raw.log_density
    if reinterpreted:
        # Independent(Delta, r): one point mass per reinterpreted entry, so the masses multiply
        # and the log densities add over those dims.
        log_density = ops.expand(log_density, batch)
        log_density = ops.sum(log_density, tuple(range(len(batch) - reinterpreted, len(batch))))
    if isinstance(log_density, (int, float)):
        return delta(v, float(log_density))
    return delta(v, to_funsor(log_density, Real, dim_to_name))
