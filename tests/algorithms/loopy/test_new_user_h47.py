"""A new user's tries of the ``LoopyBP`` interpretation (h47): ``2.0 * model`` (a constant
times a sum of log-factors) stayed a lazy product that no rule evaluated, and failed only at
``.data``. It is the tempered factor list ``2 f + 2 g``, which BP runs on."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from interpretations import LoopyBP


def _tree():
    # a - b - c: BP is exact on a tree, so the brute-force log Z is the oracle.
    rng = np.random.default_rng(47)
    f = fc.Tensor(rng.normal(size=(2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    g = fc.Tensor(rng.normal(size=(3, 2)), {"b": fc.Bint[3], "c": fc.Bint[2]})
    joint = f.data[:, :, None] + g.data[None, :, :]
    return f, g, joint


@pytest.mark.parametrize("build, scale", [(lambda m: 2.0 * m, 2.0), (lambda m: m * 2.0, 2.0),
                                          (lambda m: m / 4.0, 0.25),
                                          (lambda m: fc.Tensor(np.array(3.0)) * m, 3.0)])
def test_a_constant_times_a_factor_graph_is_the_tempered_graph(build, scale):
    f, g, joint = _tree()
    with LoopyBP():
        scaled = build(f + g)
        z = scaled.reduce(ops.logaddexp, frozenset({"a", "b", "c"}))
    assert type(z) is fc.Tensor
    expected = np.log(np.exp(scale * joint).sum())
    np.testing.assert_allclose(z.data, expected, rtol=1e-8)


def test_a_constant_factor_adds_its_log_to_log_z_and_leaves_beliefs():
    # Multiplying the density by 2 is ``model + log 2`` in log space: log Z + log 2.
    f, g, joint = _tree()
    bp = LoopyBP()
    with bp:
        z = (f + g + np.log(2.0)).reduce(ops.logaddexp, frozenset({"a", "b", "c"}))
    np.testing.assert_allclose(z.data, np.log(2 * np.exp(joint).sum()), rtol=1e-8)
    p_a = np.exp(joint).sum((1, 2)) / np.exp(joint).sum()
    np.testing.assert_allclose(np.exp(bp.result.beliefs["a"].data), p_a, rtol=1e-6)


def test_a_negated_factor_graph_is_the_negated_factor_list():
    f, g, joint = _tree()
    with LoopyBP():
        z = (-(f + g)).reduce(ops.logaddexp, frozenset({"a", "b", "c"}))
    assert type(z) is fc.Tensor
    np.testing.assert_allclose(z.data, np.log(np.exp(-joint).sum()), rtol=1e-8)


@pytest.mark.parametrize("op, np_op", [(ops.add, np.sum), (ops.min, np.min)])
def test_a_reduction_bp_does_not_approximate_is_exact(op, np_op):
    # Summing the log-joint (or its min) over every assignment demands the table: it was a
    # RecursionError (the sum kept lazy by LoopyBP, rebuilt by exact's fold, reduced again).
    f, g, joint = _tree()
    with LoopyBP():
        r = (f + g).reduce(op, frozenset({"a", "b", "c"}))
    np.testing.assert_allclose(r.data, np_op(joint), rtol=1e-10)


def test_samples_of_a_misspelt_variable_name_the_model_variables():
    from funsor_core.loopy import gibbs

    f, g, _ = _tree()
    samples = gibbs([f, g], num_samples=3, rng_key=0)
    assert sorted(samples) == ["a", "b", "c"] and samples["a"].inputs["particle"].size == 3
    with pytest.raises(KeyError, match=r"no samples of 'z': the model's variables are "
                                       r"\['a', 'b', 'c'\]"):
        samples["z"]


def test_jax_factors_on_the_numpy_default_backend_under_jit():
    # exact's table of a lazy sum used aranges of the default backend (numpy) and raised
    # "term 0 holds jax arrays and term 1 holds numpy arrays" on the user's jax factors.
    jax = pytest.importorskip("jax")
    f, g, joint = _tree()

    def log_z(a, b):
        fj, gj = fc.Tensor(a, f.inputs), fc.Tensor(b, g.inputs)
        with LoopyBP():
            return (2.0 * (fj + gj)).reduce(ops.logaddexp, frozenset({"a", "b", "c"})).data

    actual = jax.jit(log_z)(jax.numpy.asarray(f.data), jax.numpy.asarray(g.data))
    np.testing.assert_allclose(float(actual), np.log(np.exp(2 * joint).sum()), rtol=1e-5)
