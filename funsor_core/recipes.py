"""funsor's ``funsor.recipes``: forward filtering, backward sampling or preconditioning.

A thin face; the implementation lives in
``funsor_core.algorithms.adjoint.recipes``."""

from funsor_core.algorithms.adjoint.recipes import (
    forward_filter_backward_precondition,
    forward_filter_backward_rsample,
)

__all__ = ["forward_filter_backward_precondition", "forward_filter_backward_rsample"]
