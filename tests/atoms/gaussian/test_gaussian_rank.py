"""Numerical rank of Gaussian marginalization (funsor_core/atoms/gaussian/rank.py).

Integrating out real inputs that carry no information must raise the ValueError the README
promises, whatever the order of the terms and of the reductions, and integrating out ones that
do must give the closed-form answer. Oracles: the same Gaussians in moment form with numpy and
scipy (the marginal of a joint normal and its normalizer), and the structure of the random
factors (a factor with fewer columns than the variables it covers cannot pin them down).
"""

import itertools

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian import rank as rk
from funsor_core.atoms.gaussian import sqrt_info as gm

LOG_2PI = np.log(2 * np.pi)


def to_backend(x, backend):
    if backend == "torch":
        import torch

        return torch.as_tensor(x)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return np.asarray(x)


def to_np(x):
    return np.asarray(ops.to_numpy(x), dtype=np.float64)


def constant_of(result):
    """The Tensor part of a marginal (a Tensor, or a Gaussian plus a Tensor)."""
    if isinstance(result, fc.Tensor):
        return to_np(result.data)
    (t,) = [t for t in result.terms if isinstance(t, fc.Tensor)]
    return to_np(t.data)


# ---------------------------------------------------------------------------------------------
# The issue's example, on every backend.
def issue_gaussians(backend, dtype=np.float64):
    g1 = fc.Gaussian(mean=to_backend(np.array([0.3], dtype), backend),
                     covariance=to_backend(np.array([[1.0]], dtype), backend),
                     inputs={"x": fc.Real})
    g2 = fc.Gaussian(white_vec=to_backend(np.array([0.74], dtype), backend),
                     prec_sqrt=to_backend(np.array([[-0.0068], [1.046]], dtype), backend),
                     inputs={"y": fc.Real, "z": fc.Real})
    return g1, g2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_issue_example_raises_in_every_order(backend, dtype):
    g1, g2 = issue_gaussians(backend, dtype)
    for joint in (g1 + g2, g2 + g1):
        with pytest.raises(ValueError, match="cannot marginalize y, z: .*rank 1 < 2"):
            joint.reduce(ops.logaddexp, frozenset("yz"))
        for first, second in (("y", "z"), ("z", "y")):
            with pytest.raises(ValueError, match=f"cannot marginalize {second}"):
                joint.reduce(ops.logaddexp, first).reduce(ops.logaddexp, second)
    # The kept x is untouched by the flat direction: integrating y alone keeps x's factor.
    rest = (g1 + g2).reduce(ops.logaddexp, "y")
    g_x = [t for t in rest.terms if isinstance(t, fc.Gaussian)][0]
    np.testing.assert_allclose(to_np(g_x.precision)[0, 0], 1.0, rtol=1e-5)


def test_issue_example_under_jit_is_infinite():
    import jax

    g1, g2 = issue_gaussians("jax")

    @jax.jit
    def joint(g1, g2):
        return (g1 + g2).reduce(ops.logaddexp, frozenset("yz"))

    @jax.jit
    def one_at_a_time(g1, g2):
        return (g1 + g2).reduce(ops.logaddexp, "y").reduce(ops.logaddexp, "z")

    # No error can be raised from values under jit: the divergent integral is +inf, never a
    # finite number.
    assert constant_of(joint(g1, g2)) == np.inf
    assert constant_of(one_at_a_time(g1, g2)) == np.inf
    # Two rows cannot pin three coordinates down: that is decided from shapes, so it raises
    # under jit too.
    with pytest.raises(ValueError, match="rank 2 < 3"):
        jax.jit(lambda a, b: (a + b).reduce(ops.logaddexp, frozenset("xyz")))(g1, g2)


