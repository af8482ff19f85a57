"""Sums over Markov chains: sequential scans and the Sarkka-Bilmes scan for higher-order lags.

``sequential_sum_product`` eliminates a time input of a transition factor
``trans(time, prev, curr)`` by a parallel scan of depth ``log2(T)``;
``mixed_sequential_sum_product`` runs serial scans inside segments and a parallel scan across
them (``term_lagged`` holds the Sarkka-Bilmes scan of chains that look back more than one
step). Users import these names from ``funsor_core.sum_product``.

Example:
    >>> from funsor_core.sum_product import sequential_sum_product
    >>> t = fc.Tensor(np.ones((4, 2, 2)), {"t": fc.Bint[4], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> sequential_sum_product(ops.add, ops.mul, t, "t", {"x": "y"}).data
    array([[8., 8.],
           [8., 8.]])
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.factors import tensor_expression, tensor_factors
from funsor_core.algorithms.chains.gaussian_scan import gaussian_terms
from funsor_core.algorithms.chains.power import repeated_squaring
from funsor_core.analysis.sign import check_distributes
from funsor_core.atoms.int_range import is_float_dtype
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.domains import Bint, Real
from funsor_core.terms.base import Funsor, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct, check_semiring, require_funsor, time_variable
from funsor_core.terms.reshaping import Slice

__all__ = ["naive_sequential_sum_product", "sequential_sum_product",
           "mixed_sequential_sum_product", "fold_steps", "parallel_steps", "compose_power"]


def _time_name(time) -> str:
    return time.name if isinstance(time, Variable) else time


def _check_chain(trans, time: str, step: dict) -> None:
    require_funsor(trans, "sequential sum-product")
    # A step name that is not an input would be silently "substituted" into nothing, and the
    # scan would return numbers for a chain that does not exist; say which names are missing.
    missing = [n for n in (*step, *step.values()) if n not in trans.inputs]
    if missing:
        raise ValueError(
            f"sequential sum-product: {missing} are not inputs of the transition factor, whose "
            f"inputs are {list(trans.inputs)}; every prev/curr name of step={step} must be an "
            "input, e.g. trans(t, x_prev, x_curr) with step={'x_prev': 'x_curr'}")
    # A step composes trans(prev, curr) with trans(curr, next): curr must range over prev's
    # values (otherwise the contraction would fail on an internal name).
    for prev, curr in step.items():
        if trans.inputs[prev] is not trans.inputs[curr]:
            raise ValueError(
                f"sequential sum-product over '{time}': the prev input '{prev}' is "
                f"{trans.inputs[prev]} but its curr input '{curr}' is {trans.inputs[curr]}; "
                "a step maps a state to the next one of the same domain")
    _check_duration(trans, time, "sequential sum-product")


def _step_dict(step) -> dict:
    # funsor's step is a dict from prev names to curr names; pairs of names are read as one.
    # A list of names ['x_prev', 'x_curr'] would reach dict() as "element #0 has length 6"
    # (or, of two-letter names, pair their letters).
    if isinstance(step, dict):
        pairs = step
    elif isinstance(step, (list, tuple, set, frozenset)) and all(
            isinstance(p, tuple) and len(p) == 2 for p in step):
        pairs = dict(step)
    else:
        pairs = None
    if pairs is None or not all(isinstance(n, str) for pair in pairs.items() for n in pair):
        raise TypeError("sequential sum-product: step must map prev names to curr names, "
                        f"e.g. step={{'x_prev': 'x_curr'}}; got {step!r}")
    return dict(pairs)


def _check_duration(trans, time: str, what: str) -> None:
    # A chain of no steps has no first prev and no last curr to return.
    require_funsor(trans, what)
    domain = trans.inputs.get(time)
    if domain is not None and domain.size == 0:
        raise ValueError(f"{what} over '{time}': the chain is empty ('{time}' is {domain}); "
                         "it needs at least one step")


def _prototype_array(term):
    # Any array of the chain, to build index arrays on its backend; None for a symbolic chain.
    todo = [term]
    while todo:
        node = todo.pop()
        leaves, _ = type(node).tree_flatten(node)
        for leaf in leaves:
            if is_array(leaf):
                return leaf
            if isinstance(leaf, Funsor):
                todo.append(leaf)
    return None


def _steps(proto, time: str, start: int, stop: int, step: int, duration: int):
    # The time indices range(start, stop, step), as a new ``time`` input. With an array at
    # hand this is an index Tensor, not a Slice: under ``lazy`` a later round substitutes into
    # it, and Subs(Tensor, Number/Tensor) evaluates exactly, whereas Subs(Slice, Slice) has no
    # rule (and a Cat of unequal parts, funsor's way, cannot be substituted into at all).
    if proto is None:
        return Slice(time, start, stop, step, duration)
    return Tensor.make(ops.new_arange(proto, start, stop, step),
                       {time: Bint[len(range(start, stop, step))]}, duration)


def _compose(sum_op, prod_op, first, second, step: dict, drop: dict):
    # (first o second)(prev, curr) = sum_mid first(prev, mid) * second(mid, curr).
    x = first(**drop)
    y = second(**{prev: drop[curr] for prev, curr in step.items()})
    return Contraction(sum_op, prod_op, frozenset(drop.values()), (x, y))


def _chain_args(trans, time, step, sum_op=None, prod_op=None) -> tuple[str, dict, int]:
    # The time name (a Variable or a name), the step mapping, checked against trans, and the
    # number of steps of a factor without the time input (a Variable's size).
    step = _step_dict(step)
    _check_chain(trans, _time_name(time), step)
    time_variable(trans, time, "sequential sum-product", "the transition factor")
    steps = time.output.size if isinstance(time, Variable) else 1
    time = _time_name(time)
    # Composing steps (in any order) is dynamic programming: it needs prod_op to distribute
    # over sum_op, which (max, mul) does only for nonnegative factors.
    if sum_op is not None:
        check_semiring("sequential sum-product", sum_op, prod_op)
    check_distributes(sum_op, prod_op, (trans,), "a sequential sum-product")
    return time, step, steps


def naive_sequential_sum_product(sum_op, prod_op, trans, time, step):
    """Eliminate a Markov chain's time input one step at a time (a reference for tests).

    Args:
        trans: a factor with inputs ``time`` and the prev/curr names of ``step``.
        time: the time input (a Variable or a name).
        step: a mapping from prev names to curr names.

    Returns:
        A factor of the first step's prev names and the last step's curr names.

    Raises:
        ValueError: a name of ``step`` is not an input of ``trans``; ``time`` is a name that
            ``trans`` lacks (a factor the same at every step needs ``Variable(time, Bint[T])``)
            or is not ``Bint[T]``.

    Example:
        >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> naive_sequential_sum_product(ops.add, ops.mul, t, "t", {"x": "y"}).data
        array([[4., 4.],
               [4., 4.]])
    """
    time, step, duration = _chain_args(trans, time, step, sum_op, prod_op)
    if time not in trans.inputs:
        # A factor without a time input is the same at every step (time is then a Variable,
        # which gives the number of steps; time_variable refuses a name trans lacks).
        return compose_power(sum_op, prod_op, trans, step, duration)
    return fold_steps(sum_op, prod_op, trans, time, step)


def fold_steps(sum_op, prod_op, trans, time: str, step: dict):
    """Compose the steps of ``trans`` along ``time`` from the first to the last (a left fold:
    ``T - 1`` contractions, each built as a term through the active interpretation).

    Example:
        >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> fold_steps(ops.add, ops.mul, t, "t", {"x": "y"}).data.tolist()
        [[4.0, 4.0], [4.0, 4.0]]
    """
    drop = {curr: f"_drop_{curr}" for curr in step.values()}
    result = trans(**{time: 0})
    for t in range(1, trans.inputs[time].size):
        result = _compose(sum_op, prod_op, result, trans(**{time: t}), step, drop)
    return result


def compose_power(sum_op, prod_op, step_factor, step: dict, times: int):
    """``step_factor`` composed with itself ``times`` times (a chain whose step is the same at
    every time), by repeated squaring: about ``2 log2(times)`` contractions. With no step
    pairs this is the ``times``-fold ``prod_op`` of the factor.

    Example:
        >>> m = fc.Tensor(np.array([[0.5, 0.5], [0.0, 1.0]]), {"x": fc.Bint[2],
        ...                                                     "y": fc.Bint[2]})
        >>> compose_power(ops.add, ops.mul, m, {"x": "y"}, 3).data.tolist()
        [[0.125, 0.875], [0.0, 1.0]]
    """
    drop = {curr: f"_drop_{curr}" for curr in step.values()}

    def compose(x, y):
        if not step:
            return prod_op(x, y)
        return _compose(sum_op, prod_op, x, y, step, drop)

    return repeated_squaring(compose, step_factor, times)


def sequential_sum_product(sum_op, prod_op, trans, time, step):
    """Eliminate a Markov chain's time input by a parallel scan (depth ``log2(T)``).

    Pairs of adjacent steps are contracted at once along a halved time input, so the work
    is ``T`` contractions in ``log2(T)`` batched rounds. When a round has an odd number of
    steps, the last one is set aside and composed back at the end (at most ``log2(T)`` extra
    contractions). Unlike funsor 0.4.8 this never builds a ``Cat``, so Gaussian chains of any
    length, and lazy chains, evaluate exactly. A chain of Tensors, or of real Gaussians (and
    Tensors), is the ``MarkovProduct`` term instead, which ``exact`` runs on arrays.

    Raises:
        ValueError: a name of ``step`` is not an input of ``trans``; ``time`` is a name that
            ``trans`` lacks (a factor the same at every step needs ``Variable(time, Bint[T])``)
            or is not ``Bint[T]``.

    Example:
        >>> t = fc.Tensor(np.ones((5, 2, 2)), {"t": fc.Bint[5], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> sequential_sum_product(ops.add, ops.mul, t, "t", {"x": "y"}).data
        array([[16., 16.],
               [16., 16.]])
    """
    time, step, duration = _chain_args(trans, time, step, sum_op, prod_op)
    if time not in trans.inputs:
        return compose_power(sum_op, prod_op, trans, step, duration)
    if step and (tensor_factors(trans, prod_op) is not None or tensor_expression(trans)):
        # A chain of Tensors is the Markov product term: ``exact`` runs it on pre-aligned
        # arrays (the chain kernels, one program under jax.jit, no term per round), an
        # adjoint tape runs it as its steps and places paths along it whole, and ``lazy``
        # keeps it as one term. (benchmarks/idioms.py: 6x faster eagerly at K=4, T=1000.)
        # A step still lazy but made of Tensors (Pyro's TraceMarkovEnum_ELBO builds it under
        # ``lazy``) is the same term: its step is evaluated once, when the term is, instead
        # of log2(T) rounds of substitutions into the lazy step (benchmarks/clients.py).
        return MarkovProduct(sum_op, prod_op, trans, Variable(time, trans.inputs[time]), step)
    if step and trans.inputs[time].size == 1 and _real_gaussian_chain(sum_op, prod_op, trans,
                                                                       step):
        # One step is the product: the step itself (a Gaussian stays a Gaussian, as in
        # funsor 0.4.8; the chain kernel would add a zero Tensor to it).
        return trans(**{time: 0})
    if step and _real_gaussian_chain(sum_op, prod_op, trans, step):
        # A chain of Gaussians (and Tensors) likewise: the array kernel's log-depth tree, in
        # Gram form where its checks pass (a Cholesky of the shared state's block per merge,
        # under jax.jit too), instead of log2(T) rounds of Gaussian terms with a QR per merge
        # (benchmarks/README "Kalman idiom": 0.20 against 0.36 ms at T = 100 under jax.jit).
        result = MarkovProduct(sum_op, prod_op, trans, Variable(time, trans.inputs[time]),
                               step, strategy="parallel")
        # The inputs in the order the rounds of terms give them (the prev names last), so
        # that code reading the arrays positionally sees what it saw before.
        rest = [n for n in trans.inputs if n != time and n not in step]
        order = tuple([n for n in rest if trans.inputs[n].dtype != "real"]
                      + [n for n in rest if trans.inputs[n].dtype == "real"]
                      + [n for n in trans.inputs if n in step])
        return _in_order(result, order)
    return parallel_steps(sum_op, prod_op, trans, time, step)


def _in_order(result, order: tuple):
    # An evaluated Gaussian + Tensor rebuilt from its atoms aligned to ``order`` (the atoms
    # align exactly; an Align of the sum would stay lazy); anything else as it is.
    if tuple(result.inputs) == order or not isinstance(result, Contraction):
        return result
    if not all(type(t)._atom for t in result.terms):
        return result
    parts = [t.align(tuple(n for n in order if n in t.inputs)) for t in result.terms]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _real_gaussian_chain(sum_op, prod_op, trans, step: dict) -> bool:
    # What gaussian_scan.gaussian_chain_parts needs, decided from the terms' structure: a sum
    # of Gaussians and Tensors in the (logaddexp, add) semiring whose step names are all real
    # inputs of its Gaussians.
    if sum_op is not ops.logaddexp or prod_op is not ops.add:
        return False
    split = gaussian_terms(trans)
    if split is None:
        return False
    reals = {n for g in split[0] for n, d in g.inputs.items() if d.dtype == "real"}
    return all(n in reals for pair in step.items() for n in pair)


def parallel_steps(sum_op, prod_op, trans, time: str, step: dict):
    """Compose the steps of ``trans`` along ``time`` by a parallel scan: adjacent pairs at
    once, ``ceil(log2 T)`` rounds of batched contraction terms (Algorithm 1 of Appendix A).

    Example:
        >>> t = fc.Tensor(np.ones((5, 2, 2)), {"t": fc.Bint[5], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> parallel_steps(ops.add, ops.mul, t, "t", {"x": "y"}).data.tolist()
        [[16.0, 16.0], [16.0, 16.0]]
    """
    drop = {curr: f"_drop_{curr}" for curr in step.values()}
    duration = trans.inputs[time].size
    proto = _prototype_array(trans)
    # Segments peeled off odd rounds, latest in time first; each covers the steps right
    # after the segments still in ``trans`` and right before the previously peeled one.
    tails = []
    while duration > 1:
        if duration % 2:
            tails.append(trans(**{time: duration - 1}))
            trans = _head(trans, proto, time, duration - 1, duration)
            duration -= 1
        x, y = _halves(trans, proto, time, duration)
        trans = _compose(sum_op, prod_op, x, y, step, drop)
        duration //= 2
    result = trans(**{time: 0})
    for tail in reversed(tails):
        result = _compose(sum_op, prod_op, result, tail, step, drop)
    return result


def _halves(trans, proto, time: str, duration: int):
    # The even and the odd steps. By strided slices where they evaluate (an atom or a sum of
    # atoms: arrays sliced, not gathered; under jax.jit an index gather per array per round
    # was 40% of the T = 100 Kalman idiom, benchmarks/README "Kalman idiom under jax.jit");
    # by index Tensors where a Slice would stay in a lazy term, which later rounds could not
    # substitute into (see _steps). Decided by the terms' structure, not by their values.
    x = trans(**{time: Slice(time, 0, duration, 2, duration)})
    if _holds_slice(x):
        return (trans(**{time: _steps(proto, time, 0, duration, 2, duration)}),
                trans(**{time: _steps(proto, time, 1, duration, 2, duration)}))
    return x, trans(**{time: Slice(time, 1, duration, 2, duration)})


def _head(trans, proto, time: str, stop: int, duration: int):
    # The first ``stop`` steps, sliced where that evaluates (as in _halves).
    head = trans(**{time: Slice(time, 0, stop, 1, duration)})
    if _holds_slice(head):
        return trans(**{time: _steps(proto, time, 0, stop, 1, duration)})
    return head


def _holds_slice(term) -> bool:
    # Whether a Slice term is left anywhere inside ``term`` (the substitution stayed lazy).
    todo = [term]
    while todo:
        node = todo.pop()
        if isinstance(node, Slice):
            return True
        if type(node)._atom:
            continue
        leaves, _ = type(node).tree_flatten(node)
        todo.extend(leaf for leaf in leaves if isinstance(leaf, Funsor))
    return False


def _fresh(name: str, taken) -> str:
    while name in taken:
        name += "_"
    return name


def mixed_sequential_sum_product(sum_op, prod_op, trans, time, step, num_segments=None):
    """Eliminate a Markov chain's time input by serial scans in segments, then a parallel scan.

    The ``T`` steps are cut into ``num_segments`` segments of ``T // num_segments`` steps.
    Each segment is composed step by step (all segments at once, batched along a new input),
    then the segment results are composed by :func:`sequential_sum_product`; the steps left
    over when ``num_segments`` does not divide ``T`` are composed at the end. The result
    equals :func:`sequential_sum_product`'s; only the schedule (depth against batch size)
    differs.

    Args:
        trans, time, step: as in :func:`sequential_sum_product`.
        num_segments: number of segments; ``None`` (or ``>= T``) is a fully parallel scan,
            1 a fully serial one.

    Raises:
        ValueError: ``num_segments < 1``, or a name of ``step`` is not an input of ``trans``.

    Example:
        >>> from funsor_core.sum_product import mixed_sequential_sum_product
        >>> t = fc.Tensor(np.ones((6, 2, 2)), {"t": fc.Bint[6], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> mixed_sequential_sum_product(ops.add, ops.mul, t, "t", {"x": "y"}, 3).data
        array([[32., 32.],
               [32., 32.]])
    """
    time, step, steps = _chain_args(trans, time, step, sum_op, prod_op)
    if time not in trans.inputs:
        return compose_power(sum_op, prod_op, trans, step, steps)
    duration = trans.inputs[time].size
    num_segments = duration if num_segments is None else int(num_segments)
    if num_segments < 1:
        raise ValueError(f"mixed_sequential_sum_product: num_segments must be at least 1, got "
                         f"{num_segments} (for the {duration} steps of '{time}')")
    if num_segments >= duration:
        return sequential_sum_product(sum_op, prod_op, trans, time, step)
    if num_segments == 1:
        return naive_sequential_sum_product(sum_op, prod_op, trans, time, step)
    length = duration // num_segments
    covered = num_segments * length
    segment = _fresh(f"{time}__segment", trans.inputs)
    proto = _prototype_array(trans)
    drop = {curr: f"_drop_{curr}" for curr in step.values()}
    split = _segmented(trans, time, segment, num_segments, length, covered) if step else None
    if split is not None:
        # A chain of one Tensor: its first ``covered`` steps as one array (segment, step in
        # segment), a view, and every segment's serial product as one Markov product batched
        # over the segments (a loop on arrays: lax.scan under jax.jit). Composed as terms,
        # each step's slice has a derivative of its own, a pad to the full (T, K, K) array,
        # and under jax.jit XLA sums the ``length`` pads in one fused loop that evaluates
        # every pad at every entry: 8 of 8.5 ms at K = 8, T = 1000, 10 segments.
        inner = split.inputs[time]
        result = MarkovProduct(sum_op, prod_op, split, Variable(time, inner), step,
                               strategy="sequential")
    else:
        # Step j of every segment at once: times j, j + length, j + 2 * length, ...
        result = trans(**{time: _steps(proto, segment, 0, covered, length, duration)})
        for j in range(1, length):
            nxt = trans(**{time: _steps(proto, segment, j, covered, length, duration)})
            result = _compose(sum_op, prod_op, result, nxt, step, drop)
    result = sequential_sum_product(sum_op, prod_op, result, segment, step)
    if split is not None and duration - covered > 1:
        # The steps left over likewise: one slice, one loop (a pad per step otherwise).
        tail = trans(**{time: _steps(proto, time, covered, duration, 1, duration)})
        tail = MarkovProduct(sum_op, prod_op, tail, Variable(time, tail.inputs[time]), step,
                             strategy="sequential")
        return _compose(sum_op, prod_op, result, tail, step, drop)
    for t in range(covered, duration):
        result = _compose(sum_op, prod_op, result, trans(**{time: t}), step, drop)
    return result


def _segmented(trans, time: str, segment: str, segments: int, length: int, covered: int):
    # The first ``covered`` steps of a real Tensor as a Tensor over (segment, time), time now
    # the step within its segment (t = segment * length + time): a reshape of the aligned
    # array, whose derivative is a reshape. None for anything else (a lazy product, ints).
    if type(trans) is not Tensor or trans.output is not Real or trans.inputs[time].size < 2:
        return None
    order = (time, *(n for n in trans.inputs if n != time))
    data = trans.align(order).data
    if not is_float_dtype(data):
        return None
    data = ops.reshape(data[:covered], (segments, length) + tuple(data.shape[1:]))
    inputs = {segment: Bint[segments], time: Bint[length]}
    inputs.update((n, trans.inputs[n]) for n in order[1:])
    return Tensor(data, inputs)
