"""infer_discrete of lazily built factors (terms recorded under ``lazy``) answers with numbers,
the same as of their values, checked against enumeration of the joint table in numpy; and a
model of constants alone on the tape's k-best (the one assignment, scored by their sum)."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
import funsor_core.algorithms.adjoint.discrete as discrete
from interpretations import lazy


def _model():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3))
    b = rng.normal(size=3)
    with lazy:
        f = fc.Tensor(a, {"x": fc.Bint[2], "y": fc.Bint[3]}) + fc.Tensor(np.array(0.5))
        g = fc.Tensor(b, {"y": fc.Bint[3]}) * 2.0
    joint = a + 0.5 + 2.0 * b[None, :]  # log p(x, y) up to log Z
    return [f, g], joint


def test_lazy_factors_answer_with_numbers_as_enumeration_does():
    factors, joint = _model()
    assert not any(isinstance(f, fc.Tensor) for f in factors)
    p = np.exp(joint - np.logaddexp.reduce(joint.ravel()))
    marg = fc.infer_discrete(factors, query="marginals")
    assert all(isinstance(v, fc.Tensor) for v in marg.values())
    np.testing.assert_allclose(marg["x"].data, p.sum(1))
    np.testing.assert_allclose(marg["y"].data, p.sum(0))
    entropy = fc.infer_discrete(factors, query="entropy")
    np.testing.assert_allclose(float(entropy.data), -(p * np.log(p)).sum())
    best = fc.infer_discrete(factors, query="map")
    expected = np.unravel_index(joint.argmax(), joint.shape)
    assert (int(best["x"].data), int(best["y"].data)) == expected
    scores, _ = fc.infer_discrete(factors, query="kbest", k=4)
    np.testing.assert_allclose(scores.data, np.sort(joint.ravel())[::-1][:4])
    draw = fc.infer_discrete(factors, query="sample", num_samples=5, rng_key=0)
    assert isinstance(draw["x"], fc.Tensor) and set(draw["x"].inputs) == {"particle"}


@pytest.mark.parametrize("tape", [False, True])
def test_constants_alone_have_one_assignment(tape, monkeypatch):
    if tape:  # the tape's k-best (traced or lazy factors), not the host schedule
        monkeypatch.setattr(discrete.DiscreteModel, "_recipe", lambda self: None)
    with lazy:
        c = fc.Tensor(np.array(1.5)) + fc.Tensor(np.array(-0.25))
    for factors in ([fc.Tensor(np.array(1.25))], [c], [c, fc.Tensor(np.array(2.0))]):
        total = sum(float(np.asarray(fc.reinterpret(f).data)) for f in factors)
        scores, found = fc.infer_discrete(factors, query="kbest", k=3)
        assert found == {} and dict(scores.inputs) == {"rank": fc.Bint[1]}
        np.testing.assert_allclose(scores.data, [total])
        np.testing.assert_allclose(float(fc.infer_discrete(factors, query="log_partition").data),
                                   total)


def test_joint_enumeration_oracle_is_the_model():
    # the oracle's table is the factors' sum (guards the test against a wrong oracle)
    factors, joint = _model()
    values = [fc.reinterpret(f) for f in factors]
    for x, y in itertools.product(range(2), range(3)):
        total = sum(float(np.asarray(v(x=x, y=y).data)) if "x" in v.inputs
                    else float(np.asarray(v(y=y).data)) for v in values)
        np.testing.assert_allclose(total, joint[x, y])
