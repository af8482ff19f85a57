"""The Gaussian mixture marginal likelihood of Figure 1 of "Functional Tensors for
Probabilistic Programming", written as that term and estimated by ``MonteCarlo``.

N points in 3-d come from a mixture of two clusters; the cluster means ``z`` (a
``Reals[2, 3]`` variable) have a Gaussian prior, each point a cluster ``c``::

    p(x) = sum_z [prod_c p_z(z[c])] prod_j sum_c p_c p_{x|c,z}(z[c], x_j)

Summing ``c`` inside the product over points leaves a mixture of 2^N Gaussians in ``z``:
``exact`` keeps the term lazy. Under ``MonteCarlo(particle=Bint[P])`` the sum over ``z`` draws
``z`` from its prior, after which each point's mixture over ``c`` is a cheap exact sum; the
estimate is the log of the mean over particles. The prior is a poor proposal (few particles
land where the posterior is), so the same integral is also estimated by importance sampling,
``Integrate(q, exp(p - log q), {perm, z})``: ``q`` a Gaussian around the EM estimate of ``z``
for each of the two label orders ``perm``. ``MonteCarlo`` draws ``z`` given ``perm`` and
sums ``perm`` exactly.

Printed: on a short copy (N = 10) the exact value, by enumeration of the 2^10 cluster
assignments (each a Gaussian integral, computed by funsor-core and again in numpy), beside
both Monte Carlo estimates with growing particle counts; on the full N = 50 data of Figure 1
(no exact value) the Monte Carlo estimates. Plots them in
``examples/out/gaussian_mixture.png`` when matplotlib is installed.

Run: ``make demo`` (or ``python examples/gaussian_mixture.py``).
"""

from __future__ import annotations

import itertools

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from interpretations import MonteCarlo

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional
    def tqdm(iterable, **kwargs):
        return iterable

K, D = 2, 3
SIGMA = np.array([0.6, 1.0])  # each cluster's noise
TAU = 2.0  # prior scale of the cluster means


def simulate(n, seed):
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, TAU, (K, D))
    clusters = rng.integers(0, K, n)
    return means[clusters] + rng.normal(size=(n, D)) * SIGMA[clusters][:, None]


def figure1_terms():
    """p_c, p_z and p_{x|c,z} of Figure 1 (log densities)."""
    p_c = fc.Tensor(np.log(np.full(K, 1.0 / K)), {"c": fc.Bint[K]})
    p_z = fc.Gaussian(mean=np.zeros(D), covariance=TAU ** 2 * np.eye(D),
                      inputs={"zc": fc.Reals[D]})
    p_z = p_z - p_z.log_normalizer
    # x | c, zc ~ N(zc, SIGMA_c^2 I): a Gaussian over (zc, x), batched over c
    eye = np.eye(D)
    p_xc = fc.Gaussian(white_vec=np.zeros((K, D)),
                       prec_sqrt=np.stack([np.concatenate([-eye, eye]) / s for s in SIGMA]),
                       inputs={"c": fc.Bint[K], "zc": fc.Reals[D], "x": fc.Reals[D]})
    p_xc = p_xc + fc.Tensor(-D * np.log(SIGMA) - 0.5 * D * np.log(2 * np.pi), {"c": fc.Bint[K]})
    return p_c, p_z, p_xc


def marginal_likelihood(x):
    """The term p_x of Figure 1 (in log space): lazy under exact, estimated under MonteCarlo."""
    return marginal_likelihood_integrand(x).reduce(ops.logaddexp, "z")


def exact_by_enumeration(x):
    """Sum over every assignment of clusters to points, each a Gaussian integral over z."""
    n = len(x)
    p_c, p_z, p_xc = figure1_terms()
    z = fc.Variable("z", fc.Reals[K, D])
    assignments = np.array(list(itertools.product(range(K), repeat=n)))
    c = fc.Tensor(assignments, {"a": fc.Bint[len(assignments)], "j": fc.Bint[n]}, K)
    j = fc.Variable("j", fc.Bint[n])
    likelihood = (p_c(c=c) + p_xc(c=c, zc=z[c], x=fc.Tensor(x)[j])).reduce(ops.add, "j")
    prior = p_z(zc=z[fc.Variable("k", fc.Bint[K])]).reduce(ops.add, "k")
    return float((prior + likelihood).reduce(ops.logaddexp, {"z", "a"}).data)


def numpy_enumeration(x):
    """The same sum in numpy: within a cluster, each coordinate of its points is jointly
    Gaussian with covariance TAU^2 11' + SIGMA^2 I."""
    n = len(x)
    totals = []
    for assignment in tqdm(list(itertools.product(range(K), repeat=n)), desc="numpy enumeration",
                           leave=False):
        total = n * np.log(1.0 / K)
        for k in range(K):
            idx = [i for i, a in enumerate(assignment) if a == k]
            if not idx:
                continue
            cov = TAU ** 2 * np.ones((len(idx), len(idx))) + SIGMA[k] ** 2 * np.eye(len(idx))
            pts = x[idx]
            sign, logdet = np.linalg.slogdet(2 * np.pi * cov)
            total += -0.5 * (D * logdet + np.einsum("id,ij,jd->", pts, np.linalg.inv(cov), pts))
        totals.append(total)
    totals = np.array(totals)
    return totals.max() + np.log(np.exp(totals - totals.max()).sum())


