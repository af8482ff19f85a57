"""Interpretations: each is a set of rewrite rules plus a context manager.

``exact`` (alias ``eager``, ``EXACT``) is the default; ``lazy`` records; ``reflect`` builds
without rewriting; ``normalize`` rewrites toward sum-product normal form; ``optimize`` plans
sum-product contractions into pairwise steps (``apply_optimizer``).

Example:
    >>> from interpretations import exact, lazy
    >>> with lazy:
    ...     with exact:
    ...         pass
"""

from funsor_core.engine.interpreter import reflect
from interpretations import constant  # noqa: F401  (registers Constant's rules)
from interpretations.approximations import (
    PosteriorSample,
    Precondition,
    argmax_approximate,
    laplace_approximate,
    mean_approximate,
)
from interpretations.compress import compress_gaussians
from interpretations.exact import EXACT, eager, exact
from interpretations.lazy import LAZY, lazy
from interpretations.memoize import Memoize, memoize
from interpretations.monte_carlo import MonteCarlo, extract_samples
from interpretations.normalize import NORMALIZE, normalize
from interpretations.optimize import OPTIMIZE, apply_optimizer, optimize
from interpretations.sequential import SEQUENTIAL, die, eager_or_die, sequential

REFLECT = reflect

__all__ = ["exact", "eager", "EXACT", "lazy", "LAZY", "reflect", "REFLECT", "normalize",
           "NORMALIZE", "memoize", "Memoize", "sequential", "SEQUENTIAL", "eager_or_die", "die",
           "compress_gaussians", "optimize", "OPTIMIZE", "apply_optimizer", "argmax_approximate",
           "mean_approximate", "laplace_approximate", "PosteriorSample", "Precondition",
           "MonteCarlo", "extract_samples"]
