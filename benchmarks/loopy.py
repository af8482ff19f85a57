"""Loopy graphs (issue #31): belief propagation on PGMax's RBM benchmark, exact-MAP recoveries
on 50 small RBMs, and blocked Gibbs spin updates per second on a 64x64 Ising grid.

Rows, one thread, jax float32 on every side, each jitted and timed after its compile;
interleaved rounds, best kept (a shared machine's load hits every method alike):

- RBM (100 visible + 100 hidden units, 10,000 pairwise factors + 200 unary), max-product,
  damping 0.5, 200 iterations, batch 1 and 100 (the batch varies the unary evidence, as
  PGMax's example's Gumbel noise does): ``loopy_bp``'s flooding kernel (``run_bp`` under
  ``jax.jit``, ``tol=0``), a hand-written dense jax max-product for this bipartite graph,
  and PGMax 0.6.1 (``infer.build_inferer``, ``jax.vmap`` over the batch) when importable:
  set ``PGMAX_PATH`` to a folder holding it (``pip install --no-deps --target DIR pgmax
  numba llvmlite tqdm``); it runs in a subprocess, with a one-line shim for jax >= 0.5
  (``jax.lib.xla_bridge`` is gone).
- MAP (PGMax's suite, benchmark/rbm.py in their repository): 50 RBMs of 12 + 12 units
  (weights N(0, 1), biases Logistic(0, 1)), max-product, damping 0.5, 200 iterations;
  ``PGMAX_SUITE=DIR`` reads PGMax's own 50 weight files from DIR (their
  ``benchmark/precomputed_results``; needs ``joblib``), else the protocol is drawn here.
  Oracle: brute force over the 2^12 hidden states (visible units in closed form); a recovery
  is a decoded state whose value equals the maximum (ties count). PGMax's published criterion
  is shown beside it (see ``recoveries``).
- Gibbs: 64x64 Ising grid (open boundary, couplings 0.3, fields N(0, 0.1)), 400 rounds, 1 and
  16 chains: ``run_chains`` (generic: the colour-block layout, a padded neighbour table)
  against a hand-written checkerboard sampler (shifted neighbour sums) and THRML 0.1.4's
  block Gibbs (``IsingEBM``; set ``THRML_PATH``), interleaved, all under
  ``jax.jit``; and eager calls on new values of one structure (first call, later calls).

``python benchmarks/loopy.py`` (``--quick``: fewer rounds, no batch-100 PGMax row;
``--gibbs``: only the Gibbs and eager rows; ``--map``: only the MAP rows; ``--anytime``: only
anytime BP's wall time on the thesis's grids, ``loopy_anytime.py``; ``--cpu-time``: CPU
seconds, see ``CLOCK``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from loopy_map import map_rows, map_suite, pgmax_decode  # noqa: E402

NH = NV = 100
ITERS, DAMPING = 200, 0.5
PGMAX_ANCHORS = {"rbm_b1_s": 0.058, "rbm_b100_s": 18.6, "map_recoveries": 21}


def rbm_params(rng, nh=NH, nv=NV, scale=0.1):
    return (rng.normal(size=(nh, nv)) * scale, rng.normal(size=nh) * scale,
            rng.normal(size=nv) * scale)


def evidence(rng, bh, bv, batch):
    """Unary log tables ``(batch, n, 2)``: biases plus Gumbel noise, as PGMax's example."""
    gh = rng.gumbel(size=(batch, bh.size, 2)) * (batch > 1)
    gv = rng.gumbel(size=(batch, bv.size, 2)) * (batch > 1)
    uh = np.stack([np.zeros_like(bh), bh], 1)[None] + gh
    uv = np.stack([np.zeros_like(bv), bv], 1)[None] + gv
    return uh.astype(np.float32), uv.astype(np.float32)


# ``--cpu-time``: this process's CPU seconds instead of wall seconds (every row runs on one
# thread, so they agree on an idle machine; on a loaded shared one the CPU time is steadier).
CLOCK = time.process_time if "--cpu-time" in sys.argv else time.perf_counter


def best_of(fns: dict, rounds: int) -> dict:
    """Interleaved rounds of every fn (after one warm-up call each); best seconds by name."""
    import jax

    for fn in fns.values():
        jax.block_until_ready(fn())
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = CLOCK()
            jax.block_until_ready(fn())
            best[k] = min(best[k], CLOCK() - t)
    return best


