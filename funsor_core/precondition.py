"""funsor's ``funsor.precondition``: the ``Precondition`` interpretation of a backward pass.

A thin face; the kind lives in ``funsor_core.algorithms.adjoint.kinds`` and its rules in
``interpretations/approximations.py``."""

from funsor_core.algorithms.adjoint.kinds import Precondition

__all__ = ["Precondition"]
