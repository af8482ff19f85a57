"""The per-step SLDS loop's shortcuts under ``moment_matching``: the numpy collapse
(``normal_equations._eager_host``: the check's sums as products with the diagonal, the mixture
weights inside the product forming its covariance), the pending sum's backend check (one
summand per side) and the eager program of ``f(x="y")``.

Oracles: the collapse through ``ops`` (``_eager``, every backend's path, and its check
``_well_conditioned``) and the QR collapse (``FAST_NORMAL_EQUATIONS`` off); the numpy GPB2
filter of ``tests.interpretations.test_moment_matching`` in float64 (the loop in float32 and
with a near-singular prior covariance); the renaming and the sum under ``exact``.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian import moments
from funsor_core.atoms.gaussian import normal_equations as ne
from interpretations import exact, moment_matching
from tests.atoms.gaussian.test_collapse_host import _by_qr, _mixture
from tests.interpretations.test_moment_matching import _numpy_gpb, _slds
from tests.interpretations.test_moment_matching_sums import _step_loop


def _invariants(log_const, white_vec, prec_sqrt):
    """The normalizer, information vector and precision (square roots differ by signs)."""
    return (log_const, (prec_sqrt @ white_vec[..., None])[..., 0],
            prec_sqrt @ prec_sqrt.swapaxes(-1, -2))


@pytest.mark.parametrize("index", [None, (0,), (3, 1)])
@pytest.mark.parametrize("n", [1, 3])
def test_host_collapse_is_the_ops_and_qr_collapse(index, n):
    """Kept batch (2,), n components, 0 to 2 of 4 coordinates integrated: the numpy route
    equals the ``ops`` route to 1e-12 and stands for the QR path's Gaussian."""
    lw, w, s = _mixture(np.random.default_rng(n), (2, n), 4, 6)
    d_b, m = ne.system_rows(w, s, index)
    gram = m @ m.swapaxes(-1, -2) + ne._last_unit(5)
    plan = (d_b, 4, ne._tolerance(4, 6))
    host, via_ops = ne._eager_host(lw, gram, plan), ne._eager(lw, gram, plan)
    assert host is not None and via_ops is not None
    for a, e in zip(host, via_ops):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
    for a, e in zip(_invariants(*host), _invariants(*_by_qr(lw, w, s, index))):
        np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-9)


def test_host_collapse_broadcasts_and_takes_empty_batches():
    """Log weights of fewer batch dims than the system's (broadcast), and an empty batch:
    what the ``ops`` route gives (to 1e-12; empty arrays of the right shapes)."""
    _, w, s = _mixture(np.random.default_rng(5), (2, 3), 3, 4)
    lw = np.random.default_rng(6).normal(size=3)
    d_b, m = ne.system_rows(w, s, (0,))
    gram = m @ m.swapaxes(-1, -2) + ne._last_unit(4)
    plan = (d_b, 3, ne._tolerance(3, 4))
    for a, e in zip(ne._eager_host(lw, gram, plan), ne._eager(lw, gram, plan)):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
    empty = ne._eager_host(np.zeros((0, 3)), np.zeros((0, 3, 4, 4)), plan)
    assert [x.shape for x in empty] == [(0,), (0, 2), (0, 2, 2)]


def test_host_check_decides_as_the_ops_check():
    """One coordinate's rows shrunk by 10^-e, e = 0..8: the numpy route runs exactly where
    the ``ops`` route's check (``_well_conditioned``) lets it, both outcomes met."""
    lw, w, s = _mixture(np.random.default_rng(7), (2, 3), 3, 5)
    decided = []
    for e in range(9):
        s2 = s.copy()
        s2[..., 1, :] = s2[..., 0, :] + 10.0 ** -e * s2[..., 1, :]  # near-collinear rows
        d_b, m = ne.system_rows(w, s2, (2,))
        gram = m @ m.swapaxes(-1, -2) + ne._last_unit(4)
        plan = (d_b, 3, ne._tolerance(3, 5))
        host, via_ops = ne._eager_host(lw, gram, plan), ne._eager(lw, gram, plan)
        assert (host is None) == (via_ops is None), e
        decided.append(host is None)
        if host is None:  # the collapse is then the QR path's
            for a, q in zip(moments.collapse_system(lw, w, s2, (2,)), _by_qr(lw, w, s2, (2,))):
                np.testing.assert_array_equal(a, q)
    assert True in decided and False in decided


def _loop(p, dtype):
    """log p(y) by the per-step loop (GPB2) with every array in ``dtype``."""
    return _step_loop(p, "numpy", np.asarray(p["y"], dtype=dtype), dtype)[0]


