"""A plated discrete Bayesian network: students, tests and one course, inferred exactly.

The network (every variable discrete, every table a random conditional distribution):

    difficulty D (3)         grading G (2)                         one per course
    intelligence I_s (3)     motivation M_s (2)                    one per student s
    effort E_sj (2) ~ p(E | M_s)                                   one per test j of student s
    score X_sj (4)  ~ p(X | I_s, E_sj, D, G)                       observed

With 12 students and 3 tests each, 62 hidden variables. One forward pass of tensor variable
elimination recorded on a tape, and its backward pass, give:

1. the posterior marginal of every variable (``infer_discrete(..., "marginals")``);
2. the MAP joint assignment and the 3 best (``"map"``, ``"kbest"``);
3. posterior samples (``"sample"``), whose frequencies match the marginals;
4. the entropy of the posterior.

Each answer is checked against brute-force enumeration of a small copy (2 students, 2
tests: 10 hidden variables), and the marginals are timed against pgmpy's variable
elimination (one query per variable) when pgmpy is installed. A plot of the posteriors goes
to ``examples/out/bayesian_network.png`` when matplotlib is installed.

Run: ``make demo`` (or ``python examples/bayesian_network.py``).
"""

from __future__ import annotations

import itertools
import os
import time
import warnings

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc

ND, NG, NI, NM, NE, NX = 3, 2, 3, 2, 2, 4


def make_network(num_students: int, num_tests: int, seed: int = 0) -> dict:
    """Random conditional probability tables and observed scores (from the model itself)."""
    rng = np.random.default_rng(seed)
    cpd = {
        "D": rng.dirichlet(np.ones(ND)),
        "G": rng.dirichlet(np.ones(NG)),
        "I": rng.dirichlet(np.ones(NI)),
        "M": rng.dirichlet(np.ones(NM)),
        "E": rng.dirichlet(np.ones(NE), size=NM),                       # E | M
        "X": rng.dirichlet(np.ones(NX) * 0.7, size=(NI, NE, ND, NG)),   # X | I, E, D, G
    }
    d, g = rng.choice(ND, p=cpd["D"]), rng.choice(NG, p=cpd["G"])
    scores = np.zeros((num_students, num_tests), dtype=int)
    for s in range(num_students):
        i, m = rng.choice(NI, p=cpd["I"]), rng.choice(NM, p=cpd["M"])
        for j in range(num_tests):
            e = rng.choice(NE, p=cpd["E"][m])
            scores[s, j] = rng.choice(NX, p=cpd["X"][i, e, d, g])
    return {"cpd": cpd, "scores": scores, "S": num_students, "J": num_tests}


def log_factors(net: dict) -> list:
    """The network as log factors with plates ``s`` (students) and ``j`` (tests); the scores
    are substituted into p(X | ...), leaving a factor over the plates and X's parents."""
    cpd, S, J = net["cpd"], net["S"], net["J"]
    s, j = fc.Bint[S], fc.Bint[J]
    log = np.log
    x_table = fc.Tensor(log(cpd["X"]), {"I": fc.Bint[NI], "E": fc.Bint[NE],
                                        "D": fc.Bint[ND], "G": fc.Bint[NG], "X": fc.Bint[NX]})
    observed = fc.Tensor(net["scores"], {"s": s, "j": j}, NX)
    return [
        fc.Tensor(log(cpd["D"]), {"D": fc.Bint[ND]}),
        fc.Tensor(log(cpd["G"]), {"G": fc.Bint[NG]}),
        fc.Tensor(np.tile(log(cpd["I"]), (S, 1)), {"s": s, "I": fc.Bint[NI]}),
        fc.Tensor(np.tile(log(cpd["M"]), (S, 1)), {"s": s, "M": fc.Bint[NM]}),
        fc.Tensor(np.tile(log(cpd["E"]), (S, J, 1, 1)), {"s": s, "j": j, "M": fc.Bint[NM],
                                                         "E": fc.Bint[NE]}),
        x_table(X=observed),  # p(X = score_sj | I_s, E_sj, D, G)
    ]


PLATES = {"s", "j"}