# ---------------------------------------------------------------------------------------------
# Random factor graphs: g1 over x (full rank), g2 over x and the y's with r columns. The y's
# get information only from g2, so r < (number of y coordinates) cannot pin them down.
def random_model(rng, dtype, dx, ys, r, backend="numpy"):
    """``(terms, y_names, arrays)``; the terms in a random order, each with its inputs in a
    random order (the term order of the issue)."""
    d_y = sum(size for _, size in ys)
    s1 = rng.normal(size=(dx, dx)) + 2 * np.eye(dx)
    w1 = rng.normal(size=dx)
    s2 = rng.normal(size=(dx + d_y, r))
    w2 = rng.normal(size=r)
    names = [("x", dx)] + list(ys)
    offsets = np.cumsum([0] + [n for _, n in names])
    order = [names[0]] + [names[1 + k] for k in rng.permutation(len(ys))]
    if rng.random() < 0.5:
        order = order[1:] + order[:1]
    rows = np.concatenate([np.arange(offsets[names.index(v)], offsets[names.index(v) + 1])
                           for v in order])

    def dom(n):
        return fc.Real if n == 1 else fc.Reals[n]

    cast = lambda a: to_backend(a.astype(dtype), backend)  # noqa: E731
    g1 = fc.Gaussian(white_vec=cast(w1), prec_sqrt=cast(s1), inputs={"x": dom(dx)})
    g2 = fc.Gaussian(white_vec=cast(w2), prec_sqrt=cast(s2[rows]),
                     inputs={v: dom(n) for v, n in order})
    terms = [g1, g2] if rng.random() < 0.5 else [g2, g1]
    arrays = dict(s1=s1, w1=w1, s2=s2, w2=w2, names=names)
    return terms, [v for v, _ in ys], arrays


def reduce_in_order(expr, groups):
    for group in groups:
        expr = expr.reduce(ops.logaddexp, frozenset(group))
    return expr


def orders(rng, names, count):
    """Reduction orders: all together, then ``count`` random orders one at a time, then a
    random split into two groups."""
    yield [names]
    for _ in range(count):
        yield [[v] for v in rng.permutation(names)]
    if len(names) > 2:
        perm = list(rng.permutation(names))
        cut = int(rng.integers(1, len(names)))
        yield [perm[:cut], perm[cut:]]