@pytest.mark.parametrize("case", ["float64", "float32", "near_singular"])
def test_step_loop_is_gpb2(case, monkeypatch):
    """The loop against the float64 numpy GPB2 filter: float64 (the numpy route) to 1e-10,
    float32 (the QR path) to 1e-4, and one mode's noise covariance near singular off the
    axes (``v v' + 1e-6 I``: its steps' Gram matrices fail the check, and every collapse
    is the QR path's) to 1e-9."""
    p = _slds(seed=12, T=6, K=3, d=2, obs_dim=1)
    declined = []
    if case == "near_singular":
        v = np.array([1.0, 1.0]) / np.sqrt(2.0)
        p["Q"][0] = np.outer(v, v) + 1e-6 * np.eye(2)
        host = ne._eager_host

        def counted(*args):
            out = host(*args)
            declined.append(out is None)
            return out

        monkeypatch.setattr(ne, "_eager_host", counted)
    value = _loop(p, np.float32 if case == "float32" else np.float64)
    assert value.dtype == (np.float32 if case == "float32" else np.float64)
    np.testing.assert_allclose(value, _numpy_gpb(p, 1),
                               rtol={"float64": 1e-10, "float32": 1e-4}.get(case, 1e-9))
    assert case != "near_singular" or declined == [True] * (len(p["y"]) - 2)


def _sum_parts(rng, a):
    g = fc.Gaussian(white_vec=a(rng.normal(size=(2, 2))), prec_sqrt=a(rng.normal(size=(2, 2, 2))),
                    inputs={"i": fc.Bint[2], "x": fc.Reals[2]})
    t = fc.Tensor(a(rng.normal(size=(2, 3))), {"i": fc.Bint[2], "k": fc.Bint[3]})
    h = fc.Gaussian(white_vec=a(rng.normal(size=(3, 1))), prec_sqrt=a(rng.normal(size=(3, 2, 1))),
                    inputs={"k": fc.Bint[3], "x": fc.Reals[2]})
    return g, t, h


def test_pending_sum_checks_backends_and_inputs():
    """Sums of sums of one backend equal exact's sums at a point; a numpy sum plus a torch
    summand (either side, or a torch sum) raises naming both backends; a domain clash
    raises naming the input."""
    import torch

    rng = np.random.default_rng(3)
    g, t, h = _sum_parts(rng, np.asarray)
    gt, tt, ht = _sum_parts(np.random.default_rng(3), torch.as_tensor)
    x = np.array([0.3, -0.7])
    with moment_matching:
        s, st = (g + t) + (h + 1.5), (gt + tt) + (ht + 1.5)
    for total, point in ((s, x), (st, torch.as_tensor(x))):
        expected = (g + t + h + 1.5)(x=x).align(("i", "k")).data
        np.testing.assert_allclose(ops.to_numpy(total(x=point).align(("i", "k")).data),
                                   expected, rtol=1e-12)
    with moment_matching:
        for lhs, rhs in ((g + t, ht), (gt, g + t), (g + t, gt + tt), (tt, g + h)):
            with pytest.raises(TypeError, match="numpy.*torch|torch.*numpy"):
                lhs + rhs
        with pytest.raises(fc.DomainError, match="'k'"):
            (g + t) + fc.Tensor(np.zeros(4), {"k": fc.Bint[4]})


def test_renaming_program_is_exacts_renaming():
    """``f(x="y")`` of a sum under moment_matching (one name, several, one that is no
    input) gives exact's renamed values; a renaming that merges two inputs is exact's too."""
    g, t, h = _sum_parts(np.random.default_rng(4), np.asarray)
    x = np.array([0.3, -0.7])
    with moment_matching:
        s = g + t + h
        one, several = s(i="j"), s(i="j", x="y", nothing="z")
    assert one.inputs.keys() == {"j", "x", "k"} and several.inputs.keys() == {"j", "y", "k"}
    with exact:
        full = g + t + h
    want = full(i="j")(x=x).align(("j", "k")).data
    np.testing.assert_allclose(one(x=x).align(("j", "k")).data, want, rtol=1e-12)
    np.testing.assert_allclose(several(y=x).align(("j", "k")).data, want, rtol=1e-12)
    g2 = fc.Gaussian(white_vec=g.white_vec, prec_sqrt=g.prec_sqrt,
                     inputs={"j": fc.Bint[2], "x": fc.Reals[2]})
    with moment_matching:
        both = (g + g2)(j="i")  # two inputs merge: not a renaming, the general path
    with exact:
        oracle = (g + g2)(j="i")
    np.testing.assert_allclose(ops.to_numpy(both(x=x).data), ops.to_numpy(oracle(x=x).data),
                               rtol=1e-12)
