"""Conjugate models written with distribution funsors, solved exactly by the rewrite rules.

1. A Beta-Bernoulli A/B test: two page variants, each with a Beta(1, 1) prior on its click
   rate and a plate of Bernoulli clicks. ``prior + likelihood`` is rewritten to posterior +
   evidence; the posteriors and the marginal likelihood are printed beside their closed forms,
   and P(rate_B > rate_A) from posterior samples beside numerical integration.
2. A Dirichlet-Categorical mixture: two hypotheses about a die (a fair-ish prior and a loaded
   one), a Categorical prior over which one holds, and rolls observed. The posterior over the
   hypothesis, the Dirichlet posteriors and the marginal likelihood are exact.
3. A linear-Gaussian model (a random walk observed in noise) written with Normal
   distributions: each Normal of affine arguments is a Gaussian factor, and its marginal
   likelihood equals the same model written with Gaussian atoms and a hand-written Kalman
   filter.

Prints the results; writes ``examples/out/conjugate_models.png`` when matplotlib is installed.
Run: ``make demo`` (or ``python examples/conjugate_models.py``).
"""

from __future__ import annotations

import math

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import BernoulliProbs, Beta, Categorical, Dirichlet, Normal
from interpretations import lazy

rng = np.random.default_rng(0)


def lgamma(x):
    return np.vectorize(math.lgamma)(x)


def log_beta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def ab_test():
    print("== 1. Beta-Bernoulli A/B test")
    visits, rates = 400, np.array([0.11, 0.14])
    clicks = (rng.random((2, visits)) < rates[:, None]).astype(float)  # [arm, visitor]
    arm, visitor = {"arm": fc.Bint[2]}, {"visitor": fc.Bint[visits]}
    p = fc.Variable("p", fc.Real)
    prior = Beta(fc.Tensor(np.ones(2), arm), fc.Tensor(np.ones(2), arm), value=p)
    likelihood = BernoulliProbs(p, value=fc.Tensor(clicks, {**arm, **visitor}))
    joint = prior + likelihood.reduce(ops.add, "visitor")  # posterior + evidence, exactly
    posterior = next(t for t in joint.terms if isinstance(t, Beta))
    evidence = joint.reduce(ops.logaddexp, "p")  # log p(clicks | arm), per arm
    s = clicks.sum(1)
    for k, name in enumerate("AB"):
        a, b = posterior.concentration1.data[k], posterior.concentration0.data[k]
        print(f"arm {name}: {int(s[k])}/{visits} clicks; posterior Beta({a:g}, {b:g}), "
              f"closed form Beta({1 + s[k]:g}, {1 + visits - s[k]:g})")
        print(f"        log p(clicks) = {evidence.data[k]:.10f}   closed form "
              f"{log_beta(1 + s[k], 1 + visits - s[k]) - log_beta(1.0, 1.0):.10f}")
    draws = posterior.sample("p", {"draw": fc.Bint[20000]}, rng_key=1)
    (_, (points, _)), = draws.terms
    x = points.align(("draw", "arm")).data
    by_sampling = float(np.mean(x[:, 1] > x[:, 0]))
    grid = np.linspace(1e-6, 1 - 1e-6, 4001)
    dens = [np.exp((posterior.concentration1.data[k] - 1) * np.log(grid)
                   + (posterior.concentration0.data[k] - 1) * np.log1p(-grid)
                   - log_beta(posterior.concentration1.data[k], posterior.concentration0.data[k]))
            for k in range(2)]
    cdf_a = np.cumsum(dens[0]) * (grid[1] - grid[0])
    by_quadrature = float(np.sum(dens[1] * cdf_a) * (grid[1] - grid[0]))
    print(f"P(rate_B > rate_A) = {by_sampling:.3f} from 20000 posterior samples, "
          f"{by_quadrature:.3f} by quadrature")
    return grid, dens


