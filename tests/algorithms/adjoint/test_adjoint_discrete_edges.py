"""Edge cases of the discrete adjoint queries, against brute-force enumeration in numpy:
sample and rank names that collide with the model's names, models of mass zero, and plates
of size 0 (an empty product)."""

import itertools

import numpy as np
import pytest
from scipy import stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import DiscreteModel, PosteriorSample, infer_discrete
from funsor_core.algorithms.adjoint.discrete import ZeroMassError


@pytest.fixture(params=["numpy", "torch"])
def host_backend(request):
    """numpy and torch: eager jax dispatches op by op (slow); jax runs under jax.jit below."""
    pytest.importorskip(request.param)
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


def _np(x):
    return np.asarray(ops.to_numpy(x.data if isinstance(x, fc.Funsor) else x))


def tensor(table, **inputs):
    return fc.Tensor(fc.numeric_array(np.asarray(table, dtype=float)),
                     {k: fc.Bint[n] for k, n in inputs.items()})


def _plated_model(rng):
    # z ~ prior (global), x_i | z for each of 3 plate slices: p(x_i | data) by enumeration.
    prior, lik = rng.normal(size=2), rng.normal(size=(3, 2, 4))
    return prior, lik, [tensor(prior, z=2), tensor(lik, i=3, z=2, x=4)]


def _brute_x_marginals(prior, lik):
    # The joint over (z, x_0, x_1, x_2), enumerated; the marginal of each x_i.
    out = np.zeros((3, 4))
    total = 0.0
    for z, *xs in itertools.product(range(2), *[range(4)] * 3):
        w = np.exp(prior[z] + sum(lik[i, z, x] for i, x in enumerate(xs)))
        total += w
        for i, x in enumerate(xs):
            out[i, x] += w
    return out / total


# -- sample names that collide with the model's names ---------------------------------------
@pytest.mark.parametrize("name, kind", [("i", "a plate"), ("z", "a variable")])
def test_sample_name_of_a_model_name_raises_naming_both(name, kind):
    _, _, factors = _plated_model(np.random.default_rng(0))
    model = DiscreteModel(factors, {"i"})
    with pytest.raises(ValueError, match=rf"sample_name='{name}' is already {kind} of the "
                                         rf"model \(Bint\[\d\]\).*sample_name='{name}_sample'"):
        model.sample(3, rng_key=0, sample_name=name)
    with pytest.raises(ValueError, match=rf"sample_name='{name}' is already {kind}"):
        infer_discrete(factors, {"i"}, query="sample", num_samples=3, sample_name=name)


def test_samples_with_a_fresh_name_cross_the_plate(host_backend):
    # Draws along "s" are crossed with the plate "i": (s, i) values, each slice of i drawn
    # from its own posterior marginal (brute force).
    rng = np.random.default_rng(1)
    prior, lik, factors = _plated_model(rng)
    n = 3000
    draws = DiscreteModel(factors, {"i"}).sample(n, rng_key=2, sample_name="s")
    assert dict(draws["x"].inputs) == {"s": fc.Bint[n], "i": fc.Bint[3]}
    assert dict(draws["z"].inputs) == {"s": fc.Bint[n]}
    expected = _brute_x_marginals(prior, lik)
    for i in range(3):
        counts = np.bincount(_np(draws["x"])[:, i], minlength=4)
        assert stats.chisquare(counts, expected[i] * n).pvalue > 1e-4, i


def test_infer_discrete_default_sample_name_collides_with_a_variable_named_particle():
    f = tensor(np.log([[0.1, 0.2], [0.3, 0.4]]), particle=2, b=2)
    with pytest.raises(ValueError, match="sample_name='particle' is already a variable"):
        infer_discrete([f], query="sample", num_samples=5, rng_key=0)
    draws = infer_discrete([f], query="sample", num_samples=4000, rng_key=0, sample_name="n")
    pairs = _np(draws["particle"]) * 2 + _np(draws["b"])
    assert stats.chisquare(np.bincount(pairs, minlength=4),
                           np.array([0.1, 0.2, 0.3, 0.4]) * 4000).pvalue > 1e-4


def test_kbest_rank_name_collides_with_a_model_name():
    table = np.log([[1.0, 2.0], [3.0, 4.0]])
    f = tensor(table, rank=2, b=2)
    with pytest.raises(ValueError, match="rank_name='rank' is already a variable of the model"):
        infer_discrete([f], query="kbest", k=2)
    scores, top = infer_discrete([f], query="kbest", k=3, rank_name="r")
    order = np.argsort(-table.reshape(-1), kind="stable")[:3]  # brute force
    assert np.allclose(_np(scores), table.reshape(-1)[order])
    assert dict(top["rank"].inputs) == {"r": fc.Bint[3]}
    assert (_np(top["rank"]) * 2 + _np(top["b"])).tolist() == order.tolist()


