"""The factors of a discrete chain's step: what makes a Markov product a chain of Tensors.

Kept apart from ``discrete_plan`` (which plans and runs such chains) so that the term-level
scans (``term_scans``) can ask the same question without importing the planner.

Example:
    >>> t = fc.Tensor(np.zeros((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> tensor_factors(t, ops.add) == [t]
    True
"""

from __future__ import annotations

from funsor_core.atoms.int_range import FLOAT_DTYPES, is_float_dtype, real_data
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Real
from funsor_core.engine.protocol import children
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Align, Binary, Number, Reduce, Subs, Unary, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["product_leaves", "tensor_factors", "tensor_expression"]

# The generic terms that exact evaluates on Tensor arguments to a Tensor.
_TENSOR_OPS = (Binary, Unary, Reduce, Subs, Align, Contraction)


def tensor_factors(trans, prod_op) -> list | None:
    """The factors of a discrete chain's step: ``[trans]`` for a real Tensor, the terms of a
    ``prod_op``-product of Tensors and Numbers (a ``Binary`` tree or a ``Contraction``, as
    built lazily, so that a shared transition matrix and per-step observation vectors stay
    apart); None for anything else. A Tensor of int or bool data comes back with float data
    (the chain kernels multiply and log-sum its matrices: int8 products wrap, and
    ``logsumexp`` of integers raises). Factors holding arrays of two backends raise a
    ``TypeError`` naming both, as the eager sum of them would.

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
        return [_float_data(trans)] if trans.output is Real else None
    factors = product_leaves(trans, prod_op)
    if not all(isinstance(f, (Tensor, Number)) and f.output is Real for f in factors):
        return None
    if not any(isinstance(t, Tensor) for t in factors):
        return None
    factors = [_float_data(f) if isinstance(f, Tensor) else f for f in factors]
    if len(factors) > 1:  # built lazily, nothing has compared their backends yet
        labels = [f"step factor {type(f).__name__} over {list(f.inputs)}" for f in factors]
        factors = list(check_backends("chain", factors, labels))
    return factors


def product_leaves(trans, prod_op) -> list:
    """The terms of a ``prod_op``-product as built lazily (a ``Binary`` tree or a
    ``Contraction`` without reductions), in order; ``[trans]`` for anything else.

    Example:
        >>> from interpretations import lazy
        >>> with lazy:
        ...     step = fc.Tensor(np.zeros(2), {"y": fc.Bint[2]}) + fc.Variable("z", fc.Real)
        >>> [type(f).__name__ for f in product_leaves(step, ops.add)]
        ['Tensor', 'Variable']
    """
    leaves, todo = [], [trans]
    while todo:
        term = todo.pop()
        if isinstance(term, Binary) and term.op is prod_op:
            todo += [term.rhs, term.lhs]
        elif (isinstance(term, Contraction) and term.red_op is None
              and term.bin_op is prod_op and not term.reduced_vars):
            todo += reversed(term.terms)
        else:
            leaves.append(term)
    return leaves


def _float_data(t: Tensor) -> Tensor:
    # A real Tensor as float data, by its dtype (structural: the same for traced arrays).
    data = t.data
    if data.dtype in FLOAT_DTYPES or is_float_dtype(data):
        return t
    return Tensor.make(real_data(data), t.inputs, "real", t._ikey, t.output)


def tensor_expression(trans) -> bool:
    """Whether ``trans`` is a lazy expression that ``exact`` evaluates to one real Tensor: its
    inputs are all ``Bint``, and it is built by elementwise ops, reductions, substitutions and
    contractions from Tensors, Numbers and ``Bint`` Variables (as Pyro's enumeration builds a
    step under ``lazy``: a renamed transition matrix plus observations reduced over a plate).

    Example:
        >>> from interpretations import lazy
        >>> a = fc.Tensor(np.zeros((2, 2)), {"x": fc.Bint[2], "y": fc.Bint[2]})
        >>> o = fc.Tensor(np.zeros((5, 2, 3)), {"t": fc.Bint[5], "y": fc.Bint[2],
        ...                                     "i": fc.Bint[3]})
        >>> with lazy:
        ...     step = a + o.reduce(ops.add, "i")
        >>> tensor_expression(step), tensor_expression(step + fc.Variable("z", fc.Real))
        (True, False)
    """
    if trans.output is not Real or not all(isinstance(d.dtype, int)
                                           for d in trans.inputs.values()):
        return False
    seen, todo, tensors = set(), [trans], 0
    while todo:
        term = todo.pop()
        if id(term) in seen:
            continue
        seen.add(id(term))
        if type(term) is Tensor:
            tensors += 1
        elif isinstance(term, Variable):
            if not isinstance(term.output.dtype, int):
                return False
        elif isinstance(term, _TENSOR_OPS):
            todo += children(term)
        elif not isinstance(term, Number):
            return False
    return tensors > 0