# -- ours -------------------------------------------------------------------------------------
def ours_rbm(W, uh, uv):
    """A jitted ``run_bp`` over the RBM's factor graph; returns (fn, graph, build seconds)."""
    import jax
    import jax.numpy as jnp

    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.algorithms.loopy.bp import run_bp
    from funsor_core.algorithms.loopy.graph import FactorGraph

    fc.set_backend("jax")
    t0 = time.perf_counter()
    batch = uh.shape[0]
    bdom = {"n": fc.Bint[batch]} if batch > 1 else {}

    def unary(u, name):
        data = jnp.asarray(u if batch > 1 else u[0])
        return fc.Tensor(data, {**bdom, name: fc.Bint[2]})

    factors = [unary(uh[:, i], f"h{i}") for i in range(W.shape[0])]
    factors += [unary(uv[:, j], f"v{j}") for j in range(W.shape[1])]
    pw = np.zeros(W.shape + (2, 2), np.float32)
    pw[:, :, 1, 1] = W
    factors += [fc.Tensor(jnp.asarray(pw[i, j]), {f"h{i}": fc.Bint[2], f"v{j}": fc.Bint[2]})
                for i in range(W.shape[0]) for j in range(W.shape[1])]
    graph = FactorGraph.build(factors, batch=tuple(bdom))
    build = time.perf_counter() - t0
    tables = [g.table for g in graph.groups]

    @jax.jit
    def run(tables):
        r = run_bp(graph.with_tables(tables), ops.max, damping=DAMPING, tol=0.0,
                   max_iters=ITERS)
        return r._bsum

    return (lambda: run(tables)), graph, build


def hand_rbm(W, uh, uv):
    """Hand-written jitted max-product for a bipartite pairwise graph (dense (nh, nv) arrays;
    messages of factor (i, j) to h_i and to v_j), with the same damping and normalization."""
    import jax
    import jax.numpy as jnp

    Wj = jnp.asarray(W.astype(np.float32))

    def one(uh, uv):
        def step(carry, _):
            fh, fv = carry  # (nh, nv, 2): factor (i, j) -> h_i, -> v_j
            bh = uh + fh.sum(1)
            bv = uv + fv.sum(0)
            h2f = bh[:, None, :] - fh
            v2f = bv[None, :, :] - fv
            # psi(x_h, x_v) = W x_h x_v: max over the other variable of psi + its message.
            nh0 = jnp.maximum(v2f[..., 0], v2f[..., 1])
            nh1 = jnp.maximum(v2f[..., 0], v2f[..., 1] + Wj)
            nv0 = jnp.maximum(h2f[..., 0], h2f[..., 1])
            nv1 = jnp.maximum(h2f[..., 0], h2f[..., 1] + Wj)
            new_h = jnp.stack([nh0, nh1], -1)
            new_v = jnp.stack([nv0, nv1], -1)
            new_h = new_h - new_h.max(-1, keepdims=True)
            new_v = new_v - new_v.max(-1, keepdims=True)
            return (DAMPING * fh + (1 - DAMPING) * new_h,
                    DAMPING * fv + (1 - DAMPING) * new_v), None

        zeros = jnp.zeros(W.shape + (2,), jnp.float32)
        (fh, fv), _ = jax.lax.scan(step, (zeros, zeros), None, length=ITERS)
        return uh + fh.sum(1), uv + fv.sum(0)

    run = jax.jit(jax.vmap(one))
    a, b = jnp.asarray(uh), jnp.asarray(uv)
    return lambda: run(a, b)


# -- PGMax (subprocess) -----------------------------------------------------------------------
PGMAX_SHIM = """
import types, jax
if not hasattr(jax.lib, "xla_bridge"):  # pgmax 0.6.1 asks jax.lib.xla_bridge for the platform
    jax.lib.xla_bridge = types.SimpleNamespace(
        get_backend=lambda: types.SimpleNamespace(platform=jax.default_backend()))
"""


def pgmax_worker(path_in: str, path_out: str) -> None:
    exec(PGMAX_SHIM, {})
    from pgmax import fgraph, fgroup, infer, vgroup

    data = np.load(path_in)

    def build(W):
        nh, nv = W.shape
        hv = vgroup.NDVarArray(num_states=2, shape=(nh,))
        vv = vgroup.NDVarArray(num_states=2, shape=(nv,))
        fg = fgraph.FactorGraph(variable_groups=[hv, vv])
        group = fgroup.PairwiseFactorGroup(
            variables_for_factors=[[hv[i], vv[j]] for i in range(nh) for j in range(nv)])
        fg.add_factors(group)
        lp = np.zeros((nh * nv, 2, 2), np.float32)
        lp[:, 1, 1] = W.ravel()
        return hv, vv, group, lp, infer.build_inferer(fg.bp_state, backend="bp")

    out = pgmax_rbm_rows(data, int(data["rounds"]), build) if "W" in data else {}
    out["maps"], out["maps_unary_factors"] = [], []
    for W, bh, bv in zip(data["mW"], data["mbh"], data["mbv"]):
        unary = {"maps": lambda b: np.stack([0 * b, b], 1), "maps_unary_factors": None}
        for key, evidence in unary.items():
            out[key].append(pgmax_decode(W, bh, bv, evidence, fgraph, fgroup, infer, vgroup))
    with open(path_out, "w") as f:
        json.dump(out, f)


