"""Delta: substitution, reduction, and adding a Delta to a factor."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.testing import ones, randn, random_tensor


def _tensor(data, names):
    data = fc.to_data(fc.Tensor(np.asarray(data, dtype=float)))
    return fc.Tensor(data, {n: fc.Bint[s] for n, s in zip(names, data.shape)})


def test_delta_inputs_and_terms_form():
    p = _tensor([0.0, 1.0], "i")
    d = fc.Delta("x", p, 0.5)
    assert d.inputs == {"x": fc.Real, "i": fc.Bint[2]}
    d2 = fc.Delta((("x", (p, 0.5)), ("y", (fc.Number(2.0), 0.0))))
    assert set(d2.inputs) == {"x", "y", "i"}


def test_subs_at_point_and_elsewhere(backend):
    p = _tensor([0.0, 1.0, 2.0], "i")
    ld = _tensor([0.1, 0.2, 0.3], "i")
    d = fc.Delta("x", p, ld)
    value = d(x=1.0)
    # Oracle: log_density where the point equals the value, -inf elsewhere.
    expected = np.where(np.array([0.0, 1.0, 2.0]) == 1.0, [0.1, 0.2, 0.3], -np.inf)
    assert np.array_equal(ops.to_numpy(value.data), expected)
    assert d(x=p) is not None and np.allclose(ops.to_numpy(d(x=p).data), [0.1, 0.2, 0.3])


def test_subs_vector_point_and_rename():
    d = fc.Delta("x", fc.Tensor(np.array([1.0, 2.0])), 0.0)
    assert float(d(x=np.array([1.0, 2.0])).data) == 0.0
    assert float(d(x=np.array([1.0, 3.0])).data) == -np.inf
    renamed = d(x="z")
    assert isinstance(renamed, fc.Delta) and set(renamed.inputs) == {"z"}


def test_subs_into_point_inputs_rebuilds():
    d = fc.Delta("x", _tensor([0.0, 5.0], "i"), 0.0)
    e = d(i=1)
    assert isinstance(e, fc.Delta) and float(e(x=5.0).data) == 0.0


def test_reduce_over_name_leaves_log_density():
    ld = _tensor([0.1, 0.2], "i")
    d = fc.Delta("x", _tensor([0.0, 5.0], "i"), ld)
    r = d.reduce(ops.logaddexp, "x")
    assert np.allclose(r.data, [0.1, 0.2])
    both = d.reduce(ops.logaddexp, frozenset({"x", "i"}))
    assert np.allclose(both.data, np.log(np.exp(0.1) + np.exp(0.2)))


def test_reduce_over_name_keeps_batch_inputs_of_point(backend):
    # sum_x dirac(x - p_i) exp(0.5) = exp(0.5) for every i: the result still has input i.
    d = fc.Delta("x", fc.Tensor(randn(3), {"i": fc.Bint[3]}), 0.5)
    r = d.reduce(ops.logaddexp, "x")
    assert isinstance(r, fc.Tensor) and r.inputs == {"i": fc.Bint[3]}
    np.testing.assert_allclose(ops.to_numpy(r.data), np.full(3, 0.5))


def test_delta_plus_factor_substitutes_point():
    x = fc.Variable("x", fc.Real)
    d = fc.Delta("x", fc.Number(3.0))
    f = d + x * 2.0
    # (Delta + f) reduced over x is f(x=3).
    assert float(f.reduce(ops.logaddexp, "x").data) == 6.0
    assert float((x * 2.0 + d).reduce(ops.logaddexp, "x").data) == 6.0


def test_delta_plus_delta_merges():
    d = fc.Delta("x", fc.Number(1.0)) + fc.Delta("y", fc.Number(2.0), 0.5)
    assert isinstance(d, fc.Delta) and d.fresh == {"x", "y"}
    assert float(d(x=1.0, y=2.0).data) == 0.5


def test_delta_with_tensor_reduced_over_name_and_batch():
    p = _tensor([0.0, 1.0], "i")
    t = _tensor([[1.0, 2.0], [3.0, 4.0]], "ij")
    joint = fc.Delta("x", p) + t
    r = joint.reduce(ops.logaddexp, frozenset({"x", "i", "j"}))
    assert np.allclose(r.data, np.log(np.exp([[1.0, 2.0], [3.0, 4.0]]).sum()))


def test_delta_errors():
    with pytest.raises(ValueError, match="cannot depend on 'x'"):
        fc.Delta("x", fc.Variable("x", fc.Real))
    with pytest.raises(ValueError, match="real scalar"):
        fc.Delta("x", fc.Number(1.0), fc.Tensor(np.zeros(2)))


# ---------------------------------------------------------------------------------------------
# Reduce(add, Delta, plates): log-indicators add, so the Delta survives only where all points
# agree. Oracle: the same sum written with np.where over every plate value, at candidate x.
def _np_delta(points, log_densities, x):
    """log_density where point == x else -inf, elementwise (numpy brute force)."""
    return np.where(np.asarray(points) == x, log_densities, -np.inf)


def _values_at(f, **subs):
    """The data of ``f(**subs)`` with its remaining inputs in sorted order."""
    value = f(**subs)
    return ops.to_numpy(value.align(tuple(sorted(value.inputs))).data)


def test_exact_reduce_add_delta_point_independent_of_plate():
    np.random.seed(0)
    ld = random_tensor({"i": fc.Bint[3], "j": fc.Bint[2]})
    d = fc.Delta("x", fc.Number(1.5), ld)
    r = d.reduce(ops.add, "i")
    assert isinstance(r, fc.Delta) and set(r.inputs) == {"x", "j"}
    for x in (1.5, 0.0):
        expected = _np_delta(1.5, ld.data, x).sum(axis=0)
        assert np.array_equal(_values_at(r, x=x), expected)


def test_exact_reduce_add_delta_point_varies_with_plate():
    # Points p[i, k]: for k = 1 all equal (the Delta survives), for k = 0 they differ (-inf).
    points = np.array([[0.0, 2.0], [1.0, 2.0], [0.0, 2.0]])
    np.random.seed(1)
    lds = np.random.standard_normal((3, 2))
    d = fc.Delta("x", _tensor(points, "ik"), _tensor(lds, "ij"))
    for plates in ({"i"}, {"i", "j"}):
        r = d.reduce(ops.add, frozenset(plates))
        assert isinstance(r, fc.Delta)
        for x in (0.0, 1.0, 2.0, 0.5):
            # [i, j, k] brute force (remaining names in sorted order), summed over the plates.
            table = _np_delta(points[:, None, :], lds[:, :, None], x)
            axes = (0,) + ((1,) if "j" in plates else ())
            expected = table.sum(axis=axes)
            assert np.array_equal(_values_at(r, x=x), expected), (plates, x)


def test_exact_reduce_add_delta_plate_absent_from_a_term_counts_copies():
    # sum_i [Delta(x, p_i, a_i) + Delta(z, q, c)] = ... + 3 * c: the z term repeats 3 times.
    points, a = np.array([2.0, 2.0, 2.0]), np.array([0.1, 0.2, 0.3])
    d = fc.Delta((("x", (_tensor(points, "i"), _tensor(a, "i"))),
                  ("z", (fc.Number(-1.0), fc.Number(0.7)))))
    r = d.reduce(ops.add, "i")
    assert isinstance(r, fc.Delta) and set(r.inputs) == {"x", "z"}
    for x, z in [(2.0, -1.0), (2.0, 0.0), (1.0, -1.0)]:
        expected = (_np_delta(points, a, x) + _np_delta(-1.0, 0.7, z)).sum()
        np.testing.assert_allclose(float(r(x=x, z=z).data), expected)  # equal infs pass


def test_exact_reduce_add_delta_refuses_names_not_inputs():
    d = fc.Delta("x", fc.Number(1.0), _tensor([0.1, 0.2], "i"))
    r = fc.Reduce(ops.add, d, frozenset({"i"}))
    assert isinstance(r, fc.Delta) and set(r.inputs) == {"x"}
    assert float(r(x=1.0).data) == pytest.approx(0.1 + 0.2)
    # One policy for Reduce and .reduce: a bare name that is not an input is an error.
    with pytest.raises(ValueError, match="unused"):
        fc.Reduce(ops.add, d, frozenset({"i", "unused"}))
    with pytest.raises(ValueError, match="unused"):
        d.reduce(ops.add, frozenset({"i", "unused"}))


def test_exact_reduce_add_delta_lazy_point_and_declines():
    z = fc.Variable("z", fc.Real)
    ld = _tensor([0.1, 0.2], "i")
    r = fc.Delta("x", z + 1.0, ld).reduce(ops.add, "i")
    assert isinstance(r, fc.Delta)
    assert float(r(z=1.0, x=2.0).data) == pytest.approx(0.3)
    # Summing over the Delta's own name, or a lazy point that varies with the plate: lazy.
    d = fc.Delta("x", _tensor([0.0, 1.0], "i"), ld)
    assert not isinstance(d.reduce(ops.add, frozenset({"x", "i"})), (fc.Delta, fc.Tensor))
    varying = fc.Delta("x", z + _tensor([0.0, 1.0], "i"))
    assert not isinstance(varying.reduce(ops.add, "i"), fc.Delta)


# ---------------------------------------------------------------------------------------------
# Delta(x, p, ld)(x = y @ A + b) = Delta(y, solve, ld - log|det A|). Oracle: np.linalg.
def _check_delta(actual, name, point, log_density):
    assert isinstance(actual, fc.Delta) and actual.fresh == {name}
    ((_, (p, ld)),) = actual.terms
    batch = tuple(sorted(k for k in actual.inputs if k != name))
    p = p.align(batch) if isinstance(p, fc.Tensor) and p.inputs else p
    ld = ld.align(batch) if isinstance(ld, fc.Tensor) and ld.inputs else ld
    np.testing.assert_allclose(ops.to_numpy(p.data), point, rtol=1e-10)
    np.testing.assert_allclose(ops.to_numpy(ld.data), log_density, rtol=1e-10)


def test_exact_subs_delta_affine_real():
    p, ld = np.array([1.0, -2.0, 4.0]), np.array([0.1, 0.2, 0.3])
    d = fc.Delta("x", _tensor(p, "i"), _tensor(ld, "i"))
    y = fc.Variable("y", fc.Real)
    actual = d(x=-2.0 * y + 0.5)
    _check_delta(actual, "y", (p - 0.5) / -2.0, ld - np.log(2.0))
    # Mass is conserved up to the Jacobian: logaddexp over y gives ld - log|a|.
    np.testing.assert_allclose(actual.reduce(ops.logaddexp, "y").data, ld - np.log(2.0))


@pytest.mark.parametrize("side", ["y @ A", "A @ y"])
def test_exact_subs_delta_affine_vector(side):
    rng = np.random.default_rng(2)
    a, b, p = rng.normal(size=(2, 2)) + 2 * np.eye(2), rng.normal(size=2), rng.normal(size=2)
    d = fc.Delta("x", fc.Tensor(p), 0.25)
    y = fc.Variable("y", fc.Reals[2])
    value = y @ fc.Tensor(a) + b if side == "y @ A" else fc.Tensor(a) @ y + b
    # y @ A = p - b  <=>  A.T @ y = p - b.
    expected = np.linalg.solve(a.T if side == "y @ A" else a, p - b)
    log_abs_det = np.linalg.slogdet(a)[1]
    actual = d(x=value)
    _check_delta(actual, "y", expected, 0.25 - log_abs_det)
    np.testing.assert_allclose(actual.reduce(ops.logaddexp, "y").data, 0.25 - log_abs_det)


def test_exact_subs_delta_affine_batched():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 2, 2)) + 3 * np.eye(2)   # batched over j
    p, ld = rng.normal(size=(4, 2)), rng.normal(size=4)   # batched over i
    b = rng.normal(size=2)
    d = fc.Delta("x", fc.Tensor(p, {"i": fc.Bint[4]}), fc.Tensor(ld, {"i": fc.Bint[4]}))
    y = fc.Variable("y", fc.Reals[2])
    actual = d(x=y @ fc.Tensor(a, {"j": fc.Bint[3]}) + b)
    expected = np.array([[np.linalg.solve(a[j].T, p[i] - b) for j in range(3)]
                         for i in range(4)])
    log_abs_det = np.array([np.linalg.slogdet(a[j])[1] for j in range(3)])
    _check_delta(actual, "y", expected, ld[:, None] - log_abs_det[None, :])
    r = actual.reduce(ops.logaddexp, "y").align(("i", "j"))
    np.testing.assert_allclose(r.data, ld[:, None] - log_abs_det[None, :])


def test_exact_subs_delta_non_affine_stays_lazy():
    d = fc.Delta("x", fc.Tensor(np.array([1.0, 2.0])), 0.0)
    y, z = fc.Variable("y", fc.Reals[2]), fc.Variable("z", fc.Reals[2])
    w = fc.Variable("w", fc.Reals[3])
    cases = {
        "nonlinear": y * y,
        "two variables": y + z,
        "singular": y @ fc.Tensor(np.array([[1.0, 2.0], [2.0, 4.0]])),
        "non-square": w @ fc.Tensor(np.ones((3, 2))),
    }
    for what, value in cases.items():
        assert isinstance(d(x=value), fc.Subs), what
    # y already used by the Delta: the equation 2y = p(y) is not a change of variables.
    yr = fc.Variable("y", fc.Real)
    assert isinstance(fc.Delta("x", yr + 1.0)(x=2.0 * yr), fc.Subs)


# ---------------------------------------------------------------------------------------------
# Both rules on every backend, against numpy on the same data.
def test_exact_delta_rules_on_backend(backend):
    np.random.seed(4)
    a = randn(2, 2) + 3 * ops.new_eye(ones(2), 2)
    p = randn(3, 2)
    ld = randn(3)
    d = fc.Delta("x", fc.Tensor(p, {"i": fc.Bint[3]}), fc.Tensor(ld, {"i": fc.Bint[3]}))
    y = fc.Variable("y", fc.Reals[2])
    actual = d(x=y @ fc.Tensor(a))
    a_np, p_np, ld_np = (ops.to_numpy(v) for v in (a, p, ld))
    _check_delta(actual, "y", np.linalg.solve(a_np.T, p_np.T).T,
                 ld_np - np.linalg.slogdet(a_np)[1])
    assert type(actual.terms[0][1][0].data) is type(p)
    # Reduce(add) over the plate of a point that does not vary with it.
    r = fc.Delta("x", fc.Tensor(p[0]), fc.Tensor(ld, {"i": fc.Bint[3]})).reduce(ops.add, "i")
    assert isinstance(r, fc.Delta)
    assert float(ops.to_numpy(r(x=p[0]).data)) == pytest.approx(ld_np.sum())
    assert float(ops.to_numpy(r(x=p[1]).data)) == -np.inf
    # ... and of points that vary with the plate: k = 0 agrees over i, k = 1 does not.
    points = np.array([[1.0, 2.0], [1.0, 3.0]])
    ik = {"i": fc.Bint[2], "k": fc.Bint[2]}
    d = fc.Delta("x", fc.Tensor(ops.new_array(p, points), ik), fc.Tensor(ld[:2], {"i": fc.Bint[2]}))
    r = d.reduce(ops.add, "i")
    assert isinstance(r, fc.Delta) and type(r.terms[0][1][1].data) is type(p)
    for x in (1.0, 2.0):
        expected = _np_delta(points, ld_np[:2, None], x).sum(axis=0)
        np.testing.assert_allclose(ops.to_numpy(r(x=x).data), expected)


def test_delta_pytree_round_trip_keeps_fresh():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        d = fc.Delta("x", fc.Tensor(jax.numpy.arange(2.0), {"i": fc.Bint[2]}), 0.5)
        leaves, treedef = jax.tree_util.tree_flatten(d)
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    finally:
        fc.set_backend("numpy")
    assert isinstance(rebuilt, fc.Delta) and rebuilt.fresh == {"x"}
    assert set(rebuilt.inputs) == {"x", "i"}


def _smeared_mass(g, p, lo, hi, sigma=1e-3):
    # Oracle: the mass in y of dirac(g(y) - p), with the dirac smeared to a narrow normal
    # density, by quadrature on a fine grid.
    y = np.linspace(lo, hi, 2_000_001)
    dens = np.exp(-0.5 * ((g(y) - p) / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
    return np.trapezoid(dens, y) if hasattr(np, "trapezoid") else np.trapz(dens, y)


@pytest.mark.parametrize("p", [0.5, 2.0, 3.0])
def test_delta_under_exp_changes_variables_with_the_jacobian(p):
    y = fc.Variable("y", fc.Real)
    d = fc.Delta("x", fc.Number(p))(x=ops.exp(y))
    assert isinstance(d, fc.Delta) and d.fresh == frozenset({"y"})
    mass = float(d.reduce(ops.logaddexp, "y").data)
    np.testing.assert_allclose(np.exp(mass), _smeared_mass(np.exp, p, -3.0, 3.0), rtol=1e-4)
    np.testing.assert_allclose(float(d.terms[0][1][0].data), np.log(p))


@pytest.mark.parametrize("p", [-1.0, 0.3, 1.2])
def test_delta_under_log_changes_variables_with_the_jacobian(p):
    y = fc.Variable("y", fc.Real)
    d = fc.Delta("x", fc.Number(p))(x=ops.log(y))
    mass = float(d.reduce(ops.logaddexp, "y").data)
    np.testing.assert_allclose(np.exp(mass), _smeared_mass(np.log, p, 1e-3, 6.0), rtol=1e-4)


def test_delta_under_exp_of_a_point_outside_its_range_has_no_mass():
    y = fc.Variable("y", fc.Reals[2])
    point = fc.Tensor(np.array([[1.0, -2.0], [0.5, 2.0]]), {"i": fc.Bint[2]})
    d = fc.Delta("x", point)(x=ops.exp(y))
    mass = d.reduce(ops.logaddexp, "y").data
    assert mass[0] == -np.inf
    np.testing.assert_allclose(mass[1], -np.log(0.5 * 2.0))
    assert _smeared_mass(np.exp, -2.0, -5.0, 5.0) < 1e-12


# ---------------------------------------------------------------------------------------------
# Guards: Integrate over a Delta's name and the batch input of its point, weighted or not,
# against the sum of w * f(point) by hand. (Moved from tests/test_defects_8.py, defect 4.)
@pytest.mark.parametrize("weighted", [True, False])
def test_integrate_delta_over_name_and_batch(weighted):
    from scipy.special import expit

    np.random.seed(4)
    p, ld, c = np.random.randn(3), np.random.randn(3), np.random.randn(3)
    point = fc.Tensor(p, {"i": fc.Bint[3]})
    delta = fc.Delta("x", point, fc.Tensor(ld, {"i": fc.Bint[3]})) if weighted else fc.Delta(
        "x", point)
    w = np.exp(ld) if weighted else np.ones(3)
    x = fc.Variable("x", fc.Real)
    cases = [(x * fc.Tensor(c, {"i": fc.Bint[3]}) + x ** 2, p * c + p ** 2),
             (x.sigmoid(), expit(p)), (fc.Number(2.0), np.full(3, 2.0)),
             (fc.Tensor(c, {"i": fc.Bint[3]}), c)]
    for f, values in cases:
        actual = fc.Integrate(delta, f, {"x", "i"})
        assert np.allclose(actual.data, (w * values).sum())


# Stack/Cat of Deltas along a Bint input is one Delta, so substitutions of ints, slices,
# Tensor indices and reals evaluate (issue 27, item 10's sweep). Oracle: numpy, the k-th
# part's point mass read at the concatenated position.
def _cat_parts():
    p0, l0 = np.array([0.5, 1.5]), np.array([0.1, 0.2])
    p1, l1 = np.array([1.5, 2.5, 3.5]), np.array([0.3, 0.4, 0.5])
    parts = (fc.Delta("x", _tensor(p0, "u"), _tensor(l0, "u")),
             fc.Delta("x", _tensor(p1, "u"), _tensor(l1, "u")))
    return parts, np.concatenate([p0, p1]), np.concatenate([l0, l1])


@pytest.mark.parametrize("how", ["cat", "stack"])
def test_cat_and_stack_of_deltas_then_substitute(backend, how):
    parts, points, lds = _cat_parts()
    if how == "cat":
        joined = fc.Cat("u", parts)
    else:
        joined = fc.Stack("u", tuple(p(u=k) for p in parts for k in range(p.inputs["u"].size)))
    assert isinstance(joined, fc.Delta) and joined.inputs["u"] == fc.Bint[5]
    for x in (1.5, 2.0):
        expected = np.where(points == x, lds, -np.inf)
        assert np.array_equal(ops.to_numpy(joined(x=x).data), expected)
        for u in range(5):
            assert float(joined(u=u, x=x).data) == expected[u]
        sliced = joined(u=fc.Slice("u", 1, 5, 2, 5))(x=x)
        assert np.array_equal(ops.to_numpy(sliced.data), expected[1:5:2])
        index = fc.Tensor(np.array([4, 0, 2]), {"k": fc.Bint[3]}, 5)
        picked = joined(u=index)(x=x)
        assert isinstance(picked, fc.Tensor)
        assert np.array_equal(ops.to_numpy(picked.data), expected[[4, 0, 2]])


def test_cat_of_deltas_with_number_fields_broadcasts():
    # A part whose log density lacks the Cat's index is broadcast over it.
    parts = (fc.Delta("x", _tensor([1.0, 1.0], "u"), 0.0),
             fc.Delta("x", _tensor([2.0, 3.0], "u"), _tensor([0.5, 0.6], "u")))
    joined = fc.Cat("u", parts)
    assert isinstance(joined, fc.Delta)
    expected = np.where(np.array([1.0, 1.0, 2.0, 3.0]) == 2.0, [0.0, 0.0, 0.5, 0.6], -np.inf)
    assert np.array_equal(ops.to_numpy(joined(x=2.0).data), expected)


def test_cat_of_delta_sums_selects_a_part():
    # Delta + Tensor parts do not concatenate into one atom: an int or a Slice index still
    # selects (the lazy rule for Subs of Cat); the values are the part's own.
    parts, points, lds = _cat_parts()
    extra = np.array([0.25, 0.5, 0.75, 1.0, 1.25])
    parts = (parts[0] + _tensor(extra[:2], "u"), parts[1] + _tensor(extra[2:], "u"))
    joined = fc.Cat("u", parts)
    expected = np.where(points == 1.5, lds + extra, -np.inf)
    for u in range(5):
        assert float(joined(u=u, x=1.5).data) == expected[u]
    sliced = joined(u=fc.Slice("u", 1, 5, 2, 5))
    assert [float(sliced(u=k, x=1.5).data) for k in range(2)] == list(expected[1:5:2])
