"""Points along a discrete chain in a backward pass: the MAP path (Viterbi) under
``argmax_approximate``, a joint posterior path (forward filter, backward sample) under
posterior sampling.

A ``MarkovProduct`` of Tensors in ``(max | logaddexp, add)`` sums (or maximizes) over paths
``x_0 .. x_T`` the score ``sum_t step_t(x_t, x_{t+1})``; its value is a function of the
end states ``(x_0, x_T)``. Given the chain's adjoint ``A`` (everything outside it), the
points are placed in the order of a backward pass:

1. the end states from ``A + chain`` (their exact max-marginal or marginal; points that ``A``
   already fixes are kept);
2. a filter from ``x_0``: ``alpha_t(x) = S_{x_{t-1}} [alpha_{t-1}(x_{t-1}) + step_{t-1}(x_{t-1},
   x)]`` (``S`` the chain's sum, ``alpha_1 = step_0(x_0, .)``);
3. backwards from ``x_T``: ``x_t`` from ``alpha_t(x) + step_t(x, x_{t+1})`` for ``t = T-1 ..
   1``, each an ``Approximate`` that the active interpretation places (an argmax, a draw).

Under ``max``, every state chosen in step 3 is a best predecessor of the next one given
``x_0`` (``alpha_t`` is the best score from ``x_0``), so the path scores ``A + chain`` at its
ends however paths tie; under sampling, each state is drawn from its exact conditional given
``x_0`` and the later states, so the path is an exact joint posterior draw.

The step factor's message is ``Delta`` of the path over its prev and curr names, batched over
time (``prev[t] = x_t``, ``curr[t] = x_{t+1}``), plus ``total - step_t(path)``: at the path,
its adjoint plus the step is the chain's total with ``A`` (the max-marginal property).

Example:
    >>> from funsor_core.algorithms.adjoint import argmax_approximate, forward_backward
    >>> from funsor_core.sum_product import MarkovProduct
    >>> from interpretations import lazy
    >>> step = fc.Tensor(np.array([[[0.0, -1.0], [-9.0, -9.0]]] * 3),
    ...                  {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> init = fc.Tensor(np.array([0.0, -1.0]), {"x": fc.Bint[2]})
    >>> with lazy:
    ...     mp = MarkovProduct(ops.max, ops.add, step, "t", {"x": "y"})
    ...     root = (init + mp).reduce(ops.max, frozenset("xy"))
    >>> with argmax_approximate:
    ...     value, adj = forward_backward(ops.max, ops.add, root)
    >>> path = fc.extract_samples(adj[step])
    >>> path["x"].data.tolist(), path["y"].data.tolist()
    ([0, 0, 0], [0, 0, 0])
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_argmax import max_path
from funsor_core.algorithms.chains.discrete_plan import tensor_factors, tensor_layout
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Bint
from funsor_core.sampling.draw import extract_samples
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Funsor, Number, Variable

__all__ = ["chain_path_shares"]


def _cannot(time, step, why: str) -> NotImplementedError:
    return NotImplementedError(
        f"the adjoint cannot place points (MAP, samples) along this MarkovProduct over "
        f"'{time.name}' with step {dict(step)}: {why}")


def _place(ring, model: Funsor, guide: Funsor, names: dict, time, step) -> tuple:
    # model + Delta(names = a point of guide), by the active approximating interpretation.
    try:
        placed = Approximate(ring.sum_op, model, guide,
                             frozenset(Variable(n, d) for n, d in names.items()))
        points = extract_samples(placed)
    except (ValueError, NotImplementedError) as e:
        raise _cannot(time, step, str(e)) from None
    missing = sorted(set(names) - points.keys())
    if missing:
        raise _cannot(time, step, f"the active interpretation placed no point for "
                      f"{missing} (it approximates by argmax or by sampling only)")
    return placed, points


def _stack(points: list, name: str, tname: str):
    # One point per time (Tensors over some batch inputs) -> one Tensor over time and all.
    inputs: dict = {}
    for p in points:
        inputs.update(p.inputs)
    proto = next((p.data for p in points if isinstance(p, Tensor)), None)
    datas = [align_tensor(inputs, p, expand=True) if isinstance(p, Tensor)
             else ops.new_full(proto, tuple(d.size for d in inputs.values()), p.data)
             for p in points]
    size = points[0].output.size
    return Tensor(ops.stack(datas, 0), {tname: Bint[len(points)], **inputs}, size)


def chain_path_shares(ring, adj: Funsor, output: Funsor, sum_op, prod_op, trans, time, step,
                      step_names, strategy) -> tuple:
    """The message to the step factor of a discrete chain under an approximation: a point
    mass at the chain's MAP path or a posterior path (see the module docstring), as
    ``((trans, (message,)),)`` for the adjoint's driver.

    Raises:
        NotImplementedError: naming the chain, where no path can be placed (another
            semiring, a step without a time input, an interpretation that places no points).

    Example:
        Under ``argmax_approximate``, the Viterbi path, against the best of all 16 paths:

        >>> import itertools
        >>> from interpretations import lazy
        >>> from funsor_core.algorithms.adjoint import argmax_approximate
        >>> from funsor_core.algorithms.adjoint.backward import Semiring
        >>> from funsor_core.sum_product import MarkovProduct
        >>> s = np.log(np.random.default_rng(1).random((3, 2, 2)))
        >>> step = fc.Tensor(s, {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
        >>> with lazy:
        ...     mp = MarkovProduct(ops.max, ops.add, step, "t", {"x": "y"})
        >>> ring = Semiring(ops.max, ops.add, frozenset(), approximate=True)
        >>> adj = fc.Tensor(np.zeros((2, 2)), {"x": fc.Bint[2], "y": fc.Bint[2]})
        >>> with argmax_approximate:
        ...     args = [getattr(mp, f) for f in mp.fields]
        ...     ((leaf, (msg,)),) = chain_path_shares(ring, adj, fc.reinterpret(mp), *args)
        >>> path = fc.extract_samples(msg)
        >>> best = max(itertools.product(range(2), repeat=4),
        ...            key=lambda x: sum(s[t, x[t], x[t + 1]] for t in range(3)))
        >>> path["x"].data.tolist() == list(best[:3]), path["y"].data.tolist() == list(best[1:])
        (True, True)
    """
    from funsor_core.algorithms.adjoint.backward import same_sum

    if not (ring.arith in (ops.max, ops.logaddexp) and prod_op is ring.prod_op is ops.add
            and same_sum(sum_op, ring.sum_op)):
        raise _cannot(time, step, f"paths are placed in (max | logaddexp | sample, add), the "
                      f"chain is ({sum_op}, {prod_op}) and the pass ({ring.sum_op}, "
                      f"{ring.prod_op})")
    if tensor_factors(trans, prod_op) is None:
        raise _cannot(time, step, "its steps are not all Tensors (a switching chain: its "
                      "real states have no path of points here; use exact marginals)")
    tname = time.name
    if tname not in trans.inputs:
        raise _cannot(time, step, "its step factor has no input "
                      f"'{tname}', so a point per step has no place in it")
    prevs = [p for p, _ in step]
    free = dict(p for pair in zip(step, step_names) for p in zip(*pair))
    ends = {free[n]: trans.inputs[n] for pair in step for n in pair}
    with_ends, points = _place(ring, adj, adj + output, ends, time, step)
    total = (with_ends + output).reduce(ring.arith, frozenset(ends))
    first = {p: points[free[p]] for p in prevs}
    last = {p: points[free[c]] for p, c in step}
    path = None
    if ring.arith is ops.max:
        path = _viterbi_path(trans, tname, step, first, last)
    if path is None:
        path = _placed_path(ring, trans, tname, time, step, first, last)
    delta = Delta(tuple((n, (v, Number(0.0))) for n, v in path.items()))
    return ((trans, (delta + (total - trans(**path)),)),)


def _placed_path(ring, trans, tname: str, time, step, first: dict, last: dict) -> dict:
    # The interior states one time at a time, each an Approximate that the active
    # interpretation places (a draw from its exact conditional, or an argmax).
    duration = time.output.size
    prevs = [p for p, _ in step]
    states = [first] + [None] * (duration - 1) + [last]
    # The filter from the first state: alphas[t] over the prev names (t = 1 .. T - 1).
    to_prev = {c: p for p, c in step}
    alphas = [None]
    alpha = trans(**{tname: 0}, **first)
    for t in range(1, duration):
        alpha = alpha(**to_prev)
        alphas.append(alpha)
        alpha = (alpha + trans(**{tname: t})).reduce(ring.arith, frozenset(prevs))
    prev_domains = {p: trans.inputs[p] for p in prevs}
    for t in range(duration - 1, 0, -1):
        nxt = {c: states[t + 1][p] for p, c in step}
        guide = alphas[t] + trans(**{tname: t}, **nxt)
        _, drawn = _place(ring, Number(0.0), guide, prev_domains, time, step)
        states[t] = {p: drawn[p] for p in prevs}
    path = {}
    for p, c in step:
        path[p] = _stack([s[p] for s in states[:-1]], p, tname)
        path[c] = _stack([s[p] for s in states[1:]], c, tname)
    return path


def _viterbi_path(trans, tname: str, step, first: dict, last: dict) -> dict | None:
    # Under max the only placement is the argmax (argmax_approximate is the one approximation
    # of max; the ends were placed by it above), so the interior of the path is Viterbi's
    # backtrack, on arrays (``chains.discrete_argmax``: alpha_t from the max-plus tree,
    # ptr_t(x) = argmax_w alpha_t(w) + step_t(w, x) at once, x_t = ptr_t(x_{t+1}) by pointer
    # doubling). Each x_t is then a best predecessor of x_{t+1} given x_0, as the placed
    # path's. None where the step is not one Tensor or an end point varies over inputs the
    # step lacks: the placed path handles it.
    order, batch, prevs, currs = tensor_layout(trans.inputs, tname, step)
    ends = list(first.values()) + list(last.values())
    if type(trans) is not Tensor or not all(
            isinstance(v, Number) or (type(v) is Tensor and set(v.inputs) <= set(batch))
            for v in ends):
        return None
    duration = trans.inputs[tname].size
    batch_inputs = {n: trans.inputs[n] for n in batch}
    sizes = [trans.inputs[p].size for p in prevs]
    data = trans.align(tuple(order)).data
    states = math.prod(sizes)
    mats = ops.reshape(data, data.shape[:1 + len(batch)] + (states, states))
    index = ops.new_arange(mats, 0, states, 1)
    start = _flat_state(index, batch_inputs, [first[p] for p in prevs], sizes)
    stop = _flat_state(index, batch_inputs, [last[p] for p in prevs], sizes)
    path = max_path(mats, start, stop)  # (T + 1, *batch)
    inputs = {tname: Bint[duration], **batch_inputs}
    out, stride = {}, states
    for (p, c), size in zip(step, sizes):
        stride //= size
        state = (path // stride) % size
        out[p] = Tensor(state[:-1], inputs, size)
        out[c] = Tensor(state[1:], inputs, size)
    return out


def _flat_state(proto, batch_inputs: dict, values: list, sizes: list):
    # The states of the prev names as one index into their flattened product, over the batch.
    shape = tuple(d.size for d in batch_inputs.values())
    flat = None
    for v, size in zip(values, sizes):
        x = (align_tensor(batch_inputs, v, expand=True) if type(v) is Tensor
             else ops.new_full(proto, shape, int(v.data)))
        x = ops.reshape(x, shape)
        flat = x if flat is None else flat * size + x
    return flat
