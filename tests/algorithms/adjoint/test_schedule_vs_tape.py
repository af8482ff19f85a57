"""``infer_discrete`` on the schedule (concrete arrays) against the recorded tape (the other,
independent implementation) on random plated models: empty and one-member plates, -inf
entries, a factor given twice."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

import funsor_core as fc
import funsor_core.algorithms.adjoint.discrete as discrete

NAMES, PLATES = ("a", "b", "c"), ("i", "j")


def _model(rng):
    sizes = {n: int(rng.integers(1, 4)) for n in NAMES}
    psizes = {p: int(rng.integers(0, 4)) for p in PLATES}
    var_plates = {n: [p for p in PLATES if rng.random() < 0.3] for n in NAMES}
    factors = []
    for _ in range(int(rng.integers(1, 5))):
        vs = [n for n in NAMES if rng.random() < 0.6] or [NAMES[0]]
        ps = sorted({p for v in vs for p in var_plates[v]}
                    | {p for p in PLATES if rng.random() < 0.2})
        inputs = {p: fc.Bint[psizes[p]] for p in ps}
        inputs.update({v: fc.Bint[sizes[v]] for v in vs})
        data = rng.normal(size=tuple(d.size for d in inputs.values())) * 2.0
        if data.size and rng.random() < 0.3:
            data.flat[rng.integers(0, data.size)] = -np.inf
        factors.append(fc.Tensor(data, inputs))
    if rng.random() < 0.2:
        factors.append(factors[0])
    return factors, frozenset(p for f in factors for p in f.inputs if p in PLATES)


def _answers(factors, plates):
    out = {}
    for query, kw in (("marginals", {}), ("entropy", {}), ("kbest", {"k": 3})):
        try:
            r = fc.infer_discrete(factors, plates, query=query, **kw)
        except discrete.ZeroMassError:
            out[query] = "zero mass"
            continue
        if query == "marginals":
            out[query] = {k: np.asarray(v.data) for k, v in r.items()}
        elif query == "entropy":
            out[query] = float(r.data)
        else:
            out[query] = np.asarray(r[0].data)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_schedule_agrees_with_the_tape(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        factors, plates = _model(rng)
        got = _answers(factors, plates)
        with mock.patch.object(discrete.DiscreteModel, "_recipe", lambda self: None):
            want = _answers(factors, plates)
        assert got.keys() == want.keys()
        for query, w in want.items():
            g = got[query]
            if isinstance(w, str) or isinstance(g, str):
                assert g == w
            elif query == "marginals":
                assert g.keys() == w.keys()
                for k in w:
                    assert g[k].shape == w[k].shape
                    np.testing.assert_allclose(g[k], w[k], atol=1e-9)
            else:
                np.testing.assert_allclose(g, w, atol=1e-9)


@pytest.mark.parametrize("tape", [False, True])
def test_a_variable_whose_factors_are_all_in_empty_plates(tape):
    # y's factors lie in two different empty plates: both drop out (products over no
    # members), and y, in no plate, is free. Oracle: the joint table over (x, y) in numpy,
    # f(x) + 0 for every y.
    rng = np.random.default_rng(3)
    fx = rng.normal(size=2)
    factors = [fc.Tensor(fx, {"x": fc.Bint[2]}),
               fc.Tensor(np.zeros((0, 3)), {"i": fc.Bint[0], "y": fc.Bint[3]}),
               fc.Tensor(np.zeros((0, 3, 2)), {"j": fc.Bint[0], "y": fc.Bint[3],
                                               "x": fc.Bint[2]})]
    joint = np.broadcast_to(fx[:, None], (2, 3))
    p = np.exp(joint - np.logaddexp.reduce(joint.ravel()))
    patch = (mock.patch.object(discrete.DiscreteModel, "_recipe", lambda self: None) if tape
             else mock.patch.object(discrete, "__doc__", discrete.__doc__))
    with patch:
        got = fc.infer_discrete(factors, {"i", "j"}, query="marginals")
        np.testing.assert_allclose(got["x"].data, p.sum(1), atol=1e-12)
        np.testing.assert_allclose(got["y"].data, p.sum(0), atol=1e-12)
        h = fc.infer_discrete(factors, {"i", "j"}, query="entropy")
        assert np.isclose(float(h.data), -(p * np.log(p)).sum(), atol=1e-12)
        best = fc.infer_discrete(factors, {"i", "j"}, query="map")
        assert int(best["x"].data) == int(fx.argmax()) and 0 <= int(best["y"].data) < 3
        log_z = fc.infer_discrete(factors, {"i", "j"}, query="log_partition")
        assert np.isclose(float(log_z.data), np.logaddexp.reduce(joint.ravel()))
