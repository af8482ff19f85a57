"""funsor's ``funsor.cnf`` names: the einsum backend strings per array backend, and the
``GaussianMixture`` shape of a Contraction.

The sum-product normal form itself, ``Contraction``, lives in ``funsor_core.terms.contraction``
and is re-exported by the face ``funsor_core.cnf``, so that ``from funsor_core.cnf import
Contraction`` works as in funsor.

Example:
    >>> from funsor_core.cnf import BACKEND_TO_LOGSUMEXP_BACKEND
    >>> f = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
    >>> backend = BACKEND_TO_LOGSUMEXP_BACKEND[fc.get_backend()]
    >>> round(float(fc.einsum("i->", f, backend=backend).data), 4)  # log(1 + 1)
    0.6931
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.backend import BackendTable
from funsor_core.terms.base import Number
from funsor_core.terms.contraction import Contraction

__all__ = ["BACKEND_TO_EINSUM_BACKEND", "BACKEND_TO_LOGSUMEXP_BACKEND",
           "BACKEND_TO_MAP_BACKEND", "Contraction", "GaussianMixture"]

# The einsum ``backend`` string that computes each semiring on each array backend. Our
# einsum reads the semiring off the string's last component (sum, log: logsumexp-of-sums,
# map: max-of-sums) and runs it on the active array backend, so the strings are funsor's
# and all of them work on every backend.
# Each backend names its own strings; a table loads a backend when its entry is read.
BACKEND_TO_EINSUM_BACKEND = BackendTable("FUNSOR_EINSUM_BACKEND")
BACKEND_TO_LOGSUMEXP_BACKEND = BackendTable("FUNSOR_LOGSUMEXP_BACKEND")
BACKEND_TO_MAP_BACKEND = BackendTable("FUNSOR_MAP_BACKEND")


class _GaussianMixtureMeta(type):
    def __instancecheck__(cls, x) -> bool:
        # A Gaussian plus a discrete (Tensor or Number) log-weight, maybe logsumexp-reduced:
        # Contraction(logaddexp | None, add, reduced_vars, {Gaussian, Tensor | Number}).
        if type(x) is not Contraction:
            return False
        if x.red_op not in (None, ops.logaddexp) or x.bin_op is not ops.add:
            return False
        if len(x.terms) != 2:
            return False
        a, b = x.terms
        weight = (Tensor, Number)
        return ((isinstance(a, Gaussian) and isinstance(b, weight))
                or (isinstance(b, Gaussian) and isinstance(a, weight)))

    def __subclasscheck__(cls, sub) -> bool:
        # The shape is a property of a Contraction's arguments, not of a class: only
        # isinstance can decide it.
        return isinstance(sub, type) and type.__subclasscheck__(cls, sub)


class GaussianMixture(metaclass=_GaussianMixtureMeta):
    """``isinstance(x, GaussianMixture)``: ``x`` is a Contraction of one Gaussian and one
    Tensor (or Number) of log-weights under ``+``, possibly ``logaddexp``-reduced.

    funsor 0.4.8 spells this as a parametrized class ``Contraction[...]``, which
    ``issubclass`` also answers; here the check needs the term, so use ``isinstance``.

    Example:
        >>> from funsor_core.testing import random_gaussian, random_tensor
        >>> g = random_gaussian({"i": fc.Bint[2], "x": fc.Real})
        >>> w = random_tensor({"i": fc.Bint[2]})
        >>> isinstance(g + w, GaussianMixture), isinstance(g, GaussianMixture)
        (True, False)
    """
