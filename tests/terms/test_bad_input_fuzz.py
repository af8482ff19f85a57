"""A seeded slice of the bad-input mutation fuzzer (``bad_input_fuzz.py``): valid random
programs over the public API with one argument mutated, on every backend, each answered by a
clear error naming the variables and domains involved or by the brute-force value; plus the
regression tests of the defects it found."""

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Reals
from funsor_core.interop.data import LazyTermError
from funsor_core.terms import DomainError
from interpretations import lazy
from tests.terms import bad_input_fuzz as fuzz

# (backends, first seed, number of seeds): numpy and torch are cheap, each jax.jit compiles.
SLICES = [(("numpy",), 0, 250), (("torch",), 2000, 80), (("jax", "jax.jit"), 4003, 4)]


@pytest.mark.parametrize("backends, first, count", SLICES, ids=["numpy", "torch", "jax"])
def test_fuzz_slice_errors_are_clear_and_values_right(backends, first, count):
    pytest.importorskip(backends[0].split(".")[0])
    failures, outcomes = [], set()
    for seed in range(first, first + count):
        records, fails = fuzz.check_seed(seed, backends)
        failures += fails
        outcomes.update((family, outcome) for family, _, _, outcome in records)
    assert not failures, "\n".join(failures[:10])
    if backends == ("numpy",):  # every family answers both ways: the slice tests something
        from tests.terms.bad_input_programs import draw

        families = {draw(seed, "numpy").family for seed in range(7)}
        assert {(f, o) for f in families for o in ("error", "value")} <= outcomes


def test_fuzz_rejects_wrong_answers():
    # The judge itself: a wrong number, an unnamed variable and a deep numpy error all fail.
    m = fuzz.Mutant("tensor", "probe", lambda xs: fc.Tensor(xs[0] + 1.0), [np.zeros(2)],
                    expected=np.zeros(2))
    assert "wrong number" in fuzz.run_mutant(m)[1]
    m = fuzz.Mutant("tensor", "probe", lambda xs: fc.Tensor(xs[0]).reduce(ops.add, "zz"),
                    [np.zeros(2)], names=("yy",))
    assert "does not name ['yy']" in fuzz.run_mutant(m)[1]
    m = fuzz.Mutant("tensor", "probe", lambda xs: np.logaddexp(xs[0], "a"), [np.zeros(2)],
                    names=())
    assert "raised inside" in fuzz.run_mutant(m)[1]
    with lazy:
        term = fc.Tensor(np.zeros(2), {"i": Bint[2]}).reduce(ops.logaddexp, "i")
    m = fuzz.Mutant("tensor", "probe", lambda xs: term, [], expected=np.log(2.0))
    assert "lazy" in fuzz.run_mutant(m)[1]


# ---------------------------------------------------------------------------------------------
# Regressions: float() and int() of a funsor (funsor's Tensor and Number have them; ours raised
# Python's "float() argument must be a string or a real number, not 'Tensor'").
def test_float_and_int_of_one_value():
    x = np.array([0.3, -1.2, 2.0])
    f = fc.Tensor(x, {"i": Bint[3]})
    assert float(f.reduce(ops.logaddexp)) == pytest.approx(np.logaddexp.reduce(x))
    assert int(fc.Number(3.7)) == 3 and float(fc.Number(2)) == 2.0
    assert float(fc.Tensor(np.array([[4.5]]), {"i": Bint[1]})) == 4.5  # one value, as funsor
    assert math.isclose(f(i=1), -1.2)  # math functions call __float__


def test_float_of_several_values_or_lazy_names_what_is_free():
    f = fc.Tensor(np.zeros((2, 3)), {"i": Bint[2], "j": Bint[3]})
    with pytest.raises(TypeError, match=r"float\(\) needs a funsor of one value.*'i': Bint\[2\]"
                                        r", 'j': Bint\[3\]"):
        float(f)
    with pytest.raises(TypeError, match=r"int\(\) .* output Reals\[2\]"):
        int(fc.Tensor(np.zeros(2)))
    with lazy:
        term = f.reduce(ops.logaddexp)
    with pytest.raises(LazyTermError, match=r"float\(\) needs a number, but this term is still "
                                            r"lazy"):
        float(term)
    with pytest.raises(LazyTermError, match=r"this Variable .* free inputs \{'x': Real\}"):
        float(fc.Variable("x", fc.Real))


