"""moment_matching's sums of Gaussians kept side by side (``mixture.pending_sum``), reduced
straight to the collapse, and renamed by relabelling: the per-step SLDS loop as funsor users
write it.

Oracles: the numpy GPB2 filter of ``test_moment_matching`` (the textbook recursion); the log
density of a sum written in numpy from the raw arrays (``-0.5 ||x S - w||^2`` per summand);
its log integral in closed form from the precision ``P = S S'`` and ``b = S w``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian.algebra import split_gaussian_sum
from interpretations import moment_matching
from tests.interpretations.test_moment_matching import _array, _np, _numpy_gpb, _run, _slds


def _step_loop(p, backend, y, dtype=None):
    """log p(y) by the per-step loop of funsor's examples/slds.py (GPB2), and the number of
    Gaussians in the last step's sum (numpy arrays of ``dtype`` where one is given)."""
    K, d = len(p["pi0"]), p["C"].shape[1]
    a = ((lambda x: np.asarray(x, dtype=dtype)) if dtype  # noqa: E731
         else (lambda x: _array(backend, x)))
    ri = np.linalg.inv(np.linalg.cholesky(p["R"])).T
    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in p["Q"]])
    obs_c = -0.5 * np.linalg.slogdet(2 * np.pi * p["R"])[1]
    switch = fc.Tensor(a(np.log(p["trans"])), {"s_prev": fc.Bint[K], "s_curr": fc.Bint[K]})
    dyn = fc.Gaussian(white_vec=a(np.zeros((K, d))),
                      prec_sqrt=a(np.concatenate([-np.swapaxes(p["A"], -1, -2) @ qi, qi], -2)),
                      inputs={"s_curr": fc.Bint[K], "x_prev": fc.Reals[d], "x_curr": fc.Reals[d]})
    dyn = dyn + fc.Tensor(a([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1] for q in p["Q"]]),
                          {"s_curr": fc.Bint[K]})
    pi = np.linalg.inv(np.linalg.cholesky(p["P0"])).T

    def obs(t, name):
        return fc.Gaussian(white_vec=y[t] @ a(ri), prec_sqrt=a(p["C"].T @ ri),
                           inputs={name: fc.Reals[d]}) + obs_c

    with moment_matching:
        prior = fc.Gaussian(white_vec=a(p["m0"] @ pi), prec_sqrt=a(pi),
                            inputs={"x_prev": fc.Reals[d]})
        msg = (prior - 0.5 * np.linalg.slogdet(2 * np.pi * p["P0"])[1]
               + fc.Tensor(a(np.log(p["pi0"])), {"s_prev": fc.Bint[K]}) + obs(0, "x_prev"))
        sizes = []
        for t in range(1, len(p["y"])):
            joint = msg + switch + dyn + obs(t, "x_curr")
            sizes.append(len(split_gaussian_sum(joint)[0]))
            msg = joint.reduce(ops.logaddexp, frozenset({"s_prev", "x_prev"}))
            msg = msg(s_curr="s_prev", x_curr="x_prev")
        return msg.reduce(ops.logaddexp).data, sizes[-1]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_per_step_loop_is_gpb2(backend):
    # (Under jax.jit one step: tracing the interpreter costs a second a step.)
    p = _slds(seed=31, T=2 if backend == "jax" else 6, K=2, d=2, obs_dim=1)
    sizes = []

    def total(y):
        value, size = _step_loop(p, backend, y)
        sizes.append(size)
        return value

    np.testing.assert_allclose(_np(_run(backend, total, p["y"])), _numpy_gpb(p, 1), rtol=1e-9)
    # message, dynamics, observation side by side (the first step's prior adds one)
    assert sizes[0] == (4 if backend == "jax" else 3)


def _summand(rng, inputs: dict, dim: int, rank: int):
    batch = tuple(d.size for d in inputs.values() if d.dtype != "real")
    w, s = rng.normal(size=batch + (rank,)), rng.normal(size=batch + (dim, rank))
    return fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs), w, s