def test_forward_backward_sample_input_named_like_an_eliminated_plate_raises():
    from interpretations import lazy
    f = tensor(np.random.default_rng(2).normal(size=(3, 2)), i=3, x=2)
    with lazy:
        z = f.reduce(ops.logaddexp, "x").reduce(ops.add, "i")
    with pytest.raises(ValueError, match="sample \\(batch\\) input 'i' is also a name that the "
                                         "forward computation eliminates \\(as Bint\\[3\\]\\)"):
        fc.forward_backward(ops.sample, ops.add, z, rng_key=0, sample_inputs={"i": fc.Bint[3]})
    with PosteriorSample(rng_key=0, i=fc.Bint[3]) as sampler, pytest.raises(
            ValueError, match="input 'i' is also a name"):
        fc.forward_backward(ops.logaddexp, ops.add, z, batch_vars=sampler.sample_vars)
    _, adj = fc.forward_backward(ops.sample, ops.add, z, rng_key=0,
                                 sample_inputs={"n": fc.Bint[3]})
    assert dict(fc.extract_samples(adj[f])["x"].inputs) == {"n": fc.Bint[3], "i": fc.Bint[3]}


def test_rsample_recipe_sample_input_named_like_a_plate_raises():
    from funsor_core.recipes import forward_filter_backward_rsample
    _, _, (prior, lik) = _plated_model(np.random.default_rng(5))
    factors = {"z": prior, "x": lik}
    with pytest.raises(ValueError, match="sample \\(batch\\) input 'i' is also a name"):
        forward_filter_backward_rsample(factors, frozenset("zxi"), frozenset("i"),
                                        sample_inputs={"i": fc.Bint[3]}, rng_key=0)
    samples, _ = forward_filter_backward_rsample(factors, frozenset("zxi"), frozenset("i"),
                                                 sample_inputs={"s": fc.Bint[3]}, rng_key=0)
    assert dict(samples["x"].inputs) == {"s": fc.Bint[3], "i": fc.Bint[3]}


@pytest.mark.parametrize("domain", [5, "x", fc.Real, fc.Reals[2], fc.Array[3, (2,)]])
def test_posterior_sample_checks_its_sample_inputs_at_construction(domain):
    with pytest.raises(TypeError, match=r"PosteriorSample\(\*\*sample_inputs\): 'particle' is "
                                        r".*e.g. PosteriorSample\(rng_key=0, particle=Bint"):
        PosteriorSample(rng_key=0, particle=domain)


# -- models of mass zero ----------------------------------------------------------------------
def _zero_mass_models():
    # Every assignment has a -inf factor: a -inf table, and a plate slice that no state
    # explains (the product over the plate is 0 whatever z is).
    obs = np.zeros((3, 2))
    obs[1] = -np.inf
    return [([tensor(np.full((2, 2), -np.inf), a=2, b=2)], set()),
            ([tensor(np.log([0.4, 0.6]), z=2), tensor(obs, i=3, z=2)], {"i"})]


@pytest.mark.parametrize("case", range(2))
def test_model_of_mass_zero_raises_on_every_posterior_query(backend, case):
    factors, plates = _zero_mass_models()[case]
    model = DiscreteModel(factors, plates)
    assert _np(model.log_partition()) == -np.inf  # log 0, as brute force: the answer
    assert _np(model.map_score()) == -np.inf
    for query, args in [("marginals", ()), ("map", ()), ("sample", (5, 0)), ("entropy", ()),
                        ("kbest", (3,))]:
        with pytest.raises(ZeroMassError, match=rf"{query}\(\) of a model of mass zero: every "
                                                r"joint assignment .*\(log Z = -inf\)"):
            getattr(model, query)(*args)


def test_model_of_mass_zero_under_jax_jit_gives_the_documented_nan():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        def queries(a):
            model = DiscreteModel([fc.Tensor(a, {"a": fc.Bint[2], "b": fc.Bint[2]})])
            return ({k: v.data for k, v in model.marginals().items()}, model.entropy().data,
                    model.log_partition().data, model.map_score().data,
                    {k: v.data for k, v in model.map().items()})

        marginals, entropy, log_z, score, best = jax.jit(queries)(jax.numpy.full((2, 2),
                                                                                 -np.inf))
        assert all(np.isnan(np.asarray(m)).all() for m in marginals.values())
        assert np.isnan(entropy)
        assert log_z == -np.inf and score == -np.inf
        # A model with mass traces the same program and gives finite answers (brute force).
        table = np.log([[1.0, 2.0], [3.0, 4.0]])
        marginals, entropy, log_z, _, best = jax.jit(queries)(jax.numpy.asarray(table))
        p = np.exp(table) / np.exp(table).sum()
        assert np.allclose(np.asarray(marginals["a"]), p.sum(1))
        assert np.allclose(entropy, -(p * np.log(p)).sum())
        assert (int(best["a"]), int(best["b"])) == (1, 1)
    finally:
        fc.set_backend("numpy")


