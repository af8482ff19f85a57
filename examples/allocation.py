"""Bayesian allocation models (Cemgil et al.): scoring structures and choosing the rank of a
nonnegative factorization by its marginal likelihood.

1. Example 3.2: a 2x2 contingency table scored under the independent model and the two
   dependent DAGs, with consistent (BDeu) and flat Dirichlet priors. Markov-equivalent DAGs
   agree only under BDeu.
2. Figure 9 (a = 1, b = a / T): log p(X | K) of the toy matrices X1 and X2 for K = 1..4,
   exact (enumerating every allocation tensor), by SMC (``funsor_core.smc.smc``, the mean of
   2 runs of 200 particles) and the variational bound (best of 5 restarts).
3. NMF rank selection on a synthetic 8x10 sparse count matrix drawn from a rank-2 allocation
   model: SMC's log-evidence peaks near the true rank, the VB bound falls away above it.
4. A wide hidden part: a chain of 12 hidden indices of 3 values between two visible ones
   (3^12 hidden cells per particle). SMC eliminates them per token along the contraction
   planner's order (tables of at most 27 cells) and draws them backwards through it.
5. A time-varying HMM (one transition matrix per step): ``hmm_smc`` against the forward
   algorithm.

Run: ``python examples/allocation.py`` (part of ``make demo``; a few seconds). Writes
``examples/out/allocation.png`` when matplotlib is installed.
"""

from __future__ import annotations

import time

import numpy as np
from _plotting import out_path, pyplot

from funsor_core.allocation import AllocationModel, vb
from funsor_core.smc import smc

NMF = {"k": (), "i": ("k",), "j": ("k",)}
X1 = np.array([[2, 1, 1, 0], [0, 0, 1, 2], [0, 0, 1, 1]])
X2 = np.array([[4, 3, 0], [0, 0, 3], [0, 0, 3]])


def nmf(X, K, a):
    return AllocationModel(NMF, {"i": X.shape[0], "j": X.shape[1], "k": K}, ("i", "j"), a,
                           a / X.sum())


def example_3_2():
    S = np.array([[2, 1], [0, 1]])
    graphs = {"i  j (independent)": {"i": (), "j": ()}, "i <- j": {"i": ("j",), "j": ()},
              "i -> j": {"i": (), "j": ("i",)}}
    print("Example 3.2: log pi(S) for S = [[2, 1], [0, 1]], a = b = 1")
    print(f"  {'structure':20} {'BDeu':>9} {'flat a/4':>9}")
    for name, parents in graphs.items():
        row = [AllocationModel(parents, {"i": 2, "j": 2}, ("i", "j"), 1.0, 1.0, prior)
               .log_marginal_allocation(S) for prior in ("bdeu", "flat")]
        print(f"  {name:20} {row[0]:9.5f} {row[1]:9.5f}")


def figure_9(num_particles=200):
    print("\nFigure 9 (a = 1, b = a / T): log p(X | K), exact / SMC (mean of 2) / VB (best of 5)")
    table = {}
    for name, X in (("X1", X1), ("X2", X2)):
        for K in (1, 2, 3, 4):
            model = nmf(X, K, 1.0)
            exact = model.log_marginal_exact(X)
            est = np.mean([float(smc(model, X, num_particles, rng_key=s).log_z)
                           for s in range(2)])
            bound = vb(model, X, num_restarts=5, rng_key=0).elbo
            table[name, K] = (exact, est, bound)
            print(f"  {name} K={K}: exact {exact:8.3f}   SMC {est:8.3f}   VB {bound:8.3f}")
    return table


def synthetic(rng, shape=(8, 10), rank=2, tokens=60, a=1.0):
    """Tokens of a rank-``rank`` allocation model: a topic per token, then a row and a column
    from that topic's sparse distributions."""
    topics = rng.dirichlet(np.full(rank, 5.0))
    rows = rng.dirichlet(np.full(shape[0], 0.2), rank)
    cols = rng.dirichlet(np.full(shape[1], 0.2), rank)
    X = np.zeros(shape, dtype=np.int64)
    for k in rng.choice(rank, size=tokens, p=topics):
        X[rng.choice(shape[0], p=rows[k]), rng.choice(shape[1], p=cols[k])] += 1
    return X


