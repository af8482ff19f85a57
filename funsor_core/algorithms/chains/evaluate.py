"""Evaluating a Markov product: the strategy of a chain, and chains built as terms.

``exact``'s rules (``interpretations/exact/markov.py``) call these functions and those of
``markov_tensor`` (discrete chains on arrays) and ``scan_gaussian`` (Gaussian chains on
arrays); they decide nothing about when a rewrite applies, only how:

- ``chain_strategy``: the strategy to run, by ``scan.resolve_strategy`` (the term's own, the
  block's setting, or the cost model), or sequential where steps may not be regrouped.
- ``markov_terms``: any other chain, by building the pairwise contractions as terms through
  the active interpretation (so lazy pieces, moment matching or a tape see every step):
  the parallel scan of ``chains.sequential_sum_product`` or a left fold.

Example:
    >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> markov_terms(ops.add, ops.mul, t, fc.Variable("t", fc.Bint[3]), (("x", "y"),),
    ...              (("x", "y"),), "parallel").data.tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import chain_problem, resolve_strategy
from funsor_core.algorithms.chains.term_scans import compose_power, fold_steps, parallel_steps
from funsor_core.analysis.sign import distributes

__all__ = ["markov_terms", "chain_strategy", "rename_free"]


def chain_strategy(requested, sum_op, prod_op, factors, array, state: int, batch: int,
                   duration: int, vector: bool = False, gaussian: bool = False) -> str:
    """The strategy for a chain: sequential whenever steps may not be regrouped (a pair
    that does not distribute, or a factor of unknown sign for ``(max, mul)``), else the
    requested one, with ``"auto"`` decided by the cost model.

    Example:
        >>> t = fc.Tensor(np.ones((4, 2, 2)))
        >>> chain_strategy("parallel", ops.add, ops.add, [t], t.data, 2, 1, 4)
        'sequential'
    """
    pair = (sum_op, prod_op)
    if pair not in ops.DISTRIBUTIVE_OPS or (
            pair in ops.NONNEGATIVE_DISTRIBUTIVE_OPS and not distributes(sum_op, prod_op,
                                                                          tuple(factors))):
        # The Markov product is defined as a left fold; only a semiring may regroup it.
        return "sequential"
    return resolve_strategy(requested, chain_problem(array, state, batch, duration, vector,
                                                     gaussian))


def rename_free(step: tuple, step_names: tuple) -> dict:
    """Bound step name -> free name, for the names that differ.

    Example:
        >>> rename_free((("x", "y"),), (("a", "y"),))
        {'x': 'a'}
    """
    out = {}
    for (p, c), (fp, fcurr) in zip(step, step_names):
        if fp != p:
            out[p] = fp
        if fcurr != c:
            out[c] = fcurr
    return out


def markov_terms(sum_op, prod_op, trans, time, step: tuple, step_names: tuple, strategy):
    """The Markov product of any chain, built as pairwise contraction terms through the
    active interpretation: a parallel scan (``ceil(log2 T)`` rounds) or a left fold. A chain
    without ``time`` among its inputs repeats its one step, by repeated squaring.

    Example:
        >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> markov_terms(ops.add, ops.mul, t, fc.Variable("t", fc.Bint[3]), (("x", "y"),),
        ...              (("x", "y"),), "sequential").data.tolist()
        [[4.0, 4.0], [4.0, 4.0]]
    """
    tname, duration = time.name, time.output.size
    pairs = dict(step)
    if tname not in trans.inputs:
        result = compose_power(sum_op, prod_op, trans, pairs, duration)
    elif not pairs:
        result = trans.reduce(prod_op, tname)
    else:
        if strategy in (None, "auto"):
            strategy = "parallel"
        if not distributes(sum_op, prod_op, (trans,)):
            strategy = "sequential"
        steps = fold_steps if strategy == "sequential" else parallel_steps
        result = steps(sum_op, prod_op, trans, tname, pairs)
    renames = rename_free(step, step_names)
    return result(**renames) if renames else result
