"""Property tests (hypothesis): a random sum-product expression in a random semiring gives one
value under every interpretation chain that evaluates it, planned or not: ``exact`` directly,
``lazy`` then ``reinterpret``, ``apply_optimizer`` (under ``exact``, and under ``lazy`` then
``reinterpret``), ``memoize`` around either, and ``sum_product``; the oracle is numpy brute
force over every assignment. Kept apart from ``test_properties.py`` (expressions over
Gaussians and Deltas), which other work extends."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import sum_product
from interpretations import apply_optimizer, lazy, memoize

SIZES = {"a": 2, "b": 3, "c": 2, "d": 3, "e": 2}
SEMIRINGS = {
    "log": (ops.logaddexp, ops.add, np.add, logsumexp),
    "linear": (ops.add, ops.mul, np.multiply, np.sum),
    "max": (ops.max, ops.add, np.add, np.max),
    "min": (ops.min, ops.add, np.add, np.min),
}

factor_names = st.lists(st.sampled_from(sorted(SIZES)), min_size=0, max_size=3, unique=True)


@st.composite
def problems(draw):
    names = draw(st.lists(factor_names, min_size=2, max_size=6))
    used = sorted(set().union(*map(set, names)))
    kept = draw(st.lists(st.sampled_from(used), unique=True)) if used else []
    semiring = draw(st.sampled_from(sorted(SEMIRINGS)))
    seed = draw(st.integers(0, 2 ** 16))
    return [tuple(n) for n in names], tuple(sorted(kept)), semiring, seed


def brute(names, arrays, kept, semiring):
    _, _, prod, total = SEMIRINGS[semiring]
    letters = sorted(SIZES)
    joint = None
    for ns, a in zip(names, arrays):
        perm = np.transpose(a, [ns.index(c) for c in letters if c in ns]) if ns else a
        piece = np.reshape(perm, [SIZES[c] if c in ns else 1 for c in letters])
        joint = piece if joint is None else prod(joint, piece)
    joint = np.broadcast_to(joint, tuple(SIZES[c] for c in letters))
    used = set().union(*map(set, names))
    # Letters no factor uses are not variables of the problem: drop their broadcast copies.
    index = tuple(0 if c not in used else slice(None) for c in letters)
    joint = joint[index]
    letters = [c for c in letters if c in used]
    axes = tuple(k for k, c in enumerate(letters) if c not in kept)
    return total(joint, axis=axes) if axes else joint


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_every_chain_agrees_with_brute_force(problem):
    names, kept, semiring, seed = problem
    sum_op, prod_op, _, _ = SEMIRINGS[semiring]
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.3, 1.2, size=tuple(SIZES[c] for c in ns)) if semiring == "linear"
              else rng.normal(size=tuple(SIZES[c] for c in ns)) for ns in names]
    factors = [fc.Tensor(a, {c: fc.Bint[SIZES[c]] for c in ns}) for ns, a in zip(names, arrays)]
    used = frozenset().union(*(f.inputs for f in factors))
    reduced = used - set(kept)
    expected = brute(names, arrays, kept, semiring)

    def build():
        product = factors[0]
        for f in factors[1:]:
            product = prod_op(product, f)
        return product.reduce(sum_op, reduced) if reduced else product

    def value(result):
        assert isinstance(result, fc.Tensor)
        return result.align(kept).data if kept else result.data

    with lazy:
        expr = build()
    results = {"exact": build(), "lazy+reinterpret": fc.reinterpret(expr),
               "apply_optimizer": apply_optimizer(expr)}
    with lazy:
        planned = apply_optimizer(expr)
    results["optimize+reinterpret"] = fc.reinterpret(planned)
    with memoize():
        results["memoize+apply_optimizer"] = apply_optimizer(expr)
        results["memoize+exact"] = fc.reinterpret(expr)
    results["sum_product"] = sum_product(sum_op, prod_op, factors, reduced)
    for name, result in results.items():
        np.testing.assert_allclose(value(result), expected, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name}: {names} kept {kept} ({semiring})")
