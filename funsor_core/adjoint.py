"""funsor's ``funsor.adjoint``: ``AdjointTape``, ``adjoint`` and ``forward_backward``.

A thin face; the implementation lives in
``funsor_core.algorithms.adjoint``. The module is callable: ``fc.adjoint(...)`` is ``adjoint``.

Example:
    >>> from interpretations import lazy
    >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    >>> with lazy:
    ...     y = x * 3
    >>> fc.adjoint(ops.add, ops.mul, y)[x]  # the transpose of y = 3 x
    Number(3.0, 'real')
"""

from funsor_core.algorithms.adjoint import AdjointTape, adjoint, forward_backward
from funsor_core.algorithms.adjoint.kinds import NotOnTapeError

__all__ = ["AdjointTape", "NotOnTapeError", "adjoint", "forward_backward"]
