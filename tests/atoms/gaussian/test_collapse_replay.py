"""The per-step loop's collapse replayed per structure (``collapse_replay``).

Oracles: the numpy GPB2 filter of ``tests.interpretations.test_moment_matching`` (float64;
the loop's own algorithm), and the same loop with the replay switched off
(``REPLAY_COLLAPSE``). The replay by the general path's array functions
(``FUSED_COLLAPSE`` off) runs the same arithmetic, so its values must be identical; the
fused program (``collapse_fused``, the default) sums in another order: equal to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian import collapse_replay as cr
from funsor_core.engine.interpreter import Interpretation
from funsor_core.terms.base import Reduce
from funsor_core.terms.contraction import Contraction
from interpretations import moment_matching
from tests.interpretations.test_moment_matching import _numpy_gpb, _slds
from tests.interpretations.test_moment_matching_sums import _step_loop


@pytest.fixture
def replays(monkeypatch):
    """Each replay's outcome (True: replayed, False: declined), from fresh programs."""
    cr._PROGRAMS.clear()
    cr._SEEN.clear()
    outcomes = []
    call = cr._Program.__call__

    def counted(self, terms):
        out = call(self, terms)
        outcomes.append(out is not None)
        return out

    monkeypatch.setattr(cr._Program, "__call__", counted)
    return outcomes


def _both(fn, monkeypatch):
    """``fn()`` with the replay on (by the general path's array functions: the fused
    program switched off), then off."""
    monkeypatch.setattr(cr, "FUSED_COLLAPSE", [False])
    on = fn()
    monkeypatch.setattr(cr, "REPLAY_COLLAPSE", [False])
    off = fn()
    monkeypatch.setattr(cr, "REPLAY_COLLAPSE", [True])
    monkeypatch.setattr(cr, "FUSED_COLLAPSE", [True])
    return on, off


def _fused(fn, replays):
    """``fn()`` replayed by the fused program, from fresh programs (the outcomes of its
    replays appended to ``replays``)."""
    cr._PROGRAMS.clear()
    cr._SEEN.clear()
    return fn()


def _loop(p, dtype=np.float64, y=None):
    y = np.asarray(p["y"] if y is None else y, dtype=dtype)
    return _step_loop(p, "numpy", y, dtype)[0]


def test_replayed_loop_is_the_general_paths_and_gpb2(replays, monkeypatch):
    """float64: steps 3.. of a 6-step loop are replayed; the value is the general path's,
    bit for bit, and the GPB2 filter's to 1e-10."""
    p = _slds(seed=12, T=7, K=3, d=2, obs_dim=1)
    on, off = _both(lambda: _loop(p), monkeypatch)
    # step 1 collapses another structure (the prior's message), step 2 records, 3..6 replay
    assert replays == [True] * (len(p["y"]) - 3)
    np.testing.assert_array_equal(on, off)
    np.testing.assert_allclose(on, _numpy_gpb(p, 1), rtol=1e-10)
    fused = _fused(lambda: _loop(p), replays)
    assert replays == [True] * 2 * (len(p["y"]) - 3)
    np.testing.assert_allclose(fused, off, rtol=1e-12)
    np.testing.assert_allclose(fused, _numpy_gpb(p, 1), rtol=1e-10)


def test_float32_and_a_near_singular_step_take_the_general_path(replays, monkeypatch):
    """A structure recorded in float64, then met in float32 (the QR path: the program
    declines before any array work) and with a near-singular noise covariance (``v v' +
    1e-6 I``: every step's check fails, the program declines and the QR path runs): the
    general path's values exactly, and the GPB2 filter's."""
    p = _slds(seed=12, T=6, K=3, d=2, obs_dim=1)
    _loop(p)
    del replays[:]
    on, off = _both(lambda: _loop(p, np.float32), monkeypatch)
    assert replays == [False] * (len(p["y"]) - 2)
    assert on.dtype == np.float32
    np.testing.assert_array_equal(on, off)
    np.testing.assert_allclose(on, _numpy_gpb(p, 1), rtol=1e-4)
    v = np.array([1.0, 1.0]) / np.sqrt(2.0)
    p["Q"][0] = np.outer(v, v) + 1e-6 * np.eye(2)
    del replays[:]
    on, off = _both(lambda: _loop(p), monkeypatch)
    assert replays == [False] * (len(p["y"]) - 2)
    np.testing.assert_array_equal(on, off)
    np.testing.assert_allclose(on, _numpy_gpb(p, 1), rtol=1e-9)