CONFIGS = [  # (dx, ys, r): r < total y size, so the y's are not identifiable
    (1, [("y", 1), ("z", 1)], 1),
    (1, [("y", 1), ("z", 1), ("u", 1)], 1),
    (1, [("y", 1), ("z", 1), ("u", 1)], 2),
    (2, [("y", 1), ("z", 2)], 2),
    (2, [("y", 1), ("z", 1), ("u", 1), ("v", 1)], 3),
    (1, [("y", 2), ("z", 2), ("u", 2)], 5),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dx, ys, r", CONFIGS)
def test_random_deficient_gaussians_always_raise(dtype, dx, ys, r):
    rng = np.random.default_rng(hash((dx, len(ys), r, dtype().itemsize)) % 2 ** 32)
    for _ in range(25):
        terms, names, _ = random_model(rng, dtype, dx, ys, r)
        joint = terms[0] + terms[1]
        for groups in orders(rng, names, 3):
            with pytest.raises(ValueError, match="cannot marginalize"):
                reduce_in_order(joint, groups)


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
def test_random_deficient_gaussians_raise_on_other_backends(backend_name):
    rng = np.random.default_rng(7)
    for dx, ys, r in CONFIGS[:4]:
        for _ in range(3 if backend_name == "torch" else 1):  # eager jax compiles every op
            terms, names, _ = random_model(rng, np.float64, dx, ys, r, backend_name)
            for groups in orders(rng, names, 1):
                with pytest.raises(ValueError, match="cannot marginalize"):
                    reduce_in_order(terms[0] + terms[1], groups)


def joint_moments(arrays):
    """The joint of g1 + g2 in moment form: ``(log Z, mean, covariance)``."""
    s1, w1, s2, w2, names = (arrays[k] for k in ("s1", "w1", "s2", "w2", "names"))
    dx, n = names[0][1], s2.shape[0]
    s1_full = np.zeros((n, s1.shape[1]))
    s1_full[:dx] = s1
    p = s1_full @ s1_full.T + s2 @ s2.T
    info = s1_full @ w1 + s2 @ w2
    cov = np.linalg.inv(p)
    mean = cov @ info
    log_z = (-0.5 * (w1 @ w1 + w2 @ w2) + 0.5 * n * LOG_2PI - 0.5 * np.linalg.slogdet(p)[1]
             + 0.5 * info @ mean)
    return log_z, mean, cov


def moment_oracle(arrays, kept_value):
    """log ∫ exp(g1 + g2) dy at x = kept_value, in moment form (scipy): the normalizer of
    the joint times the marginal density of x."""
    log_z, mean, cov = joint_moments(arrays)
    dx = arrays["names"][0][1]
    return log_z + multivariate_normal(mean[:dx], cov[:dx, :dx]).logpdf(kept_value)


FULL = [  # (dx, ys, r): r >= total y size
    (1, [("y", 1), ("z", 1)], 2),
    (1, [("y", 1), ("z", 1), ("u", 1)], 4),
    (2, [("y", 1), ("z", 2)], 3),
    (2, [("y", 2), ("z", 1), ("u", 1)], 4),
]


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-3), (np.float64, 1e-8)])
@pytest.mark.parametrize("dx, ys, r", FULL)
def test_random_full_rank_gaussians_match_moment_form(dtype, rtol, dx, ys, r):
    rng = np.random.default_rng(hash((dx, len(ys), r)) % 2 ** 32)
    for _ in range(15):
        terms, names, arrays = random_model(rng, dtype, dx, ys, r)
        joint = terms[0] + terms[1]
        x = rng.normal(size=dx)
        expected = moment_oracle(arrays, x)
        for groups in orders(rng, names, 3):
            result = reduce_in_order(joint, groups)
            value = result(x=x.astype(dtype) if dx > 1 else float(x[0]))
            np.testing.assert_allclose(to_np(value.data), expected, rtol=rtol, atol=rtol,
                                       err_msg=str(groups))
        # Everything at once: the normalizer.
        everything = reduce_in_order(joint, [names + ["x"]])
        np.testing.assert_allclose(to_np(everything.data), joint_moments(arrays)[0],
                                   rtol=rtol, atol=rtol)


def test_random_full_rank_gaussians_under_jit_match_eager():
    import jax

    rng = np.random.default_rng(11)
    for dx, ys, r in FULL[:2]:
        terms, names, arrays = random_model(rng, np.float64, dx, ys, r, "jax")
        x = rng.normal(size=dx)
        for groups in orders(rng, names, 2):
            fn = jax.jit(lambda a, b, groups=groups: reduce_in_order(a + b, groups))
            value = fn(*terms)(x=float(x[0]))
            np.testing.assert_allclose(to_np(value.data), moment_oracle(arrays, x),
                                       rtol=1e-8)


def test_random_deficient_gaussians_under_jit_are_infinite():
    # Under jit the values cannot be read, so nothing raises from them: the integral of a
    # flat direction is +inf (or, when the shapes alone show too few rows, the error raises
    # while tracing). Never a finite number.
    import jax

    rng = np.random.default_rng(12)
    for dx, ys, r in CONFIGS[:4]:
        for _ in range(1):
            terms, names, _ = random_model(rng, np.float64, dx, ys, r, "jax")
            for groups in orders(rng, names, 1):
                fn = jax.jit(lambda a, b, groups=groups: reduce_in_order(a + b, groups))
                try:
                    result = fn(*terms)
                except ValueError as e:  # too few rows left: decided from shapes, so loud
                    assert "rank" in str(e)
                    continue
                assert np.all(constant_of(result) == np.inf), groups


# ---------------------------------------------------------------------------------------------
# Weak but genuine information is kept; units do not matter for zeroing.
@pytest.mark.parametrize("dtype, scale", [(np.float32, 1e3), (np.float64, 1e6),
                                          (np.float64, 1e-6)])