def pgmax_rbm_rows(data, rounds: int, build) -> dict:
    """PGMax's timed rows on the 100 + 100 RBM (inside the worker)."""
    import functools

    import jax

    out = {}
    hv, vv, group, lp, bp = build(data["W"])
    run = jax.jit(functools.partial(bp.run, num_iters=ITERS, damping=DAMPING, temperature=0.0))
    for key in ("b1", "b100"):
        if f"uh_{key}" not in data:
            continue
        uh, uv = data[f"uh_{key}"], data[f"uv_{key}"]
        init = jax.vmap(functools.partial(bp.init, log_potentials_updates={group: lp}))
        arrays = init(evidence_updates={hv: uh, vv: uv})
        vrun = jax.jit(jax.vmap(run))
        jax.block_until_ready(vrun(arrays))
        best = float("inf")
        for _ in range(rounds if key == "b1" else 1):
            t = time.perf_counter()
            jax.block_until_ready(vrun(arrays))
            best = min(best, time.perf_counter() - t)
        out[f"rbm_{key}_s"] = best
    return out


def run_pgmax(W, ev1, ev100, small, rounds):
    path = os.environ.get("PGMAX_PATH")
    if not path:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        arrays = dict(rounds=rounds, mW=np.stack([s[0] for s in small]),
                      mbh=np.stack([s[1] for s in small]), mbv=np.stack([s[2] for s in small]))
        if W is not None:
            arrays.update(W=W, uh_b1=ev1[0], uv_b1=ev1[1])
        if ev100 is not None:
            arrays.update(uh_b100=ev100[0], uv_b100=ev100[1])
        np.savez(os.path.join(tmp, "in.npz"), **arrays)
        env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [sys.executable, __file__, "--pgmax-worker", os.path.join(tmp, "in.npz"),
               os.path.join(tmp, "out.json")]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode:
            print("PGMax failed:", proc.stderr.strip().splitlines()[-1:])
            return None
        with open(os.path.join(tmp, "out.json")) as f:
            return json.load(f)


# -- Gibbs on an Ising grid -------------------------------------------------------------------
def ising(n=64, coupling=0.3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n)) * 0.1, coupling


def ours_gibbs(field, coupling, rounds, chains):
    import jax

    import funsor_core as fc
    from funsor_core.algorithms.loopy.graph import FactorGraph
    from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains

    fc.set_backend("jax")
    n = field.shape[0]
    spin = np.array([-1.0, 1.0], np.float32)
    pair = (coupling * np.outer(spin, spin)).astype(np.float32)
    name = [[f"s{i}_{j}" for j in range(n)] for i in range(n)]
    fs = [fc.Tensor(jax.numpy.asarray((field[i, j] * spin).astype(np.float32)),
                    {name[i][j]: fc.Bint[2]}) for i in range(n) for j in range(n)]
    fs += [fc.Tensor(jax.numpy.asarray(pair), {name[i][j]: fc.Bint[2], name[i][j + 1]: fc.Bint[2]})
           for i in range(n) for j in range(n - 1)]
    fs += [fc.Tensor(jax.numpy.asarray(pair), {name[i][j]: fc.Bint[2], name[i + 1][j]: fc.Bint[2]})
           for i in range(n - 1) for j in range(n)]
    plan = SamplerPlan(FactorGraph.build(fs))
    init = jax.numpy.zeros((chains, n * n), jax.numpy.int32)
    run = jax.jit(lambda key: run_chains(plan, init, rounds, rng_key=key, keep_all=False))
    key = jax.random.PRNGKey(0)
    return lambda: run(key)