def _summary(log_w):
    """log of the mean of exp(log_w), its standard error (delta method), and the effective
    sample size of the weights."""
    log_w = np.asarray(log_w)
    w = np.exp(log_w - log_w.max())
    se = w.std() / (w.mean() * np.sqrt(len(w)))
    return log_w.max() + np.log(w.mean()), se, w.sum() ** 2 / (w ** 2).sum()


def prior_proposal(x, particles, seed):
    """The Figure 1 term under MonteCarlo: z drawn from its prior."""
    with MonteCarlo(rng_key=seed, particle=fc.Bint[particles]):
        estimate = marginal_likelihood(x)
    return _summary(estimate.data)


def em_means(x, iterations=50):
    """The MAP of z by EM (fixed noise), and each cluster's posterior precision given the
    responsibilities (the proposal's scale)."""
    rng = np.random.default_rng(0)
    m = x[rng.choice(len(x), K, replace=False)]
    for _ in range(iterations):
        logr = -0.5 * ((x[:, None] - m[None]) ** 2).sum(-1) / SIGMA ** 2 - D * np.log(SIGMA)
        r = np.exp(logr - logr.max(1, keepdims=True))
        r /= r.sum(1, keepdims=True)
        precision = 1 / TAU ** 2 + r.sum(0) / SIGMA ** 2
        m = (r.T @ x) / SIGMA[:, None] ** 2 / precision[:, None]
    return m, precision


def importance_proposal(x, particles, seed, inflate=1.5):
    """log p(x) = log E_q[exp(p(x, z) - log q(z))], q a mixture over the two label orders
    of Gaussians at the EM estimate (variances inflated, so that q's tails cover p's)."""
    m, precision = em_means(x)
    order = np.array([[0, 1], [1, 0]])  # perm 1 swaps the labels
    variances = np.repeat(inflate / precision[order], D, axis=-1)  # (perm, K * D)
    q = fc.Gaussian(mean=m[order].reshape(2, K * D),
                    covariance=np.stack([np.diag(v) for v in variances]),
                    inputs={"perm": fc.Bint[2], "zf": fc.Reals[K * D]})
    z = fc.Variable("z", fc.Reals[K, D])
    q = (q - q.log_normalizer + np.log(0.5))(zf=z.reshape((K * D,)))  # a density of z
    log_q = q.reduce(ops.logaddexp, "perm")  # a mixture: lazy until z is drawn
    log_p = marginal_likelihood_integrand(x)
    with MonteCarlo(rng_key=seed, particle=fc.Bint[particles]):
        estimate = fc.Integrate(q, (log_p - log_q).exp(), {"perm", "z"})
    return _summary(np.log(estimate.data))


def marginal_likelihood_integrand(x):
    """log p(x, z): the term of Figure 1 before z is summed."""
    p_c, p_z, p_xc = figure1_terms()
    z = fc.Variable("z", fc.Reals[K, D])
    c = fc.Variable("c", fc.Bint[K])
    j = fc.Variable("j", fc.Bint[len(x)])
    per_point = (p_c + p_xc(zc=z[c], x=fc.Tensor(x)[j])).reduce(ops.logaddexp, "c")
    return p_z(zc=z[c]).reduce(ops.add, "c") + per_point.reduce(ops.add, "j")


def main():
    print("== Figure 1: Gaussian mixture marginal likelihood (2 clusters, 3-d points)")
    short = simulate(10, seed=0)
    lazy_term = marginal_likelihood(short)
    print(f"under exact the term stays lazy: {type(lazy_term).__name__} over "
          f"{sorted(lazy_term.reduced_vars)}")
    exact = exact_by_enumeration(short)
    print(f"N = 10: exact by enumeration of 2^10 assignments: log p(x) = {exact:.4f}")
    print(f"        the same in numpy:                        log p(x) = "
          f"{numpy_enumeration(short):.4f}")
    rows = {"prior": [], "importance": []}
    for particles in (100, 1000, 10000, 100000):
        for name, fn in (("prior", prior_proposal), ("importance", importance_proposal)):
            log_mean, se, ess = fn(short, particles, seed=1)
            rows[name].append((particles, log_mean, se))
            print(f"        MonteCarlo, {name:>10} proposal, {particles:>6} particles: "
                  f"{log_mean:9.4f} +- {se:.4f}  (effective sample size {ess:.0f})")
    full = simulate(50, seed=0)
    print("N = 50 (Figure 1's size; 2^50 assignments, no exact value):")
    for name, fn in (("prior", prior_proposal), ("importance", importance_proposal)):
        log_mean, se, ess = fn(full, 100000, seed=2)
        print(f"        MonteCarlo, {name:>10} proposal, 100000 particles: "
              f"{log_mean:9.4f} +- {se:.4f}  (effective sample size {ess:.0f})")
    plot(rows, exact)


def plot(rows, exact):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(5, 3))
    for name, values in rows.items():
        n, m, se = (np.array(v) for v in zip(*values))
        ax.errorbar(n, m, yerr=se, fmt="o-", label=f"MonteCarlo, {name} proposal")
    ax.axhline(exact, color="k", ls="--", label="exact (enumeration)")
    ax.set_xscale("log")
    ax.set_xlabel("particles")
    ax.set_ylabel("log p(x), N = 10")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out_path("gaussian_mixture.png")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