def rank_selection(num_particles=200):
    X = synthetic(np.random.default_rng(3))
    print(f"\nNMF rank selection: 8x10 matrix, {X.sum()} tokens from a rank-2 model, "
          f"{np.count_nonzero(X)} nonzero cells")
    scores = {}
    for K in (1, 2, 3, 4):
        model = nmf(X, K, 1.0)
        est = float(smc(model, X, num_particles, rng_key=0, scheme="joint").log_z)
        scores[K] = (est, vb(model, X, num_iters=100, num_restarts=2, rng_key=0).elbo)
        print(f"  K={K}: SMC {scores[K][0]:9.3f}   VB {scores[K][1]:9.3f}")
    best = max(scores, key=lambda k: scores[k][0])
    print(f"  SMC picks K = {best} (true rank 2)")
    return scores


def wide_hidden_chain(num_particles=200, length=12):
    parents = {f"h{k}": ((f"h{k - 1}",) if k else ()) for k in range(length)}
    parents |= {"v": (f"h{length - 1}",), "w": ("h0",)}
    cards = {n: 3 for n in parents} | {"v": 4, "w": 4}
    model = AllocationModel(parents, cards, ("v", "w"), 1.0, 0.1)
    X = np.diag([3, 2, 2, 1])
    start = time.perf_counter()
    est = [float(smc(model, X, num_particles, rng_key=s).log_z) for s in range(3)]
    print(f"\nA hidden chain of {length} indices (3^{length} = {3 ** length:,} hidden cells per "
          f"particle), {X.sum()} tokens on the diagonal of a 4x4 table: SMC log p(X) = "
          f"{np.mean(est):.3f} ± {np.std(est):.3f} (3 runs of {num_particles} particles, "
          f"{(time.perf_counter() - start) / 3:.2f} s each)")


def time_varying_hmm(num_particles=100, steps=50, states=3):
    from scipy.special import logsumexp

    from funsor_core.smc import hmm_smc

    rng = np.random.default_rng(0)
    log_init = np.log(np.full(states, 1.0 / states))
    log_trans = np.log(rng.dirichlet(np.ones(states), (steps - 1, states)))
    log_obs = np.log(rng.dirichlet(np.ones(states), steps))
    alpha = log_init + log_obs[0]
    for t in range(1, steps):
        alpha = logsumexp(alpha[:, None] + log_trans[t - 1], 0) + log_obs[t]
    est = [float(hmm_smc(log_init, log_trans, log_obs, num_particles, rng_key=s).log_z)
           for s in range(5)]
    print(f"\nTime-varying HMM ({states} states, {steps} steps, one transition matrix per "
          f"step): forward algorithm {logsumexp(alpha):.4f}, hmm_smc {np.mean(est):.4f} ± "
          f"{np.std(est):.4f} (5 runs of {num_particles} particles)")


def plot(table, scores):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, name in zip(axes, ("X1", "X2")):
        for col, label in enumerate(("exact", "SMC", "VB")):
            ax.plot([1, 2, 3, 4], [table[name, K][col] for K in (1, 2, 3, 4)], "o-",
                    label=label)
        ax.set(title=f"Figure 9: {name}, a = 1", xlabel="K", ylabel="log p(X | K)")
        ax.legend()
    ks = sorted(scores)
    axes[2].plot(ks, [scores[k][0] for k in ks], "o-", label="SMC")
    axes[2].plot(ks, [scores[k][1] for k in ks], "s-", label="VB")
    axes[2].set(title="rank selection (true rank 2)", xlabel="K")
    axes[2].legend()
    fig.tight_layout()
    path = out_path("allocation.png")
    fig.savefig(path)
    print(f"  wrote {path}")


def main():
    start = time.perf_counter()
    example_3_2()
    table = figure_9()
    scores = rank_selection()
    wide_hidden_chain()
    time_varying_hmm()
    plot(table, scores)
    print(f"\n(total {time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
