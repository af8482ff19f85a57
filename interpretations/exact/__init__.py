"""``exact`` (alias ``eager``, the default): evaluate every tractable term numerically.

Falls back to ``normalize``'s rules (sum-product normal form), then ``lazy``'s
(substitution), and finally builds the term as it is.

Example:
    >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
    >>> (x + 1).reduce(ops.add, "i").data
    array(4.)
"""

from __future__ import annotations

from funsor_core.engine.interpreter import Interpretation
from interpretations.normalize import normalize

__all__ = ["exact", "eager", "EXACT"]

exact = Interpretation("exact", base=normalize, doc=__doc__)
eager = exact
EXACT = exact

# Importing the rule modules registers their rules.
from interpretations.exact import (  # noqa: E402,F401
    approximate,
    conjugate,
    contraction,
    delta,
    distribution,
    gaussian,
    gaussian_integrate,
    integrate,
    markov,
    number_stack,
    op_factory,
    scatter,
    tensor,
    terms,
)
