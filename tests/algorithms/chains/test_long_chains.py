"""Long lazy chains that reuse names: build, reinterpret, substitute and pickle with no
recursion (checked under a lowered recursion limit, so a short chain proves what a 10^5-step
chain needs). Oracle: the forward algorithm in numpy."""

from __future__ import annotations

import pickle
import sys
from contextlib import contextmanager

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.testing import assert_close
from interpretations import lazy

STEPS = 750  # 2.5 times the recursion limit set below: recursing once a step fails


@contextmanager
def recursion_limit(n: int):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(n)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _forward_numpy(init, trans, steps):
    alpha = init
    for _ in range(steps):
        m = alpha[:, None] + trans
        alpha = np.log(np.exp(m - m.max(0)).sum(0)) + m.max(0)
    return alpha


def _lazy_filter(init, trans, steps):
    f = fc.Tensor(init, {"x": fc.Bint[3]})
    t = fc.Tensor(trans, {"x_prev": fc.Bint[3], "x": fc.Bint[3]})
    with lazy:
        for _ in range(steps):
            f = (f(x="x_prev") + t).reduce(ops.logaddexp, "x_prev")
    return f


def test_lazy_chain_reusing_names_builds_and_evaluates_without_recursion():
    rng = np.random.default_rng(0)
    init, trans = rng.normal(size=3), rng.normal(size=(3, 3)) * 0.3
    with recursion_limit(300):
        f = _lazy_filter(init, trans, STEPS)
        assert set(f.inputs) == {"x"}  # renamed binders never leak into inputs
        value = fc.reinterpret(f)
        restored = pickle.loads(pickle.dumps(f))  # rebuilt under exact: evaluates
    assert_close(value.align(("x",)).data, _forward_numpy(init, trans, STEPS), rtol=1e-8)
    assert_close(restored.align(("x",)).data, value.align(("x",)).data)


def test_pickled_lazy_chain_keeps_its_structure():
    rng = np.random.default_rng(1)
    init, trans = rng.normal(size=3), rng.normal(size=(3, 3))
    f = _lazy_filter(init, trans, 50)
    with lazy:
        back = pickle.loads(pickle.dumps(f))
    assert type(back) is type(f) and back.inputs == f.inputs
    assert_close(fc.reinterpret(back).data, fc.reinterpret(f).data)


def test_substituting_into_a_long_chain_is_capture_free():
    # Substituting x := x_prev at the top must rename the top binder only, and the value must
    # equal the oracle indexed the same way.
    rng = np.random.default_rng(2)
    init, trans = rng.normal(size=3), rng.normal(size=(3, 3))
    f = _lazy_filter(init, trans, 200)
    with recursion_limit(300):
        with lazy:
            g = f(x="x_prev")
        value = fc.reinterpret(g)
    assert set(value.inputs) == {"x_prev"}
    assert_close(value.data, _forward_numpy(init, trans, 200))
