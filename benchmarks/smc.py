"""Sequential Monte Carlo for allocation models and HMMs (issue #32), one thread.

Rows: time per run, and bias and standard deviation of log Z-hat against exact evidence
(the enumerator ``log_marginal_exact`` for BAM; the forward algorithm for the HMM).

- BAM (KL-NMF, Figure 9's X1 and X2, K = 2, 3, a in {1, 100}, b = a / T, 1,000 particles):
  ``smc`` (numpy; jax with the sweep under ``jax.jit``), both schemes, against a hand-written
  numpy BAM-SIS-R of the same model (Algorithm 3, vectorized over particles).
- HMM (4 states, 100 steps, random Dirichlet(1) transitions and emissions over 5 symbols, 100
  particles): ``hmm_smc`` (jax, jit; joint and adaptive schemes) against a hand-written numpy
  bootstrap filter and a hand-written numpy fully adapted filter, and the bootstrap filter of
  the ``particles`` package (Chopin's; default settings: systematic resampling when the ESS
  falls below N/2) where it imports. It is not a dependency: install it beside the venv with
  ``pip install --no-deps --target DIR particles numba llvmlite joblib cloudpickle`` and set
  ``PARTICLES_PATH=DIR``.
- Figure 10 (``--only fig10``): PARAFAC (CP, ``r -> i1, i2, i3``) rank selection on a synthetic
  20x25x30 tensor of 500 tokens from rank 5 (a = 30): SMC's log-evidence (jax, joint scheme,
  without and with Gibbs rejuvenation moves) and the VB bound for R = 1..8; then the time
  of one SMC run and one VB fit against the tensor's size (4^3 .. 32^3 cells, 1,000 tokens).

    python benchmarks/smc.py [--quick] [--only bam|hmm|fig10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.special import gammaln, logsumexp  # noqa: E402

from funsor_core.allocation import AllocationModel  # noqa: E402
from funsor_core.smc import hmm_smc, smc  # noqa: E402

jax.config.update("jax_enable_x64", True)

X1 = np.array([[2, 1, 1, 0], [0, 0, 1, 2], [0, 0, 1, 1]])
X2 = np.array([[4, 3, 0], [0, 0, 3], [0, 0, 3]])
NMF = {"k": (), "i": ("k",), "j": ("k",)}


def _systematic(w, rng):
    m = len(w)
    return np.minimum(np.searchsorted(np.cumsum(w), (np.arange(m) + rng.random()) / m), m - 1)


def numpy_bam(X, K, a, b, M, rng, threshold=0.5):
    """Hand-written BAM-SIS-R for k -> i, k -> j under BDeu (Algorithm 3, tokens shuffled)."""
    n_i, n_j = X.shape
    T = int(X.sum())
    cells = np.repeat(np.argwhere(X >= 0), X.reshape(-1), axis=0)[rng.permutation(T)]
    ak, aik, ajk = a / K, a / (n_i * K), a / (n_j * K)
    Sk, Sik, Sjk = np.zeros((M, K)), np.zeros((M, n_i, K)), np.zeros((M, n_j, K))
    logw = np.full(M, -np.log(M))
    log_z = (gammaln(a + T) - gammaln(a) + a * np.log(b) - (a + T) * np.log(b + 1)
             - gammaln(X + 1.0).sum())
    for tau, (i, j) in enumerate(cells):
        theta = (ak + Sk) / (a + tau) * (aik + Sik[:, i]) / (ak + Sk) * (ajk + Sjk[:, j]) \
            / (ak + Sk)
        u = theta.sum(1)
        logw = logw + np.log(u)
        inc = logsumexp(logw)
        log_z += inc
        logw -= inc
        w = np.exp(logw)
        if 1.0 / (w * w).sum() < threshold * M:
            idx = _systematic(w, rng)
            Sk, Sik, Sjk, theta, u = Sk[idx], Sik[idx], Sjk[idx], theta[idx], u[idx]
            logw = np.full(M, -np.log(M))
        c = (np.cumsum(theta / u[:, None], 1) < rng.random(M)[:, None]).sum(1).clip(0, K - 1)
        rows = np.arange(M)
        Sk[rows, c] += 1
        Sik[rows, i, c] += 1
        Sjk[rows, j, c] += 1
    return log_z


def _random_hmm(seed, K=4, T=100, V=5):
    rng = np.random.default_rng(seed)
    A, B, pi = rng.dirichlet(np.ones(K), K), rng.dirichlet(np.ones(V), K), np.full(K, 1 / K)
    x, ys = rng.choice(K, p=pi), []
    for t in range(T):
        x = rng.choice(K, p=A[x]) if t else x
        ys.append(rng.choice(V, p=B[x]))
    lg = np.log(B[:, ys].T)
    alpha = np.log(pi) + lg[0]
    for t in range(1, T):
        alpha = logsumexp(alpha[:, None] + np.log(A), 0) + lg[t]
    return np.log(pi), np.log(A), lg, logsumexp(alpha)


def numpy_bootstrap(li, la, lg, M, rng):
    K = len(li)
    x, log_z = rng.choice(K, size=M, p=np.exp(li)), 0.0
    for t in range(len(lg)):
        if t:
            x = (np.cumsum(np.exp(la[x]), 1) < rng.random(M)[:, None]).sum(1).clip(0, K - 1)
        w = lg[t][x]
        log_z += logsumexp(w) - np.log(M)
        x = x[_systematic(np.exp(w - logsumexp(w)), rng)]
    return log_z


def numpy_adapted(li, la, lg, M, rng):
    """Hand-written fully adapted filter: resample by p(y_t | x_{t-1}), then draw x_t."""
    K = len(li)
    ext = np.vstack([la, li])
    x, log_z = np.full(M, K), 0.0
    for t in range(len(lg)):
        joint = ext[x] + lg[t]
        u = logsumexp(joint, 1)
        log_z += logsumexp(u) - np.log(M)
        idx = _systematic(np.exp(u - logsumexp(u)), rng)
        p = np.exp(joint[idx] - u[idx, None])
        x = (np.cumsum(p, 1) < rng.random(M)[:, None]).sum(1).clip(0, K - 1)
    return log_z


def particles_bootstrap(li, la, lg, M):
    """The bootstrap filter of the ``particles`` package on the same HMM, or None when it does
    not import. Observations enter through their log likelihoods ``lg[t]`` (a distribution
    whose ``logpdf`` returns them), so the filter sees exactly the model the other rows see."""
    if os.environ.get("PARTICLES_PATH"):
        sys.path.insert(0, os.environ["PARTICLES_PATH"])
    try:
        import particles
        from particles import distributions as dists
        from particles import state_space_models as ssm
    except ImportError:
        return None
    p0, pa = np.exp(li), np.exp(la)

    class Known(dists.ProbDist):
        def __init__(self, w):
            self.w = w

        def logpdf(self, y):
            return self.w

    class HMM(ssm.StateSpaceModel):
        def PX0(self):
            return dists.Categorical(p=p0)

        def PX(self, t, xp):
            return dists.Categorical(p=pa[xp])

        def PY(self, t, xp, x):
            return Known(lg[t][x])

    def run(s):
        np.random.seed(s)  # particles draws from numpy's global generator
        pf = particles.SMC(fk=ssm.Bootstrap(ssm=HMM(), data=list(range(len(lg)))), N=M)
        pf.run()
        return float(pf.logLt)

    return run


def _stats(fn, runs):
    """The values of ``runs`` runs and the fastest run's seconds (the machine is shared: the
    minimum is the least disturbed)."""
    vals, best = [], float("inf")
    for s in range(runs):
        t0 = time.perf_counter()
        vals.append(fn(s))
        best = min(best, time.perf_counter() - t0)
    return np.array(vals), best


def _bam_rows(model, X, K, a, b, M):
    Xj = jnp.asarray(X)
    return (lambda s: numpy_bam(X, K, a, b, M, np.random.default_rng(s)),
            lambda s: float(smc(model, X, M, rng_key=s).log_z),
            lambda s: float(smc(model, X, M, rng_key=s, scheme="joint").log_z),
            lambda s: float(smc(model, Xj, M, rng_key=s).log_z),
            lambda s: float(smc(model, Xj, M, rng_key=s, scheme="joint").log_z))


def _hmm_rows(li, la, lg, M, runs, np_runs):
    args = [jnp.asarray(v) for v in (li, la, lg)]
    rows = {
        "ours jax joint": (lambda s: float(hmm_smc(*args, M, rng_key=s).log_z), runs),
        "ours jax adaptive": (lambda s: float(hmm_smc(*args, M, rng_key=s,
                                                      scheme="adaptive").log_z), runs),
        "ours numpy joint": (lambda s: float(hmm_smc(li, la, lg, M, rng_key=s).log_z), np_runs),
        "numpy fully adapted": (lambda s: numpy_adapted(li, la, lg, M, np.random.default_rng(s)),
                                np_runs),
        "numpy bootstrap": (lambda s: numpy_bootstrap(li, la, lg, M, np.random.default_rng(s)),
                            np_runs),
    }
    peer = particles_bootstrap(li, la, lg, M)
    if peer is not None:
        rows["particles bootstrap"] = (peer, np_runs)
    return rows


def bench_bam(runs: int, M: int):
    print(f"\nBAM (KL-NMF), {M} particles, {runs} runs each: mean - exact, std of log Z-hat, "
          f"ms of the fastest run")
    print(f"{'case':18} {'exact':>9} | {'numpy hand':>22} | {'ours numpy adaptive':>22} | "
          f"{'ours numpy joint':>22} | {'ours jax adaptive':>22} | {'ours jax joint':>22}")
    for name, X in (("X1", X1), ("X2", X2)):
        for K in (2, 3):
            for a in (1.0, 100.0):
                b = a / X.sum()
                model = AllocationModel(NMF, {"i": X.shape[0], "j": X.shape[1], "k": K},
                                        ("i", "j"), a, b)
                exact = model.log_marginal_exact(X)
                cols = []
                for fn in _bam_rows(model, X, K, a, b, M):
                    fn(100)  # warm-up (compiles the jax sweep once per structure)
                    vals, sec = _stats(fn, runs)
                    cols.append(f"{vals.mean() - exact:+8.4f} {vals.std():7.4f} "
                                f"{sec * 1e3:6.1f}")
                print(f"{name} K={K} a={a:<5g} {exact:9.3f} | " + " | ".join(cols))


def bench_hmm(runs: int, np_runs: int, M: int = 100):
    print(f"\nHMM, 4 states, 100 steps, {M} particles: mean - exact, std of log Z-hat, "
          f"mean of Z-hat / Z, ms of the fastest run (jax rows: {runs} runs; numpy rows: "
          f"{np_runs})")
    for seed in (0, 1):
        li, la, lg, exact = _random_hmm(seed)
        rows = _hmm_rows(li, la, lg, M, runs, np_runs)
        print(f"HMM seed {seed}: exact log Z = {exact:.4f}")
        for name, (fn, n) in rows.items():
            fn(10_000)
            vals, sec = _stats(fn, n)
            ratio = np.exp(vals - exact)
            print(f"  {name:22} {vals.mean() - exact:+8.4f} {vals.std():7.4f} "
                  f"{ratio.mean():7.4f} ± {ratio.std() / np.sqrt(n):.4f} {sec * 1e3:8.2f}")


def cp_model(shape, R, a, T):
    parents = {"r": (), "i1": ("r",), "i2": ("r",), "i3": ("r",)}
    cards = {"r": R, "i1": shape[0], "i2": shape[1], "i3": shape[2]}
    return AllocationModel(parents, cards, ("i1", "i2", "i3"), a, a / T)


def cp_tensor(rng, shape, R, T, a):
    """T tokens of the BAM CP model with BDeu Dirichlets (equivalent sample size a)."""
    topic = rng.dirichlet(np.full(R, a / R))
    factors = [rng.dirichlet(np.full(n, a / (R * n)), R) for n in shape]
    X = np.zeros(shape, dtype=np.int64)
    for r in rng.choice(R, size=T, p=topic):
        X[tuple(rng.choice(n, p=f[r]) for n, f in zip(shape, factors))] += 1
    return X


def bench_fig10(M: int = 256, ranks=range(1, 9), moves: int = 20):
    from funsor_core.allocation import vb

    X = cp_tensor(np.random.default_rng(0), (20, 25, 30), 5, 500, 30.0)
    print(f"\nFigure 10a: CP rank selection, 20x25x30, {X.sum()} tokens from R = 5, a = 30; "
          f"SMC {M} particles (jax), mean (std) of 3 runs, without and with {moves} "
          f"Gibbs moves per token; VB best of 3 restarts")
    for R in ranks:
        model = cp_model(X.shape, R, 30.0, X.sum())
        cols = []
        for scheme, k in (("joint", 0), ("joint", moves), ("adaptive", moves)):
            est = [float(smc(model, jnp.asarray(X), M, rng_key=s, scheme=scheme,
                             moves=k).log_z) for s in range(3)]
            cols.append(f"{np.mean(est):10.2f} ({np.std(est):5.2f})")
        bound = vb(model, X, num_iters=300, num_restarts=3, rng_key=0).elbo
        print(f"  R={R}: SMC joint {cols[0]}   + moves {cols[1]}   adaptive + moves {cols[2]}"
              f"   VB {bound:10.2f}")
    print("Figure 10b: seconds per run against size (R = 5, 1,000 tokens; SMC after compile)")
    for n in (4, 8, 16, 32):
        X = cp_tensor(np.random.default_rng(1), (n, n, n), 5, 1000, 30.0)
        model = cp_model(X.shape, 5, 30.0, X.sum())
        Xj = jnp.asarray(X)
        float(smc(model, Xj, M, rng_key=0, scheme="joint").log_z)
        t0 = time.perf_counter()
        float(smc(model, Xj, M, rng_key=1, scheme="joint").log_z)
        t1 = time.perf_counter()
        vb(model, X, num_iters=100, rng_key=0, tol=-1.0)
        t2 = time.perf_counter()
        print(f"  {n}^3 cells: SMC {t1 - t0:7.3f} s   VB (100 iterations) {t2 - t1:7.3f} s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("bam", "hmm", "fig10"))
    args = parser.parse_args()
    quick = args.quick
    if args.only in (None, "bam"):
        bench_bam(runs=2, M=200) if quick else bench_bam(runs=5, M=1000)
    if args.only in (None, "hmm"):
        bench_hmm(runs=20, np_runs=5) if quick else bench_hmm(runs=1000, np_runs=100)
    if args.only in (None, "fig10"):
        bench_fig10(M=64, ranks=(4, 5)) if quick else bench_fig10()


if __name__ == "__main__":
    main()
