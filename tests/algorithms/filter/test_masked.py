"""``windowed_filter(..., lengths=, mask=)``: a padded batch of ragged sequences filtered at
once, against the same filter run one sequence at a time on its unpadded steps (discrete
and Kalman chains), and against the hand-written numpy GPB filter (a switching linear
dynamical system), on numpy, torch and jax, and under ``jax.jit`` with traced lengths.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from tests.backend_values import as_backend_array, to_numpy
from tests.interpretations.test_moment_matching import _numpy_gpb, _slds

T, K = 5, 3
LENGTHS = np.array([1, T, 2, 0])  # a length-1, a full-length and an empty sequence
B = len(LENGTHS)


def _values(fn, *args) -> list:
    # fn on numpy, torch, and jax under jax.jit (eager jax compiles op by op: seconds, and
    # the same code as under jit).
    jax = pytest.importorskip("jax")
    out = []
    for name, run in (("numpy", fn), ("torch", fn), ("jax", jax.jit(fn))):
        fc.set_backend(name)
        try:
            out.append(to_numpy(run(*(as_backend_array(a, name) for a in args))))
        finally:
            fc.set_backend("numpy")
    return out


def _lengths(data):
    return fc.Tensor(data, {"b": fc.Bint[B]}, dtype=T + 1)


def _discrete(trans, init):
    return (fc.Tensor(trans, {"t": fc.Bint[trans.shape[0]], "b": fc.Bint[B],
                              "x": fc.Bint[K], "y": fc.Bint[K]}),
            fc.Tensor(init, {"x": fc.Bint[K]}))


@pytest.mark.parametrize("window", [1, 2])
@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_discrete_ragged_filter_against_one_at_a_time(sum_op, window):
    rng = np.random.default_rng(0)
    trans, init = rng.normal(size=(T, B, K, K)), rng.normal(size=K)

    def ragged(trans, init, lengths):
        t, i = _discrete(trans, init)
        msg = windowed_filter(sum_op, ops.add, t, "t", {"x": "y"}, i, window,
                              lengths=_lengths(lengths))
        return msg.align(("b", "y")).data

    for actual in _values(ragged, trans, init, LENGTHS):
        for b, n in enumerate(LENGTHS):
            if n == 0:  # no steps: the initial factor, under the curr name
                np.testing.assert_allclose(actual[b], init, rtol=1e-12)
                continue
            t, i = _discrete(trans[:n], init)
            one = windowed_filter(sum_op, ops.add, t(b=b), "t", {"x": "y"}, i, window)
            np.testing.assert_allclose(actual[b], one.align(("y",)).data, rtol=1e-10)


def _kalman(white_vec, prec_sqrt, init_w, init_s):
    # Steps: a Gaussian over (t, b, u, v), u the prev and v the curr state (2-d).
    trans = fc.Gaussian(white_vec=white_vec, prec_sqrt=prec_sqrt,
                        inputs={"t": fc.Bint[white_vec.shape[0]], "b": fc.Bint[B],
                                "u": fc.Reals[2], "v": fc.Reals[2]})
    init = fc.Gaussian(white_vec=init_w, prec_sqrt=init_s, inputs={"u": fc.Reals[2]})
    return trans, init


def _kalman_arrays(seed):
    rng = np.random.default_rng(seed)
    # Rank 4 = dim: the step pins v given u; the initial factor is full rank.
    return (rng.normal(size=(T, B, 4)), rng.normal(size=(T, B, 4, 4)),
            rng.normal(size=2), rng.normal(size=(2, 2)) + 2 * np.eye(2))


def _summary(msg):
    m = fc.moments(msg)
    return m.log_mass.data, m.mean["v"].data, m.covariance.data


def test_kalman_ragged_filter_against_one_at_a_time():
    w, s, iw, i_s = _kalman_arrays(1)

    def ragged(w, s, iw, i_s, lengths):
        trans, init = _kalman(w, s, iw, i_s)
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "t", {"u": "v"}, init,
                              lengths=_lengths(lengths))
        m = fc.moments(msg)
        return ops.cat([m.log_mass.align(("b",)).data[:, None],
                        m.mean["v"].align(("b",)).data,
                        ops.reshape(m.covariance.align(("b",)).data, (B, 4))], -1)

    for actual in _values(ragged, w, s, iw, i_s, LENGTHS):
        for b, n in enumerate(LENGTHS):
            trans, init = _kalman(w[:max(n, 1)], s[:max(n, 1)], iw, i_s)
            one = (init(u="v") if n == 0 else
                   windowed_filter(ops.logaddexp, ops.add, trans(b=b), "t", {"u": "v"}, init))
            log_mass, mean, cov = _summary(one)
            expected = np.concatenate([[log_mass], mean, cov.ravel()])
            np.testing.assert_allclose(actual[b], expected, rtol=1e-8)


def _slds_batch(params, ys):
    # The SLDS of test_moment_matching with a batch of observation sequences ys (B, T, o).
    K_, d = len(params["pi0"]), params["C"].shape[1]
    ri = np.linalg.inv(np.linalg.cholesky(params["R"])).T
    obs_c = -0.5 * np.linalg.slogdet(2 * np.pi * params["R"])[1]
    Tn, o = ys.shape[1], ys.shape[2]

    def obs(times, name):
        shape = (len(times), B, d, o)
        return fc.Gaussian(white_vec=np.swapaxes(ys[:, times], 0, 1) @ ri,
                           prec_sqrt=np.broadcast_to(params["C"].T @ ri, shape),
                           inputs={"time": fc.Bint[len(times)], "b": fc.Bint[B],
                                   name: fc.Reals[d]}) + obs_c

    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in params["Q"]])
    dyn_s = np.concatenate([-np.swapaxes(params["A"], -1, -2) @ qi, qi], -2)
    dyn_c = np.array([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1] for q in params["Q"]])
    dyn = fc.Gaussian(white_vec=np.zeros((K_, d)), prec_sqrt=dyn_s,
                      inputs={"s_curr": fc.Bint[K_], "x_prev": fc.Reals[d],
                              "x_curr": fc.Reals[d]}) + fc.Tensor(dyn_c, {"s_curr": fc.Bint[K_]})
    switch = fc.Tensor(np.log(params["trans"]), {"s_prev": fc.Bint[K_], "s_curr": fc.Bint[K_]})
    trans = switch + dyn + obs(np.arange(1, Tn), "x_curr")
    pi = np.linalg.inv(np.linalg.cholesky(params["P0"])).T
    prior = fc.Gaussian(white_vec=params["m0"] @ pi, prec_sqrt=pi, inputs={"x_prev": fc.Reals[d]})
    prior = prior - 0.5 * np.linalg.slogdet(2 * np.pi * params["P0"])[1]
    init = fc.Tensor(np.log(params["pi0"]), {"s_prev": fc.Bint[K_]}) + prior + obs([0], "x_prev")
    return init(time=0), trans


def test_slds_ragged_gpb_against_numpy_gpb():
    # T + 1 observations, T switching steps; sequence b has lengths[b] + 1 observations.
    params = _slds(seed=5, T=T + 1, K=2, d=2, obs_dim=1)
    ys = np.random.default_rng(6).normal(size=(B, T + 1, 1))
    init, trans = _slds_batch(params, ys)
    msg = windowed_filter(ops.logaddexp, ops.add, trans, "time",
                          {"s_prev": "s_curr", "x_prev": "x_curr"}, init, 1,
                          lengths=_lengths(LENGTHS))
    total = msg.reduce(ops.logaddexp, {"s_curr", "x_curr"}).align(("b",)).data
    for b, n in enumerate(LENGTHS):
        expected = _numpy_gpb(dict(params, y=ys[b, :n + 1]), 1)
        np.testing.assert_allclose(total[b], expected, rtol=1e-9)


def test_slds_ragged_imm_against_numpy_imm():
    # method="imm" with lengths= (a NotImplementedError before): the same carried message,
    # each entry's total equal to the hand IMM of its own observations.
    from tests.algorithms.filter.test_imm import _numpy_imm

    params = _slds(seed=5, T=T + 1, K=2, d=2, obs_dim=1)
    ys = np.random.default_rng(6).normal(size=(B, T + 1, 1))
    init, trans = _slds_batch(params, ys)
    msg = windowed_filter(ops.logaddexp, ops.add, trans, "time",
                          {"s_prev": "s_curr", "x_prev": "x_curr"}, init, 1,
                          method="imm", lengths=_lengths(LENGTHS))
    total = msg.reduce(ops.logaddexp, {"s_curr", "x_curr"}).align(("b",)).data
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(total[b], _numpy_imm(dict(params, y=ys[b, :n + 1])),
                                   rtol=1e-9)


def test_masked_filter_errors_name_the_mistake():
    w, s, iw, i_s = _kalman_arrays(2)
    trans, init = _kalman(w, s, iw, i_s)
    mask = fc.Tensor(np.ones((T, B), dtype=int), {"t": fc.Bint[T], "b": fc.Bint[B]})
    with pytest.raises(NotImplementedError, match="takes lengths=.*not an arbitrary mask="):
        windowed_filter(ops.logaddexp, ops.add, trans, "t", {"u": "v"}, init, mask=mask)
    with pytest.raises(ValueError, match=r"windowed_filter: lengths must be integers in "
                                         r"0\.\.5 .*\[9\]"):
        windowed_filter(ops.logaddexp, ops.add, trans, "t", {"u": "v"}, init,
                        lengths=_lengths(np.array([1, 9, 2, 0])))
    t, i = _discrete(np.zeros((T, B, K, K)), np.zeros(K))
    with pytest.raises(ValueError, match=r"windowed_filter: lengths has the step names \['y'\]"):
        windowed_filter(ops.logaddexp, ops.add, t, "t", {"x": "y"}, i,
                        lengths=fc.Tensor(np.ones(K, dtype=int), {"y": fc.Bint[K]}))


def test_discrete_filter_mask_skips_steps():
    # A 0/1 mask over (t, b) on a Tensor chain: the filter of the kept steps only.
    rng = np.random.default_rng(7)
    trans, init = rng.normal(size=(T, B, K, K)), rng.normal(size=K)
    keep = rng.integers(0, 2, size=(T, B))
    t, i = _discrete(trans, init)
    mask = fc.Tensor(keep, {"t": fc.Bint[T], "b": fc.Bint[B]}, dtype=2)
    msg = windowed_filter(ops.logaddexp, ops.add, t, "t", {"x": "y"}, i, mask=mask)
    for b in range(B):
        alpha = init
        for s in np.flatnonzero(keep[:, b]):
            alpha = np.logaddexp.reduce(alpha[:, None] + trans[s, b], axis=0)
        np.testing.assert_allclose(msg.align(("b", "y")).data[b], alpha, rtol=1e-10)