def _custom_loop(p, interp, zero_every_other: bool = False):
    """The per-step loop (``_step_loop``'s, numpy float64) under ``interp``; with
    ``zero_every_other``, odd steps add a zero log weight over s_curr (another structure,
    the same value)."""
    K, d = len(p["pi0"]), p["C"].shape[1]
    ri = np.linalg.inv(np.linalg.cholesky(p["R"])).T
    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in p["Q"]])
    switch = fc.Tensor(np.log(p["trans"]), {"s_prev": fc.Bint[K], "s_curr": fc.Bint[K]})
    dyn = fc.Gaussian(white_vec=np.zeros((K, d)),
                      prec_sqrt=np.concatenate([-np.swapaxes(p["A"], -1, -2) @ qi, qi], -2),
                      inputs={"s_curr": fc.Bint[K], "x_prev": fc.Reals[d], "x_curr": fc.Reals[d]})
    dyn_c = fc.Tensor(np.array([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1] for q in p["Q"]]),
                      {"s_curr": fc.Bint[K]})
    zero = fc.Tensor(np.zeros(K), {"s_curr": fc.Bint[K]})
    obs_c = -0.5 * np.linalg.slogdet(2 * np.pi * p["R"])[1]
    pi = np.linalg.inv(np.linalg.cholesky(p["P0"])).T

    def obs(t, name):
        return fc.Gaussian(white_vec=p["y"][t] @ ri, prec_sqrt=p["C"].T @ ri,
                           inputs={name: fc.Reals[d]}) + obs_c

    with interp:
        msg = (fc.Gaussian(white_vec=p["m0"] @ pi, prec_sqrt=pi, inputs={"x_prev": fc.Reals[d]})
               - 0.5 * np.linalg.slogdet(2 * np.pi * p["P0"])[1]
               + fc.Tensor(np.log(p["pi0"]), {"s_prev": fc.Bint[K]}) + obs(0, "x_prev"))
        for t in range(1, len(p["y"])):
            step = dyn + dyn_c + zero if zero_every_other and t % 2 else dyn + dyn_c
            msg = (msg + switch + step + obs(t, "x_curr")).reduce(
                ops.logaddexp, frozenset({"s_prev", "x_prev"}))
            msg = msg(s_curr="s_prev", x_curr="x_prev")
        return msg.reduce(ops.logaddexp).data


def test_a_structure_change_mid_loop_is_recorded_apart(replays, monkeypatch):
    """Every other step adds a zero log weight over s_curr (another structure, the same
    value): both structures are recorded and replayed, and the value is the GPB2 filter's."""
    p = _slds(seed=3, T=10, K=3, d=2, obs_dim=1)
    on, off = _both(lambda: _custom_loop(p, moment_matching, True), monkeypatch)
    # steps 2 and 3 record the two structures; steps 4..9 replay
    assert replays == [True] * (len(p["y"]) - 4)
    np.testing.assert_array_equal(on, off)
    np.testing.assert_allclose(on, _numpy_gpb(p, 1), rtol=1e-10)
    fused = _fused(lambda: _custom_loop(p, moment_matching, True), replays)
    assert replays == [True] * 2 * (len(p["y"]) - 4)
    np.testing.assert_allclose(fused, off, rtol=1e-12)
    np.testing.assert_allclose(fused, _numpy_gpb(p, 1), rtol=1e-10)


def test_torch_gradient_is_the_unreplayed_paths(replays, monkeypatch):
    """torch arrays never take the numpy program: log p(y) and its autograd gradient in y are
    the unreplayed loop's, and the value the GPB2 filter's."""
    torch = pytest.importorskip("torch")
    p = _slds(seed=5, T=5, K=3, d=2, obs_dim=1)

    def value_and_grad():
        y = torch.tensor(p["y"], requires_grad=True)
        value, _ = _step_loop(p, "torch", y)
        (grad,) = torch.autograd.grad(value, y)
        return value.detach().numpy(), grad.numpy()

    (v_on, g_on), (v_off, g_off) = _both(value_and_grad, monkeypatch)
    assert replays == []
    np.testing.assert_array_equal(v_on, v_off)
    np.testing.assert_array_equal(g_on, g_off)
    np.testing.assert_allclose(v_on, _numpy_gpb(p, 1), rtol=1e-9)


def test_a_user_rule_ahead_still_sees_every_step(replays):
    """The replay runs inside moment_matching's rule: an interpretation whose own Reduce rule
    comes first sees every step's reduction, recorded structure or not, and where it
    declines the value is the GPB2 filter's."""
    user = Interpretation("user_reduce_ahead_of_moment_matching", fallback=moment_matching)
    seen = []

    @user.register(Reduce, type(ops.logaddexp), Contraction, frozenset)
    def user_reduce_contraction(op, arg, reduced_vars):
        seen.append(reduced_vars)
        return None

    p = _slds(seed=12, T=6, K=3, d=2, obs_dim=1)
    value = _custom_loop(p, user)
    steps = [v for v in seen if v == frozenset({"s_prev", "x_prev"})]
    assert len(steps) == len(p["y"])  # each step's, and the last reduction's
    np.testing.assert_allclose(value, _numpy_gpb(p, 1), rtol=1e-10)