def hand_gibbs(field, coupling, rounds, chains):
    """Checkerboard Gibbs for the same Ising model (spins +-1, open boundary)."""
    import jax
    import jax.numpy as jnp

    n = field.shape[0]
    h = jnp.asarray(field.astype(np.float32))
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    colour = [jnp.asarray((ii + jj) % 2 == c) for c in (0, 1)]

    def neighbours(s):
        p = jnp.pad(s, ((0, 0), (1, 1), (1, 1)))
        return p[:, :-2, 1:-1] + p[:, 2:, 1:-1] + p[:, 1:-1, :-2] + p[:, 1:-1, 2:]

    def sweep(s, key):
        for c, k in zip(colour, jax.random.split(key, 2)):
            local = h + coupling * neighbours(s)  # log p(+1) - log p(-1) = 2 * local
            up = jax.random.uniform(k, s.shape) < jax.nn.sigmoid(2 * local)
            s = jnp.where(c, jnp.where(up, 1.0, -1.0), s)
        return s, None

    @jax.jit
    def run(key):
        s0 = -jnp.ones((chains, n, n), jnp.float32)
        return jax.lax.scan(sweep, s0, jax.random.split(key, rounds))[0]

    key = jax.random.PRNGKey(0)
    return lambda: run(key)


def thrml_gibbs(field, coupling, sweeps, chains):
    """THRML's block Gibbs (``IsingEBM``, checkerboard blocks, ``jax.vmap`` over chains) on
    the same grid, or None: spins +-1, ``p ∝ exp(beta (sum b s + sum J s s'))``, ``beta = 1``.
    Imported in this process (interleaved rounds) from ``THRML_PATH``, a folder holding
    ``pip install --no-deps --target DIR thrml equinox jaxtyping wadler_lindig``."""
    path = os.environ.get("THRML_PATH")
    if not path:
        return None
    if path not in sys.path:
        sys.path.append(path)
    import jax
    import jax.numpy as jnp
    from thrml import Block, SamplingSchedule, SpinNode, sample_states
    from thrml.models import IsingEBM, IsingSamplingProgram, hinton_init

    n = field.shape[0]
    nodes = [[SpinNode() for _ in range(n)] for _ in range(n)]
    flat = [x for row in nodes for x in row]
    edges = [(nodes[i][j], nodes[i][j + 1]) for i in range(n) for j in range(n - 1)]
    edges += [(nodes[i][j], nodes[i + 1][j]) for i in range(n - 1) for j in range(n)]
    model = IsingEBM(flat, edges, jnp.asarray(field.ravel(), jnp.float32),
                     jnp.full((len(edges),), coupling, jnp.float32), jnp.array(1.0))
    blocks = [Block([nodes[i][j] for i in range(n) for j in range(n) if (i + j) % 2 == c])
              for c in (0, 1)]
    program = IsingSamplingProgram(model, blocks, clamped_blocks=[])
    schedule = SamplingSchedule(n_warmup=sweeps - 1, n_samples=1, steps_per_sample=1)
    keys = jax.random.split(jax.random.key(0), chains)
    init = jax.vmap(lambda k: hinton_init(k, model, blocks, ()))(keys)
    run = jax.jit(jax.vmap(lambda k, s: sample_states(k, program, schedule, s, [],
                                                      [Block(flat)])))
    return lambda: run(keys, init)


# -- eager calls: one compiled program per structure ------------------------------------------
def eager_calls(rounds):
    """Seconds of eager jax calls on new values of one structure (a 3-variable cycle): the
    first call (compiles) and the best of later ones, next to numpy's calls and (Gibbs) a
    hand-written jitted sampler's."""
    import jax.numpy as jnp

    import funsor_core as fc
    from funsor_core.loopy import gibbs, loopy_bp

    rng = np.random.default_rng(1)
    scopes = [("a", "b"), ("b", "c"), ("a", "c")]

    def model(to_array):
        return [fc.Tensor(to_array(rng.normal(size=(2, 2))), {v: fc.Bint[2] for v in s})
                for s in scopes]

    def bp(fs):
        r = loopy_bp(fs)
        return float(r.log_z.data), r.beliefs

    hand = hand_cycle_gibbs(200)
    calls = {"gibbs (200 samples)": lambda fs: np.asarray(gibbs(fs, 200, rng_key=0)["a"].data),
             "loopy_bp (+ log Z, beliefs)": bp}
    out = {}
    for name, call in calls.items():
        row = {}
        for backend, to_array in (("jax", jnp.asarray), ("numpy", np.asarray)):
            fc.set_backend(backend)
            row[backend] = _first_and_later(call, lambda f=to_array: model(f), rounds)
        fc.set_backend("numpy")
        if name.startswith("gibbs"):
            row["hand jax"] = _first_and_later(hand, lambda: model(jnp.asarray), rounds)
        out[name] = row
    return out


def _first_and_later(call, make, rounds) -> tuple:
    t = time.perf_counter()
    call(make())
    first = time.perf_counter() - t
    later = float("inf")
    for _ in range(rounds):
        args = make()
        t = time.perf_counter()
        call(args)
        later = min(later, time.perf_counter() - t)
    return first, later


