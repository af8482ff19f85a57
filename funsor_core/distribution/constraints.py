"""Constraints on distribution parameters: what is checked, and how a violation reads.

A constraint checks an array of parameter values and answers, per batch entry, whether the
entry is valid (``event_ndim`` trailing dims form one entry: a probability vector, a
Cholesky factor). Concrete arrays that violate one raise ``ValueError`` when the
distribution is built, naming the family, the parameter and the first bad entry. Traced
arrays (``jax.jit``) cannot be read, so there the invalid entries are replaced by NaN, and
the density is NaN, as jax's own distributions give; never a finite wrong number.

Example:
    >>> POSITIVE.check(np.array([1.0, -1.0]))
    array([ True, False])
    >>> SIMPLEX.check(np.array([[0.5, 0.5], [0.5, 0.6]]))
    array([ True, False])
    >>> PROBS.check(np.array([[1.0, 3.0], [0.0, 0.0]]))
    array([ True, False])
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from funsor_core import ops

__all__ = ["Constraint", "REAL", "POSITIVE", "NONNEGATIVE", "UNIT_INTERVAL", "SIMPLEX",
           "PROBS", "LOWER_CHOLESKY", "NONNEGATIVE_INTEGER", "simplex_tolerance",
           "CHECKED_UPSTREAM", "checked_upstream"]


@dataclass(frozen=True)
class Constraint:
    """A named check: ``check(x)`` is a bool array over ``x``'s leading dims, with the last
    ``event_ndim`` dims forming one entry; ``None`` means "anything goes" (no check).

    Example:
        >>> UNIT_INTERVAL.describe
        'in [0, 1]'
    """

    name: str
    describe: str
    event_ndim: int = 0
    _check: Callable | None = None

    def check(self, x):
        """Per entry: whether ``x`` satisfies the constraint (a bool array)."""
        return self._check(x)

    @property
    def trivial(self) -> bool:
        """Whether nothing is checked (``REAL``)."""
        return self._check is None


def simplex_tolerance(x) -> float:
    """How far from 1 a probability vector may sum: rounding of ``n`` additions in ``x``'s
    float precision (``n`` entries), with a floor of 1e-6 (torch's and pyro's tolerance).

    Example:
        >>> simplex_tolerance(np.zeros(10, dtype=np.float32)) > simplex_tolerance(np.zeros(10))
        True
    """
    eps = 1.2e-7 if getattr(x.dtype, "itemsize", 8) <= 4 else 2.3e-16
    return max(1e-6, 100.0 * eps * x.shape[-1])


def _simplex(x):
    ok = ops.all(x >= 0, -1)
    return ops.and_(ok, ops.abs(ops.sum(x, -1) - 1.0) <= simplex_tolerance(x))


def _probs(x):
    # Unnormalized probabilities, as torch, pyro and numpyro read Categorical(probs=...): every
    # entry nonnegative and finite, the sum positive (a zero vector has no normalization).
    # Three reductions, not five passes over ``x`` (Pyro's enumerated HMMs check K^2 T
    # numbers per step): a NaN makes the min NaN, which fails ``>= 0``.
    ok = ops.and_(ops.amin(x, -1) >= 0, ops.amax(x, -1) < float("inf"))
    return ops.and_(ok, ops.sum(x, -1) > 0)


def _lower_cholesky(x):
    # The strict upper triangle is zero and the diagonal positive.
    upper_ok = ops.all(ops.all(ops.triu(x, 1) == 0, -1), -1)
    return ops.and_(upper_ok, ops.all(ops.diagonal(x) > 0, -1))


def _nonnegative_integer(x):
    return ops.and_(x >= 0, x == ops.astype(ops.astype(x, "int"), "real"))


REAL = Constraint("real", "a real number")
POSITIVE = Constraint("positive", "positive", 0, lambda x: x > 0)
NONNEGATIVE = Constraint("nonnegative", "nonnegative", 0, lambda x: x >= 0)
UNIT_INTERVAL = Constraint("unit_interval", "in [0, 1]", 0,
                           lambda x: ops.and_(x >= 0, x <= 1))
SIMPLEX = Constraint("simplex", "a probability vector (nonnegative, summing to 1)", 1, _simplex)
PROBS = Constraint("probs", "a vector of nonnegative finite weights with a positive sum "
                   "(normalized, as torch's Categorical does)", 1, _probs)
LOWER_CHOLESKY = Constraint(
    "lower_cholesky", "a lower triangular matrix with a positive diagonal", 2, _lower_cholesky)
NONNEGATIVE_INTEGER = Constraint("nonnegative_integer", "a nonnegative integer", 0,
                                 _nonnegative_integer)


# The parameters of one family whose constraints the converted object's own library checked
# already, on the very arrays given (``convert``: a torch distribution built with
# ``validate_args``), as ``(family, names)``; its construction skips those checks (issue #28:
# Pyro validates each HMM site's K^2 T numbers, then we did again). Set only around one
# family's construction, and read for that family only.
CHECKED_UPSTREAM: ContextVar = ContextVar("checked_upstream", default=(None, frozenset()))


def checked_upstream(cls) -> frozenset:
    """The names of ``cls``'s parameters whose constraints were checked upstream (see
    ``CHECKED_UPSTREAM``): empty unless a conversion marked them for this very family.

    Example:
        >>> checked_upstream(object)
        frozenset()
    """
    family, names = CHECKED_UPSTREAM.get()
    return names if family is cls else frozenset()
