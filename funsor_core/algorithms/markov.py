"""Evaluating a Markov product: from the term to pre-aligned arrays and back.

``exact``'s rules (``interpretations/exact/markov.py``) call these functions; they decide
nothing about when a rewrite applies, only how:

- ``markov_tensor``: a discrete chain of one Tensor. Its data is aligned once to
  ``(T, *batch, P, C)`` and handed to ``scan_tensor.chain_product``; no terms per step.
- ``markov_terms``: any other chain, by building the pairwise contractions as terms through
  the active interpretation (so lazy pieces, moment matching or a tape see every step):
  the parallel scan of ``chains.sequential_sum_product`` or a left fold.

Both follow the strategy that ``scan.resolve_strategy`` picks. The Gaussian chains'
array kernels are ``scan_gaussian``.

Example:
    >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> markov_tensor(ops.add, ops.mul, [t], fc.Variable("t", fc.Bint[3]), (("x", "y"),),
    ...               (("x", "y"),), "parallel").data.tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains import compose_power, fold_steps, parallel_steps
from funsor_core.algorithms.scan import ChainProblem, device_of, resolve_strategy
from funsor_core.algorithms.scan_tensor import chain_product
from funsor_core.atoms.sign import distributes
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Real
from funsor_core.engine.backend import backend_name_of
from funsor_core.terms.base import Binary, Number
from funsor_core.terms.contraction import Contraction

__all__ = ["markov_tensor", "markov_terms", "tensor_factors", "tensor_layout", "chain_strategy",
           "rename_free", "contract_markov_tensor"]


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
    if not distributes(sum_op, prod_op, tuple(factors)):
        # The Markov product is defined as a left fold; only a semiring may regroup it.
        return "sequential"
    backend = backend_name_of(array)
    problem = ChainProblem(backend, backend == "jax", device_of(array), state, batch,
                           duration, vector, gaussian)
    return resolve_strategy(requested, problem)


def tensor_layout(trans, time: str, step: tuple) -> tuple:
    """``(order, batch names, prev names, curr names)``: the order to align ``trans``'s
    inputs to so that its data reshapes to ``(T, *batch, P, C)``.

    Example:
        >>> tensor_layout({"y": 0, "b": 0, "t": 0, "x": 0}, "t", (("x", "y"),))
        (['t', 'b', 'x', 'y'], ['b'], ['x'], ['y'])
    """
    prevs = [p for p, _ in step]
    currs = [c for _, c in step]
    skip = set(prevs) | set(currs) | {time}
    batch = [n for n in trans if n not in skip]
    order = ([time] if time in trans else []) + batch + prevs + currs
    return order, batch, prevs, currs


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


def _factor_array(f, layout: dict, prevs: list, currs: list, has_time: bool, proto):
    # f's data aligned to (T or 1, *batch (size 1 where f lacks a name), P or 1, C or 1): a
    # factor of some but not all prev (curr) names is expanded over the others.
    names = list(layout)
    if isinstance(f, Number):
        data = ops.new_full(proto, (1,) * len(names), float(f.data))
    else:
        data = align_tensor(layout, f)
    own = set(f.inputs)
    full = [layout[n].size if n in own else 1 for n in names]
    for group in (prevs, currs):
        if own.intersection(group):
            for n in group:
                full[names.index(n)] = layout[n].size
    if tuple(data.shape) != tuple(full):
        data = ops.expand(data, tuple(full))
    nb = len(names) - len(prevs) - len(currs) - (1 if has_time else 0)
    lead = full[:1] if has_time else [1]
    batch = full[(1 if has_time else 0):(1 if has_time else 0) + nb]
    p = math.prod(full[len(full) - len(prevs) - len(currs):len(full) - len(currs)])
    c = math.prod(full[len(full) - len(currs):])
    return ops.reshape(data, tuple(lead + batch + [p, c]))


def markov_tensor(sum_op, prod_op, factors: list, time, step: tuple, step_names: tuple,
                  strategy, left=None, right=None) -> Tensor:
    """The Markov product of a discrete chain whose step is the ``prod_op``-product of
    ``factors`` (Tensors and Numbers, from ``tensor_factors``), on their arrays.

    ``left`` / ``right``: optional boundary arrays ``(*batch, P)`` / ``(*batch, C)`` whose
    states are summed out (then the result drops the prev / curr names).

    Example:
        >>> t = fc.Tensor(np.ones((2, 2, 2)), {"t": fc.Bint[2], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> markov_tensor(ops.add, ops.mul, [t], fc.Variable("t", fc.Bint[2]), (("x", "y"),),
        ...               (("x", "y"),), "sequential").inputs
        {'x': Bint[2], 'y': Bint[2]}
    """
    tname, duration = time.name, time.output.size
    inputs: dict = {}
    for f in factors:
        for n, d in f.inputs.items():
            inputs.setdefault(n, d)
    order, batch, prevs, currs = tensor_layout(inputs, tname, step)
    layout = {n: inputs[n] for n in order}
    has_time = tname in inputs
    proto = next(f.data for f in factors if isinstance(f, Tensor))
    arrays = tuple(_factor_array(f, layout, prevs, currs, has_time, proto) for f in factors)
    bshape = tuple(inputs[n].size for n in batch)
    psizes = tuple(inputs[n].size for n in prevs)
    states = math.prod(psizes)
    strategy = chain_strategy(strategy, sum_op, prod_op, factors, proto, states,
                              math.prod(bshape), duration, left is not None or right is not None)
    power = None if has_time or duration == 1 else duration
    out = chain_product(sum_op, prod_op, arrays, strategy, left, right, power)
    # The result's inputs: batch, then the free names of the prevs and currs it keeps.
    free = {}
    for (p, c), (free_p, free_c) in zip(step, step_names):
        free[p], free[c] = free_p, free_c
    new_inputs = {n: inputs[n] for n in batch}
    shape = bshape
    if left is None:
        new_inputs.update((free[n], inputs[n]) for n in prevs)
        shape += psizes
    if right is None:
        new_inputs.update((free[n], inputs[n]) for n in currs)
        shape += psizes
    return Tensor.make(ops.reshape(out, shape), new_inputs, "real")


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



def _unit_array(proto, shape: tuple, prod_op):
    return ops.new_full(proto, shape, float(ops.UNITS[prod_op]))


def _boundary(terms, prod_op, inputs: dict, proto):
    # The prod_op-product of ``terms`` (Tensors, Numbers over ``inputs``' names) as one array
    # of the full shape of ``inputs``, flattened to (*batch, states).
    shape = tuple(d.size for d in inputs.values())
    if not terms:
        return _unit_array(proto, shape, prod_op)
    value = terms[0]
    for t in terms[1:]:
        value = prod_op(value, t)
    if not isinstance(value, Tensor):  # a Number
        return prod_op(_unit_array(proto, shape, prod_op), value.data)
    return align_tensor(inputs, value, expand=True)


def contract_markov_tensor(red_op, bin_op, reduced_vars: frozenset, mp, others: list):
    """``Contraction(red_op, bin_op, reduced_vars, (mp, *others))`` for a discrete Markov
    product ``mp`` whose first prev or last curr states are summed out: the factors of those
    states are folded in as boundary vectors, so the sequential carry is a vector (an HMM's
    forward or backward algorithm, ``O(T K^2)``) instead of a transition matrix.

    Returns ``(value, rest, remaining_vars)``: the chain with its boundaries, the factors that
    stay outside (batch-only factors, factors of other names) and what is left to reduce;
    or None when no boundary can be summed inside the chain.

    Example:
        >>> from interpretations import lazy
        >>> t = fc.Tensor(np.ones((4, 2, 2)), {"t": fc.Bint[4], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> with lazy:
        ...     mp = fc.MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"})
        >>> init = fc.Tensor(np.array([1.0, 0.0]), {"x": fc.Bint[2]})
        >>> value, rest, names = contract_markov_tensor(ops.add, ops.mul,
        ...                                             frozenset({"x", "y"}), mp, [init])
        >>> float(value.data), rest, names  # 2 ** 4 paths from x = 0
        (16.0, [], frozenset())
    """
    sum_op, prod_op = mp.sum_op, mp.prod_op
    factors = tensor_factors(mp.trans, prod_op)
    if (factors is None or not mp.step or red_op is not sum_op or bin_op not in (None, prod_op)
            or not distributes(sum_op, prod_op, (*factors, *others))):
        return None
    free = mp.free_names
    fp = frozenset(free[p] for p, _ in mp.step)
    fc = frozenset(free[c] for _, c in mp.step)
    names = frozenset(mp.inputs)
    rest, sides = [], []
    for t in others:
        own = frozenset(t.inputs)
        if not isinstance(t, (Tensor, Number)) or not own <= names or (own & fp and own & fc):
            rest.append(t)
        else:
            sides.append(t)
    outside = frozenset().union(*(t.inputs for t in rest))
    use_left = fp <= reduced_vars and not outside & fp
    use_right = fc <= reduced_vars and not outside & fc
    left, right = [], []
    for t in sides:
        own = frozenset(t.inputs)
        if own & fp and use_left:
            left.append(t)
        elif own & fc and use_right:
            right.append(t)
        else:
            rest.append(t)
    if not (use_left or use_right):
        return None
    inputs = mp.trans.inputs
    _, batch, prevs, currs = tensor_layout(inputs, mp.time.name, mp.step)
    bdomains = {n: inputs[n] for n in batch}
    bshape = tuple(d.size for d in bdomains.values())
    states = math.prod(inputs[p].size for p in prevs)
    proto = next(f.data for f in factors if isinstance(f, Tensor))
    left_arr = right_arr = None
    if use_left:
        side = {**bdomains, **{free[p]: inputs[p] for p in prevs}}
        left_arr = ops.reshape(_boundary(left, prod_op, side, proto), bshape + (states,))
    if use_right:
        side = {**bdomains, **{free[c]: inputs[c] for c in currs}}
        right_arr = ops.reshape(_boundary(right, prod_op, side, proto), bshape + (states,))
    value = markov_tensor(sum_op, prod_op, factors, mp.time, mp.step, mp.step_names, mp.strategy,
                          left_arr, right_arr)
    summed = (fp if use_left else frozenset()) | (fc if use_right else frozenset())
    return value, rest, reduced_vars - summed
