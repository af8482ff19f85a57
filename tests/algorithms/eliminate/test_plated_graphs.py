"""Tensor variable elimination on random plated factor graphs, in every semiring, against
brute-force enumeration of the unrolled graph; the forbidden plate minor against an
independent search for it (Theorem 1 of Obermeyer et al. 2019: elimination fails exactly when
the minor is present).

A plated factor graph here is a list of factors, each a Tensor over Bint variables and plate
indices. A variable's plates are the plates common to every factor that uses it (funsor's
rule): it has one copy per assignment of those plates. Unrolling replaces each factor by one
copy per assignment of its own plates, using the copies of its variables that the assignment
selects; the oracle then enumerates every joint assignment of every copy with numpy.
"""

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import PlateError, _partition, partial_sum_product, sum_product

# (sum_op, prod_op), how to draw factor values, the numpy product and reduction.
SEMIRINGS = {
    "log": (ops.logaddexp, ops.add, "normal", np.add, logsumexp),
    "linear": (ops.add, ops.mul, "positive", np.multiply, np.sum),
    "max": (ops.max, ops.add, "normal", np.add, np.max),
    "min": (ops.min, ops.add, "normal", np.add, np.min),
    "bool": (ops.or_, ops.and_, "bool", np.logical_and, np.any),
}
PLATES = "pqr"
MAX_ENUMERATION = 1 << 14


def random_graph(rng):
    """(factors as (names, plates, array), sizes, plate names): 1-3 plates (nested or not),
    2-6 variables of domains 2-4, factors over 1-3 variables in their plates or deeper."""
    plates = PLATES[: rng.integers(1, 4)]
    sizes = {p: int(rng.integers(2, 4)) for p in plates}
    nested = rng.random() < 0.5
    var_names = "abcdef"[: rng.integers(2, 7)]
    var_plates = {}
    for v in var_names:
        if nested:  # plate sets are prefixes of one chain: p within q within r
            var_plates[v] = plates[: rng.integers(0, len(plates) + 1)]
        else:
            var_plates[v] = "".join(p for p in plates if rng.random() < 0.4)
        sizes[v] = int(rng.integers(2, 5))
    factors = []
    for v in var_names:  # every variable has a factor in exactly its plates
        factors.append(((v,), var_plates[v]))
    for _ in range(rng.integers(1, 5)):
        count = rng.integers(1, min(3, len(var_names)) + 1)
        names = tuple(sorted(str(v) for v in rng.choice(list(var_names), count, replace=False)))
        fplates = set().union(*(var_plates[v] for v in names))
        fplates |= {p for p in plates if rng.random() < 0.2}  # observed inside a plate
        factors.append((names, "".join(p for p in plates if p in fplates)))
    return factors, sizes, plates


def draw(rng, kind, shape):
    if kind == "normal":
        return rng.normal(size=shape)
    if kind == "positive":
        return rng.uniform(0.2, 1.0, size=shape)
    return rng.random(size=shape) < 0.7


def variable_plates(factors):
    # A variable's plates: the plates common to all factors using it.
    result = {}
    for names, fplates in factors:
        for v in names:
            result[v] = result.get(v, set(fplates)) & set(fplates)
    return {v: "".join(sorted(ps)) for v, ps in result.items()}


def enumeration_size(factors, sizes):
    vplates = variable_plates(factors)
    return math.prod(sizes[v] ** math.prod(sizes[p] for p in vplates[v]) for v in vplates)


def brute_force(factors, arrays, sizes, semiring):
    """The unrolled graph, every copy of every variable enumerated (numpy)."""
    _, _, _, prod, total = SEMIRINGS[semiring]
    vplates = variable_plates(factors)
    copies = []  # (variable, assignment of its plates as a tuple of (plate, value))
    for v in sorted(vplates):
        for values in itertools.product(*(range(sizes[p]) for p in vplates[v])):
            copies.append((v, tuple(zip(vplates[v], values))))
    axis = {c: k for k, c in enumerate(copies)}
    shape = tuple(sizes[v] for v, _ in copies)
    joint = None
    for (names, fplates), data in zip(factors, arrays):
        for values in itertools.product(*(range(sizes[p]) for p in fplates)):
            at = dict(zip(fplates, values))
            piece = data[tuple(at[p] for p in fplates)]  # plates lead, then variables
            axes = [axis[(v, tuple((p, at[p]) for p in vplates[v]))] for v in names]
            order = np.argsort(axes)
            piece = np.transpose(piece, order) if len(names) > 1 else piece
            full = [1] * len(shape)
            for k in sorted(axes):
                full[k] = shape[k]
            piece = np.reshape(piece, full)
            joint = piece if joint is None else prod(joint, piece)
    joint = np.broadcast_to(joint, shape)
    return total(joint, axis=None) if shape else joint


