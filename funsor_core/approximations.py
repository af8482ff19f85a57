"""funsor's ``funsor.approximations``: ``compute_argmax`` and the points behind the
approximating interpretations.

A thin face; the math lives in ``funsor_core.algorithms.adjoint.points``. The
interpretations themselves (``argmax_approximate``, ``mean_approximate``,
``laplace_approximate``) are rules, so they live in ``interpretations.approximations``
(``from interpretations import argmax_approximate``)."""

from funsor_core.algorithms.adjoint.points import compute_argmax, compute_mean, extract_samples

__all__ = ["compute_argmax", "compute_mean", "extract_samples"]
