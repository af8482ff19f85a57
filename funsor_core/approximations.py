"""funsor's ``funsor.approximations``: the interpretations ``argmax_approximate``,
``mean_approximate``, ``laplace_approximate`` and ``compute_argmax``.

A thin face; the interpretations are declared in ``funsor_core.algorithms.adjoint.kinds``
(their rules are in ``interpretations.approximations``) and the math lives in
``funsor_core.algorithms.adjoint.points``."""

from funsor_core.algorithms.adjoint.kinds import (
    argmax_approximate,
    laplace_approximate,
    mean_approximate,
)
from funsor_core.algorithms.adjoint.points import compute_argmax, compute_mean, extract_samples

__all__ = ["argmax_approximate", "compute_argmax", "compute_mean", "extract_samples",
           "laplace_approximate", "mean_approximate"]