def has_minor(factors):
    """Theorem 1's minor, searched directly: plates a != b, variables u (in a, not b) and w
    (in b, not a), joined by a path that runs through vertices in a and not b, then through
    vertices in both, then through vertices in b and not a (contracting each stretch gives
    the minor u - v - w)."""
    vplates = variable_plates(factors)
    plates = set().union(*(set(p) for _, p in factors))
    # Vertices: ("v", name) and ("f", index); edges join a factor to its variables.
    vertex_plates = {("v", v): set(ps) for v, ps in vplates.items()}
    edges = {("v", v): set() for v in vplates}
    for k, (names, fplates) in enumerate(factors):
        vertex_plates[("f", k)] = set(fplates)
        edges[("f", k)] = {("v", v) for v in names}
        for v in names:
            edges[("v", v)].add(("f", k))
    def stretch(x, a, b):
        ps = vertex_plates[x]
        return ("A" if a in ps and b not in ps else "C" if a in ps and b in ps
                else "B" if b in ps and a not in ps else None)

    for a, b in itertools.permutations(sorted(plates), 2):
        # States: (vertex, stage) with stage 0 in A, 1 in C, 2 in B; start at A-variables.
        start = [(x, 0) for x in edges if x[0] == "v" and stretch(x, a, b) == "A"]
        seen, todo = set(start), list(start)
        while todo:
            x, stage = todo.pop()
            if stage == 2 and x[0] == "v":
                return True
            for y in edges[x]:
                nxt = {"A": 0, "C": 1, "B": 2}.get(stretch(y, a, b))
                if nxt is None or nxt < stage or nxt > stage + 1:
                    continue
                if (y, nxt) not in seen:
                    seen.add((y, nxt))
                    todo.append((y, nxt))
    return False


def to_tensor(names, fplates, data, sizes, semiring):
    inputs = {n: fc.Bint[sizes[n]] for n in tuple(fplates) + tuple(names)}
    dtype = 2 if semiring == "bool" else "real"
    return fc.Tensor(fc.to_data(fc.Tensor(data, dtype=dtype)), inputs, dtype)