def dice():
    print("== 2. Dirichlet-Categorical mixture: which die?")
    alpha = np.array([[10.0] * 6, [2.0, 2.0, 2.0, 2.0, 2.0, 8.0]])  # fair-ish, loaded on 6
    log_pi = np.log([0.5, 0.5])
    rolls = rng.choice(6, size=60, p=[0.12, 0.12, 0.12, 0.12, 0.12, 0.4])
    z, roll = {"z": fc.Bint[2]}, {"roll": fc.Bint[60]}
    theta = fc.Variable("theta", fc.Reals[6])
    joint = (fc.Tensor(log_pi, z) + Dirichlet(fc.Tensor(alpha, z), value=theta)
             + Categorical(theta, value=fc.Tensor(rolls, roll, 6)).reduce(ops.add, "roll"))
    marginal = joint.reduce(ops.logaddexp, {"theta", "z"})
    posterior_z = joint.reduce(ops.logaddexp, "theta") - marginal
    dirichlet = next(t for t in joint.terms if isinstance(t, Dirichlet))
    counts = np.bincount(rolls, minlength=6)

    def log_marginal(a):  # a sequence of rolls under Dirichlet(a)
        return (lgamma(a.sum()) - lgamma(a.sum() + counts.sum())
                + np.sum(lgamma(a + counts) - lgamma(a)))

    closed = log_pi + np.array([log_marginal(alpha[0]), log_marginal(alpha[1])])
    total = np.logaddexp(closed[0], closed[1])
    print(f"counts {counts.tolist()}")
    print(f"log p(rolls) = {marginal.item():.10f}   closed form {total:.10f}")
    print(f"P(loaded | rolls) = {np.exp(posterior_z.data[1]):.6f}   closed form "
          f"{np.exp(closed[1] - total):.6f}")
    print(f"posterior Dirichlet of the loaded die {dirichlet.concentration.data[1].tolist()}; "
          f"closed form {(alpha[1] + counts).tolist()}")


def random_walk(steps=50, q=0.3, r=0.5):
    print("== 3. a linear-Gaussian model written with Normal distributions")
    ys = np.cumsum(q * rng.standard_normal(steps)) + r * rng.standard_normal(steps)
    xs = [fc.Variable(f"x{t}", fc.Real) for t in range(steps)]
    model = Normal(0.0, 1.0, xs[0])
    for t in range(steps):
        if t:
            model = model + Normal(xs[t - 1], q, xs[t])
        model = model + Normal(xs[t], r, ys[t])
    names = frozenset(x.name for x in xs)
    by_normals = model.reduce(ops.logaddexp, names).item()

    # The Gaussian route: the same factors as Gaussian atoms and affine substitutions.
    def gauss(name, sd):  # log N(name; 0, sd)
        g = fc.Gaussian(mean=np.zeros(1), covariance=np.array([[sd * sd]]),
                        inputs={name: fc.Real})
        return g - 0.5 * math.log(2 * math.pi * sd * sd)

    factors = gauss("x0", 1.0)
    for t in range(steps):
        if t:
            factors = factors + gauss("d", q)(d=xs[t] - xs[t - 1])
        factors = factors + gauss("e", r)(e=ys[t] - xs[t])
    by_gaussians = factors.reduce(ops.logaddexp, names).item()
    m, v, by_filter = 0.0, 1.0, 0.0  # a hand-written Kalman filter
    for t, y in enumerate(ys):
        if t:
            v += q * q
        s = v + r * r
        by_filter += -0.5 * (math.log(2 * math.pi * s) + (y - m) ** 2 / s)
        k = v / s
        m, v = m + k * (y - m), (1 - k) * v
    print(f"log p(y_1:{steps}): Normal distributions {by_normals:.10f}   Gaussian atoms "
          f"{by_gaussians:.10f}   Kalman filter {by_filter:.10f}")
    with lazy:
        lazy_model = Normal(0.0, 1.0, xs[0]) + Normal(xs[0], r, ys[0])
    print(f"(under lazy it is recorded as {type(lazy_model).__name__}(add, "
          f"{type(lazy_model.lhs).__name__}, {type(lazy_model.rhs).__name__}); exact evaluates "
          f"it to {type(fc.reinterpret(lazy_model)).__name__} of Gaussian + Tensor)")


def plot(grid, dens) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k, name in enumerate("AB"):
        ax.plot(grid, dens[k], label=f"arm {name}")
    ax.set_xlim(0.05, 0.25)
    ax.set_xlabel("click rate")
    ax.set_ylabel("posterior density")
    ax.legend()
    fig.tight_layout()
    path = out_path("conjugate_models.png")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main():
    grid, dens = ab_test()
    dice()
    random_walk()
    plot(grid, dens)


if __name__ == "__main__":
    main()
