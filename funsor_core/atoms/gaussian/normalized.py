"""A Gaussian sum minus its own log mass, normalized in log space (issue #28).

``q = f - f.reduce(ops.logaddexp, reals)`` with ``f = g + t`` (one Gaussian ``g`` over the
reals, a constant ``t``) is ``g - log ∫ exp g``: its mass is 1 by construction. Computed as
``t - L`` with ``L = fl(L_g + t)`` (``L_g = log ∫ exp g``), the sum is rounded first: in float32
a ``|t|`` of 1e9 (ulp 64) swallows an ``L_g`` of 1, and ``Integrate(q, ...)`` weighs by
``exp(L_g + t - L) = exp(L_g)``, not 1; at ``|t| ~ 1e12`` the error is ``exp(±1e5)``, an inf
(refused by ``check_mass``) or a silent 0. The reduction records which sum its result is the
log mass of (``record_log_mass``); the subtraction then builds ``g + (-L_g + (t - t))`` from
the parts, whose constant cancels ``L_g`` to the last bit (``t - t`` keeps ``t``'s inputs, and
is NaN where ``t`` is infinite: a measure without mass has none to normalize, as before).

The record is structural (object identity, no array is read), so it holds under ``jax.jit``
and keeps gradients: ``d/dt (t - L) = 0``, and ``t - t`` has derivative 0 too.

Example:
    >>> g = fc.Gaussian(mean=np.array([1.5], np.float32), covariance=np.eye(1, dtype=np.float32),
    ...                 inputs={"x": fc.Real})
    >>> f = g + fc.Tensor(np.array(-1e9, np.float32))  # a density of peak exp(-1e9)
    >>> q = f - f.reduce(ops.logaddexp, "x")
    >>> float(fc.Integrate(q, fc.Variable("x", fc.Real), "x").data)  # E[x] under mass 1
    1.5
"""

from __future__ import annotations

import weakref

from funsor_core.terms.base import Funsor

__all__ = ["record_log_mass", "subtract_log_mass"]

# id(L) -> (weakref to L, weakref to g, weakref to t, L_g); an entry leaves with its L.
_RECORDS: dict[int, tuple] = {}


def record_log_mass(log_mass: Funsor, g: Funsor, t: Funsor, log_mass_g: Funsor) -> None:
    """Record that ``log_mass`` is ``log ∫ exp(g + t)`` over all of ``g``'s reals, computed as
    ``log_mass_g + t`` with ``log_mass_g = log ∫ exp g``.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> t, lg = fc.Tensor(np.array(2.0)), fc.Tensor(np.array(0.5 * np.log(2 * np.pi)))
        >>> record_log_mass(lg + t, g, t, lg)
    """
    key = id(log_mass)
    try:
        ref = weakref.ref(log_mass, lambda _, key=key: _RECORDS.pop(key, None))
        _RECORDS[key] = (ref, weakref.ref(g), weakref.ref(t), log_mass_g)
    except TypeError:  # pragma: no cover (every funsor takes weak references)
        pass


def subtract_log_mass(lhs: Funsor, rhs: Funsor) -> Funsor | None:
    """``lhs - rhs`` as ``g + (-L_g + (t - t))`` when ``lhs`` is the sum ``g + t`` and ``rhs``
    its log mass recorded by ``record_log_mass``; else None.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> f = g + fc.Tensor(np.array(2.0))
        >>> q = subtract_log_mass(f, f.reduce(ops.logaddexp, "x"))
        >>> float(q.reduce(ops.logaddexp, "x").data)
        0.0
    """
    record = _RECORDS.get(id(rhs))
    if record is None or record[0]() is not rhs:
        return None
    g, t, log_mass_g = record[1](), record[2](), record[3]
    terms = getattr(lhs, "terms", ())
    if g is None or t is None or len(terms) != 2 or not (
            (terms[0] is g and terms[1] is t) or (terms[0] is t and terms[1] is g)):
        return None
    return g + (-log_mass_g + (t - t))
