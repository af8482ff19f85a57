"""Forward filtering of a Markov chain with a window of exact discrete states.

``windowed_filter(sum_op, prod_op, trans, time, step, init, window)`` folds the factors of a
chain ``trans(time, prev, curr)`` into a forward message, starting from ``init`` over the
first state's prev names. Real state names are summed at every step. A discrete (Bint) state
is kept as an input of the message for ``window`` steps (the message depends on the last
``window`` discrete states) and summed when it leaves the window.

Under ``exact`` with Tensor factors this is the forward algorithm (the window changes the
cost, not the value). With discrete and Gaussian factors (a switching linear dynamical
system) summing a switch state out of a Gaussian gives a mixture, which ``exact`` keeps
lazy; under ``moment_matching`` each such sum collapses to one Gaussian per assignment of
the states still in the window: window 1 is the generalized pseudo-Bayes / interacting
multiple model filter, and a window of all the chain's states (``T``, counting the first) is
exact enumeration of the ``K^T`` switch paths (the final collapse keeps the total mass). A
step costs ``O(K^(window + 1))`` Gaussian operations for ``K`` switch values, so the filter
is ``O(T K^(window + 1))``.

Example:
    >>> import funsor_core as fc
    >>> t = fc.Tensor(np.log(np.full((3, 2, 2), 0.5)),
    ...               {"time": fc.Bint[3], "s_prev": fc.Bint[2], "s_curr": fc.Bint[2]})
    >>> init = fc.Tensor(np.log(np.array([0.5, 0.5])), {"s_prev": fc.Bint[2]})
    >>> m = windowed_filter(ops.logaddexp, ops.add, t, "time", {"s_prev": "s_curr"}, init, 2)
    >>> m.inputs, float(m.reduce(ops.logaddexp).data)
    ({'s_curr': Bint[2]}, 0.0)
"""

from __future__ import annotations

from funsor_core.terms.base import Funsor, Number, Variable

__all__ = ["windowed_filter"]


def _lag_names(discrete: list, window: int, taken: set) -> list[dict]:
    """``lags[k][name]``: the name of the discrete state ``name`` ``k`` steps back
    (``lags[0]`` maps each name to itself), fresh with respect to ``taken``."""
    lags = [{name: name for name in discrete}]
    for k in range(1, window):
        names = {}
        for name in discrete:
            new = f"{name}@{k}"
            while new in taken:
                new += "'"
            taken.add(new)
            names[name] = new
        lags.append(names)
    return lags


def _check(trans: Funsor, time: str, step: dict, init: Funsor, window) -> None:
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise ValueError(f"windowed_filter: window must be an int >= 1 (the number of discrete "
                         f"states kept exact), got {window!r}")
    if time not in trans.inputs:
        raise ValueError(f"windowed_filter: '{time}' is not an input of the transition factor, "
                         f"whose inputs are {list(trans.inputs)}")
    missing = [n for n in (*step, *step.values()) if n not in trans.inputs]
    if missing:
        raise ValueError(f"windowed_filter: {missing} are not inputs of the transition factor, "
                         f"whose inputs are {list(trans.inputs)}; every prev/curr name of "
                         f"step={step} must be one")
    for prev, curr in step.items():
        if trans.inputs[prev] is not trans.inputs[curr]:
            raise ValueError(f"windowed_filter: the prev input '{prev}' is {trans.inputs[prev]} "
                             f"but its curr input '{curr}' is {trans.inputs[curr]}")
    extra = [n for n in init.inputs if n in step.values() or n == time]
    if extra:
        raise ValueError(f"windowed_filter: init is a factor of the first state's prev names "
                         f"{list(step)}, but it has inputs {extra}")


def windowed_filter(sum_op, prod_op, trans: Funsor, time, step: dict, init: Funsor,
                    window: int = 1, each_step=None) -> Funsor:
    """The forward message of a chain after its last step (see the module docstring).

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        trans: the factors, with inputs ``time`` (``Bint[T - 1]`` for a chain of ``T``
            states), the prev and curr names of ``step``, and any batch or global inputs.
        time: the time input (a name or a Variable).
        step: a mapping from prev names to curr names.
        init: the factor of the first state, over (some of) the prev names.
        window: how many discrete states the message keeps exact (``>= 1``).
        each_step: optional ``each_step(t, message)``, called after step ``t`` with the
            filtering message of that step over its curr names (lags summed out), e.g. to
            record filtered marginals; it costs one more sum per step.

    Returns:
        A factor of the curr names of the last step (and the batch and global inputs):
        ``sum_op``-summing it gives the chain's total (its marginal likelihood in log space).

    Raises:
        ValueError: a name of ``step`` is not an input of ``trans``, prev and curr domains
            differ, ``init`` has inputs of the curr names or ``time``, or ``window < 1``.

    Example:
        >>> t = fc.Tensor(np.ones((4, 2, 2)), {"t": fc.Bint[4], "a": fc.Bint[2], "b": fc.Bint[2]})
        >>> windowed_filter(ops.add, ops.mul, t, "t", {"a": "b"}, fc.Number(1.0)).data
        array([16., 16.])
    """
    time = time.name if isinstance(time, Variable) else time
    step = dict(step)
    _check(trans, time, step, init, window)
    discrete = [p for p in step if trans.inputs[p].dtype != "real"]
    real = frozenset(p for p in step if trans.inputs[p].dtype == "real")
    lags = _lag_names(discrete, window, set(trans.inputs) | set(init.inputs))
    oldest = frozenset(lags[window - 1].values())
    # After a step, curr names become prev names and each lag moves one further back.
    shift = {lags[k][n]: Variable(lags[k + 1][n], trans.inputs[n])
             for k in range(window - 1) for n in discrete}
    shift.update((curr, Variable(prev, trans.inputs[prev])) for prev, curr in step.items())
    all_lags = frozenset(n for k in range(1, window) for n in lags[k].values())
    to_curr = {prev: Variable(curr, trans.inputs[curr]) for prev, curr in step.items()}

    def current(msg):  # the message over the latest state's (curr) names
        lagged = all_lags & msg.inputs.keys()
        msg = msg.reduce(sum_op, lagged) if lagged else msg
        return msg(**{k: v for k, v in to_curr.items() if k in msg.inputs})

    msg = init
    for t in range(trans.inputs[time].size):
        joint = prod_op(msg, trans(**{time: Number(t, trans.inputs[time].size)}))
        msg = joint.reduce(sum_op, (real | oldest) & joint.inputs.keys())
        msg = msg(**{k: v for k, v in shift.items() if k in msg.inputs})
        if each_step is not None:
            each_step(t, current(msg))
    return current(msg)
