"""Exact-MAP recoveries on PGMax's 50 small RBMs (issue #31), the MAP rows of ``loopy.py``.

PGMax's benchmark (benchmark/rbm.py and rbm_lib.py in google-deepmind/PGMax, "with
ground-truth"): 50 RBMs of 12 + 12 units, weights N(0, 1), biases Logistic(0, 1), drawn in
sequence from numpy's legacy stream seeded 0 and kept as files
(benchmark/precomputed_results/n_units_24_rbm_idx_K_weights.joblib, joblib pickles);
max-product, 200 iterations, damping 0.5, each variable decoded to its best state. Here:
ours (``loopy_bp`` + ``map_assignment()``), PGMax 0.6.1 (``PGMAX_PATH``; unaries as evidence
and as enumeration factors), pomegranate 1.x (``POMEGRANATE_PATH``) and pgmpy 1.x
(``PGMPY_PATH``), each peer in a subprocess with its folder on the path
(``pip install --no-deps --target DIR ...``). ``PGMAX_SUITE=DIR`` reads PGMax's own 50
weight files (needs ``joblib``); without it the protocol is drawn here.

``python benchmarks/loopy.py --map`` prints only these rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ITERS, DAMPING = 200, 0.5
PGMAX_MAP_ANCHOR = 21  # the issue's: PGMax's published count


def pgmax_decode(W, bh, bv, evidence, fgraph, fgroup, infer, vgroup) -> list:
    """PGMax's MAP state of one small RBM: the biases as evidence arrays (``evidence`` maps
    them to (n, 2) log tables), or, ``evidence=None``, as single-variable enumeration factors
    (how PGMax's own benchmark builds them: their messages are damped like the others)."""
    nh, nv = W.shape
    hv = vgroup.NDVarArray(num_states=2, shape=(nh,))
    vv = vgroup.NDVarArray(num_states=2, shape=(nv,))
    fg = fgraph.FactorGraph(variable_groups=[hv, vv])
    lp = np.zeros((nh * nv, 2, 2))
    lp[:, 1, 1] = W.ravel()
    fg.add_factors(fgroup.PairwiseFactorGroup(
        variables_for_factors=[[hv[i], vv[j]] for i in range(nh) for j in range(nv)],
        log_potential_matrix=lp))
    if evidence is None:
        for var, b in ((hv, bh), (vv, bv)):
            fg.add_factors(fgroup.EnumFactorGroup(
                variables_for_factors=[[var[i]] for i in range(b.size)],
                factor_configs=np.arange(2)[:, None], log_potentials=np.stack([0 * b, b], 1)))
    bp = infer.build_inferer(fg.bp_state, backend="bp")
    updates = {} if evidence is None else {hv: evidence(bh), vv: evidence(bv)}
    arrays = bp.run(bp.init(evidence_updates=updates), num_iters=ITERS, damping=DAMPING,
                    temperature=0.0)
    states = infer.decode_map_states(bp.get_beliefs(arrays))
    return np.concatenate([states[hv], states[vv]]).tolist()



MAP_UNITS, MAP_MODELS = 12, 50
MAP_FILE = "n_units_24_rbm_idx_{}_weights.joblib"


def map_suite(folder=None) -> list:
    """The 50 models ``(W, bh, bv)``: PGMax's own files when ``folder`` (their
    ``precomputed_results``) is given (needs ``joblib``), else the same protocol drawn here:
    one ``RandomState(0)``, per model ``W``, then ``bh``, then ``bv``. Models 0-2 equal PGMax's
    files; later ones differ because PGMax's script drew other numbers from the same stream in
    between (pgmpy's random evidence among them)."""
    if folder:
        import joblib

        return [tuple(np.asarray(a, np.float64) for a in joblib.load(
            os.path.join(folder, MAP_FILE.format(k)))) for k in range(MAP_MODELS)]
    rs = np.random.RandomState(0)
    n = MAP_UNITS
    return [(rs.randn(n, n), rs.logistic(size=n), rs.logistic(size=n))
            for _ in range(MAP_MODELS)]


def exact_map(W, bh, bv):
    """Brute-force MAP of ``h.bh + v.bv + h.W.v`` over binary ``h, v``: every hidden state
    (``2^nh``), the visible units at their closed-form best given it (``v_j = 1`` iff
    ``bv_j + (h W)_j > 0``: the objective is separable in ``v`` given ``h``).
    Returns (best state ``h + v``, best value)."""
    nh = W.shape[0]
    hs = ((np.arange(2 ** nh)[:, None] >> np.arange(nh)[::-1]) & 1).astype(np.float64)
    gain = hs @ W + bv
    values = hs @ bh + np.maximum(gain, 0.0).sum(1)
    best = int(np.argmax(values))
    return np.concatenate([hs[best], gain[best] > 0]).astype(int), float(values[best])


def rbm_value(W, bh, bv, x) -> float:
    x = np.asarray(x, np.float64)
    h, v = x[:W.shape[0]], x[W.shape[0]:]
    return float(h @ bh + v @ bv + h @ W @ v)


def ours_map(W, bh, bv, init=None):
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.loopy import loopy_bp

    fc.set_backend("numpy")
    nh, nv = W.shape
    fs = [fc.Tensor(np.array([0.0, bh[i]]), {f"h{i}": fc.Bint[2]}) for i in range(nh)]
    fs += [fc.Tensor(np.array([0.0, bv[j]]), {f"v{j}": fc.Bint[2]}) for j in range(nv)]
    fs += [fc.Tensor(np.array([[0.0, 0.0], [0.0, W[i, j]]]),
                     {f"h{i}": fc.Bint[2], f"v{j}": fc.Bint[2]})
           for i in range(nh) for j in range(nv)]
    x = loopy_bp(fs, ops.max, damping=DAMPING, tol=0.0, max_iters=ITERS,
                 init=init).map_assignment()
    return [x[f"h{i}"] for i in range(nh)] + [x[f"v{j}"] for j in range(nv)]


def recoveries(small, maps) -> tuple:
    """(exact MAPs recovered: decoded value equal to the brute-force maximum, ties count;
    hits under PGMax's published criterion). PGMax's script takes its reference state from
    ``np.meshgrid`` with the default ``indexing="xy"``, which swaps the first two axes, so the
    reference has ``h0`` and ``h1`` exchanged; it counts a decoded state equal to that
    reference, which a true MAP meets only where ``h0 == h1``."""
    hits = published = 0
    for (W, bh, bv), x in zip(small, maps):
        best, value = exact_map(W, bh, bv)
        hits += bool(np.isclose(rbm_value(W, bh, bv, x), value))
        reference = best.copy()
        reference[[0, 1]] = best[[1, 0]]
        published += bool(np.array_equal(np.asarray(x, int), reference))
    return hits, published


def pomegranate_worker(path_in: str, path_out: str) -> None:
    """pomegranate 1.x's loopy BP on each small RBM as PGMax's benchmark sets it up: unary
    marginals ``softmax([0, b])``, pairwise joint tables ``softmax([[0, 0], [0, w]])`` (over
    all four entries), ``max_iter`` 200, ``predict`` on a fully masked row (the argmax of
    its sum-product marginals)."""
    import types

    import torch
    from scipy.special import softmax

    torch.set_num_threads(1)
    # pomegranate imports apricot (submodular selection) for its k-means initialization
    # only; a stand-in lets the factor graph import without it.
    sys.modules.setdefault("apricot", types.SimpleNamespace(
        FacilityLocationSelection=None, FeatureBasedSelection=None))
    from pomegranate.distributions import Categorical, JointCategorical
    from pomegranate.factor_graph import FactorGraph

    data = np.load(path_in)
    maps = []
    for W, bh, bv in zip(data["mW"], data["mbh"], data["mbv"]):
        model = FactorGraph(max_iter=ITERS)
        units = []
        for b in np.concatenate([bh, bv]):
            units.append(Categorical(softmax(np.array([[0.0, b]]), axis=-1)))
            model.add_marginal(units[-1])
        nh = W.shape[0]
        for i in range(nh):
            for j in range(W.shape[1]):
                factor = JointCategorical(softmax(np.array([[0.0, 0.0], [0.0, W[i, j]]])))
                model.add_factor(factor)
                model.add_edge(units[i], factor)
                model.add_edge(units[nh + j], factor)
        n = len(units)
        x = torch.masked.MaskedTensor(torch.zeros((1, n), dtype=torch.int32),
                                      mask=torch.zeros((1, n), dtype=torch.bool))
        maps.append(np.asarray(model.predict(x)[0]).astype(int).tolist())
    with open(path_out, "w") as f:
        json.dump({"maps": maps}, f)


def pgmpy_worker(path_in: str, path_out: str) -> None:
    """pgmpy's MPLP (``Mplp(model).map_query()``, its defaults) on each small RBM. MPLP adds
    factor values (its dual LP), so they are the log tables, as PGMax's benchmark passes
    them; but there the unary tables were fresh random Logistic draws, not the biases, so
    its 1 / 50 is of other models. pgmpy 1.x imports statsmodels for regression-based tests
    only; a stand-in module lets the Markov network and MPLP import without it."""
    import types

    class _Absent(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)

    for name in ("statsmodels", "statsmodels.api", "statsmodels.formula",
                 "statsmodels.formula.api"):
        sys.modules.setdefault(name, _Absent(name))
        if "." in name:
            parent, child = name.rsplit(".", 1)
            setattr(sys.modules[parent], child, sys.modules[name])
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.inference import Mplp
    from pgmpy.models import DiscreteMarkovNetwork

    data = np.load(path_in)
    maps = []
    for W, bh, bv in zip(data["mW"], data["mbh"], data["mbv"]):
        nh, nv = W.shape
        names = [f"h{i}" for i in range(nh)] + [f"v{j}" for j in range(nv)]
        model = DiscreteMarkovNetwork()
        factors = [DiscreteFactor([n], [2], np.array([0.0, b]))
                   for n, b in zip(names, np.concatenate([bh, bv]))]
        for i in range(nh):
            for j in range(nv):
                model.add_edge(names[i], names[nh + j])
                factors.append(DiscreteFactor([names[i], names[nh + j]], [2, 2],
                                              np.array([0.0, 0.0, 0.0, W[i, j]])))
        model.add_factors(*factors)
        x = Mplp(model).map_query()
        maps.append([int(x[n]) for n in names])
    with open(path_out, "w") as f:
        json.dump({"maps": maps}, f)


def run_peer(flag: str, env_var: str, small):
    """A peer's MAP states on ``small`` from ``benchmarks/loopy.py FLAG`` in a subprocess
    with ``env_var``'s folder on its path, or None when unset or failing."""
    path = os.environ.get(env_var)
    if not path:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(os.path.join(tmp, "in.npz"), mW=np.stack([s[0] for s in small]),
                 mbh=np.stack([s[1] for s in small]), mbv=np.stack([s[2] for s in small]))
        env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [sys.executable, __file__, flag, os.path.join(tmp, "in.npz"),
               os.path.join(tmp, "out.json")]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode:
            print(f"{flag} failed:", proc.stderr.strip().splitlines()[-1:])
            return None
        with open(os.path.join(tmp, "out.json")) as f:
            return json.load(f)["maps"]


def map_rows(small, peer, source: str) -> None:
    print(f"Exact MAP on 50 RBMs of {MAP_UNITS}+{MAP_UNITS} units ({source}), max-product, "
          f"damping {DAMPING}, {ITERS} iterations: recovered (PGMax's published criterion)")
    rows = {"ours, unaries as factors": [ours_map(*s) for s in small],
            "ours, init='unary'": [ours_map(*s, init="unary") for s in small]}
    if peer and "maps" in peer:
        rows["PGMax, unaries as factors"] = peer["maps_unary_factors"]
        rows["PGMax, unaries as evidence"] = peer["maps"]
    pomegranate = run_peer("--pomegranate-worker", "POMEGRANATE_PATH", small)
    if pomegranate:
        rows["pomegranate (sum-product)"] = pomegranate
    pgmpy = run_peer("--pgmpy-worker", "PGMPY_PATH", small)
    if pgmpy:
        rows["pgmpy (MPLP)"] = pgmpy
    for name, maps in rows.items():
        hits, published = recoveries(small, maps)
        print(f"  {name:28} {hits:3d} / 50  ({published} / 50)")
    print(f"  issue's anchor: PGMax {PGMAX_MAP_ANCHOR} / 50 (published criterion)")


if __name__ == "__main__":
    WORKERS = {"--pomegranate-worker": pomegranate_worker, "--pgmpy-worker": pgmpy_worker}
    flag = sys.argv[1]
    WORKERS[flag](sys.argv[2], sys.argv[3])