def test_weak_prior_with_precise_observation_is_information(backend, dtype, scale):
    # x ~ N(0, scale^2), y | x ~ N(x, 1): the marginal of y is N(0, scale^2 + 1).
    f = lambda a: to_backend(np.asarray(a, dtype), backend)  # noqa: E731
    prior = fc.Gaussian(mean=f([0.0]), covariance=f([[scale ** 2]]), inputs={"x": fc.Real})
    obs = fc.Gaussian(white_vec=f([0.0]), prec_sqrt=f([[-1.0], [1.0]]),
                      inputs={"x": fc.Real, "y": fc.Real})
    marginal = (prior + obs).reduce(ops.logaddexp, "x")
    y = 0.7 * scale
    # log ∫ N(x; 0, s^2) exp(-(y - x)^2 / 2) dx, prior normalized by its own -log Z.
    expected = (multivariate_normal(0.0, scale ** 2 + 1).logpdf(y) + 0.5 * LOG_2PI
                + np.log(scale) + 0.5 * LOG_2PI)
    rtol = 1e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(to_np(marginal(y=y).data), expected, rtol=rtol)
    total = (prior + obs).reduce(ops.logaddexp, "x").reduce(ops.logaddexp, "y")
    np.testing.assert_allclose(to_np(total.data), LOG_2PI + np.log(scale), rtol=rtol)


def test_batch_entry_named_in_the_error():
    # Batch entry 1 has g2's columns parallel: y and z cannot be told apart there only.
    s = np.stack([np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 2.0], [2.0, 4.0]])])
    g = fc.Gaussian(white_vec=np.zeros((2, 2)), prec_sqrt=s,
                    inputs={"i": fc.Bint[2], "y": fc.Real, "z": fc.Real})
    with pytest.raises(ValueError, match=r"y, z: .*rank 1 < 2.* at batch index \(1,\)"):
        g.reduce(ops.logaddexp, frozenset("yz"))
    g0 = g(i=0).reduce(ops.logaddexp, frozenset("yz"))
    np.testing.assert_allclose(g0.data, LOG_2PI)  # two independent N(0, 1): log 2 pi


# ---------------------------------------------------------------------------------------------
# The statistic itself: independent of row order, of column scaling, and of the leading
# columns' conditioning (an unpivoted QR's diagonal is not).
def test_statistic_catches_amplified_roundoff():
    # Rows 0 and 1 nearly parallel (angle 1e-6), row 2 exactly in their span: R_22 carries
    # roundoff amplified by 1e6, far above eps, yet the block is exactly rank 2.
    rng = np.random.default_rng(3)
    t = rng.normal(size=(2, 5))
    c = np.array([[1.0, 0.0], [1.0, 1e-6], [0.3, 0.7]])
    s = c @ t
    r = np.linalg.qr(s.T, mode="r")
    assert abs(r[2, 2]) > 1e3 * np.finfo(float).eps * np.abs(r).max()  # the diagonal misses it
    fix = rk.rank_tests(r, 3, rk.rank_tolerance(s))
    assert fix.bad is not None and bool(np.all(fix.bad))
    with pytest.raises(ValueError, match="rank 2 < 3"):
        gm.check_full_rank(s, [0, 1, 2])


def test_statistic_is_invariant_to_row_order_and_units():
    rng = np.random.default_rng(4)
    for _ in range(20):
        s = rng.normal(size=(3, 4))
        scale = np.exp(rng.normal(size=(3, 1)) * 3)
        for rows in itertools.permutations(range(3)):
            gm.check_full_rank((scale * s)[list(rows)], [0, 1, 2])
        dep = s.copy()
        dep[2] = 0.5 * dep[0] - 2.0 * dep[1]
        for rows in itertools.permutations(range(3)):
            with pytest.raises(ValueError, match="rank 2 < 3"):
                gm.check_full_rank((scale * dep)[list(rows)], [0, 1, 2])
