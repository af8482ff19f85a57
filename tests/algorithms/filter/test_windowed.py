"""``windowed_filter`` keeps its window whatever the interpretation (issue 27, item 13): under
``exact`` a switch state leaving the window is collapsed by matching moments, as under
``moment_matching``; it used to enumerate every switch path (K = 3, T = 20 ran out of
memory). Under ``lazy`` the filter is recorded, and evaluates under ``moment_matching``.

Oracle: the hand-written numpy generalized pseudo-Bayes filter (``_numpy_gpb``: Kalman
updates per component, mixtures collapsed to their mean and covariance).
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from interpretations import exact, lazy, moment_matching
from tests.backend_values import values_on_every_backend
from tests.interpretations.test_moment_matching import STEP, _numpy_gpb, _slds, _slds_factors


def _total(p, backend, window, interpretation=exact):
    init, trans = _slds_factors(p, backend)
    with interpretation:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, window)
    return msg.reduce(ops.logaddexp)


@pytest.mark.parametrize("window", [1, 2])
def test_exact_collapses_the_window_as_the_numpy_gpb(window):
    p = _slds(seed=11, T=8, K=3, d=2, obs_dim=2)
    np.testing.assert_allclose(_total(p, "numpy", window).data, _numpy_gpb(p, window),
                               rtol=1e-9)
    np.testing.assert_allclose(_total(p, "numpy", window, moment_matching).data,
                               _numpy_gpb(p, window), rtol=1e-9)


def test_the_repro_k3_t20_window_1_under_exact():
    # 3^20 switch paths if enumerated; the window keeps 3 components per step.
    p = _slds(seed=12, T=20, K=3, d=2, obs_dim=1)
    msg_total = _total(p, "numpy", 1)
    assert isinstance(msg_total, fc.Tensor)
    np.testing.assert_allclose(msg_total.data, _numpy_gpb(p, 1), rtol=1e-9)


def test_exact_on_every_backend_and_under_jit():
    p = _slds(seed=13, T=4, K=2, d=1, obs_dim=1)

    def total(y):
        return _total(dict(p, y=y), fc.get_backend(), 1).data

    # jax under jit only: eagerly the same filter compiles op by op (10 s of the suite)
    for value in values_on_every_backend(total, p["y"], eager_jax=False):
        np.testing.assert_allclose(value, _numpy_gpb(p, 1), rtol=1e-9)


def test_lazy_records_and_moment_matching_evaluates():
    p = _slds(seed=14, T=5, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    with lazy:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1)
    assert not isinstance(msg, (fc.Tensor, fc.Gaussian))
    with moment_matching:
        total = fc.reinterpret(msg).reduce(ops.logaddexp)
    np.testing.assert_allclose(total.data, _numpy_gpb(p, 1), rtol=1e-9)


def test_a_real_or_misfit_time_variable_is_named():
    # A Variable time was read by its name alone: Variable('t', Real) ran the filter.
    t = fc.Tensor(np.zeros((3, 2, 2)), {"t": fc.Bint[3], "a": fc.Bint[2], "b": fc.Bint[2]})
    init = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
    bad = [(fc.Variable("t", fc.Real), "Real"), (fc.Variable("t", fc.Bint[4]), r"Bint\[4\]")]
    for time, got in bad:
        with pytest.raises(ValueError, match=rf"time 't' must be Bint\[T\] .*got {got} "
                                             r"\(the factor has Bint\[3\]\)"):
            windowed_filter(ops.logaddexp, ops.add, t, time, {"a": "b"}, init)
    ok = windowed_filter(ops.logaddexp, ops.add, t, fc.Variable("t", fc.Bint[3]), {"a": "b"}, init)
    np.testing.assert_allclose(ok.data, np.full(2, 3 * np.log(2.0)))  # 2 paths a step
