"""A new user's tries of loopy inference (h68), each against brute-force enumeration:

- ``bp.beliefs["z"]`` for a name that is not a variable was a bare ``KeyError('z')`` (plain
  BP, cluster BP and sparse domains); it now lists the model's variables, as ``Samples`` did;
- beliefs and samples returned from a ``jax.jit``-ed function: ``Samples`` (a dict subclass)
  was "not a valid JAX type"; both are pytrees now;
- ``damping="0.5"`` failed in a comparison ("'<=' not supported"); a traced
  ``sparsity_threshold`` raised jax's TracerBoolConversionError, a traced ``domains`` or
  ``subsample`` a message about the value's range, ``map_assignment()`` under ``jax.jit``
  jax's TracerArrayConversionError: each now says what must be concrete, or why;
- under ``Gibbs``, ``model.reduce(ops.add, V)`` was a RecursionError, and an ``Integrate``
  that ``LoopyBP`` or ``Gibbs`` does not approximate stayed lazy (the lazily kept sum of
  factors matched no exact rule); both are now computed by the rest of the chain;
- ``marginal_errors`` named neither a missing variable nor Samples passed for marginals.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import gibbs, loopy_bp, marginal_errors, mh
from interpretations import Gibbs, LoopyBP


def _tree():
    # a - b - c with a unary on a: BP is exact on a tree.
    rng = np.random.default_rng(68)
    return [fc.Tensor(rng.normal(size=(2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]}),
            fc.Tensor(rng.normal(size=(3, 2)), {"b": fc.Bint[3], "c": fc.Bint[2]}),
            fc.Tensor(rng.normal(size=2), {"a": fc.Bint[2]})]


def _brute_force(factors):
    names = ["a", "b", "c"]
    sizes = {n: d.size for f in factors for n, d in f.inputs.items()}
    states = np.array(list(itertools.product(*(range(sizes[n]) for n in names))))
    log_w = sum(f.data[tuple(states[:, names.index(n)] for n in f.inputs)] for f in factors)
    p = np.exp(log_w - np.logaddexp.reduce(log_w))
    marginals = {n: np.bincount(states[:, k], p, sizes[n]) for k, n in enumerate(names)}
    return np.logaddexp.reduce(log_w), marginals, dict(zip(names, states[np.argmax(log_w)]))


@pytest.mark.parametrize("options", [{}, {"clusters": [("a", "b"), ("c",)]},
                                     {"domains": {"b": [0, 2]}}])
def test_an_unknown_belief_name_lists_the_variables(options):
    factors = _tree()
    bp = loopy_bp(factors, **options)
    if "domains" not in options:  # exact on a tree (and on a tree of clusters)
        log_z, marginals, _ = _brute_force(factors)
        np.testing.assert_allclose(bp.log_z.data, log_z, rtol=1e-10)
        for name, p in marginals.items():
            np.testing.assert_allclose(np.exp(bp.beliefs[name].data), p, atol=1e-10)
    with pytest.raises(KeyError, match=r"no belief of 'z': the model's variables are "
                                       r"\['a', 'b', 'c'\]"):
        bp.beliefs["z"]
    assert bp.beliefs.get("z") is None and "z" not in bp.beliefs  # dict protocol unchanged


def test_beliefs_and_samples_return_from_jit():
    jax = pytest.importorskip("jax")
    pytest.importorskip("backends.jax")  # registers the pytrees (terms' and these)
    factors = _tree()
    # Computed on numpy (BP and the sampler compile for a second or more on jax), then
    # passed through a jitted function, as they come out of one.
    beliefs = jax.jit(lambda b: b)(loopy_bp(factors).beliefs)
    assert type(beliefs) is type(loopy_bp(factors).beliefs)
    _, marginals, _ = _brute_force(factors)
    for name, p in marginals.items():
        np.testing.assert_allclose(np.exp(np.asarray(beliefs[name].data)), p, atol=1e-10)
    samples = gibbs(factors, 3000, warmup=50, num_chains=2, rng_key=0)
    back = jax.jit(lambda s: s)(samples)
    assert type(back) is type(samples) and back.num_updates == 3050 * 2 * 3
    for name, p in marginals.items():
        # 6,000 correlated draws: a loose bound several standard errors wide.
        freq = np.bincount(np.asarray(back[name].data).ravel(), minlength=len(p)) / 6000
        np.testing.assert_allclose(freq, p, atol=0.05)
    with pytest.raises(KeyError, match="no samples of 'z'"):
        back["z"]


@pytest.mark.parametrize("damping", ["0.5", None, 1.0, -0.1, float("nan")])
def test_damping_must_be_a_number_in_the_unit_interval(damping):
    factors = _tree()
    with pytest.raises(ValueError, match=r"damping must be in \[0, 1\) \(a number\)"):
        loopy_bp(factors, damping=damping)
    with pytest.raises(ValueError, match=r"damping must be in \[0, 1\) \(a number\)"):
        loopy_bp(factors, damping=damping, clusters=[("a", "b"), ("c",)])
    log_z, _, _ = _brute_force(factors)
    np.testing.assert_allclose(loopy_bp(factors, damping=np.float64(0.5)).log_z.data, log_z,
                               rtol=1e-8)


def test_traced_options_name_what_must_be_concrete_and_map_decodes_eagerly():
    jax = pytest.importorskip("jax")
    factors = _tree()
    tables = [jax.numpy.asarray(f.data) for f in factors]

    def graph(data):
        return [fc.Tensor(d, f.inputs) for d, f in zip(data, factors)]

    tries = [
        ("sparsity_threshold", lambda d, x: loopy_bp(graph(d), sparsity_threshold=x).log_z.data,
         0.9),
        (r"domains\['b'\]", lambda d, x: loopy_bp(graph(d), domains={"b": x}).log_z.data,
         jax.numpy.array([0, 2])),
        (r"domains\['b'\]", lambda d, x: loopy_bp(graph(d), domains={"b": [0, x]}).log_z.data,
         2),
        ("subsample", lambda d, x: mh(graph(d), 5, subsample=x, rng_key=0)["a"].data, 0.5),
    ]
    for name, fn, value in tries:
        with pytest.raises(TypeError, match=f"{name} must be a concrete number"):
            jax.jit(fn)(tables, value)
    with pytest.raises(TypeError, match=r"map_assignment\(\) decodes on the host"):
        jax.jit(lambda d: loopy_bp(graph(d), sum_op=ops.max).map_assignment())(tables)
    _, _, best = _brute_force(factors)
    assert loopy_bp(factors, sum_op=ops.max).map_assignment() == best


def _cycle():
    rng = np.random.default_rng(6)
    names = ["a", "b", "c", "d"]
    factors = [fc.Tensor(rng.normal(size=(2, 2)), {s: fc.Bint[2], t: fc.Bint[2]})
               for s, t in zip(names, names[1:] + names[:1])]
    joint = np.einsum("ab,bc,cd,da->abcd", *(np.exp(f.data) for f in factors))
    return factors, np.log(joint)


@pytest.mark.parametrize("interp", [LoopyBP, lambda: Gibbs(10, rng_key=0)])
def test_what_the_interpretations_do_not_approximate_is_exact(interp):
    # Under Gibbs, (f + g).reduce(ops.add, V) was a RecursionError (LoopyBP's was fixed by
    # h47); Integrate over what neither approximates stayed lazy until .data raised.
    factors, log_joint = _cycle()
    f_b = fc.Tensor(np.array([0.5, 2.0]), {"b": fc.Bint[2]})
    with interp():
        model = factors[0] + factors[1] + factors[2] + factors[3]
        total = model.reduce(ops.add, frozenset("abcd"))
        low = model.reduce(ops.min, frozenset("ab"))
        partial = fc.Integrate(model, f_b, frozenset("b"))  # a function of a, c, d
    np.testing.assert_allclose(total.data, log_joint.sum(), rtol=1e-12)
    np.testing.assert_allclose(low.align(("c", "d")).data, log_joint.min((0, 1)), rtol=1e-12)
    expected = np.einsum("abcd,b->acd", np.exp(log_joint), f_b.data)
    np.testing.assert_allclose(partial.align(("a", "c", "d")).data, expected, rtol=1e-12)
    if interp is LoopyBP:  # Gibbs estimates this one (test_interpretations.py)
        with interp():
            whole = fc.Integrate(factors[0] + factors[1] + factors[2] + factors[3], f_b,
                                 frozenset("abcd"))
        np.testing.assert_allclose(whole.data, expected.sum(), rtol=1e-12)


def test_marginal_errors_names_a_missing_variable_and_takes_samples_marginals():
    # A missing variable was a bare KeyError('b'); Samples passed for marginals failed in an
    # align ("cannot align by ['a']: not inputs of {'particle': ...}").
    factors = _tree()
    _, marginals, _ = _brute_force(factors)
    exact = {k: fc.Tensor(np.log(p), {k: fc.Bint[len(p)]}) for k, p in marginals.items()}
    samples = gibbs(factors, 2000, warmup=20, rng_key=0)
    errors = marginal_errors(samples.marginals(), exact)
    freq = {k: np.bincount(np.asarray(samples[k].data), minlength=len(p)) / 2000
            for k, p in marginals.items()}
    tv = np.mean([0.5 * np.abs(freq[k] - p).sum() for k, p in marginals.items()])
    np.testing.assert_allclose(errors["tv"], tv, rtol=1e-12)
    with pytest.raises(KeyError, match=r"approx has no marginal of \['b', 'c'\] \(it has "
                                       r"\['a'\]\)"):
        marginal_errors({"a": exact["a"]}, exact)
    with pytest.raises(ValueError, match=r"must be over \{'a': Bint\[2\]\}, got one over "
                                         r"\{'particle': Bint\[2000\]\} \(samples: pass "
                                         r"samples.marginals\(\)\)"):
        marginal_errors(samples, exact)