def graphs(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        factors, sizes, plates = random_graph(rng)
        if enumeration_size(factors, sizes) <= MAX_ENUMERATION:
            out.append((factors, sizes, plates, int(rng.integers(1 << 30))))
    return out


GRAPHS = graphs(120, seed=2019)


@pytest.mark.parametrize("semiring", list(SEMIRINGS))
def test_random_plated_graphs_equal_enumeration(semiring, backend):
    sum_op, prod_op, kind, _, _ = SEMIRINGS[semiring]
    checked = raised = 0
    for factors, sizes, plates, seed in GRAPHS:
        rng = np.random.default_rng(seed)
        arrays = [draw(rng, kind, tuple(sizes[n] for n in tuple(fp) + names))
                  for names, fp in factors]
        tensors = [to_tensor(n, fp, a, sizes, semiring) for (n, fp), a in zip(factors, arrays)]
        eliminate = frozenset(sizes)  # every variable and every plate
        if has_minor(factors):
            with pytest.raises(PlateError, match="intractable!"):
                sum_product(sum_op, prod_op, tensors, eliminate, frozenset(plates))
            raised += 1
            continue
        actual = sum_product(sum_op, prod_op, tensors, eliminate, frozenset(plates))
        expected = brute_force(factors, arrays, sizes, semiring)
        assert isinstance(actual, fc.Tensor) and not actual.inputs
        if semiring == "bool":
            assert bool(ops.to_numpy(actual.data)) == bool(expected)
        else:
            np.testing.assert_allclose(ops.to_numpy(actual.data), expected, rtol=1e-9)
        checked += 1
    assert checked >= 80 and raised >= 5  # both directions of Theorem 1 are exercised


def test_random_plated_graphs_with_a_kept_plate():
    # A plate that is not eliminated is a batch input: each value is its own graph.
    sum_op, prod_op = ops.logaddexp, ops.add
    done = 0
    for factors, sizes, plates, seed in GRAPHS:
        kept = plates[0]
        if has_minor(factors) or not all(kept in fp or not _uses_plated_var(n, factors, kept)
                                         for n, fp in factors):
            continue
        rng = np.random.default_rng(seed)
        arrays = [rng.normal(size=tuple(sizes[n] for n in tuple(fp) + names))
                  for names, fp in factors]
        tensors = [to_tensor(n, fp, a, sizes, "log") for (n, fp), a in zip(factors, arrays)]
        eliminate = frozenset(sizes) - {kept}
        actual = sum_product(sum_op, prod_op, tensors, eliminate, frozenset(plates))
        for value in range(sizes[kept]):
            sliced = [(n, fp.replace(kept, "")) for n, fp in factors]
            parts = [a[(slice(None),) * fp.index(kept) + (value,)] if kept in fp else a
                     for (_, fp), a in zip(factors, arrays)]
            expected = brute_force(sliced, parts, sizes, "log")
            got = actual(**{kept: value}) if kept in actual.inputs else actual
            np.testing.assert_allclose(got.data, expected, rtol=1e-9)
        done += 1
    assert done >= 5


def _uses_plated_var(names, factors, plate):
    vplates = variable_plates(factors)
    return any(plate in vplates[v] for v in names)


def test_partial_sum_product_in_two_stages_equals_one():
    # Eliminating some variables first (plates kept: batch inputs), then the rest, gives the
    # same total, for variables whose factors all lie in exactly the variable's plates (a
    # variable shared across a plate's values cannot be summed slice by slice).
    done = 0
    for factors, sizes, plates, seed in GRAPHS:
        if has_minor(factors):
            continue
        rng = np.random.default_rng(seed)
        tensors = [to_tensor(n, fp, rng.normal(size=tuple(sizes[m] for m in tuple(fp) + n)),
                             sizes, "log") for n, fp in factors]
        vplates = variable_plates(factors)
        local = sorted(v for v in vplates
                       if all(fp == vplates[v] for n, fp in factors if v in n))
        first = frozenset(local[: max(1, len(local) // 2)])
        stage = partial_sum_product(ops.logaddexp, ops.add, tensors, first, frozenset(plates))
        assert not any(first & set(f.inputs) for f in stage)
        total = sum_product(ops.logaddexp, ops.add, stage, frozenset(sizes), frozenset(plates))
        once = sum_product(ops.logaddexp, ops.add, tensors, frozenset(sizes), frozenset(plates))
        np.testing.assert_allclose(total.data, once.data, rtol=1e-9)
        done += 1
    assert done >= 15


def test_the_rbm_minor_raises_naming_plates_and_variables():
    # Example 3.2 of the paper: x in plate p, y in plate q, a factor in both uses both.
    sizes = {"x": 2, "y": 3, "p": 2, "q": 2}
    f = [((("x",), "p")), (("y",), "q"), (("x", "y"), "pq")]
    tensors = [to_tensor(n, fp, np.ones(tuple(sizes[m] for m in tuple(fp) + n)), sizes, "log")
               for n, fp in f]
    assert has_minor(f)
    with pytest.raises(PlateError, match=r"intractable! variable 'x' is in plate 'p' and "
                                         r"variable 'y' is in plate 'q'"):
        sum_product(ops.logaddexp, ops.add, tensors, frozenset(sizes), frozenset("pq"))


def test_minor_through_a_path_is_found_and_raises():
    # The minor need not sit in one factor: x (in p) - f (in p, q) - z (in p, q) - g - y (in q).
    sizes = {"x": 2, "y": 2, "z": 2, "p": 2, "q": 2}
    f = [(("x",), "p"), (("y",), "q"), (("x", "z"), "pq"), (("z", "y"), "pq")]
    tensors = [to_tensor(n, fp, np.ones(tuple(sizes[m] for m in tuple(fp) + n)), sizes, "log")
               for n, fp in f]
    assert has_minor(f)
    with pytest.raises(PlateError, match="intractable!"):
        sum_product(ops.logaddexp, ops.add, tensors, frozenset(sizes), frozenset("pq"))


@pytest.mark.parametrize("inputs, names, count", [
    (["", "a"], "", 2), (["a", "a"], "a", 1), (["a", "ab", "b", "c"], "ab", 2),
    (["a", "ab", "bc", "c"], "ac", 2), (["a", "ab", "bc", "c"], "abc", 1),
    (["ab", "cd", "bc"], "bc", 1), (["ab", "cd", "bc"], "b", 2),
])
def test_partition_is_the_connected_components(inputs, names, count):
    # Oracle: terms sharing a name of ``names`` are in one component, transitively; a
    # component is no finer than that (checked pairwise) and the partition covers every term.
    terms = [fc.Tensor(np.zeros((2,) * len(s)), {c: fc.Bint[2] for c in s}) for s in inputs]
    parts = _partition(terms, frozenset(names))
    assert len(parts) == count
    assert sorted(id(t) for ts, _ in parts for t in ts) == sorted(map(id, terms))
    where = {id(t): k for k, (ts, _) in enumerate(parts) for t in ts}
    for x, y in itertools.combinations(terms, 2):
        if set(names) & set(x.inputs) & set(y.inputs):
            assert where[id(x)] == where[id(y)]
    for ts, vs in parts:
        assert vs == frozenset(names) & frozenset().union(*(t.inputs for t in ts))


def test_a_large_component_costs_linear_time():
    # 2,000 factors in one chain: partition and elimination stay fast (union-find, plan).
    n = 1000
    rng = np.random.default_rng(0)
    names = [f"x{k}" for k in range(n)]
    terms = [fc.Tensor(rng.normal(size=(2, 2)), {names[k]: fc.Bint[2], names[k + 1]: fc.Bint[2]})
             for k in range(n - 1)]
    terms += [fc.Tensor(rng.normal(size=2), {v: fc.Bint[2]}) for v in names]
    parts = _partition(terms, frozenset(names))
    assert len(parts) == 1 and len(parts[0][0]) == len(terms)
    result = sum_product(ops.logaddexp, ops.add, terms, frozenset(names))
    # Oracle: the forward algorithm by hand.
    alpha = terms[n - 1].data
    for k in range(n - 1):
        alpha = logsumexp(alpha[:, None] + terms[k].data, axis=0) + terms[n + k].data
    np.testing.assert_allclose(result.data, logsumexp(alpha), rtol=1e-10)
