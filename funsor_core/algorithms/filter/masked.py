"""Filtering ragged batches: ``windowed_filter(..., lengths=, mask=)``.

A discrete chain (Tensor steps) is masked by identity transitions (``chains.masks``), which
handles any mask. A Gaussian or switching chain has no identity transition (a point mass
``x_curr = x_prev`` is no density), so with ``lengths`` the filter keeps the message of
each sequence after its last valid step instead: the message after step ``t`` depends on
steps ``0..t`` only, so for entry ``b`` the result is the message after step
``lengths[b] - 1``, selected entry by entry as the steps run::

    carry_{t+1}[b] = message_t[b]   if t < lengths[b]   else   carry_t[b]

(``carry_0`` is ``init`` under the curr names, the result of a chain of no steps). The
selection is ``ops.where`` on the arrays of the messages (``chains.select``), decided by no
Python branch, so traced lengths work under ``jax.jit``; a traced length outside ``0..T``
makes its entry NaN (a concrete one raises), as in ``markov_product``.

Example:
    >>> t = fc.Tensor(np.log(np.full((3, 2, 2), 0.5)),
    ...               {"t": fc.Bint[3], "s": fc.Bint[2], "s2": fc.Bint[2]})
    >>> n = fc.Tensor(np.array([0, 3]), {"b": fc.Bint[2]})
    >>> m = fc.windowed_filter(ops.logaddexp, ops.add, t, "t", {"s": "s2"}, fc.Number(0.0),
    ...                        lengths=n)
    >>> np.exp(m.reduce(ops.logaddexp, "s2").data).tolist()  # 2 states, no steps for b = 0
    [2.0, 2.0]
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_plan import tensor_factors
from funsor_core.algorithms.chains.masks import masked_steps, step_mask, traced_invalid
from funsor_core.algorithms.chains.select import select
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Funsor, Variable

__all__ = ["masked_filter"]

_NO_MASK = (
    "windowed_filter: a Gaussian or switching chain takes lengths= (the message after each "
    "sequence's last step is kept), not an arbitrary mask=: a masked step in the middle would "
    "need an identity transition, which is no Gaussian density. Give lengths, or mask only "
    "Tensor chains.")

_NO_WINDOW = (
    "windowed_filter: lengths= with window={window} on a switching chain is not built yet: "
    "each step's message is a mixture over the window's older switch states, which cannot "
    "be kept entry by entry. Use window=1 (GPB2 or IMM) with lengths=, or filter each "
    "sequence on its own.")


def masked_filter(sum_op, prod_op, trans: Funsor, time, step: dict, init: Funsor, window,
                  lengths, mask, filter_fn, method: str = "gpb2") -> Funsor:
    """``windowed_filter`` of a ragged batch (see the module docstring); ``filter_fn`` is
    ``windowed_filter`` (passed in by it, so that this module does not import it back);
    ``method`` is its collapse (``"gpb2"`` or ``"imm"``: both filters carry one message
    per step, so the selection is the same).

    Example:
        A random walk from ``x_0 ~ N(0, 1)`` with unit steps, two sequences of 1 and 3
        steps: the last state's variance is 2 and 4.

        >>> step = fc.Gaussian(white_vec=np.zeros((3, 2, 1)),
        ...                    prec_sqrt=np.tile([[1.0], [-1.0]], (3, 2, 1, 1)),
        ...                    inputs={"t": fc.Bint[3], "b": fc.Bint[2],
        ...                            "x": fc.Real, "y": fc.Real})
        >>> init = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> lengths = fc.Tensor(np.array([1, 3]), {"b": fc.Bint[2]})
        >>> m = masked_filter(ops.logaddexp, ops.add, step, "t", {"x": "y"}, init, 1, lengths,
        ...                   None, fc.windowed_filter)
        >>> g = m.terms[0]
        >>> 1 / (g.prec_sqrt @ g.prec_sqrt.swapaxes(-1, -2))[:, 0, 0]
        array([2., 4.])
    """
    name = time.name if isinstance(time, Variable) else time
    if tensor_factors(trans, prod_op) is not None:
        trans = masked_steps(sum_op, prod_op, trans, time, step, lengths, mask,
                             "windowed_filter")
        return filter_fn(sum_op, prod_op, trans, name, step, init, window, method=method)
    if mask is not None:
        raise NotImplementedError(_NO_MASK)
    if name not in trans.inputs:
        raise ValueError(f"windowed_filter: '{name}' is not an input of the transition "
                         f"factor, whose inputs are {list(trans.inputs)}")
    pairs = tuple(sorted(dict(step).items()))
    kinds = {trans.inputs[p].dtype == "real" for p, _ in pairs if p in trans.inputs}
    if window > 1 and kinds == {True, False}:
        # The per-step message sums the window's older switch states out of a Gaussian: a
        # lazy mixture, which select() cannot split entry by entry (it fails mid-filter).
        raise NotImplementedError(_NO_WINDOW.format(window=window))
    domain = trans.inputs[name]
    bints = {k: d for k, d in trans.inputs.items() if d.dtype != "real"}
    keep = step_mask(bints, Variable(name, domain), pairs, lengths, None, "windowed_filter")
    keep_inputs = {k: d for k, d in bints.items()
                   if k != name and k not in {n for p in pairs for n in p}}
    state = {"carry": init(**{p: c for p, c in dict(step).items() if p in init.inputs})}

    def each_step(t, msg):
        state["carry"] = select(keep[t], keep_inputs, msg, state["carry"])

    filter_fn(sum_op, prod_op, trans, name, step, init, window, each_step=each_step,
              method=method)
    carry = state["carry"]
    for bad in traced_invalid(lengths, None, domain.size):  # as markov_product does: NaN
        zeros = ops.new_zeros(bad.data, tuple(bad.data.shape)) + 0.0  # for a traced length
        carry = carry + Tensor(ops.where(bad.data, zeros + math.nan, zeros), dict(bad.inputs))
    return carry
