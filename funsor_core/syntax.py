"""funsor's ``funsor.syntax`` module path: ``rewrite_ops`` (Python operators in a rule's
source rewritten into calls of the semiring's ops).

A thin face; the implementation lives in ``funsor_core.compat.syntax``.

Example:
    >>> from funsor_core.syntax import rewrite_ops
    >>> callable(rewrite_ops({"+": "sum_op"}))
    True
"""

from funsor_core.compat.syntax import rewrite_ops

__all__ = ["rewrite_ops"]