def test_some_assignments_of_mass_zero_are_a_posterior_without_nan(host_backend):
    # -inf entries that leave some mass: the marginals are exact zeros there, with no error
    # and no NaN; the entropy counts 0 log 0 as 0 (brute force over (a, z)).
    with np.errstate(divide="ignore"):
        table = np.log(np.array([[0.0, 0.5], [0.0, 0.25], [0.1, 0.15]]))
        obs = np.log(np.array([[1.0, 0.0, 0.5], [0.5, 0.0, 0.5]]))
    model = DiscreteModel([tensor(table, a=3, z=2), tensor(obs, i=2, a=3)], {"i"})
    joint = np.exp(table + obs.sum(0)[:, None])
    p = joint / joint.sum()
    marginals = model.marginals()
    assert np.allclose(_np(marginals["a"]), p.sum(1))
    assert np.allclose(_np(marginals["z"]), p.sum(0))
    nz = p[p > 0]
    assert np.allclose(_np(model.entropy()), -(nz * np.log(nz)).sum())
    best = model.map()
    assert (int(_np(best["a"])), int(_np(best["z"]))) == np.unravel_index(np.argmax(p), p.shape)


# -- plates of size 0 -------------------------------------------------------------------------
def _empty_plate_factors(rng):
    # A global z, a local x in the empty plate i, and a factor over (i, z) alone: the
    # product over no slices is 1, so p(z) is the prior's.
    prior = rng.normal(size=2)
    return prior, [tensor(prior, z=2), tensor(np.zeros((0, 2, 3)), i=0, z=2, x=3),
                   tensor(np.zeros((0, 2)), i=0, z=2)]


def _check_empty_answers(prior, marginals, best, draws, scores, top, entropy, n, k):
    p = np.exp(prior - np.logaddexp.reduce(prior))  # brute force over z alone
    assert np.allclose(_np(marginals["z"]), p)
    assert dict(marginals["x"].inputs) == {"i": fc.Bint[0], "x": fc.Bint[3]}
    assert _np(marginals["x"]).shape == (0, 3)
    assert int(_np(best["z"])) == int(np.argmax(prior))
    assert _np(best["x"]).shape == (0,) and dict(best["x"].inputs) == {"i": fc.Bint[0]}
    assert _np(draws["x"]).shape == (n, 0) and _np(draws["z"]).shape == (n,)
    assert np.allclose(_np(scores), np.sort(prior)[::-1][:k])
    assert _np(top["z"]).tolist() == np.argsort(-prior)[:k].tolist()
    assert _np(top["x"]).shape == (len(_np(scores)), 0)
    assert np.allclose(_np(entropy), -(p * np.log(p)).sum())


def test_empty_plate_answers_are_empty_arrays(host_backend):
    prior, factors = _empty_plate_factors(np.random.default_rng(3))
    model = DiscreteModel(factors, {"i"})
    assert np.allclose(_np(model.log_partition()), np.logaddexp.reduce(prior))
    scores, top = model.kbest(3)
    _check_empty_answers(prior, model.marginals(), model.map(), model.sample(5, rng_key=0),
                         scores, top, model.entropy(), 5, 3)
    draw = model.sample(rng_key=0)  # one draw, no sample input
    assert _np(draw["x"]).shape == (0,) and _np(draw["z"]).shape == ()


def test_empty_plate_nested_in_a_plate(host_backend):
    # j (size 0) nested in i (size 2): x lives in (i, j) and has no copies; y, in i alone,
    # follows its own factor (brute force per slice of i).
    rng = np.random.default_rng(6)
    table = rng.normal(size=(2, 3))
    model = DiscreteModel([tensor(table, i=2, y=3), tensor(np.zeros((2, 0, 3, 2)), i=2, j=0,
                                                            y=3, x=2)], {"i", "j"})
    p = np.exp(table - np.logaddexp.reduce(table, axis=1, keepdims=True))
    assert np.allclose(_np(model.log_partition()), np.logaddexp.reduce(table, axis=1).sum())
    marginals, best = model.marginals(), model.map()
    assert np.allclose(_np(marginals["y"]), p)
    assert _np(marginals["x"]).shape == (2, 0, 2)
    assert _np(best["y"]).tolist() == table.argmax(1).tolist()
    assert _np(best["x"]).shape == (2, 0)
    scores, top = model.kbest(4)
    flat = (table[0][:, None] + table[1][None]).reshape(-1)  # the 9 joint assignments of y
    order = np.argsort(-flat, kind="stable")[:4]
    assert np.allclose(_np(scores), flat[order])
    assert _np(top["x"]).shape == (4, 2, 0)
    assert np.allclose(_np(model.entropy()), -(p * np.log(p)).sum())


