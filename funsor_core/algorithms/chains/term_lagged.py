"""The Sarkka-Bilmes scan: sums over Markov chains whose factors look back more than one step.

A factor's input ``"_PREV_" * k + name`` is ``name`` at ``k`` steps earlier.
``sarkka_bilmes_product`` groups the steps in blocks of the largest lag, which form a
first-order chain that ``term_scans.mixed_sequential_sum_product`` eliminates;
``naive_sarkka_bilmes_product`` folds the steps one at a time (a reference). Users import
these names from ``funsor_core.sum_product``.

Example:
    >>> from funsor_core.sum_product import sarkka_bilmes_product
    >>> t = fc.Tensor(np.ones((3, 2, 2)), {"time": fc.Bint[3], "x": fc.Bint[2],
    ...                                    "_PREV_x": fc.Bint[2]})
    >>> sorted(sarkka_bilmes_product(ops.add, ops.mul, t, "time").inputs)
    ['_PREV_x', 'x']
"""

from __future__ import annotations

from funsor_core.algorithms.chains.term_scans import (
    _check_duration,
    _compose,
    _prototype_array,
    _steps,
    _time_name,
    mixed_sequential_sum_product,
)
from funsor_core.analysis.sign import check_distributes

__all__ = ["naive_sarkka_bilmes_product", "sarkka_bilmes_product"]


# Lagged names: "_PREV_" * k + name is ``name`` k steps before the factor's own time.
_LAG = "_PREV_"


def _lag_of(name: str) -> int:
    k = 0
    while name.startswith(_LAG, k * len(_LAG)):
        k += 1
    return k


def _shift(name: str, k: int) -> str:
    # Move a name k steps further into the past (k < 0: towards the present).
    if k >= 0:
        return _LAG * k + name
    assert _lag_of(name) >= -k, (name, k)
    return name[-k * len(_LAG):]


def _lag_setup(sum_op, prod_op, trans, time, global_vars):
    # The chain's local names (all but time and globals), its largest lag, and its state names
    # (lag 0). A lagged name whose present-time name is not an input would never be summed.
    time = _time_name(time)
    _check_duration(trans, time, "Sarkka-Bilmes product")
    check_distributes(sum_op, prod_op, (trans,), "a Sarkka-Bilmes product")
    global_vars = frozenset(global_vars) | {time}
    local = [n for n in trans.inputs if n not in global_vars]
    states = [n for n in local if _lag_of(n) == 0]
    orphans = sorted(n for n in local if _shift(n, -_lag_of(n)) not in trans.inputs)
    if orphans:
        raise ValueError(
            f"Sarkka-Bilmes product over '{time}': lagged inputs {orphans} have no present-time "
            f"input (e.g. '{_shift(orphans[0], -_lag_of(orphans[0]))}') in {list(trans.inputs)};"
            " list such names in global_vars if they are not states of the chain")
    max_lag = max((_lag_of(n) for n in local), default=0)
    return time, local, states, max_lag


def _shifted(trans, time, t, k, local):
    # trans at time t (an int or an index funsor), with every local name moved k steps back.
    renames = {n: _shift(n, k) for n in local} if k else {}
    return trans(**{time: t}, **renames)


def _is_state(name, states) -> bool:
    # Whether ``name`` is a state of the chain at some lag (not time, not a global name).
    return _shift(name, -_lag_of(name)) in states


def _to_present(f, k, states):
    # Rename lagged names k steps towards the present, leaving lag-0 names (final states).
    renames = {n: _shift(n, -k) for n in f.inputs if _lag_of(n) > 0 and _is_state(n, states)}
    return f(**renames) if renames and k else f


def _fold_back(sum_op, prod_op, trans, time, first, stop, result, states, local):
    # Multiply trans(stop-1), ..., trans(first) into ``result`` from the latest back, labelling
    # names by their lag before time ``stop`` and summing each state once no earlier factor
    # can use it: x_t is used by factors at times >= t only.
    for t in range(stop - 1, first - 1, -1):
        k = stop - t
        result = prod_op(_shifted(trans, time, t, k, local), result)
        done = frozenset(_shift(n, k) for n in states).intersection(result.inputs)
        if done:
            result = result.reduce(sum_op, done)
    return result


def naive_sarkka_bilmes_product(sum_op, prod_op, trans, time_var, global_vars=frozenset()):
    """Eliminate the time input of a chain with lagged inputs, one step at a time.

    ``trans`` at time ``t`` has inputs ``name`` (the state at ``t``), ``"_PREV_" * k + name``
    (the state at ``t - k``), ``time`` and the names in ``global_vars`` (shared by all steps).
    The result keeps the final states (lag 0, at time ``T - 1``) and the initial states before
    time 0 (``"_PREV_" * k + name`` is the state at time ``-k``); the states at times
    ``0 .. T-2`` are summed out. Without lags the steps are simply multiplied. A reference for
    :func:`sarkka_bilmes_product`.

    Raises:
        ValueError: a lagged input has no present-time input.

    Example:
        >>> from funsor_core.sum_product import naive_sarkka_bilmes_product
        >>> t = fc.Tensor(np.ones((3, 2, 2)), {"time": fc.Bint[3], "x": fc.Bint[2],
        ...                                    "_PREV_x": fc.Bint[2]})
        >>> r = naive_sarkka_bilmes_product(ops.add, ops.mul, t, "time")
        >>> sorted(r.inputs), r.data.tolist()
        (['_PREV_x', 'x'], [[4.0, 4.0], [4.0, 4.0]])
    """
    time, local, states, max_lag = _lag_setup(sum_op, prod_op, trans, time_var, global_vars)
    if time not in trans.inputs:
        return trans
    if max_lag == 0:
        return trans.reduce(prod_op, time)
    duration = trans.inputs[time].size
    last = trans(**{time: duration - 1})
    result = _fold_back(sum_op, prod_op, trans, time, 0, duration - 1, last, states, local)
    # Names were labelled by their lag before time T-1; relabel them before time 0.
    return _to_present(result, duration - 1, frozenset(states))


