"""Interpretations: each is a set of rewrite rules plus a context manager.

``exact`` (alias ``eager``, ``EXACT``) is the default; ``lazy`` records; ``reflect`` builds
without rewriting; ``normalize`` rewrites toward sum-product normal form.

Example:
    >>> from interpretations import exact, lazy
    >>> with lazy:
    ...     with exact:
    ...         pass
"""

from funsor_core.engine.interpreter import reflect
from interpretations import constant  # noqa: F401  (registers Constant's rules)
from interpretations.compress import compress_gaussians
from interpretations.elbo import Elbo  # issue 16
from interpretations.exact import EXACT, eager, exact
from interpretations.lazy import LAZY, lazy
from interpretations.memoize import Memoize, memoize
from interpretations.moment_matching import MOMENTMATCHING, moment_matching  # issue 16
from interpretations.monte_carlo import MONTECARLO, MonteCarlo, monte_carlo  # issue 16
from interpretations.normalize import NORMALIZE, normalize
from interpretations.optimize import apply_optimizer
from interpretations.sequential import SEQUENTIAL, die, eager_or_die, sequential

REFLECT = reflect

__all__ = ["exact", "eager", "EXACT", "lazy", "LAZY", "reflect", "REFLECT", "normalize",
           "NORMALIZE", "memoize", "Memoize", "sequential", "SEQUENTIAL", "eager_or_die", "die",
           "compress_gaussians", "apply_optimizer"]
__all__ += ["moment_matching", "MOMENTMATCHING", "MonteCarlo", "MONTECARLO", "monte_carlo",
            "Elbo"]
