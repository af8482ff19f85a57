"""Loopy belief propagation against brute-force enumeration (numpy oracles)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.bp import run_bp
from funsor_core.algorithms.loopy.messages import Semiring, normalize
from funsor_core.loopy import SCHEDULES, FactorGraph, exact_marginals, loopy_bp, marginal_errors
from tests.algorithms.loopy.models import brute_force, grid_model, joint, tree_model
from tests.backend_values import as_backend_array, to_numpy, values_on_every_backend

SEMIRINGS = [(ops.logaddexp, 1.0), (ops.max, 0.0), (ops.logaddexp, 0.5)]


@pytest.mark.parametrize("sum_op, temperature", SEMIRINGS)
def test_tree_every_schedule_is_exact(sum_op, temperature):
    factors, tables, sizes = tree_model(np.random.default_rng(0))
    log_z, marg = brute_force(tables, sizes, temperature)
    for schedule in SCHEDULES:
        r = loopy_bp(factors, sum_op, schedule, temperature=temperature, tol=1e-13)
        assert r.converged
        assert abs(float(r.log_z.data) - log_z) < 1e-10, schedule
        for v, m in marg.items():
            np.testing.assert_allclose(r.beliefs[v].data, m, atol=1e-10, err_msg=schedule)


def test_exact_reference_and_metrics():
    factors, tables, sizes = tree_model(np.random.default_rng(1))
    log_z, marg = brute_force(tables, sizes)
    ref_z, ref = exact_marginals(factors)
    assert abs(float(ref_z.data) - log_z) < 1e-10
    for v in sizes:
        np.testing.assert_allclose(ref[v].data, marg[v], atol=1e-10)
    assert marginal_errors(ref, ref) == {"kl": 0.0, "tv": 0.0, "l2": 0.0, "hellinger": 0.0,
                                         "max_marginal_agreement": 1.0}
    p, q = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    errs = marginal_errors({"x": fc.Tensor(np.log(q), {"x": fc.Bint[2]})},
                           {"x": fc.Tensor(np.log(p), {"x": fc.Bint[2]})})
    assert np.isclose(errs["kl"], np.sum(p * np.log(p / q)))
    assert np.isclose(errs["tv"], 0.4) and np.isclose(errs["l2"], np.sqrt(0.32))
    assert np.isclose(errs["hellinger"], np.sqrt(0.5 * np.sum((np.sqrt(p) - np.sqrt(q)) ** 2)))
    assert errs["max_marginal_agreement"] == 0.0


def test_tree_on_every_backend_and_jit():
    factors, tables, sizes = tree_model(np.random.default_rng(2))
    scopes = [tuple(f.inputs) for f in factors]
    domains = [dict(f.inputs) for f in factors]
    log_z, marg = brute_force(tables, sizes)
    log_max, mmarg = brute_force(tables, sizes, 0.0)

    def fn(*arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        r = loopy_bp(fs, max_iters=20)
        m = loopy_bp(fs, ops.max, "sequential", max_iters=8)
        return ops.cat([ops.stack([r.log_z.data, m.log_z.data], 0)]
                       + [r.beliefs[v].data for v in sizes]
                       + [m.beliefs[v].data for v in sizes], 0)

    expected = np.concatenate([[log_z, log_max]] + [marg[v] for v in sizes]
                              + [mmarg[v] for v in sizes])
    assert len(scopes) == len(tables)
    for got in values_on_every_backend(fn, *[t for _, t in tables], eager_jax=False):
        np.testing.assert_allclose(got, expected, atol=1e-10)


def test_random_and_residual_schedules_on_a_tree_under_jit():
    # Traced, these schedules run their vectorized sweeps (eagerly: asynchronous.py): each
    # semiring's beliefs and log Z against enumeration, one compile for the four runs.
    jax = pytest.importorskip("jax")
    factors, tables, sizes = tree_model(np.random.default_rng(12))
    domains = [dict(f.inputs) for f in factors]

    def fn(*arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        out = []
        for schedule in ("random", "residual"):
            for sum_op in (ops.logaddexp, ops.max):
                r = loopy_bp(fs, sum_op, schedule, max_iters=4, rng_key=3)
                out += [r.log_z.data[None]] + [r.beliefs[v].data for v in sizes]
        return ops.cat(out, 0)

    expected = []
    for temperature in (1.0, 0.0):
        log_z, marg = brute_force(tables, sizes, temperature)
        expected += [[log_z]] + [marg[v] for v in sizes]
    fc.set_backend("jax")
    try:
        got = jax.jit(fn)(*[as_backend_array(t, "jax") for _, t in tables])
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(to_numpy(got), np.concatenate(expected * 2), atol=1e-10)


def test_max_product_map_on_a_tree_with_ties():
    for seed in range(4):
        factors, tables, sizes = tree_model(np.random.default_rng(seed), integer=True)
        j = joint(tables, sizes)
        x = loopy_bp(factors, ops.max).map_assignment()
        assert j[tuple(x[v] for v in sizes)] == j.max()
        assert (j == j.max()).sum() > 1 or seed  # the first model has ties


def _one_update(r):
    # One flooding update from the final messages: the message equations' right-hand side.
    from funsor_core.algorithms.loopy.messages import factor_to_var, var_to_factor, variable_sums
    g, s = r.graph, r.semiring
    bsum = variable_sums(g, r.f2v, g.var_edges)
    return factor_to_var(s, g, var_to_factor(s, bsum, r.f2v, g.edge_var))


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_loopy_fixed_point(sum_op):
    factors, tables, sizes = grid_model(np.random.default_rng(3), coupling=0.3)
    runs = [loopy_bp(factors, sum_op, s, tol=1e-12) for s in SCHEDULES]
    runs.append(loopy_bp(factors, sum_op, damping=0.5, tol=1e-12))
    first = runs[0]
    for r in runs:
        assert r.converged
        assert np.abs(_one_update(r) - r.f2v).max() < 1e-10  # the message equations hold
        for v in sizes:
            np.testing.assert_allclose(r.beliefs[v].data, first.beliefs[v].data, atol=1e-8)
    # Local consistency: each factor belief reduces to its variables' beliefs.
    red = np.max if sum_op is ops.max else lambda x, axis: np.log(np.exp(x).sum(axis))
    for f, b in zip(factors, first.factor_beliefs):
        for p, v in enumerate(f.inputs):
            other = tuple(q for q in range(len(f.inputs)) if q != p)
            got = red(b.data, axis=other) if other else b.data
            np.testing.assert_allclose(got, first.beliefs[v].data, atol=1e-9)


def test_bethe_log_z_and_its_gradient():
    torch = pytest.importorskip("torch")
    factors, tables, sizes = grid_model(np.random.default_rng(4), coupling=0.4)
    leaves = [torch.tensor(t, requires_grad=True) for _, t in tables]
    fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(leaves, factors)]
    r = loopy_bp(fs, tol=1e-12)
    r.log_z.data.backward()
    # The Bethe free energy in its entropy form, from the beliefs (an independent formula).
    bethe = 0.0
    for (_, t), x, b in zip(tables, leaves, r.factor_beliefs):
        pb = np.exp(b.data.detach().numpy())
        np.testing.assert_allclose(x.grad.numpy(), pb, atol=1e-12)  # d log Z / d log psi = b
        bethe += np.sum(pb * (t - np.log(pb)))
    degree = {v: sum(v in s for s, _ in tables) for v in sizes}
    for v, b in r.beliefs.items():
        pb = np.exp(b.data.detach().numpy())
        bethe += (degree[v] - 1) * np.sum(pb * np.log(pb))
    assert abs(r.log_z.data.item() - bethe) < 1e-9


def test_batch_equals_separate_runs():
    rng = np.random.default_rng(5)
    pair = rng.normal(size=(3, 2, 2))
    unary = rng.normal(size=(2,))
    fs = [fc.Tensor(pair, {"n": fc.Bint[3], "a": fc.Bint[2], "b": fc.Bint[2]}),
          fc.Tensor(unary, {"a": fc.Bint[2]})]
    r = loopy_bp(fs, batch=("n",))
    assert r.log_z.inputs == {"n": fc.Bint[3]}
    for n in range(3):
        one = loopy_bp([fc.Tensor(pair[n], {"a": fc.Bint[2], "b": fc.Bint[2]}), fs[1]])
        assert abs(float(r.log_z.data[n]) - float(one.log_z.data)) < 1e-12
        np.testing.assert_allclose(r.beliefs["b"].data[:, n], one.beliefs["b"].data)


def test_counters_and_normalization():
    factors, _, _ = tree_model(np.random.default_rng(6))
    r = loopy_bp(factors, max_iters=3, tol=0.0)
    g = FactorGraph.build(factors)
    assert r.num_iters == 3 and len(r.residuals) == 3 and not r.converged
    assert r.num_messages == 3 * g.num_edges and r.num_message_entries == 3 * g.num_edges * 4
    s = Semiring(ops.logaddexp)
    np.testing.assert_allclose(np.exp(normalize(s, r.f2v)).sum(1), 1.0)
    assert isinstance(run_bp(g, max_iters=0).log_z, fc.Tensor)


def test_errors_name_the_problem():
    f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    with pytest.raises(ValueError, match="unknown schedule 'bogus'"):
        loopy_bp([f], schedule="bogus")
    with pytest.raises(ValueError, match="'a' is Bint\\[2\\] in one factor but Bint\\[3\\]"):
        loopy_bp([f, fc.Tensor(np.zeros(3), {"a": fc.Bint[3]})])
    with pytest.raises(TypeError, match="discrete Tensor factors .* got Contraction at "
                                        "position 1"):
        loopy_bp([f, _real()])
    with pytest.raises(ValueError, match="sum_op"):
        loopy_bp([f], sum_op=ops.add)
    with pytest.raises(ValueError, match="damping"):
        loopy_bp([f], damping=1.0)
    with pytest.raises(ValueError, match="variable 'a' is Bint\\[2\\], so its sparse domain"):
        loopy_bp([f], domains={"a": [2]})
    with pytest.raises(ValueError, match="'z' is not a variable of the model"):
        loopy_bp([f], domains={"z": [0]})
    # clusters= / compression= route to cluster BP (test_cluster_bp.py), which checks them.
    with pytest.raises(TypeError, match="clusters must be a list of tuples"):
        loopy_bp([f], clusters=1)
    with pytest.raises(ValueError, match="compression=1 compresses cluster messages"):
        loopy_bp([f], compression=1)


def _real():
    return fc.Variable("x", fc.Real) * 0.0 + fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})


def test_bad_inputs_found_by_a_user_are_named():
    # Each of these ran silently (or failed deep inside) before.
    f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    nan = fc.Tensor(np.array([0.0, np.nan]), {"b": fc.Bint[2]})
    with pytest.raises(ValueError, match=r"factor 1 over \{'b': Bint\[2\]\} has NaN"):
        loopy_bp([f, nan])
    with pytest.raises(ValueError, match=r"factor 1 over \{'b': Bint\[2\]\} has output Reals\[3\]"):
        loopy_bp([f, fc.Tensor(np.zeros((2, 3)), {"b": fc.Bint[2]})])
    with pytest.raises(ValueError, match=r"batch names \['n'\] are inputs of no factor"):
        loopy_bp([f], batch=("n",))
    with pytest.raises(ValueError, match="temperature must be >= 0, got nan"):
        loopy_bp([f], temperature=float("nan"))
    with pytest.raises(ValueError, match="max_iters >= 0 and tol >= 0, got max_iters=-1"):
        loopy_bp([f], max_iters=-1)
    with pytest.raises(ValueError, match="at least one factor"):
        FactorGraph.build([])


def test_batch_given_as_one_name():
    # batch="ab" was read as the names 'a' and 'b'; a string is one name, as in reduce.
    rng = np.random.default_rng(3)
    tab = rng.normal(size=(2, 2, 3))
    f = fc.Tensor(tab, {"ab": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[3]})
    r = loopy_bp([f], batch="ab")
    expected = [np.logaddexp.reduce(tab[n].ravel()) for n in range(2)]  # a tree: exact
    np.testing.assert_allclose(r.log_z.align(("ab",)).data, expected, atol=1e-10)


def test_traced_options_raise_naming_them():
    # Options that fix the program (iterations, branches) cannot be traced: a clear error
    # names them (it was a TracerBoolConversionError deep inside). Tracing only: no compile.
    jax = pytest.importorskip("jax")
    from funsor_core.loopy import anytime_bp, gibbs

    f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    with pytest.raises(TypeError, match="loopy_bp: damping must be a concrete number"):
        jax.make_jaxpr(lambda d: loopy_bp([f], damping=d).log_z.data)(0.5)
    with pytest.raises(TypeError, match="gibbs: num_samples must be a concrete number"):
        jax.make_jaxpr(lambda n: gibbs([f], n)["a"].data)(3)
    fc.set_backend("jax")
    try:
        with pytest.raises(TypeError, match="anytime_bp .* does not run under jax.jit"):
            jax.make_jaxpr(lambda x: list(anytime_bp([fc.Tensor(x, dict(f.inputs))])))(
                np.zeros((2, 2)))
    finally:
        fc.set_backend("numpy")