# -- brute force on the unrolled network ----------------------------------------------------
def unrolled_variables(net: dict) -> list:
    S, J = net["S"], net["J"]
    return ([("D", ()), ("G", ())] + [(v, (s,)) for v in "IM" for s in range(S)]
            + [("E", (s, t)) for s in range(S) for t in range(J)])


def brute_force_joint(net: dict):
    """log p(hidden, scores) over every joint assignment of the unrolled network."""
    cpd, S, J, scores = net["cpd"], net["S"], net["J"], net["scores"]
    names = unrolled_variables(net)
    size = {"D": ND, "G": NG, "I": NI, "M": NM, "E": NE}
    joint = np.zeros(tuple(size[v] for v, _ in names))
    pos = {key: a for a, key in enumerate(names)}
    for values in itertools.product(*(range(size[v]) for v, _ in names)):
        x = dict(zip(names, values))
        lp = np.log(cpd["D"][x["D", ()]]) + np.log(cpd["G"][x["G", ()]])
        for s in range(S):
            lp += np.log(cpd["I"][x["I", (s,)]]) + np.log(cpd["M"][x["M", (s,)]])
            for t in range(J):
                e = x["E", (s, t)]
                lp += np.log(cpd["E"][x["M", (s,)], e])
                lp += np.log(cpd["X"][x["I", (s,)], e, x["D", ()], x["G", ()], scores[s, t]])
        joint[values] = lp
    return names, pos, joint


def check_small_copy() -> None:
    net = make_network(2, 2, seed=1)
    factors = log_factors(net)
    names, pos, joint = brute_force_joint(net)
    log_z = np.logaddexp.reduce(joint.reshape(-1))
    p = np.exp(joint - log_z)
    marginals = fc.infer_discrete(factors, PLATES, "marginals")
    for (v, idx), a in pos.items():
        exact = p.sum(axis=tuple(b for b in range(p.ndim) if b != a))
        assert np.allclose(marginals[v].data[idx], exact), (v, idx)
    best = fc.infer_discrete(factors, PLATES, "map")
    argmax = np.unravel_index(np.argmax(joint), joint.shape)
    assert all(int(best[v].data[idx]) == argmax[a] for (v, idx), a in pos.items())
    scores, top = fc.infer_discrete(factors, PLATES, "kbest", k=3)
    assert np.allclose(scores.data, np.sort(joint.reshape(-1))[::-1][:3])
    entropy = fc.infer_discrete(factors, PLATES, "entropy")
    assert np.isclose(float(entropy.data), -(p * np.log(p)).sum())
    n = 20000
    samples = fc.infer_discrete(factors, PLATES, "sample", num_samples=n, rng_key=0)
    worst = 0.0
    for (v, idx), a in pos.items():
        exact = p.sum(axis=tuple(b for b in range(p.ndim) if b != a))
        freq = np.bincount(samples[v].data[(slice(None),) + idx], minlength=len(exact)) / n
        worst = max(worst, np.abs(freq - exact).max() / np.sqrt(exact.max() / n))
    assert worst < 5.0, worst
    print(f"small copy (2 students x 2 tests, {len(names)} hidden variables, "
          f"{joint.size} joint states): marginals, MAP, 3 best, entropy and sample frequencies "
          f"(worst deviation {worst:.1f} standard errors) agree with brute force")


