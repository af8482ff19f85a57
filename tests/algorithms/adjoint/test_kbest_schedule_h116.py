"""k-best (k > 1) on the schedule, vectorized (h116): the same scores and assignments, ties
in the same order, as kbest.py's k-max steps (``_combine``, ``_plate_product``) applied to
the same schedule, and ``_topk`` against numpy's stable argsort.

Oracles: the per-step k-max semiring of ``kbest.py`` on the recipe's steps (the form the
schedule replayed before h116), every assignment compared exactly on a model of few distinct
values (many tied totals); the enumeration of every total for the scores;
``np.argsort(kind="stable")`` for the top-k of arrays with ties and -inf.
"""

from __future__ import annotations

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.adjoint.kbest import _combine, _KList, _plate_product, _topk
from funsor_core.algorithms.adjoint.scheduled import replay_best, replay_recipe
from funsor_core.algorithms.eliminate.schedule import structure_of
from tests.algorithms.adjoint.test_scheduled_replay_h115 import (
    PLATES,
    SIZES,
    _enumerate,
    _factors,
    _model,
)


def _stepwise(recipe, arrays, k):
    # kbest.py's k-lists, one _combine / _plate_product per recipe step, walked back
    sizes = recipe.sizes
    lists = [_KList(names, tuple(sizes[x] for x in names), a[..., None])
             for names, a in zip(recipe.names, arrays)]
    for st in recipe.steps:
        refs = [view[0] for view in st.views]
        if st.contract:
            lists.append(_combine(refs, [lists[p] for p in refs], st.reduced, st.out, sizes, k))
        else:
            lists.append(_plate_product(refs[0], lists[refs[0]], st.reduced, sizes, k))
    outputs = list(recipe.outputs)
    root = _combine(outputs, [lists[p] for p in outputs], (), (), sizes, k)
    found: dict = {}
    todo = [(root.step, {}, np.arange(root.data.size), ())]
    while todo:
        step, env, rank, plates = todo.pop()
        for ref, new, r, pl in step.back(env, rank, plates, found):
            if lists[ref].step is not None:
                todo.append((lists[ref].step, {x: new[x] for x in lists[ref].names}, r, pl))
    return root.data.reshape(-1), found


@pytest.mark.parametrize("seed", [2, 5])
@pytest.mark.parametrize("k", [4, 9])
def test_ties_in_the_stepwise_order(seed, k):
    arrays = _model(seed, ties=True)
    fs = _factors(arrays)
    recipe = replay_recipe(structure_of(ops.max, ops.add, fs), frozenset(SIZES), PLATES)
    scores, found = replay_best(recipe, arrays, k)
    want_scores, want = _stepwise(recipe, arrays, k)
    brute = np.sort([s for s, _ in _enumerate(arrays)[0]])[::-1]
    np.testing.assert_allclose(scores, brute[:k], rtol=1e-12)
    assert len(np.unique(want_scores)) < k  # ties among the k best
    np.testing.assert_array_equal(scores, want_scores)
    assert found.keys() == want.keys()
    for name, (values, plates) in want.items():
        assert found[name][1] == plates
        np.testing.assert_array_equal(found[name][0], values, strict=True)


@pytest.mark.parametrize("k", [1, 3, 10, 12])
def test_topk_is_the_stable_argsort(k):
    rng = np.random.default_rng(k)
    flat = np.round(rng.normal(size=(3, 4, 10)))
    flat[0, 0, :4] = -np.inf
    values, order = _topk(flat, k)
    want = np.argsort(-flat, axis=-1, kind="stable")[..., :k]
    np.testing.assert_array_equal(order, want)
    np.testing.assert_array_equal(values, np.take_along_axis(flat, want, -1))