def hand_cycle_gibbs(num_rounds):
    """A hand-written jitted Gibbs sampler for the 3-variable binary cycle (a, b), (b, c),
    (a, c): single-site updates in a ``lax.scan``, compiled once, tables as arguments."""
    import jax
    import jax.numpy as jnp

    def draw(key, logits):
        return (jax.random.uniform(key) < jax.nn.sigmoid(logits[1] - logits[0])).astype(
            jnp.int32)

    @jax.jit
    def run(ab, bc, ac, key):
        def sweep(x, k):
            ka, kb, kc = jax.random.split(k, 3)
            a = draw(ka, ab[:, x[1]] + ac[:, x[2]])
            b = draw(kb, ab[a, :] + bc[:, x[2]])
            c = draw(kc, bc[b, :] + ac[a, :])
            x = jnp.stack([a, b, c])
            return x, x
        return jax.lax.scan(sweep, jnp.zeros(3, jnp.int32), jax.random.split(key, num_rounds))[1]

    key = jax.random.PRNGKey(0)
    return lambda fs: np.asarray(run(*[f.data for f in fs], key))


# -- main -------------------------------------------------------------------------------------
def gibbs_rows(rounds: int, quick: bool) -> None:
    field, coupling = ising()
    sweeps = 100 if quick else 400
    print(f"Gibbs on a 64x64 Ising grid, {sweeps} rounds (M spin updates / s, best)")
    for chains in (1, 16):
        fns = {"ours": ours_gibbs(field, coupling, sweeps, chains),
               "hand": hand_gibbs(field, coupling, sweeps, chains),
               "THRML": thrml_gibbs(field, coupling, sweeps, chains)}
        t = best_of({k: f for k, f in fns.items() if f is not None}, rounds)
        rate = {k: 64 * 64 * sweeps * chains / v / 1e6 for k, v in t.items()}
        shown = "  ".join(f"{k} {v:6.1f}" for k, v in rate.items())
        print(f"  chains {chains:>2}: {shown}  hand/ours {rate['hand'] / rate['ours']:5.2f}")
    print("Eager calls on new values of one structure (s: first call, best later call)")
    for name, row in eager_calls(rounds + 2).items():
        shown = "  ".join(f"{b} {f:.3f} / {later:.4f}" for b, (f, later) in row.items())
        print(f"  {name:28} {shown}")


def main(quick: bool) -> None:
    rounds = 2 if quick else 3
    if "--gibbs" in sys.argv:
        return gibbs_rows(rounds, quick)
    if "--anytime" in sys.argv:  # anytime BP's wall time: loopy_anytime.py
        from loopy_anytime import main as anytime_rows

        return anytime_rows(quick)
    suite = os.environ.get("PGMAX_SUITE")
    small = map_suite(suite)
    source = "PGMax's files" if suite else "PGMax's protocol, drawn here"
    if "--map" in sys.argv:
        return map_rows(small, run_pgmax(None, None, None, small, rounds), source)
    rng = np.random.default_rng(0)
    W, bh, bv = rbm_params(rng)
    ev1, ev100 = evidence(rng, bh, bv, 1), evidence(rng, bh, bv, 100)
    peer = run_pgmax(W, ev1, None if quick else ev100, small, rounds)
    print("RBM 100+100 units, 10,000 pairwise factors, max-product, 200 iterations (s, best)")
    print(f"{'batch':>6} {'ours':>9} {'hand jax':>9} {'PGMax':>9} {'PGMax/ours':>11} {'build':>7}")
    for batch, ev in ((1, ev1), (100, ev100)):
        ours, graph, build = ours_rbm(W, *ev)
        t = best_of({"ours": ours, "hand": hand_rbm(W, *ev)}, rounds)
        key = f"rbm_b{batch}_s"
        p = (peer or {}).get(key)
        shown = f"{p:9.3f} {p / t['ours']:11.2f}" if p else f"{'-':>9} {'-':>11}"
        print(f"{batch:>6} {t['ours']:9.3f} {t['hand']:9.3f} {shown} {build:7.1f}")
    map_rows(small, peer, source)
    gibbs_rows(rounds, quick)
    if not peer:
        print(f"PGMax not run (set PGMAX_PATH); the issue's anchors: {PGMAX_ANCHORS}")


if __name__ == "__main__":
    if "--pgmax-worker" in sys.argv:
        i = sys.argv.index("--pgmax-worker")
        pgmax_worker(sys.argv[i + 1], sys.argv[i + 2])

    else:
        main("--quick" in sys.argv)