def _sum_parts(seed: int = 0):
    """g1(i, x) + g2(x, y) + t(i) and a numpy log density of it at (i, x, y)."""
    rng = np.random.default_rng(seed)
    g1, w1, s1 = _summand(rng, {"i": fc.Bint[3], "x": fc.Real}, 1, 2)
    g2, w2, s2 = _summand(rng, {"x": fc.Real, "y": fc.Reals[2]}, 3, 3)
    tdata = rng.normal(size=3)
    t = fc.Tensor(tdata, {"i": fc.Bint[3]})

    def density(i, x, y):
        v = np.concatenate([[x], y])
        return (-0.5 * np.sum((x * s1[i][0] - w1[i]) ** 2) - 0.5 * np.sum((v @ s2 - w2) ** 2)
                + tdata[i])

    def log_integral(i):  # over (x, y): -0.5 c + 0.5 b' P^-1 b + 0.5 d log 2 pi - 0.5 log|P|
        s = np.concatenate([np.pad(s1[i], ((0, 2), (0, 0))), s2], -1)
        w = np.concatenate([w1[i], w2])
        prec, b = s @ s.T, s @ w
        return (tdata[i] - 0.5 * w @ w + 0.5 * b @ np.linalg.solve(prec, b)
                + 1.5 * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(prec)[1])

    return g1, g2, t, density, log_integral


def test_a_sum_keeps_its_summands_and_is_their_sum():
    g1, g2, t, density, log_integral = _sum_parts()
    with moment_matching:
        total = g1 + t + g2
    gaussians, dense = split_gaussian_sum(total)
    assert len(gaussians) == 2 and len(dense) == 1
    point = np.array([0.3, -1.2])
    value = total(i=1, x=0.7, y=point)
    np.testing.assert_allclose(value.data, density(1, 0.7, point), rtol=1e-12)
    with moment_matching:  # integrating every real (exact's rule) and the switch
        reals = total.reduce(ops.logaddexp, frozenset({"x", "y"}))
        everything = total.reduce(ops.logaddexp)
    expected = np.array([log_integral(i) for i in range(3)])
    np.testing.assert_allclose(reals.data, expected, rtol=1e-10)
    np.testing.assert_allclose(everything.data, np.logaddexp.reduce(expected), rtol=1e-10)


def test_renaming_a_sum_relabels_it():
    g1, g2, t, density, _ = _sum_parts(1)
    point = np.array([0.3, -1.2])
    with moment_matching:
        total = g1 + g2 + t
        renamed = total(i="j", x="z")
    assert set(renamed.inputs) == {"j", "z", "y"}
    assert len(split_gaussian_sum(renamed)[0]) == 2
    np.testing.assert_allclose(renamed(j=2, z=0.7, y=point).data, density(2, 0.7, point),
                               rtol=1e-12)


def test_a_sum_past_the_compression_threshold_is_exacts():
    rng = np.random.default_rng(2)
    parts = [_summand(rng, {"x": fc.Real}, 1, 1) for _ in range(4)]
    with moment_matching:
        two = parts[0][0] + parts[1][0]
        three = two + parts[2][0]  # rank 3 > 2 x dim: compressed as exact compresses it
        four = three + parts[3][0]
    assert [len(split_gaussian_sum(x)[0]) for x in (two, three, four)] == [2, 1, 2]
    value = sum(-0.5 * np.sum((0.4 * s[0] - w) ** 2) for _, w, s in parts)
    np.testing.assert_allclose(four(x=0.4).data, value, rtol=1e-12)


def test_integrating_against_a_sum_adds_its_gaussians():
    g1, g2, t, density, log_integral = _sum_parts(3)
    with moment_matching:
        total = g1 + g2 + t
        mass = fc.Integrate(total, fc.Number(1.0), frozenset({"x", "y"}))
    np.testing.assert_allclose(mass.align(("i",)).data, np.exp([log_integral(i) for i in range(3)]),
                               rtol=1e-10)


def test_moments_of_a_sum_add_its_gaussians():
    g1, g2, t, _, _ = _sum_parts(4)
    with moment_matching:
        total = g1 + g2 + t
    expected = fc.moments(g1 + g2 + t)  # exact: one Gaussian already
    actual = fc.moments(total)
    np.testing.assert_allclose(actual.covariance.data, expected.covariance.data, rtol=1e-10)
    np.testing.assert_allclose(actual.log_mass.data, expected.log_mass.data, rtol=1e-10)


def test_sampling_a_sum_adds_its_gaussians():
    # A draw keeps the sum's mass as its weight: log Z of each particle, in closed form.
    g1, g2, t, _, log_integral = _sum_parts(5)
    with moment_matching:
        total = g1 + g2 + t
    draw = total.sample(frozenset({"x", "y"}), {"n": fc.Bint[2]}, rng_key=0)
    mass = draw.reduce(ops.logaddexp, frozenset({"x", "y"})).align(("n", "i"))
    expected = np.array([log_integral(i) for i in range(3)])
    np.testing.assert_allclose(mass.data, np.broadcast_to(expected, (2, 3)), rtol=1e-10)