# -- pgmpy ----------------------------------------------------------------------------------
def pgmpy_marginals(net: dict):
    """The unrolled network in pgmpy; every hidden variable's marginal by variable
    elimination (one query each). None when pgmpy is not installed."""
    try:
        with warnings.catch_warnings():  # pgmpy's own deprecation notices on import
            warnings.simplefilter("ignore", FutureWarning)
            from pgmpy.factors.discrete import TabularCPD
            from pgmpy.inference import VariableElimination
            try:
                from pgmpy.models import DiscreteBayesianNetwork as Network
            except ImportError:  # older pgmpy
                from pgmpy.models import BayesianNetwork as Network
    except ImportError:
        return None
    cpd, S, J = net["cpd"], net["S"], net["J"]
    edges, cpds = [], []
    cpds.append(TabularCPD("D", ND, cpd["D"][:, None]))
    cpds.append(TabularCPD("G", NG, cpd["G"][:, None]))
    for s in range(S):
        cpds.append(TabularCPD(f"I{s}", NI, cpd["I"][:, None]))
        cpds.append(TabularCPD(f"M{s}", NM, cpd["M"][:, None]))
        for t in range(J):
            e, x = f"E{s}_{t}", f"X{s}_{t}"
            edges += [(f"M{s}", e), (f"I{s}", x), (e, x), ("D", x), ("G", x)]
            cpds.append(TabularCPD(e, NE, cpd["E"].T, evidence=[f"M{s}"], evidence_card=[NM]))
            table = cpd["X"].reshape(-1, NX).T  # columns: (I, E, D, G) in row-major order
            cpds.append(TabularCPD(x, NX, table, evidence=[f"I{s}", e, "D", "G"],
                                   evidence_card=[NI, NE, ND, NG]))
    bn = Network(edges)
    bn.add_cpds(*cpds)
    evidence = {f"X{s}_{t}": int(net["scores"][s, t]) for s in range(S) for t in range(J)}
    hidden = [v for v in bn.nodes() if not v.startswith("X")]
    engine = VariableElimination(bn)
    start = time.perf_counter()
    result = {v: engine.query([v], evidence=evidence, show_progress=False).values
              for v in hidden}
    return result, time.perf_counter() - start


def main() -> None:
    check_small_copy()
    net = make_network(12, 3)
    factors = log_factors(net)
    hidden = 2 + 2 * net["S"] + net["S"] * net["J"]
    start = time.perf_counter()
    marginals = fc.infer_discrete(factors, PLATES, "marginals")
    t_marg = time.perf_counter() - start
    start = time.perf_counter()
    best = fc.infer_discrete(factors, PLATES, "map")
    t_map = time.perf_counter() - start
    scores, top = fc.infer_discrete(factors, PLATES, "kbest", k=3)
    samples = fc.infer_discrete(factors, PLATES, "sample", num_samples=2000, rng_key=0)
    entropy = float(fc.infer_discrete(factors, PLATES, "entropy").data)
    print(f"network: {net['S']} students x {net['J']} tests, {hidden} hidden variables")
    print(f"  marginals of all {hidden} variables: {t_marg * 1e3:.1f} ms (one forward-backward)")
    print(f"  MAP assignment: {t_map * 1e3:.1f} ms; difficulty={int(best['D'].data)}, "
          f"grading={int(best['G'].data)}, intelligence={best['I'].data.tolist()}")
    print(f"  3 best joint log scores: {np.round(scores.data, 3).tolist()}")
    print(f"  posterior entropy: {entropy:.3f} nats; p(difficulty) = "
          f"{np.round(marginals['D'].data, 3).tolist()}")
    freq = np.bincount(samples["D"].data, minlength=ND) / 2000
    print(f"  2000 posterior samples: frequency of difficulty = {np.round(freq, 3).tolist()}")
    peer = pgmpy_marginals(net)
    if peer is None:
        print("  pgmpy: missing (pip install pgmpy to time its variable elimination)")
    else:
        result, t_peer = peer
        assert np.allclose(result["D"], marginals["D"].data)
        assert all(np.allclose(result[f"I{s}"], marginals["I"].data[s]) for s in range(net["S"]))
        print(f"  pgmpy variable elimination, one query per variable: {t_peer * 1e3:.0f} ms "
              f"({t_peer / t_marg:.0f}x); same marginals")
    plot(net, marginals, samples)


def plot(net, marginals, samples) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    post = marginals["I"].data
    axes[0].imshow(post.T, aspect="auto", cmap="Blues", vmin=0, vmax=1)
    axes[0].set(xlabel="student", ylabel="intelligence", title="p(intelligence | scores)",
                yticks=range(NI))
    n = samples["I"].data.shape[0]
    freq = np.stack([np.bincount(samples["I"].data[:, s], minlength=NI) / n
                     for s in range(net["S"])])
    axes[1].scatter(post.reshape(-1), freq.reshape(-1), s=12)
    axes[1].plot([0, 1], [0, 1], "k--", lw=0.8)
    axes[1].set(xlabel="exact marginal", ylabel="sample frequency", title=f"{n} samples")
    fig.tight_layout()
    path = out_path("bayesian_network.png")
    fig.savefig(path, dpi=100)
    print(f"  plot: {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
