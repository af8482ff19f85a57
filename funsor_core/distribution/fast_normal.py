"""The fast construction path of the commonest ``Normal``: one real coordinate, ``value`` a
name or real Variable, ``loc`` a real Variable or a constant, ``scale`` a constant.

``Normal(x_prev, 1.0, x_curr)`` and a guide's ``Normal(loc, scale, value="x")`` built the
general way bind their arguments, convert them to funsors, infer the value's domain, check
backends and constraints, and dispatch to the exact rule, which calls ``normal_to_gaussian``:
about 100 us around 10-40 us of array work. Here the same checks are made on the arguments
as given, for these kinds only (a shape, a dtype and a backend type, the scale's sign on
concrete values), and the rule's array program (``normal_to_gaussian``) is asked through the
one guard, ``fast_path``: under ``lazy``, a tape, a user rule ahead of the built-in one or the
debug log, it answers None and the general path runs. So does anything unusual (a traced
scale, mixed dtypes or backends, a bad scale), which then gets the general path's errors.

Example:
    >>> from funsor_core.distribution import Normal
    >>> x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    >>> d = fast_normal(Normal, (x, 0.5, y), {})
    >>> sorted(d.inputs), round(d(x=1.0, y=1.5).item(), 6)  # scipy.stats.norm(1, .5).logpdf
    (['x', 'y'], -0.725791)
    >>> fast_normal(Normal, (x, -1.0, y), {}) is None  # the general path raises for it
    True
"""

from __future__ import annotations

from typing import Any

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.distribution.array_math import concrete
from funsor_core.distribution.constraints import checked_upstream
from funsor_core.domains import Real
from funsor_core.engine.fast_path import fast_path
from funsor_core.terms.base import Funsor, Number, Variable

__all__ = ["fast_normal"]

_KIND = "normal_build"  # the array program the exact Normal rules register


def fast_normal(cls: type, args: tuple, kwargs: dict) -> Funsor | None:
    """``cls(*args, **kwargs)`` (a ``Normal``) built directly, or None for the general path.

    Example:
        >>> from funsor_core.distribution import Normal
        >>> d = fast_normal(Normal, (np.array(0.0), np.array(2.0)), {"value": "x"})
        >>> type(d).__name__, round(d(x=1.0).item(), 6)  # scipy.stats.norm(0, 2).logpdf(1)
        ('Contraction', -1.737086)
    """
    parsed = _parse(args, kwargs)
    if parsed is None:
        return _converted_normal(cls, args, kwargs)
    loc, scale, value = parsed
    proto = _prototype(loc, scale)
    if proto is False:
        return None
    key = (cls, _kind(loc, proto), Tensor if proto is not None else Number, Variable)
    build = fast_path(key, _KIND)
    if build is None:
        return None
    # normal_to_gaussian takes a Python float scale as it is (no Number term made)
    sd = float(scale.data if type(scale) is Number else scale) if proto is None else None
    return build(_funsor(loc, proto), _funsor(scale, proto) if sd is None else sd,
                 value if type(value) is Variable else Variable(value, Real))


def _converted_normal(cls: type, args: tuple, kwargs: dict) -> Funsor | None:
    """``Normal(loc, scale)`` of a converted torch object (``convert``): Tensors of one real
    coordinate and the same inputs, of one backend and dtype, whose scale torch checked
    (``checked_upstream``), and a free value; else None. Nothing is left to check here."""
    if kwargs or len(args) != 2 or "scale" not in checked_upstream(cls):
        return None
    loc, scale = args
    if type(loc) is not Tensor or type(scale) is not Tensor or loc._ikey != scale._ikey:
        return None
    if loc.output is not Real or scale.output is not Real or "value" in loc.inputs:
        return None
    a, b = loc.data, scale.data
    if type(a) is not type(b) or a.dtype != b.dtype or not ops.is_floating(a):
        return None
    build = fast_path((cls, Tensor, Tensor, Variable), _KIND)
    return None if build is None else build(loc, scale, Variable("value", Real))


def _parse(args: tuple, kwargs: dict) -> tuple | None:
    """``(loc, scale, value)`` when they are of the kinds this path takes, else None."""
    if kwargs:
        if len(args) != 2 or len(kwargs) != 1 or "value" not in kwargs:
            return None
        (loc, scale), value = args, kwargs["value"]
    elif len(args) == 3:
        loc, scale, value = args
    elif len(args) == 2:
        (loc, scale), value = args, "value"
    else:
        return None
    if type(value) is str:
        name = value
    elif type(value) is Variable and value.output is Real:
        name = value.name
    else:
        return None
    if type(loc) is Variable:
        if loc.output is not Real or loc.name == name:
            return None
    elif not _constant(loc) or _nan_number(loc):
        return None  # the general path raises for a NaN loc, naming it
    if not _constant(scale) or not _positive(scale):
        return None
    return loc, scale, value


def _constant(x: Any) -> bool:
    # A Python real, a real Number, a 0-d floating array or a Tensor of one (no inputs).
    typ = type(x)
    if typ is float or (typ is int) or typ is Number:
        return typ is not Number or x.output is Real
    if typ is Tensor:
        return not x.inputs and x.output is Real and ops.is_floating(x.data)
    return is_array(x) and not x.shape and ops.is_floating(x)


def _nan_number(x: Any) -> bool:
    # A Python number (or Number) that is NaN; arrays are not checked here (see issue #28:
    # a comparison and its bool cost more than 3% of this path).
    typ = type(x)
    value = x if typ is float else x.data if typ is Number else 0.0
    return value != value


def _positive(scale: Any) -> bool:
    """Whether the scale is known positive now (a traced array is not known: None path)."""
    if type(scale) in (float, int, Number):
        value = float(scale.data if type(scale) is Number else scale)
        return value > 0.0 and value == value
    data = scale.data if type(scale) is Tensor else scale
    if not concrete(data):
        return False
    # A 0-d concrete array (``_constant``): its one value as a Python number, which also
    # works for a closed-over jax array under jax.jit, where ``data > 0`` would be staged;
    # an array comparison and its bool cost ten times more. False for NaN.
    return data.item() > 0


def _prototype(loc: Any, scale: Any) -> Any:
    """The floating array that Python numbers follow (the general path's prototype), None
    when there is none, False when the two arrays differ in backend or dtype (both were
    checked by ``_constant``: a Tensor, a number or an array)."""
    a, b = (x.data if type(x) is Tensor else x if type(x) not in _PLAIN else None
            for x in (loc, scale))
    if a is None or b is None:
        return b if a is None else a
    return a if type(a) is type(b) and a.dtype == b.dtype else False


_PLAIN = frozenset({float, int, Number, Variable})  # the arguments that hold no array


def _kind(loc: Any, proto: Any) -> type:
    # The funsor class the general path makes of ``loc`` (its dispatch type).
    if type(loc) is Variable:
        return Variable
    return Tensor if proto is not None else Number


def _funsor(x: Any, proto: Any) -> Funsor:
    """``x`` as the general path converts it (``base._param_funsor``), without its checks,
    already made here."""
    typ = type(x)
    if typ is Variable or typ is Tensor:
        return x
    if proto is None:
        return x if typ is Number else Number(float(x))
    if is_array(x):
        return Tensor.make(x, {}, ikey=(), output=Real)
    return Tensor.make(ops.new_full(proto, (), float(x.data if typ is Number else x)), {},
                       ikey=(), output=Real)

