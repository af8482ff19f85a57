"""The factors of a discrete chain's step: what makes a Markov product a chain of Tensors.

Kept apart from ``discrete_plan`` (which plans and runs such chains) so that the term-level
scans (``term_scans``) can ask the same question without importing the planner.

Example:
    >>> t = fc.Tensor(np.zeros((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> tensor_factors(t, ops.add) == [t]
    True
"""

from __future__ import annotations

from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Real
from funsor_core.terms.base import Binary, Number
from funsor_core.terms.contraction import Contraction

__all__ = ["tensor_factors"]


def tensor_factors(trans, prod_op) -> list | None:
    """The factors of a discrete chain's step: ``[trans]`` for a real Tensor, the terms of a
    ``prod_op``-product of Tensors and Numbers (a ``Binary`` tree or a ``Contraction``, as
    built lazily, so that a shared transition matrix and per-step observation vectors stay
    apart); None for anything else.

    Example:
        >>> from interpretations import lazy
        >>> a = fc.Tensor(np.zeros((2, 2)), {"x": fc.Bint[2], "y": fc.Bint[2]})
        >>> o = fc.Tensor(np.zeros((5, 2)), {"t": fc.Bint[5], "y": fc.Bint[2]})
        >>> with lazy:
        ...     step = a + o + 1.0
        >>> [type(f).__name__ for f in tensor_factors(step, ops.add)]
        ['Tensor', 'Tensor', 'Number']
    """
    if type(trans) is Tensor:
        return [trans] if trans.output is Real else None
    factors, todo = [], [trans]
    while todo:
        term = todo.pop()
        if isinstance(term, Binary) and term.op is prod_op:
            todo += [term.rhs, term.lhs]
        elif (isinstance(term, Contraction) and term.red_op is None
              and term.bin_op is prod_op and not term.reduced_vars):
            todo += reversed(term.terms)
        elif isinstance(term, (Tensor, Number)) and term.output is Real:
            factors.append(term)
        else:
            return None
    if not any(isinstance(t, Tensor) for t in factors):
        return None
    return factors