def test_gaussian_parameter_batch_names_inputs():
    # mean= of batch 4 for inputs i: Bint[3] failed inside the factorization with "output
    # shapes ((4,), (3,)) do not broadcast together".
    inputs = {"i": Bint[3], "x": Reals[2]}
    with pytest.raises(DomainError, match=r"Gaussian mean= of shape \(4, 2\) has batch shape "
                                          r"\(4,\) but its Bint inputs \{'i': 'Bint\[3\]'\}"):
        fc.Gaussian(mean=np.zeros((4, 2)), covariance=np.tile(np.eye(2), (3, 1, 1)),
                    inputs=inputs)
    with pytest.raises(DomainError, match=r"Gaussian covariance= of shape \(4, 2, 2\)"):
        fc.Gaussian(mean=np.zeros((3, 2)), covariance=np.tile(np.eye(2), (4, 1, 1)),
                    inputs=inputs)
    # Size-1 and missing batch dims still broadcast, against closed-form Gaussian algebra.
    g = fc.Gaussian(mean=np.ones((1, 2)), covariance=2 * np.eye(2), inputs=inputs)
    expected = np.full(3, np.log(2 * np.pi) + 0.5 * np.log(4.0))
    np.testing.assert_allclose(g.reduce(ops.logaddexp, "x").data, expected)


def test_complex_numpy_data_refused():
    # A real domain holds no complex value: numpy's max compared complex numbers
    # lexicographically and its logaddexp failed deep inside numpy.
    z = np.array([1 + 1j, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"dtype complex128 \(complex numbers\) cannot be a "
                                        r"Tensor"):
        fc.Tensor(z, {"i": Bint[3]})
    assert fc.Tensor(z.real, {"i": Bint[3]}).reduce(ops.max).data == 3.0


def test_markov_marginals_refuses_a_boundary_factor_of_another_backend():
    # A numpy chain runs on torch: a torch initial factor or torch lengths beside it were
    # converted silently (their autograd dropped, the results numpy arrays).
    torch = pytest.importorskip("torch")
    from funsor_core.sum_product import markov_map, markov_marginals

    trans = fc.Tensor(np.zeros((3, 2, 2, 2)), {"t": Bint[3], "b": Bint[2], "x": Bint[2],
                                                "y": Bint[2]})
    init = fc.Tensor(torch.zeros(2, requires_grad=True), {"x": Bint[2]})
    with pytest.raises(TypeError, match=r"cannot run markov_marginals: trans holds numpy "
                                        r"arrays and factor 0 holds torch arrays"):
        markov_marginals(ops.logaddexp, ops.add, trans, "t", {"x": "y"}, factors=(init,))
    with pytest.raises(TypeError, match=r"cannot run markov_map: trans holds numpy arrays and "
                                        r"lengths holds torch arrays"):
        markov_map(trans, "t", {"x": "y"}, lengths=fc.Tensor(torch.tensor([1, 3]),
                                                             {"b": Bint[2]}, 4))
    # One backend is fine: the total over 2**4 paths of zeros per batch entry is log 16.
    total, _ = markov_marginals(ops.logaddexp, ops.add, trans, "t", {"x": "y"},
                                factors=(fc.Tensor(np.zeros(2), {"x": Bint[2]}),))
    np.testing.assert_allclose(total.data, np.full(2, np.log(16.0)))


def test_gaussian_inputs_that_are_no_mapping_and_no_coordinates():
    # inputs=["x"] raised "not enough values to unpack (expected 2, got 1)" from inside the
    # constructor; mean= of dim 0 failed inside numpy ("zero-size array to reduction operation
    # maximum which has no identity") where white_vec= of dim 0 gave the constant 0.
    with pytest.raises(TypeError, match=r"Gaussian inputs map names to domains, e\.g\. "
                                        r"\{'x': Reals\[2\]\} .* got \('x',\)"):
        fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2), inputs=["x"])
    canonical = fc.Gaussian(white_vec=np.zeros((3, 0)), prec_sqrt=np.zeros((3, 0, 0)),
                            inputs={"i": Bint[3]})
    for kw in (dict(mean=np.zeros((3, 0)), covariance=np.zeros((3, 0, 0))),
               dict(info_vec=np.zeros((3, 0)), precision=np.zeros((3, 0, 0)))):
        g = fc.Gaussian(**kw, inputs={"i": Bint[3]})
        assert isinstance(g, fc.Tensor) and g.inputs == canonical.inputs
        np.testing.assert_array_equal(g.data, canonical.data)  # exp(0): no coordinates
        np.testing.assert_array_equal(g.data, np.zeros(3))
