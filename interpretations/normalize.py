"""``normalize``: rewrite sums and products toward the sum-product normal form.

Example:
    >>> from interpretations import normalize
    >>> normalize.name
    'normalize'
"""

from __future__ import annotations

from funsor_core.interpreter import Interpretation
from interpretations.lazy import lazy

__all__ = ["normalize", "NORMALIZE"]

normalize = Interpretation("normalize", base=lazy)
NORMALIZE = normalize
