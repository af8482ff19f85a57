"""funsor's ``funsor.adjoint``: ``AdjointTape``, ``adjoint`` and ``forward_backward``.

A thin face; the implementation lives in
``funsor_core.algorithms.adjoint``."""

from funsor_core.algorithms.adjoint import AdjointTape, adjoint, forward_backward
from funsor_core.algorithms.adjoint.kinds import NotOnTapeError

__all__ = ["AdjointTape", "NotOnTapeError", "adjoint", "forward_backward"]
