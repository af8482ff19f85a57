"""``infer_discrete`` on concrete Tensor factors straight from the planned schedule: MAP,
k best, marginals (and so the entropy) and posterior samples.

These answers need no terms: the max-product elimination is ``plan_elimination``'s
``Schedule`` (cached by the factors' input names and sizes, the key ``sum_product`` plans by),
and its steps are replayed on host copies of the arrays. ``replay_recipe`` turns the schedule
into array recipes once per structure (per step: each operand's axis permutation and
broadcast shape, the reduced names, the plates), cached under the same key, so a repeated
call does array work only, with no tape to record.

- k = 1 (MAP): a contract step is ``max`` and ``argmax`` over its reduced axes of the sum of
  its operands (the back pointer is one flat index per kept assignment); a plate step is a
  plain sum over the plate axes (each slice keeps its own best). Walking the pointers from
  the root gives the assignment, one gather per step.
- k > 1: the same steps in the k-max semiring on the same views (each value a k-list: a
  trailing rank axis), with ``kbest.py``'s back pointers and top-k, so the same tie order.
- marginals and samples: the same steps in ``(logaddexp, add)`` (``replay_marginals``,
  ``replay_samples``), the order being valid for any semiring that distributes.

MAP and k best find the assignments ``kbest_from_tape`` finds on the recorded terms, up to
the rounding of the order of the additions (and, among ties, any of the best).

Example:
    >>> from funsor_core.algorithms.eliminate.schedule import structure_of
    >>> f = fc.Tensor(np.array([[0.0, 3.0], [2.0, 1.0]]), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> recipe = replay_recipe(structure_of(ops.max, ops.add, [f]), frozenset("ab"),
    ...                        frozenset())
    >>> score, best = replay_best(recipe, [f.data], 1)
    >>> score.tolist(), best["a"][0].tolist(), best["b"][0].tolist()
    ([3.0], [0], [1])
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.adjoint.kbest import _Combine, _combine, _KList, _Plate, _topk
from funsor_core.algorithms.contract.plan import plan_contraction
from funsor_core.algorithms.contract.replay import CONTRACT
from funsor_core.algorithms.eliminate.schedule import plan_elimination
from funsor_core.engine.cache import cached

__all__ = ["ReplayRecipe", "replay_recipe", "replay_best", "replay_marginals",
           "replay_samples"]


class _Step(NamedTuple):
    # One schedule step as array recipes. views: per operand (position, axis permutation or
    # None, shape in the layout out + reduced with 1 for a missing name, the layout axes it
    # lacks, the inverse permutation or None).
    contract: bool
    views: tuple
    out: tuple
    reduced: tuple  # the maximized names (contract) or the plates (plate product), sorted
    out_shape: tuple
    reduced_shape: tuple


class ReplayRecipe(NamedTuple):
    """The array recipes of a planned max-product elimination: the input names of every value
    (the factors, then one per step), each step's recipe, the positions of the results and
    every name's size.

    Example:
        >>> from funsor_core.algorithms.eliminate.schedule import structure_of
        >>> f = fc.Tensor(np.ones((2, 3)), {"x": fc.Bint[2], "y": fc.Bint[3]})
        >>> r = replay_recipe(structure_of(ops.max, ops.add, [f]), frozenset("xy"),
        ...                   frozenset())
        >>> r.names, r.outputs
        ((('x', 'y'), ()), (1,))
    """

    names: tuple
    steps: tuple
    outputs: tuple
    sizes: dict


@cached("adjoint.replay_recipes", maxsize=256)
def replay_recipe(structure: tuple, eliminate: frozenset, plates: frozenset):
    """The ``ReplayRecipe`` of ``sum_product(max, add, factors, eliminate, plates)`` for
    factors of ``structure`` (``structure_of``), or None where the elimination is no fixed
    schedule. Planned by ``plan_elimination`` (one cache entry with ``sum_product``'s).

    Example:
        >>> from funsor_core.algorithms.eliminate.schedule import structure_of
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "x": fc.Bint[3]})
        >>> r = replay_recipe(structure_of(ops.max, ops.add, [f]), frozenset("ix"),
        ...                   frozenset("i"))
        >>> [(s.contract, s.out, s.reduced) for s in r.steps]
        [(True, ('i',), ('x',)), (False, (), ('i',))]
    """
    schedule = plan_elimination(ops.max, ops.add, structure, eliminate, plates, False)
    if schedule is None:
        return None
    names = [tuple(n for n, _ in ikey) for ikey, _ in structure]
    sizes = {n: d.size for ikey, _ in structure for n, d in ikey}
    leaves, steps, at = tuple(names), [], {}  # at: schedule value -> recipe value

    def add(contract: bool, operands: tuple, reduced: frozenset, out: tuple) -> int:
        reduced = tuple(sorted(reduced))
        layout = out + reduced
        views = []
        for p in operands:
            perm = tuple(names[p].index(n) for n in layout if n in names[p])
            shape = tuple(sizes[n] if n in names[p] else 1 for n in layout)
            identity = perm == tuple(range(len(perm)))
            # (for the backward pass: the layout axes the operand lacks, the inverse perm)
            missing = tuple(a for a, n in enumerate(layout) if n not in names[p])
            views.append((p, None if identity else perm, shape, missing,
                          None if identity else tuple(np.argsort(perm).tolist())))
        steps.append(_Step(contract, tuple(views), out, reduced,
                           tuple(sizes[n] for n in out), tuple(sizes[n] for n in reduced)))
        names.append(out)
        return len(names) - 1

    for pos, step in enumerate(schedule.steps, len(leaves)):
        operands = tuple(at.get(p, p) for p in step.operands)
        if step.kind != CONTRACT:
            out = tuple(n for n in names[operands[0]] if n not in step.names)
            at[pos] = add(False, operands, step.names, out)
            continue
        out = tuple(dict.fromkeys(n for p in operands for n in names[p] if n not in step.names))
        if len(operands) == 1:
            at[pos] = add(True, operands, step.names, out)
            continue
        # A Contraction of many factors is pairwise along its opt_einsum plan (as the exact
        # rules contract it): one broadcast of all of them would be exponential in size.
        plan = plan_contraction([names[p] for p in operands], sizes, out)
        current = list(operands)
        for i, j, keep in plan.steps:
            pair = (current[i],) if j is None else (current[i], current[j])
            for index in sorted((i,) if j is None else (i, j), reverse=True):
                del current[index]
            union = frozenset(n for p in pair for n in names[p])
            current.append(add(True, pair, union - frozenset(keep), tuple(keep)))
        if len(current) != 1:
            return None
        at[pos] = current[0]
    outputs = tuple(at.get(p, p) for p in schedule.outputs)
    return ReplayRecipe(tuple(names), tuple(steps), outputs, sizes)


def _host_arrays(arrays) -> list:
    # float64 numpy copies (numpy float64 arrays as they are: the replay never writes them)
    return [a if type(a) is np.ndarray and a.dtype == np.float64 else
            np.asarray(ops.to_numpy(a), dtype=float) for a in arrays]


def _view(values: list, view: tuple) -> np.ndarray:
    p, perm, shape = view[:3]
    x = values[p]
    return (x if perm is None else x.transpose(perm)).reshape(shape)


def _summand(values: list, st) -> np.ndarray:
    # A contraction step's operands added (log space), broadcast over (out, reduced).
    total = _view(values, st.views[0])
    for view in st.views[1:]:
        total = total + _view(values, view)
    full = st.out_shape + st.reduced_shape
    return total if total.shape == full else np.broadcast_to(total, full)


def _into_plates(st, env: dict, plates: tuple, shape: tuple) -> tuple:
    # A plate product walked down: its plates become trailing batch dims of the assignment
    # so far (each value broadcast along them) and of everything below, each plate's own
    # index one more name of the assignment.
    shape = shape + st.reduced_shape
    extra = (1,) * len(st.reduced)
    env = {name: v.reshape(v.shape + extra) for name, v in env.items()}
    lead = (1,) * (len(shape) - len(st.reduced))
    for q, g in zip(st.reduced, np.indices(st.reduced_shape, sparse=True)):
        env[q] = g.reshape(lead + g.shape)
    return env, plates + st.reduced, shape


def _walk_down(recipe: ReplayRecipe, n: int, shape: tuple, choose) -> dict:
    # From the outputs down the schedule: at each eliminating step ``choose(i, step,
    # assignment so far, batch shape)`` gives the flat index of its eliminated names' values
    # (an argmax, a draw); a plate product adds its plates as batch dims. name -> (values,
    # their plate names). A value below needs the assignment of its own inputs only.
    found: dict = {}
    todo = [(p, {}, (), shape) for p in recipe.outputs]
    while todo:
        pos, env, plates, shape = todo.pop()
        if pos < n:
            continue
        st = recipe.steps[pos - n]
        if not st.contract:  # the plates become batch dims of everything below
            env, plates, shape = _into_plates(st, env, plates, shape)
        elif st.reduced:
            flat = choose(pos - n, st, env, shape)
            env = dict(env)
            for name, v in zip(st.reduced, np.unravel_index(flat, st.reduced_shape)):
                env[name] = v
                found[name] = (v, plates)
        todo.extend((p, {name: env[name] for name in recipe.names[p]}, plates, shape)
                    for p, *_ in st.views if p >= n)
    return found


def replay_best(recipe: ReplayRecipe, arrays: list, k: int) -> tuple:
    """The ``k`` best total scores of the recipe's elimination on ``arrays`` (the factors'
    data, in order) and their assignments, as ``kbest_from_tape`` returns them: scores
    descending, and per maximized name ``(values, plates)`` with values of shape
    ``(len(scores),) + plate sizes``.

    Example:
        >>> from funsor_core.algorithms.eliminate.schedule import structure_of
        >>> f = fc.Tensor(np.array([[0.0, 3.0], [2.0, 1.0]]), {"a": fc.Bint[2],
        ...                                                     "b": fc.Bint[2]})
        >>> r = replay_recipe(structure_of(ops.max, ops.add, [f]), frozenset("ab"),
        ...                   frozenset())
        >>> scores, best = replay_best(r, [f.data], 3)
        >>> scores.tolist(), best["a"][0].tolist(), best["b"][0].tolist()
        ([3.0, 2.0, 1.0], [0, 1, 1], [1, 0, 1])
    """
    arrays = _host_arrays(arrays)
    if k == 1:
        return _replay_max(recipe, arrays)
    return _replay_k(recipe, arrays, k)


def _replay_max(recipe: ReplayRecipe, values: list) -> tuple:
    # max-product forward, keeping one argmax pointer array per maximizing step.
    n = len(values)
    pointers = []
    for st in recipe.steps:
        if st.contract:
            total = _summand(values, st)
            if st.reduced:
                flat = total.reshape(st.out_shape + (math.prod(st.reduced_shape),))
                if not flat.shape[-1]:  # an empty domain: no assignment, max = -inf
                    return np.array([-math.inf]), {}
                index = flat.argmax(-1)  # (first of ties, as the k-best's stable sort)
                value = np.take_along_axis(flat, index[..., None], -1)[..., 0]
            else:
                index, value = None, total
        else:  # a sum over the plates: each slice keeps its own best
            (view,) = st.views
            index = None
            value = _view(values, view).reshape(st.out_shape + (-1,)).sum(-1)
        pointers.append(index)
        values.append(value)
    score = sum(float(values[p]) for p in recipe.outputs) if recipe.outputs else 0.0
    if score == -math.inf:  # no assignment of mass: the caller raises ZeroMassError
        return np.array([score]), {}

    def argmax_of(i, st, env, shape):
        index = pointers[i]
        flat = index[tuple(env[name] for name in st.out)] if st.out else index
        return flat if flat.shape == shape else np.broadcast_to(flat, shape)

    found = {name: (v[None], plates)
             for name, (v, plates) in _walk_down(recipe, n, (), argmax_of).items()}
    return np.array([score]), found


def _replay_k(recipe: ReplayRecipe, arrays: list, k: int) -> tuple:
    # the k-max semiring on the recipe's views: values[p] holds p's k-lists (its names, then
    # a rank axis); backs[p] the back pointers of kbest.py's walk (_Combine, _Plate), so the
    # flat indices and the tie order are those of kbest.py's steps on this schedule.
    n, sizes = len(arrays), recipe.sizes
    values = [a[..., None] for a in arrays]
    backs: list = [None] * n
    for st in recipe.steps:
        value, back = (_k_contract if st.contract else _k_plates)(values, st, sizes, k)
        values.append(value)
        backs.append(back)
    outputs = list(recipe.outputs)
    if outputs:
        root = _combine(outputs, [_KList((), (), values[p]) for p in outputs], (), (), sizes, k)
        scores = root.data.reshape(-1)
    else:
        root, scores = None, np.zeros(1)
    found: dict = {}
    todo = [(root.step, {}, np.arange(len(scores)), ())] if root is not None else []
    while todo:
        step, env, rank, plates = todo.pop()
        for ref, new, r, pl in step.back(env, rank, plates, found):
            if backs[ref] is not None:  # (only the names it has: fewer to broadcast)
                todo.append((backs[ref], {x: new[x] for x in recipe.names[ref]}, r, pl))
    return scores, found


def _k_view(values: list, view: tuple, axis: int, count: int) -> np.ndarray:
    # an operand's k-lists in the layout out + reduced, its rank axis the ``axis``-th of
    # ``count`` trailing rank axes (the others of size 1: their sum is every combination).
    p, perm, shape = view[:3]
    x = values[p]
    if perm is not None:
        x = x.transpose(perm + (len(perm),))
    return x.reshape(shape + (1,) * axis + x.shape[-1:] + (1,) * (count - 1 - axis))


def _k_contract(values: list, st, sizes: dict, k: int) -> tuple:
    # the k best over (reduced values, operand ranks), flattened in that order (_Combine's)
    m = len(st.views)
    total = _k_view(values, st.views[0], 0, m)
    for j in range(1, m):
        total = total + _k_view(values, st.views[j], j, m)
    ranks = tuple(values[view[0]].shape[-1] for view in st.views)
    full = st.out_shape + st.reduced_shape + ranks
    if total.shape != full:
        total = np.broadcast_to(total, full)
    best, index = _topk(total.reshape(st.out_shape + (-1,)), k)
    children = tuple(view[0] for view in st.views)
    return best, _Combine(children, st.out, st.reduced, sizes, index, ranks)


class _SumPlate(_Plate):
    # a plate product of one entry per slice: every slice's rank is 0
    def back(self, assign: dict, rank: np.ndarray, plates: tuple, found: dict) -> list:
        shape = rank.shape + tuple(self.sizes[q] for q in self.plates)
        return self.below(assign, np.zeros(shape, dtype=np.intp), plates)


def _k_plates(values: list, st, sizes: dict, k: int) -> tuple:
    # the k best sums taking one entry per plate slice, merged slice by slice (_Plate's
    # pointers: the running rank and the slice's rank, one divmod of the flat index)
    (view,) = st.views
    x = _k_view(values, view, 0, 1)
    width = x.shape[-1]
    slices = x.reshape(st.out_shape + (math.prod(st.reduced_shape), width))
    if width == 1:  # one entry per slice (a factor's plates): the sum, every rank 0
        return slices.sum(-2), _SumPlate(view[0], st.out, st.reduced, sizes, None)
    acc = slices[..., 0, :]
    pointers = [(None, np.broadcast_to(np.arange(width), acc.shape))]
    for p in range(1, slices.shape[-2]):
        pair = acc[..., :, None] + slices[..., p, None, :]
        acc, index = _topk(pair.reshape(st.out_shape + (-1,)), k)
        pointers.append(np.divmod(index, width))
    return acc, _Plate(view[0], st.out, st.reduced, sizes, pointers)


# Up to this many terms a log-sum-exp is one np.logaddexp.reduce (a pairwise chain of
# logaddexps: cheaper than the shifted exp-sum-log's seven array calls on small arrays).
_SMALL = 32


def _log_forward(recipe: ReplayRecipe, values: list, totals: list | None = None) -> float:
    # The (logaddexp, add) forward pass: appends each step's value to ``values`` (and to
    # ``totals`` each contract step's summand over out + reduced, flattened); log Z.
    for st in recipe.steps:
        if st.contract:
            total = _summand(values, st)
            total = total.reshape(st.out_shape + (math.prod(st.reduced_shape),))
            if 0 < total.shape[-1] <= _SMALL:  # one ufunc call (-inf stays -inf)
                values.append(np.logaddexp.reduce(total, -1))
            else:
                values.append(ops.logsumexp(total, len(st.out)))
        else:
            total = None
            values.append(_view(values, st.views[0]).reshape(st.out_shape + (-1,)).sum(-1))
        if totals is not None:
            totals.append(total)
    outs = [values[p] for p in recipe.outputs]
    return float(sum(outs)) if outs else 0.0


def replay_marginals(recipe: ReplayRecipe, arrays: list) -> tuple:
    """``log Z`` of the recipe's elimination in ``(logaddexp, add)`` and, per factor, the
    posterior marginal of its inputs ``exp(adjoint(f) + f - log Z)`` (an array over the
    factor's inputs, in its order; a plate index is no random variable: each slice's
    marginal sums to 1), by a forward and a backward pass over the steps.

    A recipe planned for ``(max, add)`` is a valid order for ``(logaddexp, add)`` too (the
    order only needs distributivity). The backward pass carries each value's marginal in
    linear space, where it is at most 1 (no shift needed): a step ``y = lse_R s`` with
    ``s = sum_i x_i`` spreads ``m(y)`` over ``R`` by the conditional ``exp(s - y)``, and each
    operand's marginal is that joint summed over the names the operand lacks; a plate
    product hands ``m(y)`` to every slice. When ``log Z = -inf``: ``(log Z, None)``.

    Example:
        >>> from funsor_core.algorithms.eliminate.schedule import structure_of
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> r = replay_recipe(structure_of(ops.max, ops.add, [f]), frozenset("ab"),
        ...                   frozenset())
        >>> log_z, (p,) = replay_marginals(r, [f.data])
        >>> round(float(np.exp(log_z)), 6), np.round(p, 2).tolist()
        (10.0, [[0.1, 0.2], [0.3, 0.4]])
    """
    values = _host_arrays(arrays)
    n, totals = len(values), []
    with np.errstate(divide="ignore"):  # log(0) = -inf: an impossible assignment
        log_z = _log_forward(recipe, values, totals)
    if log_z == -math.inf:
        return log_z, None
    marg: list = [None] * len(values)
    for p in recipe.outputs:  # a value with no inputs: probability 1
        marg[p] = np.ones(np.shape(values[p]))
    for pos in range(len(values) - 1, n - 1, -1):
        st, m = recipe.steps[pos - n], marg[pos]
        full = st.out_shape + st.reduced_shape
        if not st.contract:  # every slice of the plates: the marginal of the kept names
            joint = np.broadcast_to(m.reshape(st.out_shape + (1,) * len(st.reduced)), full)
        elif st.reduced:
            y = values[pos]
            y = np.where(y > -math.inf, y, 0.0)[..., None]  # (an impossible y: m(y) = 0)
            joint = (m[..., None] * np.exp(totals[pos - n] - y)).reshape(full)
        else:
            joint = np.broadcast_to(m, full)
        for p, _, _, missing, inverse in st.views:
            r = joint.sum(missing) if missing else joint
            marg[p] = r if inverse is None else r.transpose(inverse)
    return log_z, marg[:n]


def replay_samples(recipe: ReplayRecipe, arrays: list, num: int, rng) -> tuple:
    """``num`` exact joint posterior samples of the recipe's elimination in
    ``(logaddexp, add)`` on ``arrays``: ``(log Z, found)`` with ``found`` as
    ``replay_best``'s (values of shape ``(num,) + plate sizes``); ``found`` is None when
    ``log Z = -inf``. Forward filtering, backward sampling along the schedule: each step's
    reduced names are drawn from its summand given the names above it (one categorical draw
    per step, by inverse CDF on uniforms from the numpy generator ``rng``; None: numpy's
    global state).

    Example:
        >>> from funsor_core.algorithms.eliminate.schedule import structure_of
        >>> f = fc.Tensor(np.log(np.array([0.2, 0.8])), {"i": fc.Bint[2]})
        >>> r = replay_recipe(structure_of(ops.max, ops.add, [f]), frozenset("i"),
        ...                   frozenset())
        >>> log_z, found = replay_samples(r, [f.data], 1000, np.random.default_rng(0))
        >>> round(float(found["i"][0].mean()), 1)  # P(i = 1) = 0.8
        0.8
    """
    values = _host_arrays(arrays)
    n, totals = len(values), []
    with np.errstate(divide="ignore"):
        log_z = _log_forward(recipe, values, totals)
    if log_z == -math.inf:
        return log_z, None
    uniform = np.random.random if rng is None else rng.random

    def draw(i, st, env, shape):
        total = totals[i]
        logits = total[tuple(env[name] for name in st.out)] if st.out else total
        logits = np.broadcast_to(logits, shape + logits.shape[-1:])
        top = logits.max(-1, keepdims=True)
        cdf = np.cumsum(np.exp(logits - np.where(top > -math.inf, top, 0.0)), -1)
        u = uniform(shape)[..., None] * cdf[..., -1:]
        return np.minimum((cdf <= u).sum(-1), cdf.shape[-1] - 1)

    found = _walk_down(recipe, n, (num,), draw)
    return log_z, found
