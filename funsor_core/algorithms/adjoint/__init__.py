"""Adjoints of recorded forward computations: marginals, MAP assignments, posterior samples
and transposes from one tape (section 4 and appendix B of "Functional Tensors for
Probabilistic Programming"), and the approximations built on them.

Example:
    >>> from funsor_core.algorithms.adjoint import AdjointTape
    >>> AdjointTape().chain()[0]
    'adjoint_tape'
"""

from funsor_core.algorithms.adjoint.backward import BACKWARD
from funsor_core.algorithms.adjoint.discrete import DiscreteModel, ZeroMassError, infer_discrete
from funsor_core.algorithms.adjoint.kbest import kbest_from_tape
from funsor_core.algorithms.adjoint.kinds import (
    PosteriorSample,
    Precondition,
    argmax_approximate,
    laplace_approximate,
    mean_approximate,
)
from funsor_core.algorithms.adjoint.points import (
    KeyStream,
    compute_argmax,
    compute_mean,
    draw,
    extract_samples,
)
from funsor_core.algorithms.adjoint.tape import (
    Adjoints,
    AdjointTape,
    adjoint,
    canonical_key,
    forward_backward,
)

__all__ = ["AdjointTape", "Adjoints", "BACKWARD", "DiscreteModel", "KeyStream",
           "PosteriorSample", "Precondition", "ZeroMassError", "adjoint", "argmax_approximate",
           "canonical_key", "compute_argmax", "compute_mean", "draw", "extract_samples",
           "forward_backward", "infer_discrete", "kbest_from_tape", "laplace_approximate",
           "mean_approximate"]
