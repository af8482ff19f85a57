"""``MaskedSteps``: the steps of a ragged discrete chain, with their mask kept apart.

``MaskedSteps(sum_op, prod_op, trans, keep, time, step)`` means the steps of ``trans`` with
every step where ``keep`` is 0 replaced by the semiring's identity transition
(``chains.masks.masked_steps``)::

    MaskedSteps[t, b, prev, curr] = trans[t, b, prev, curr]   if keep[t, b] = 1
                                  = 1[prev == curr]            otherwise (in the semiring)

Under ``exact`` it evaluates to that dense Tensor at once. Built lazily inside a
``MarkovProduct`` (``markov_product(..., lengths=)`` under ``lazy``), it stays a term, and
the chain kernels (``chains.discrete``) read its parts: the factors of ``trans`` (a
transition matrix shared by all steps stays one ``(K, K)`` matrix, and the filter stays in
probability space) and ``keep``, which selects the carried state past each masked step
(``where``, an array op: the same under ``jax.jit`` with traced lengths). A masked step of
an identity transition carries the state unchanged, so both give the same numbers.

Example:
    >>> t = fc.Tensor(np.zeros((2, 2, 2)), {"t": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> keep = fc.Tensor(np.array([1.0, 0.0]), {"t": fc.Bint[2]})
    >>> m = MaskedSteps(ops.logaddexp, ops.add, t, keep, fc.Variable("t", fc.Bint[2]),
    ...                 ((fc.Variable("x", fc.Bint[2]), fc.Variable("y", fc.Bint[2])),))
    >>> m.data[1].tolist()  # exact: the dense masked steps
    [[0.0, -inf], [-inf, 0.0]]
"""

from __future__ import annotations

from funsor_core.algorithms.chains.factors import tensor_factors
from funsor_core.atoms.tensor import Tensor
from funsor_core.ops.op import AssociativeOp
from funsor_core.terms.base import Funsor, Variable

__all__ = ["MaskedSteps", "masked_factors"]


class MaskedSteps(Funsor):
    """The steps ``trans`` of a discrete chain over ``time``, identity transitions where
    ``keep`` is 0 (see the module docstring).

    Args:
        sum_op, prod_op: the semiring whose units make the identity.
        trans: the steps: a Tensor or a lazily built ``prod_op``-product of Tensors.
        keep: a real 0/1 Tensor over ``time`` and (some of) the batch names.
        time: ``Variable(name, Bint[T])``.
        step: ``((Variable(prev), Variable(curr)), ...)``: the state pairs (Variables, so
            that a renaming reaches them).

    Example:
        >>> t = fc.Tensor(np.zeros((2, 2, 2)), {"t": fc.Bint[2], "x": fc.Bint[2],
        ...                                     "y": fc.Bint[2]})
        >>> keep = fc.Tensor(np.ones((2, 3)), {"t": fc.Bint[2], "b": fc.Bint[3]})
        >>> pairs = ((fc.Variable("x", fc.Bint[2]), fc.Variable("y", fc.Bint[2])),)
        >>> from interpretations import lazy
        >>> with lazy:  # kept as a term (exact makes it the dense masked steps)
        ...     m = MaskedSteps(ops.logaddexp, ops.add, t, keep, fc.Variable("t", fc.Bint[2]),
        ...                     pairs)
        >>> type(m).__name__, list(m.inputs)
        ('MaskedSteps', ['t', 'x', 'y', 'b'])
    """

    fields = ("sum_op", "prod_op", "trans", "keep", "time", "step")

    @classmethod
    def _prepare(cls, sum_op, prod_op, trans, keep, time, step):
        if not isinstance(sum_op, AssociativeOp) or not isinstance(prod_op, AssociativeOp):
            raise TypeError(f"MaskedSteps needs a semiring of associative ops, got {sum_op!r}, "
                            f"{prod_op!r}")
        if not isinstance(trans, Funsor) or not isinstance(keep, Funsor):
            raise TypeError("MaskedSteps: trans and keep must be funsors")
        return sum_op, prod_op, trans, keep, time, tuple(step)

    def _setup(self):
        inputs = dict(self.trans.inputs)
        if isinstance(self.time, Variable):
            inputs.setdefault(self.time.name, self.time.output)
        for k, d in self.keep.inputs.items():
            inputs.setdefault(k, d)
        self.inputs = inputs
        self.output = self.trans.output

    @property
    def pairs(self) -> tuple | None:
        """The state pairs as names ``((prev, curr), ...)``, or None where a substitution
        put something other than a Variable there."""
        if not all(isinstance(v, Variable) for pair in self.step for v in pair):
            return None
        return tuple((p.name, c.name) for p, c in self.step)


def masked_factors(trans, sum_op, prod_op) -> tuple | None:
    """``(factors, keep)`` of a chain in the semiring ``(sum_op, prod_op)`` whose steps are
    a lazily kept ``MaskedSteps`` over Tensor factors (``tensor_factors``) with a Tensor
    mask, else None.

    Example:
        >>> t = fc.Tensor(np.zeros((2, 2, 2)), {"t": fc.Bint[2], "x": fc.Bint[2],
        ...                                     "y": fc.Bint[2]})
        >>> masked_factors(t, ops.logaddexp, ops.add) is None
        True
    """
    if (type(trans) is not MaskedSteps or trans.prod_op is not prod_op
            or trans.sum_op is not sum_op):
        return None
    if type(trans.keep) is not Tensor or trans.pairs is None:
        return None
    factors = tensor_factors(trans.trans, prod_op)
    return None if factors is None else (factors, trans.keep)
