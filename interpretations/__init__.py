"""Interpretations: each is a set of rewrite rules plus a context manager.

``exact`` (alias ``eager``, ``EXACT``) is the default; ``lazy`` records; ``reflect`` builds
without rewriting; ``normalize`` rewrites toward sum-product normal form.

Example:
    >>> from interpretations import exact, lazy
    >>> with lazy:
    ...     with exact:
    ...         pass
"""

from funsor_core.interpreter import reflect
from interpretations.exact import EXACT, eager, exact
from interpretations.lazy import LAZY, lazy
from interpretations.normalize import NORMALIZE, normalize

REFLECT = reflect

__all__ = ["exact", "eager", "EXACT", "lazy", "LAZY", "reflect", "REFLECT", "normalize",
           "NORMALIZE"]