def test_variable_of_empty_domain_has_no_assignment(backend):
    # b: Bint[0] has no value, so the model has no assignment at all: log Z = log 0.
    model = DiscreteModel([tensor(np.zeros((2, 0)), a=2, b=0)])
    assert _np(model.log_partition()) == -np.inf
    for query, args in [("marginals", ()), ("map", ()), ("kbest", (2,)), ("entropy", ())]:
        with pytest.raises(ZeroMassError, match=rf"{query}\(\) of a model of mass zero"):
            getattr(model, query)(*args)


def test_model_of_empty_plates_only(backend):
    # Every factor is in an empty plate: log Z = log 1, one (empty) assignment of score 0.
    model = DiscreteModel([tensor(np.zeros((0, 2)), i=0, x=2)], {"i"})
    assert _np(model.log_partition()) == 0.0 and _np(model.entropy()) == 0.0
    scores, top = model.kbest(2)
    assert _np(scores).tolist() == [0.0] and _np(top["x"]).shape == (1, 0)
    assert _np(model.map()["x"]).shape == (0,)
    assert _np(model.marginals()["x"]).shape == (0, 2)


def test_empty_plate_under_jax_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        prior, factors = _empty_plate_factors(np.random.default_rng(4))

        @jax.jit
        def queries(arrays, key):
            fs = [fc.Tensor(a, f.inputs) for a, f in zip(arrays, factors)]
            model = DiscreteModel(fs, {"i"})
            data = lambda d: {k: v.data for k, v in d.items()}  # noqa: E731
            return (data(model.marginals()), data(model.map()),
                    data(model.sample(7, rng_key=key)), model.entropy().data)

        marginals, best, draws, entropy = queries([jax.numpy.asarray(_np(f)) for f in factors],
                                                  jax.random.PRNGKey(0))
        p = np.exp(prior - np.logaddexp.reduce(prior))
        assert np.allclose(np.asarray(marginals["z"]), p)
        assert np.asarray(marginals["x"]).shape == (0, 3)
        assert int(best["z"]) == int(np.argmax(prior)) and np.asarray(best["x"]).shape == (0,)
        assert np.asarray(draws["x"]).shape == (7, 0)
        assert np.allclose(entropy, -(p * np.log(p)).sum())
    finally:
        fc.set_backend("numpy")


def test_forward_backward_points_over_an_empty_plate(host_backend):
    # MAP points and samples of the lazy plated elimination itself (not through
    # DiscreteModel): the variable of the empty plate gets an empty array; z its own answer.
    from funsor_core.algorithms.adjoint import argmax_approximate
    from interpretations import lazy
    prior, factors = _empty_plate_factors(np.random.default_rng(7))
    names = frozenset({"i", "x", "z"})
    with lazy:
        best = fc.sum_product(ops.max, ops.add, factors, names, frozenset("i"))
        total = fc.sum_product(ops.logaddexp, ops.add, factors, names, frozenset("i"))
    with argmax_approximate:
        value, adj = fc.forward_backward(ops.max, ops.add, best)
    points = {k: v for f in factors for k, v in fc.extract_samples(adj[f]).items()}
    assert _np(value) == prior.max() and int(_np(points["z"])) == int(np.argmax(prior))
    assert _np(points["x"]).shape == (0,) and dict(points["x"].inputs) == {"i": fc.Bint[0]}
    value, adj = fc.forward_backward(ops.sample, ops.add, total, rng_key=0,
                                     sample_inputs={"n": fc.Bint[4000]})
    draws = {k: v for f in factors for k, v in fc.extract_samples(adj[f]).items()}
    assert np.allclose(_np(value), np.logaddexp.reduce(prior))
    assert _np(draws["x"]).shape == (4000, 0)
    p = np.exp(prior - np.logaddexp.reduce(prior))
    counts = np.bincount(_np(draws["z"]), minlength=2)
    assert stats.chisquare(counts, p * 4000).pvalue > 1e-4
