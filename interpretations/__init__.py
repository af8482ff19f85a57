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

from funsor_core.compat.stateful import StatefulInterpretation
from funsor_core.engine.interpreter import reflect
from interpretations import constant  # noqa: F401  (registers Constant's rules)
from interpretations.adam import Adam
from interpretations.approximations import (
    PosteriorSample,
    Precondition,
    argmax_approximate,
    laplace_approximate,
    mean_approximate,
)
from interpretations.cluster_messages import CompressedMessages
from interpretations.compress import compress_gaussians
from interpretations.elbo import Elbo
from interpretations.exact import EXACT, eager, exact
from interpretations.lazy import LAZY, lazy
from interpretations.loopy import Gibbs, LoopyBP
from interpretations.memoize import Memoize, memoize
from interpretations.moment_matching import MOMENTMATCHING, moment_matching
from interpretations.monte_carlo import MONTECARLO, MonteCarlo, extract_samples, monte_carlo
from interpretations.normalize import NORMALIZE, normalize
from interpretations.optimize import OPTIMIZE, apply_optimizer, optimize, optimize_base
from interpretations.sequential import SEQUENTIAL, die, eager_or_die, sequential
from interpretations.sharded import Sharded, sharded

REFLECT = reflect

__all__ = ["exact", "eager", "EXACT", "lazy", "LAZY", "reflect", "REFLECT", "normalize",
           "NORMALIZE", "memoize", "Memoize", "sequential", "SEQUENTIAL", "eager_or_die", "die",
           "compress_gaussians", "Sharded", "sharded",
           "optimize", "OPTIMIZE", "optimize_base", "apply_optimizer",
           "argmax_approximate",
           "mean_approximate", "laplace_approximate", "PosteriorSample", "Precondition",
           "MonteCarlo", "MONTECARLO", "monte_carlo", "extract_samples", "moment_matching",
           "MOMENTMATCHING", "Elbo", "Adam", "LoopyBP", "Gibbs", "CompressedMessages",
           "StatefulInterpretation"]  # funsor.interpretations' base class for user kinds
