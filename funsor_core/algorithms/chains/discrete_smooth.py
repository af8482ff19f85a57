"""Smoothing and Viterbi decoding on discrete chains, by the derivative of the chain's total.

In the ``(logaddexp, add)`` semiring a chain's total is its log normalizer ``log Z``, a
log-sum-exp over paths of the sum of their step factors. Its derivative with respect to a
term added to step ``t`` at ``(prev, curr)`` is the posterior probability of that pair,
``p(x_t = prev, x_{t+1} = curr | everything)``. In ``(max, add)`` the total is the best
path's score and its derivative is the indicator of that path: Viterbi decoding. The
derivative runs through whichever strategy evaluates the chain (parallel or sequential,
``lax.scan`` under jax) by the backend's autodiff (torch autograd, ``jax.vjp``, also under
``jax.jit``), so smoothing costs a small multiple of filtering, as dynamax's parallel smoother.

A numpy chain (numpy has no autodiff) is differentiated by torch when torch is installed:
its arrays are viewed as torch tensors of the same dtype (no copy), and the results come back
as numpy arrays; without torch it raises, naming the fix.

Example:
    >>> import torch
    >>> trans = fc.Tensor(torch.zeros(3, 2, 2), {"t": fc.Bint[3], "x": fc.Bint[2],
    ...                                           "y": fc.Bint[2]})
    >>> total, pairs = markov_marginals(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    >>> round(float(total.data), 4), pairs.data[0].tolist()  # log 2**4; uniform pairs
    (2.7726, [[0.25, 0.25], [0.25, 0.25]])
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_plan import tensor_factors, tensor_layout
from funsor_core.algorithms.chains.discrete_precision import single_precision
from funsor_core.algorithms.chains.factors import product_leaves
from funsor_core.algorithms.chains.masks import masked_steps, step_mask, traced_invalid
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.markov import MarkovProduct, require_funsor, time_variable
from funsor_core.terms.traversal import reinterpret

__all__ = ["markov_marginals", "markov_map"]

_NO_AUTODIFF = (
    "{what} reads the derivative of the chain's total, and numpy arrays have no autodiff "
    "(numpy chains are differentiated by torch, which is not installed); install torch, or "
    "build the chain from jax arrays (fc.set_backend('jax'))")


def _time_name(time) -> str:
    return time.name if isinstance(time, Variable) else time


def _probed(sum_op, prod_op, trans, time: str, step: dict, factors, strategy, what: str):
    # The chain's total as a function of an added zero "probe" over (time, batch, prevs,
    # currs), the probe's inputs, and the backend module (for value_and_vjp).
    if sum_op not in (ops.logaddexp, ops.max, ops.min) or prod_op is not ops.add:
        raise ValueError(f"{what} reads derivatives of (logaddexp | max | min, add) chains, "
                         f"got (ops.{sum_op.name}, ops.{prod_op.name})")
    pieces = tensor_factors(trans, prod_op)
    if pieces is None:
        real = sorted(n for n, d in trans.inputs.items() if d.dtype == "real")
        query = ("the max-marginals of a MarkovProduct(ops.max, ops.add, ...) from "
                 "fc.forward_backward(ops.max, ops.add, expr), whose means (fc.moments) are "
                 "the MAP path," if sum_op is ops.max else "its smoothed marginals from "
                 "fc.forward_backward(ops.logaddexp, ops.add, expr)")
        hint = (f"; its inputs {real} are real (a Gaussian chain): read {query} of the "
                f"lazily built chain (README, Adjoints)" if real else "")
        raise TypeError(f"{what} needs a chain of Tensors (or a lazily built sum of Tensors), "
                        f"got {type(trans).__name__}{hint}")
    inputs: dict = {}
    for f in pieces:
        for n, d in f.inputs.items():
            inputs.setdefault(n, d)
    if time not in inputs:
        raise ValueError(f"{what}: time '{time}' is not an input of the chain {list(inputs)}")
    missing = [n for pair in step.items() for n in pair if n not in inputs]
    if missing:
        raise ValueError(f"{what}: step names {missing} are not inputs of the chain, whose "
                         f"inputs are {list(inputs)}; every prev and curr name of step={step} "
                         "must be one")
    order, batch, prevs, currs = tensor_layout(inputs, time, tuple(sorted(step.items())))
    probe_inputs = {n: inputs[n] for n in order}
    proto = _widest(pieces)
    backend = backend_of(proto)
    if not backend.DIFFERENTIABLE:
        raise NotImplementedError(_NO_AUTODIFF.format(what=what))
    states = frozenset(prevs) | frozenset(currs)
    for k, f in enumerate(factors):
        if time in f.inputs:  # the chain's time is bound inside it: no factor outside sees it
            raise ValueError(f"{what}: boundary factor {k} over {dict(f.inputs)} has the "
                             f"chain's time input '{time}'; a boundary factor is over the "
                             "first prev names or the last curr names (and batch names): put "
                             "a factor of each step into the steps instead")
        if f.inputs and not any(n in inputs for n in f.inputs):  # a typo, most likely
            raise ValueError(f"{what}: boundary factor {k} over {dict(f.inputs)} shares no name "
                             f"with the chain, whose inputs are {list(inputs)}; a boundary "
                             "factor is over the first prev names or the last curr names "
                             "(and batch names)")

    def total_of(x):
        probe = Tensor(x, probe_inputs)
        # Built without evaluating (reflect), so the reduction below sees the chain and its
        # boundary factors together: exact runs it as a filter.
        with reflect:
            chain = MarkovProduct(sum_op, prod_op, trans + probe, time, step, strategy=strategy)
        total = chain
        for f in factors:
            total = prod_op(total, f)
        total = total.reduce(sum_op, states | frozenset().union(*(
            frozenset(f.inputs) - frozenset(batch) for f in factors)))
        return total.align(tuple(batch)).data if batch else total.data

    shape = tuple(d.size for d in probe_inputs.values())
    return total_of, probe_inputs, shape, proto, backend, batch


def markov_marginals(sum_op, prod_op, trans, time, step: dict, factors=(), strategy=None, *,
                     lengths=None, mask=None):
    """The chain's total and its derivative with respect to each step: posterior pair
    marginals for ``(logaddexp, add)``, the best path's indicator for ``(max, add)``.

    Args:
        trans: the steps: a Tensor, or a sum of Tensors built lazily (a shared transition
            matrix plus observations per step), with inputs ``time``, the names of ``step``
            and batch names.
        time, step: as in ``MarkovProduct``.
        factors: boundary factors (an initial distribution over the prev names), multiplied
            in before every state is summed.
        strategy: as in ``MarkovProduct``.
        lengths, mask: ragged sequences (``masked_steps``): step ``t`` of batch entry ``b``
            counts iff ``t < lengths[b]`` (and ``mask[t, b]``); a masked step is the identity
            transition, so the state is carried and the boundary ``factors`` of the curr
            names meet the state after the last valid step.

    Returns:
        ``(total, pairs)``: a Tensor over the batch names, and a Tensor over ``time``, the
        batch, prev and curr names: ``pairs[t, prev, curr] = d total / d step_t[prev, curr]``.
        At a masked step ``pairs`` is diagonal: ``pairs[t, k, k]`` is the marginal of the
        carried state (in ``(max, add)``, the best path staying put), 0 off the diagonal.

    A chain of numpy arrays is differentiated by torch (see the module's docstring), and its
    results are numpy arrays. On torch arrays that require grad (grad mode on) the total and
    the pairs stay in the caller's graph, as on jax: a loss on them trains the steps (the
    pairs by a second derivative, torch's ``create_graph``); under ``torch.no_grad()`` they
    are plain values.

    Raises:
        NotImplementedError: the chain holds numpy arrays and torch is not installed.
        ValueError: in ``(logaddexp, add)`` or ``(max, add)``, a batch entry's total is -inf
            (mass zero: no posterior) where the values are concrete; under ``jax.jit`` the
            -inf total is returned beside NaN pairs for that entry.

    Example:
        >>> import torch
        >>> a = fc.Tensor(torch.tensor([[0.0, -1.0], [-1.0, 0.0]]), {"x": fc.Bint[2],
        ...                                                          "y": fc.Bint[2]})
        >>> _, pairs = markov_marginals(ops.logaddexp, ops.add, a,
        ...                             fc.Variable("t", fc.Bint[2]), {"x": "y"})
        >>> round(float(pairs.data.sum()), 6)  # one pair per step
        2.0
    """
    return _marginals(sum_op, prod_op, trans, time, step, factors, strategy, "markov_marginals",
                      lengths, mask)


def _marginals(sum_op, prod_op, trans, time, step: dict, factors, strategy, what: str,
               lengths=None, mask=None):
    # markov_marginals, its errors naming the public function called (``what``).
    if isinstance(factors, Funsor):  # one boundary factor, given bare: as a list of one
        factors = [factors]
    require_funsor(trans, what)
    _one_backend(trans, factors, lengths, mask, what)
    trans = _evaluated_leaves(trans, prod_op)
    # a boundary factor built lazily: its value (a numpy chain runs on torch, which converts
    # Tensors only; a lazy numpy factor beside the converted chain read as mixed backends)
    factors = [reinterpret(f) if isinstance(f, Funsor) and not isinstance(f, (Tensor, Number))
               else f for f in factors]
    if _numpy_chain(trans, prod_op):
        return _on_torch(sum_op, prod_op, trans, time, step, factors, strategy, what,
                         lengths, mask)
    shifted, shifts = _shifted_pieces(trans, prod_op, time, dict(step))
    unshifted, clock, trans = trans, time, shifted
    if lengths is not None or mask is not None:
        trans = masked_steps(sum_op, prod_op, trans, time, step, lengths, mask, what)
        time = _time_name(time)
    if isinstance(time, Variable):
        domain = _inputs(trans, prod_op).get(time.name)
        if time.output.dtype == "real" or time.output.shape:
            raise ValueError(f"{what}: time '{time.name}' must be Bint[T], got "
                             f"{time.output}")
        if domain is None:
            trans = _with_time(trans, time, prod_op)
        elif domain is not time.output:
            raise ValueError(f"{what}: time '{time.name}' is {time.output} but the "
                             f"chain has '{time.name}': {domain}")
    time = _time_name(time)
    fn, inputs, shape, proto, backend, batch = _probed(sum_op, prod_op, trans, time, dict(step),
                                                      factors, strategy, what)
    # A torch chain whose arrays require grad: the total and the pairs stay functions of them
    # (a loss on the smoothed marginals trains through them, as it does on jax).
    value, grad = backend.value_and_vjp(fn, ops.new_zeros(proto, shape),
                                        keep_graph=_needs_graph(trans, factors, prod_op,
                                                                backend))
    batch_inputs = {n: inputs[n] for n in batch}
    total = Tensor(value, batch_inputs)
    if prod_op is ops.add and sum_op in (ops.logaddexp, ops.max) and math.prod(shape):
        if not _check_mass(value, batch_inputs, what):
            grad = _nan_where_dead(grad, inputs, total)
    if shifts:
        value = value + _shift_total(shifts, unshifted, clock, lengths, mask, batch_inputs)
        total = Tensor(value, batch_inputs)
    if lengths is not None or mask is not None:
        total = _nan_where_invalid(total, lengths, mask, time, inputs[time])
    return total, Tensor(grad, inputs)


def _needs_graph(trans, factors, prod_op, backend) -> bool:
    leaves = list(tensor_factors(trans, prod_op) or ()) + list(factors)
    return any(backend.tracks_gradients(f.data) for f in leaves if isinstance(f, Tensor))


def _nan_where_invalid(total: Tensor, lengths, mask, time: str, domain) -> Tensor:
    # Traced lengths outside 0..T (or mask values other than 0/1) cannot be refused under
    # jax.jit: masked_steps makes their steps NaN, but a kernel that rescales its messages
    # can turn a step of NaNs into a finite total; their totals are NaN here, as the pairs.
    value = total.data
    for bad in traced_invalid(lengths, mask, domain.size):
        if time in bad.inputs:
            bad = bad.reduce(ops.or_, time)
        value = ops.where(align_tensor(dict(total.inputs), bad), math.nan, value)
    return total if value is total.data else Tensor(value, total.inputs)


def _shifted_pieces(trans, prod_op, time, step: dict) -> tuple:
    # A single-precision step near -1e4 (observations of log weights near -1e4, added to a
    # transition matrix lazily, or a dense step) rounds, wherever an O(1) number is added to
    # it (its other pieces, the initial factor), to the ulp of 1e4 (5e-4): every pair
    # marginal moves by as much, whatever the chain does afterwards. Each piece shifted first
    # to a maximum of 0 over its state names (the subtraction of a nearby maximum is exact)
    # leaves small numbers to add. A shift constant over the states of a step adds the same
    # to every path: the derivative (the pairs) is unchanged, and the total gets the shifts
    # back (``_shift_total``). Returns ``(trans, shifts)``: the Tensors of the shifts over
    # the pieces' time and batch names, empty where nothing was shifted (double precision;
    # a time the checks below refuse).
    pieces = tensor_factors(trans, prod_op) if prod_op is ops.add else None
    states = frozenset(step) | frozenset(step.values())
    if pieces is None:
        return trans, []
    shifted = [f for f in pieces if isinstance(f, Tensor) and not f.output.shape
               and states & frozenset(f.inputs)]
    if not shifted or not single_precision(_widest(pieces).dtype):
        return trans, []
    try:
        time_variable(trans, time)
    except (TypeError, ValueError):  # the caller's checks name the mistake
        return trans, []
    out, shifts = [], []
    for f in pieces:
        if not any(f is g for g in shifted):
            out.append(f)
            continue
        axes = tuple(i for i, n in enumerate(f.inputs) if n in states)
        top = ops.amax(f.data, axes, keepdims=True)
        # a piece of no finite entry at some (time, batch) is left as it is there
        top = ops.where(ops.isfinite(top), top, ops.full_like(top, 0.0))
        out.append(Tensor(f.data - top, f.inputs, f.dtype))
        rest = {n: d for n, d in f.inputs.items() if n not in states}
        shifts.append(Tensor(ops.reshape(top, tuple(d.size for d in rest.values())), rest))
    with reflect:  # kept apart, as the caller built them (see tensor_factors)
        trans = out[0]
        for f in out[1:]:
            trans = prod_op(trans, f)
    return trans, shifts


def _shift_total(shifts: list, trans, time, lengths, mask, batch_inputs: dict):
    # The pieces' shifts summed over the steps that count (all, or those lengths/mask keep),
    # as an array over ``batch_inputs`` (the total's), with size-1 dims where none varies.
    time = time_variable(trans, time)
    layout = {time.name: time.output, **batch_inputs}
    data = None
    for f in shifts:
        part = align_tensor(layout, f)
        data = part if data is None else data + part
    data = ops.expand(data, (time.output.size,) + tuple(data.shape[1:]))
    if lengths is not None or mask is not None:
        keep = step_mask(layout, time, (), lengths, mask)
        keep = ops.reshape(keep, tuple(keep.shape) + (1,) * (len(data.shape) - len(keep.shape)))
        data = ops.where(keep, data, ops.full_like(data, 0.0))
    return ops.sum(data, 0)


def _evaluated_leaves(trans, prod_op):
    # A step built lazily from a transition Tensor and a distribution (Normal(loc[x_curr],
    # scale, value=y) under ``lazy``): each term of the sum that the active interpretation
    # evaluates to a Tensor becomes that Tensor, the sum stays apart (see tensor_factors).
    if tensor_factors(trans, prod_op) is not None:
        return trans
    leaves = product_leaves(trans, prod_op)
    if len(leaves) == 1:
        return trans
    leaves = [f if isinstance(f, (Tensor, Number)) else reinterpret(f) for f in leaves]
    with reflect:
        rebuilt = leaves[0]
        for f in leaves[1:]:
            rebuilt = prod_op(rebuilt, f)
    return rebuilt if tensor_factors(rebuilt, prod_op) is not None else trans


def _widest(pieces):
    # An empty array of the dtype the step factors promote to (float32 steps plus float64
    # observations: float64), so the probe, and the pairs, lose no digits of either.
    empty = [ops.reshape(f.data, (-1,))[:0] for f in pieces if isinstance(f, Tensor)]
    proto = empty[0]
    for e in empty[1:]:
        if e.dtype != proto.dtype:
            proto = proto + e
    return proto


def _numpy_chain(trans, prod_op) -> bool:
    pieces = tensor_factors(trans, prod_op)
    return bool(pieces) and any(isinstance(f, Tensor) and isinstance(f.data, np.ndarray)
                                for f in pieces)


def _one_backend(trans, factors, lengths, mask, what: str) -> None:
    # A numpy chain runs on torch (``_on_torch``): a torch boundary factor or lengths beside
    # it were converted silently and their autograd dropped (the results are numpy arrays).
    terms = [("trans", trans)] + [(f"factor {k}", f) for k, f in enumerate(factors)
                                  if isinstance(f, Funsor)]
    terms += [(n, x) for n, x in (("lengths", lengths), ("mask", mask)) if isinstance(x, Funsor)]
    if len(terms) > 1:
        check_backends(f"run {what}", [t for _, t in terms], [n for n, _ in terms], deep=True)


def _on_torch(sum_op, prod_op, trans, time, step, factors, strategy, what, lengths, mask):
    # The derivative of a numpy chain by torch's autograd: the same numbers in the same dtype
    # (torch.as_tensor shares the memory), the results returned as numpy arrays.
    try:
        torch_backend = backend_module("torch")
    except ImportError:
        raise NotImplementedError(_NO_AUTODIFF.format(what=what)) from None

    def to_torch(x):
        return _numpy_to_torch(torch_backend, x)

    pieces = [to_torch(f) for f in tensor_factors(trans, prod_op)]
    with reflect:  # kept apart, as the caller built them (see tensor_factors)
        trans = pieces[0]
        for f in pieces[1:]:
            trans = prod_op(trans, f)
    def keep_raw(x):  # a raw array of lengths or a mask is refused naming its own type
        return x if isinstance(x, np.ndarray) and x.ndim else to_torch(x)

    total, pairs = _marginals(sum_op, prod_op, trans, time, step, [to_torch(f) for f in factors],
                              strategy, what, keep_raw(lengths), keep_raw(mask))
    return _to_numpy(total), _to_numpy(pairs)


def _numpy_to_torch(torch_backend, x):
    # A module-level function, not a closure calling itself: such a closure is a reference
    # cycle, left to the cyclic collector on every call.
    if isinstance(x, np.ndarray):
        # (reshaped: ascontiguousarray makes a 0-d array, a scalar length, 1-d)
        return torch_backend.asarray(np.ascontiguousarray(x).reshape(x.shape))
    if isinstance(x, Tensor) and isinstance(x.data, np.ndarray):
        return Tensor(_numpy_to_torch(torch_backend, x.data), x.inputs, x.dtype)
    return x


def _to_numpy(t: Tensor) -> Tensor:
    if isinstance(t.data, np.ndarray):
        return t
    return Tensor(np.asarray(ops.to_numpy(t.data)), t.inputs, t.dtype)


def _check_mass(total, batch_inputs: dict, what: str) -> bool:
    # A total of -inf: every path has probability 0, so the derivative (marginals, the best
    # path's indicator) is 0 everywhere, a number that is no posterior. A traced total
    # decides nothing (the -inf total is then the signal).
    if not ops.is_concrete(total):
        return False
    dead = np.asarray(ops.to_numpy(total)) == -np.inf
    if dead.any():
        at = dict(zip(batch_inputs, np.argwhere(dead)[0].tolist())) if dead.ndim else {}
        at = f" at {at}" if at else ""
        raise ValueError(f"{what}: the chain has mass zero{at} (its total is -inf: every path "
                         "has a log potential of -inf), so it has no posterior; look for "
                         "contradictory evidence or a -inf row of a transition")
    return True


def _nan_where_dead(grad, inputs: dict, total: Tensor):
    # Traced (jax.jit): a batch entry of mass zero cannot raise, and its derivative (all 0)
    # would pass for marginals, so its pairs become NaN, as infer_discrete's marginals do.
    dead = align_tensor(inputs, total) == -math.inf
    dead = ops.reshape(dead, tuple(dead.shape) + (1,) * (len(grad.shape) - len(dead.shape)))
    return ops.where(dead, ops.full_like(grad, math.nan), grad)


def _inputs(trans, prod_op) -> dict:
    pieces = tensor_factors(trans, prod_op) or [trans]
    out: dict = {}
    for f in pieces:
        out.update(f.inputs)
    return out


def _with_time(trans, time: Variable, prod_op):
    # A chain the same at every step: give it the time input (a zero Tensor over time), so
    # each step has its own derivative.
    proto = next(f.data for f in tensor_factors(trans, prod_op) if isinstance(f, Tensor))
    zero = Tensor(ops.new_zeros(proto, (time.output.size,)), {time.name: time.output})
    with reflect:
        return trans + zero


def markov_map(trans, time, step: dict, factors=(), strategy=None, *, lengths=None,
               mask=None):
    """The most probable path of a chain (Viterbi), from the derivative of its best score.

    Args: as in ``markov_marginals`` (the chain is read in ``(max, add)``: log potentials).

    Returns:
        ``(score, path)``: the best path's score (a Tensor over the batch names), and for
        each prev name of ``step`` a Tensor over the batch names and ``time`` extended to
        ``Bint[T + 1]`` with the state at each time (the prev state of each step, then the
        last curr state). Where several paths are best, one of them. With ``lengths``
        (or ``mask``) the masked steps carry the state: ``path[t]`` for ``t > lengths[b]``
        repeats the state at ``lengths[b]``, the last valid one.

    Raises:
        ValueError: a best score is NaN (NaN steps) or -inf (mass zero) where the values
            are concrete; under ``jax.jit`` that score is returned, and the path's states
            of that batch entry are -1 (a value no ``Bint`` holds), as ``infer_discrete``'s.

    Example:
        >>> import torch
        >>> a = fc.Tensor(torch.tensor([[0.0, -5.0], [-5.0, 0.0]]), {"x": fc.Bint[2],
        ...                                                          "y": fc.Bint[2]})
        >>> init = fc.Tensor(torch.tensor([-1.0, 0.0]), {"x": fc.Bint[2]})
        >>> score, path = markov_map(a, fc.Variable("t", fc.Bint[3]), {"x": "y"}, [init])
        >>> float(score.data), path["x"].data.tolist()  # stay in state 1 throughout
        (0.0, [1, 1, 1, 1])
    """
    total, pairs = _marginals(ops.max, ops.add, trans, time, step, factors, strategy,
                              "markov_map", lengths, mask)
    if ops.is_concrete(total.data):  # traced: the NaN score is the signal
        bad = np.isnan(np.asarray(ops.to_numpy(total.data)))
        if bad.any():
            where = {n: i for n, i in zip(total.inputs, np.argwhere(bad)[0].tolist())}
            where = f" at {where}" if where else ""
            raise ValueError(f"markov_map: the best score is NaN{where}: the steps or factors "
                             "hold NaN, and no path is best among them "
                             "(a log potential must be a number or -inf)")
        return total, decode_path(pairs, _time_name(time), step)
    return total, _void_paths(total, decode_path(pairs, _time_name(time), step))


def _void_paths(total: Tensor, path: dict) -> dict:
    # Traced, a NaN or -inf best score cannot raise: that entry's states become -1, which
    # no Bint holds, instead of an arbitrary path that would pass for an answer.
    out = {}
    for name, p in path.items():
        batch = tuple(n for n in p.inputs if n in total.inputs)
        void = ~(total.align(batch).data > -math.inf)
        out[name] = Tensor(ops.where(void[None], ops.full_like(p.data, -1), p.data),
                           p.inputs, p.dtype)
    return out


def decode_path(pairs: Tensor, time: str, step: dict) -> dict:
    """The path of a best-path indicator ``pairs`` (over time, batch, prevs, currs): the state
    of each prev name at times ``0 .. T`` (see ``markov_map``).

    Example:
        >>> ind = np.zeros((2, 2, 2)); ind[0, 0, 1] = ind[1, 1, 1] = 1.0
        >>> pairs = fc.Tensor(ind, {"t": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]})
        >>> decode_path(pairs, "t", {"x": "y"})["x"].data.tolist()
        [0, 1, 1]
    """
    order, batch, prevs, currs = tensor_layout(pairs.inputs, time, tuple(sorted(step.items())))
    data = pairs.align(tuple(order)).data
    duration = pairs.inputs[time].size
    nb = len(batch)
    sizes = [pairs.inputs[p].size for p in prevs]
    states = math.prod(sizes)
    if states == 0:
        empty = {p: str(pairs.inputs[p]) for p in prevs if pairs.inputs[p].size == 0}
        raise ValueError(f"markov_map: the states {empty} have no values, so the chain has "
                         "no path to decode")
    flat = ops.reshape(data, (duration,) + data.shape[1:1 + nb] + (states, states))
    # Where paths tie, ``pairs`` spreads over all the optimal ones, so a per-time argmax may
    # mix two of them. ``pairs`` is a unit flow along optimal edges (the derivative of a max
    # goes to its maximizers), so every edge of positive weight lies on an optimal path:
    # backtrack as Viterbi does, from a best last state through a positive edge into it.
    last = ops.argmax(ops.sum(flat[duration - 1], axis=-2), -1)  # (*batch)
    index = ops.new_arange(last, 0, states, 1)

    def back(curr, pair):  # pair (*batch, P, C) -> the prev of curr, (*batch)
        into = ops.where((index == curr[..., None])[..., None, :], pair,
                         ops.full_like(pair, 0.0))
        prev = ops.argmax(ops.sum(into, axis=-1), -1)
        return prev, prev

    _, prev_state = backend_of(flat).scan(back, last, flat, reverse=True)  # (T, *batch)
    path = ops.cat([prev_state, last[None]], 0)  # (T + 1, *batch)
    out = {}
    inputs = {time: Bint[duration + 1]}
    inputs.update((n, pairs.inputs[n]) for n in batch)
    stride = states
    for name, size in zip(prevs, sizes):
        stride //= size
        out[name] = Tensor((path // stride) % size, inputs, size)
    return out