def sarkka_bilmes_product(sum_op, prod_op, trans, time_var, global_vars=frozenset(),
                          num_periods=1):
    """Eliminate the time input of a chain with lagged inputs by a parallel scan.

    Same result as :func:`naive_sarkka_bilmes_product`. With largest lag ``L``, the steps are
    grouped in blocks of ``L``: block ``b`` depends only on the states of block ``b - 1``, so
    the blocks form a first-order chain whose state is ``L`` consecutive states, eliminated by
    :func:`mixed_sequential_sum_product` (``num_periods`` blocks per serial segment). funsor
    0.4.8 uses blocks of the least common multiple of the lags; ``L`` gives the same result
    with a smaller block state.

    Raises:
        ValueError: a lagged input has no present-time input.

    Example:
        >>> from funsor_core.sum_product import sarkka_bilmes_product
        >>> t = fc.Tensor(np.ones((5, 2, 2)), {"time": fc.Bint[5], "x": fc.Bint[2],
        ...                                    "_PREV__PREV_x": fc.Bint[2]})
        >>> r = sarkka_bilmes_product(ops.add, ops.mul, t, "time")
        >>> sorted(r.inputs), float(r.data.sum())  # 2**4 paths x_0..x_3, 2**3 kept states
        (['_PREV__PREV_x', '_PREV_x', 'x'], 128.0)
    """
    time, local, states, max_lag = _lag_setup(sum_op, prod_op, trans, time_var, global_vars)
    if time not in trans.inputs:
        return trans
    if max_lag == 0:
        return trans.reduce(prod_op, time)
    duration = trans.inputs[time].size
    if duration <= max_lag:
        return naive_sarkka_bilmes_product(sum_op, prod_op, trans, time, global_vars)
    states = frozenset(states)
    proto = _prototype_array(trans)
    head = duration % max_lag
    if head:
        # Scan the last T - head steps (a whole number of blocks), then fold the first few
        # steps in one at a time; the scan's lag-k names are the states at time head - k.
        tail = trans(**{time: _steps(proto, time, head, duration, 1, duration)})
        result = sarkka_bilmes_product(sum_op, prod_op, tail, time, global_vars, num_periods)
        result = _fold_back(sum_op, prod_op, trans, time, 0, head, result, states, local)
        return _to_present(result, head, states)
    result = _block_scan(sum_op, prod_op, trans, time, local, states, max_lag, proto,
                         num_periods)
    # Keep only the last state; the other states of the last block are summed out.
    ends = frozenset(_shift(n, k) for n in states for k in range(1, max_lag))
    result = result.reduce(sum_op, ends.intersection(result.inputs))
    return _to_present(result, max_lag - 1, states)


def _block_scan(sum_op, prod_op, trans, time, local, states, max_lag, proto, num_periods):
    # Block b covers times bL .. bL+L-1; names are labelled by their lag before its last time,
    # so lags 0..L-1 are the block's states and lags L..2L-1 the previous block's.
    duration = trans.inputs[time].size
    blocks = duration // max_lag
    if max_lag == 1:
        # One part: trans at times range(0, T, 1) with no rename, which is trans itself. Not
        # substituting the identity index keeps the later substitutions into trans direct
        # (no index of an index to compose, lazily or exactly, and no full-range view).
        parts = [trans]
    else:
        parts = [_shifted(trans, time, _steps(proto, time, j, duration, max_lag, duration),
                          max_lag - 1 - j, local) for j in range(max_lag)]
    block = parts[0]
    for part in parts[1:]:
        block = prod_op(block, part)
    curr = [n for n in block.inputs if _is_state(n, states) and _lag_of(n) < max_lag]
    step = {_shift(n, max_lag): n for n in curr if _shift(n, max_lag) in block.inputs}
    if blocks == 1:
        return block(**{time: 0})
    # A block state that the next block never reads is summed inside its block, except in
    # the last block, whose states are the result's final states.
    unread = frozenset(n for n in curr if n not in step.values())
    if not unread:
        # Every block state is read by the next block: the last block is a step of the
        # chain like the others (one chain of ``blocks`` steps; composing it on afterwards
        # costs a broadcast of K^3 entries per batch element, the heaviest kernel of NumPyro's
        # history-2 scans under jax.jit and its derivative).
        segments = max(1, blocks // max(1, num_periods))
        return mixed_sequential_sum_product(sum_op, prod_op, block, time, step, segments)
    body = block(**{time: _steps(proto, time, 0, blocks - 1, 1, blocks)})
    if unread:
        body = body.reduce(sum_op, unread)
    segments = max(1, (blocks - 1) // max(1, num_periods))
    result = mixed_sequential_sum_product(sum_op, prod_op, body, time, step, segments)
    drop = {c: f"_drop_{c}" for c in step.values()}
    return _compose(sum_op, prod_op, result, block(**{time: blocks - 1}), step, drop)
