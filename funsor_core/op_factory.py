"""funsor's ``funsor.op_factory`` module path: ``make_op`` (an op from an annotated backend
function). A thin face; the implementation lives in ``funsor_core.compat.op_factory``.

Example:
    >>> from funsor_core.op_factory import make_op
    >>> make_op.__module__
    'funsor_core.compat.op_factory'
"""

from funsor_core.compat.op_factory import make_op

__all__ = ["make_op"]
