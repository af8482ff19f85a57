"""Exact messages of a discrete chain in a backward pass, on arrays.

A ``MarkovProduct`` in ``(logaddexp, add)`` whose step is one Tensor over time sends its
step the message ``msg_t(prev, curr)``: the log sum over the chain's end states of its
adjoint times the products of the steps before and after ``t`` (``msg_t + step_t`` is the
unnormalized log pair marginal). ``chains.discrete_adjoint.chain_messages`` computes all of
them at once, as the reverse mode of the chain's log-depth tree (``chain_vector_messages``
where the adjoint lacks the first or the last states, as after a reduction: a forward and a
backward vector per step), instead of sending terms
back through the chain's pairwise steps (a tape of ``2 log2 T`` recorded contractions, each
message a term through the interpreter). The tape then evaluates such a chain by its kernel
and keeps no tape of its steps; another semiring or an approximation asks for them later.

Example:
    >>> from funsor_core.adjoint import AdjointTape
    >>> from funsor_core.sum_product import sequential_sum_product
    >>> step = fc.Tensor(np.log(np.full((4, 2, 2), 0.5)),
    ...                  {"t": fc.Bint[4], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> with AdjointTape() as tape:
    ...     z = sequential_sum_product(ops.logaddexp, ops.add, step, "t", {"x": "y"})
    ...     z = z.reduce(ops.logaddexp)
    >>> adj = tape.adjoint(ops.logaddexp, ops.add, z, (step,))[step]
    >>> np.exp((adj + step - z).data).sum((1, 2)).round(6).tolist()  # one pair per step
    [1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_adjoint import chain_messages, chain_vector_messages
from funsor_core.algorithms.chains.discrete_plan import tensor_layout
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Number

__all__ = ["chain_array_shares", "has_array_backward"]


def has_array_backward(args: tuple) -> bool:
    """Whether a ``MarkovProduct`` (its arguments) sends exact ``(logaddexp, add)`` messages
    on arrays: a ``(logaddexp, add)`` chain whose step is one real Tensor over time.

    Example:
        >>> step = fc.Tensor(np.zeros((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2],
        ...                                        "y": fc.Bint[2]})
        >>> has_array_backward((ops.logaddexp, ops.add, step, fc.Variable("t", fc.Bint[3]),
        ...                     (("x", "y"),), (("x", "y"),), None))
        True
    """
    sum_op, prod_op, trans, time, step, _, _ = args
    return (sum_op is ops.logaddexp and prod_op is ops.add and type(trans) is Tensor
            and trans.output.dtype == "real" and not trans.output.shape
            and trans.inputs.get(time.name) is time.output)


def chain_array_shares(ring, adj, output, sum_op, prod_op, trans, time, step, step_names,
                       strategy) -> list | None:
    """The message to the step of a chain that ``has_array_backward``, as
    ``[(trans, (message,))]`` for the adjoint's driver; None where the pass is not exact
    ``(logaddexp, add)`` or its adjoint is not a Tensor over the chain's free inputs.

    Example:
        With a zero adjoint over the end states, ``message + step - log Z`` is each step's
        pair marginal; here step 1's, against enumeration of the 16 paths.

        >>> from interpretations import lazy
        >>> from funsor_core.algorithms.adjoint.backward import Semiring
        >>> from funsor_core.sum_product import MarkovProduct
        >>> p = np.random.default_rng(0).random((3, 2, 2))
        >>> step = fc.Tensor(np.log(p), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
        >>> with lazy:
        ...     mp = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x": "y"})
        >>> out, args = fc.reinterpret(mp), [getattr(mp, f) for f in mp.fields]
        >>> ring = Semiring(ops.logaddexp, ops.add, frozenset(), approximate=False)
        >>> adj = fc.Tensor(np.zeros((2, 2)), {"x": fc.Bint[2], "y": fc.Bint[2]})
        >>> ((leaf, (msg,)),) = chain_array_shares(ring, adj, out, *args)
        >>> pair = np.exp((msg + step - out.reduce(ops.logaddexp)).data)[1]
        >>> joint = np.einsum("ab,bc,cd->abcd", *p)
        >>> np.allclose(pair, joint.sum((0, 3)) / joint.sum())
        True
    """
    if (ring.approximate or ring.arith is not ops.logaddexp or ring.prod_op is not ops.add
            or type(adj) not in (Tensor, Number)
            or not has_array_backward((sum_op, prod_op, trans, time, step, None, None))):
        return None
    if not set(adj.inputs) <= set(output.inputs):
        return None  # kept names (particles) the chain lacks: the steps' tape handles them
    order, batch, prevs, currs = tensor_layout(trans.inputs, time.name, step)
    if ring.keep & ({time.name} | set(prevs) | set(currs)):
        return None
    free = dict(p for pair in zip(step, step_names) for p in zip(*pair))
    data = trans.align(tuple(order)).data
    duration = data.shape[0]
    lead = tuple(data.shape[:1 + len(batch)])
    states = data.shape[-1] if len(prevs) == 1 else _size(trans, prevs)
    mats = ops.reshape(data, lead + (states, states))
    batch_inputs = {n: trans.inputs[n] for n in batch}
    firsts = {free[n]: trans.inputs[n] for n in prevs}
    lasts = {free[n]: trans.inputs[n] for n in currs}
    if adj.inputs.keys().isdisjoint(firsts) or adj.inputs.keys().isdisjoint(lasts):
        # The adjoint lacks the first or the last states: a sum of two vectors.
        on_first = adj.inputs.keys().isdisjoint(lasts)
        vector = _array(adj, {**batch_inputs, **(firsts if on_first else lasts)}, data,
                        lead[1:] + (states,))
        zero = ops.new_zeros(data, lead[1:] + (states,))
        messages = chain_vector_messages(mats, *((vector, zero) if on_first else (zero, vector)))
    else:
        root = _array(adj, {**batch_inputs, **firsts, **lasts}, data, lead[1:] + (states, states))
        messages = chain_messages(mats, root)
    message = Tensor(ops.reshape(messages, (duration,) + tuple(data.shape[1:])),
                     {n: trans.inputs[n] for n in order})
    return [(trans, (message,))]


def _array(adj, inputs: dict, proto, shape: tuple):
    # adj's data over ``inputs`` (broadcast where it lacks one), reshaped to ``shape``.
    if type(adj) is Number:
        return ops.new_full(proto, shape, float(adj.data))
    return ops.reshape(align_tensor(inputs, adj, expand=True), shape)


def _size(trans, names) -> int:
    size = 1
    for n in names:
        size *= trans.inputs[n].size
    return size
