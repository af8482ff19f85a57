"""The client workloads ``benchmarks/clients.py`` times, one per process, each run once on funsor
0.4.8 and once on funsor-core (served as ``funsor`` by the clients' shim).

Runs in the clients' virtual environment (pyro-ppl, numpyro, torch, jax), never in ours, and
imports only ``funsor`` and the clients, so the same code runs on both sides:

    python benchmarks/clients_workloads.py numpyro --T 200 --K 8
    python benchmarks/clients_workloads.py numpyro-models  # twelve new small models, eager
    python benchmarks/clients_workloads.py pyro --elbo TraceMarkovEnum_ELBO --T 100 --K 4

Prints one JSON line: ``{"funsor": <module path>, "rows": {name: seconds or "fails: ..."},
"checks": {name: value}}``. A part that raises is reported as ``"fails: <reason>"`` and the
next part still runs. The checks (a loss, a Viterbi path's checksum) let the driver see that
both sides computed the same thing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
import traceback

import numpy as np

# The process's CPU time by default (all its threads: XLA's compile and compute included): on
# a shared machine it does not count the time other processes hold the cores, which wall time
# does (up to 10x at a load of 12 on 2 cores). CLIENTS_CLOCK=wall times by the wall clock.
clock = time.perf_counter if os.environ.get("CLIENTS_CLOCK") == "wall" else time.process_time


def best_of(fn, repeat: int) -> float:
    """Best time of ``repeat`` calls of ``fn`` (which blocks until its result is ready)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def reason(exc: BaseException) -> str:
    """One line naming the exception and where in funsor it was raised."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if any(part in f.filename for part in ("site-packages/funsor/", "funsor_core"))]
    frames = frames or traceback.extract_tb(exc.__traceback__)[-1:]
    path = os.path.normpath(frames[-1].filename).split(os.sep)[-3:] if frames else []
    where = f" (at {'/'.join(path)}:{frames[-1].lineno})" if frames else ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:150] + where


def timed(rows: dict, name: str, fn) -> None:
    """``rows[name] = fn()`` (seconds), or the reason it failed."""
    try:
        rows[name] = fn()
    except Exception as exc:  # noqa: BLE001  (a failed row is reported, the next one runs)
        rows[name] = "fails: " + reason(exc)


def hmm_data(T: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A sticky K-state chain of length T and Gaussian observations ``2 x_t + noise``."""
    rng = np.random.default_rng(seed)
    trans = 0.8 * np.eye(K) + 0.2 / K
    z = [0]
    for _ in range(T - 1):
        z.append(rng.choice(K, p=trans[z[-1]]))
    z = np.array(z)
    return z, 2.0 * z + rng.normal(size=T)


# -- NumPyro: a discrete HMM through scan, TraceEnum_ELBO ---------------------------------------


def numpyro_rows(args) -> tuple[dict, dict]:
    """SVI on an HMM through ``scan`` (first step = trace + compile, then jitted and eager
    steps), and ``infer_discrete`` (Viterbi) through ``scan`` and through ``markov``."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.contrib.control_flow import scan
    from numpyro.contrib.funsor import config_enumerate, infer_discrete, markov
    from numpyro.handlers import block, seed, trace
    from numpyro.infer import SVI, TraceEnum_ELBO
    from numpyro.infer.autoguide import AutoDelta

    T, K = args.T, args.K
    _, y = hmm_data(T, K)
    data = jnp.asarray(y)

    def model(data):
        prior = dist.Dirichlet(jnp.ones((K, K)) + 4 * jnp.eye(K)).to_event(1)
        trans = numpyro.sample("trans", prior)
        locs = numpyro.sample("locs", dist.Normal(2.0 * jnp.arange(K), 1.0).to_event(1))

        def transition(x_prev, y):
            x = numpyro.sample("x", dist.Categorical(trans[x_prev]))
            numpyro.sample("y", dist.Normal(locs[x], 1.0), obs=y)
            return x, None

        scan(transition, 0, data)

    model = config_enumerate(model)
    guide = AutoDelta(block(model, hide=["x"]))
    svi = SVI(model, guide, numpyro.optim.Adam(0.05), TraceEnum_ELBO(max_plate_nesting=0))
    update = jax.jit(svi.update)  # as svi.run does
    rows, checks, box = {}, {}, {}

    def first_step():
        t0 = clock()
        state = svi.init(jax.random.PRNGKey(0), data)
        box["state"], loss = jax.block_until_ready(update(state, data))
        checks["first loss"] = float(loss)
        return clock() - t0

    def steps(step, n):
        # eager jax compiles each op at its first call: one step warms every op up
        jax.block_until_ready(step(box["state"], data))

        def run():
            s = box["state"]
            for _ in range(n):
                s, loss = step(s, data)
            jax.block_until_ready(loss)
        return best_of(run, args.repeat)

    timed(rows, "trace + compile (first jitted step)", first_step)
    if "state" in box:
        timed(rows, f"{args.steps} jitted SVI steps", lambda: steps(update, args.steps))
        timed(rows, f"{args.eager_steps} eager SVI steps",
              lambda: steps(svi.update, args.eager_steps))

    trans = jnp.asarray(0.8 * np.eye(K) + 0.2 / K)
    locs = 2.0 * jnp.arange(K)

    def viterbi_scan():
        def hmm(data):
            def transition(x_prev, y):
                x = numpyro.sample("x", dist.Categorical(trans[x_prev]))
                numpyro.sample("y", dist.Normal(locs[x], 1.0), obs=y)
                return x, None
            scan(transition, 0, data)
        m = infer_discrete(config_enumerate(hmm), temperature=0, rng_key=jax.random.PRNGKey(1))
        tr = trace(seed(m, 0)).get_trace(data)
        return jax.block_until_ready(tr["x"]["value"])

    Td, Kd = args.T_discrete, args.K_discrete
    zd, yd = hmm_data(Td, Kd, seed=1)
    d_data, d_trans = jnp.asarray(yd), jnp.asarray(0.8 * np.eye(Kd) + 0.2 / Kd)
    d_locs = 2.0 * jnp.arange(Kd)

    def viterbi_markov():
        def hmm(data):
            x = 0
            for t in markov(range(len(data))):
                x = numpyro.sample(f"x_{t}", dist.Categorical(d_trans[x]))
                numpyro.sample(f"y_{t}", dist.Normal(d_locs[x], 1.0), obs=data[t])
        m = infer_discrete(config_enumerate(hmm), temperature=0, rng_key=jax.random.PRNGKey(1))
        tr = trace(seed(m, 0)).get_trace(d_data)
        return jax.block_until_ready(jnp.stack([tr[f"x_{t}"]["value"] for t in range(Td)]))

    def first_and_best(fn, key):
        path = np.asarray(fn())
        checks[key] = int((path.ravel() * np.arange(1, path.size + 1)).sum())
        return best_of(fn, args.repeat)

    timed(rows, f"infer_discrete through scan (T={T}, K={K})",
          lambda: first_and_best(viterbi_scan, "scan Viterbi checksum"))
    timed(rows, f"infer_discrete through markov (T={Td}, K={Kd})",
          lambda: first_and_best(viterbi_markov, "markov Viterbi checksum"))
    return rows, checks


# -- Pyro: TraceEnum_ELBO (markov) and TraceMarkovEnum_ELBO (vectorized_markov) --------------


def pyro_rows(args) -> tuple[dict, dict]:
    """Loss and gradient of Pyro's HMM (model_1 of Pyro's test_vectorized_markov.py: T steps,
    K states, 4 Gaussian observations per step), eager torch as Pyro always runs."""
    import pyro.contrib.funsor  # noqa: F401  (registers the "contrib.funsor" backend)
    import torch
    from pyro.ops.indexing import Vindex
    from pyroapi import distributions as dist
    from pyroapi import infer, pyro, pyro_backend
    from torch.distributions import constraints

    torch.set_num_threads(1)
    T, K = args.T, args.K
    _, y = hmm_data(T, K)
    rng = np.random.default_rng(2)
    data = torch.tensor(y[:, None] + rng.normal(size=(T, 4)))
    vectorized = args.elbo == "TraceMarkovEnum_ELBO"

    def model(data, vectorized):
        init = pyro.param("init", lambda: torch.ones(K) / K, constraint=constraints.simplex)
        trans = pyro.param("trans", lambda: torch.tensor(0.8 * np.eye(K) + 0.2 / K),
                           constraint=constraints.simplex)
        locs = pyro.param("locs", lambda: 2.0 * torch.arange(K, dtype=torch.float64))
        x_prev = None
        loop = (pyro.vectorized_markov(name="time", size=len(data), dim=-2) if vectorized
                else pyro.markov(range(len(data))))
        for i in loop:
            probs = init if isinstance(i, int) and i < 1 else trans[x_prev]
            x_curr = pyro.sample(f"x_{i}", dist.Categorical(probs))
            with pyro.plate("tones", data.shape[-1], dim=-1):
                pyro.sample(f"y_{i}", dist.Normal(Vindex(locs)[..., x_curr], 1.0), obs=data[i])
            x_prev = x_curr

    def guide(data, vectorized):
        pass

    rows, checks = {}, {}
    with pyro_backend("contrib.funsor"):
        pyro.clear_param_store()
        elbo = getattr(infer, args.elbo)(max_plate_nesting=4)
        enumerated = infer.config_enumerate(model, default="parallel")

        def step():
            loss = elbo.loss_and_grads(enumerated, guide, data, vectorized)
            checks["loss"] = float(loss)

        def first_then_best():
            for _ in range(args.warmup):
                step()
            return best_of(step, args.repeat)

        timed(rows, "loss + gradient", first_then_best)
    return rows, checks


# -- NumPyro: new small models, eager TraceEnum_ELBO gradients (a test suite's pattern) --------


def numpyro_models_rows(args) -> tuple[dict, dict]:
    """Eager ``value_and_grad`` of ``TraceEnum_ELBO.loss`` for six pairs of small enumerated
    models in one process (an enumerated site outside a plate, one inside it, observations in
    or out, scale 1 or 10; the plate, then the same written out by hand: NumPyro's
    ``test_elbo_enumerate_plate_4``). Each new model pays its first call (jax compiles each
    new program); the rows split the process's first pair, the five later new pairs, and a
    repeated call of the last model."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro import handlers
    from numpyro.distributions import constraints
    from numpyro.infer import TraceEnum_ELBO

    params = {"probs_a": jnp.array([0.4, 0.6]), "probs_b": jnp.array([0.6, 0.4]),
              "locs": jnp.array([-1.0, 1.0]), "scales": jnp.array([1.0, 2.0])}
    inner_data = jnp.array([0.5, 1.5])

    def make(outer_obs: bool, inner_obs: bool, scale: float, unrolled: bool):
        @handlers.scale(scale=scale)
        def model(p):
            pa = numpyro.param("probs_a", p["probs_a"], constraint=constraints.simplex)
            pb = numpyro.param("probs_b", p["probs_b"], constraint=constraints.simplex)
            locs = numpyro.param("locs", p["locs"])
            sc = numpyro.param("scales", p["scales"], constraint=constraints.positive)
            a = numpyro.sample("a", dist.Categorical(pa), infer={"enumerate": "parallel"})
            if outer_obs:
                numpyro.sample("outer_obs", dist.Normal(0.0, sc[a]), obs=2.0)
            if unrolled:  # the plate written out: two enumerated sites, three in all
                for i in range(2):
                    b = numpyro.sample(f"b_{i}", dist.Categorical(pb),
                                       infer={"enumerate": "parallel"})
                    if inner_obs:
                        numpyro.sample(f"inner_obs_{i}", dist.Normal(locs[b], sc[a]),
                                       obs=inner_data[i])
                return
            with numpyro.plate("inner", 2):
                b = numpyro.sample("b", dist.Categorical(pb), infer={"enumerate": "parallel"})
                if inner_obs:
                    numpyro.sample("inner_obs", dist.Normal(locs[b], sc[a]), obs=inner_data)

        def loss(p):
            return TraceEnum_ELBO().loss(jax.random.key(0), {}, model, lambda p: None, p)

        return jax.value_and_grad(loss)

    # As the test: each variant's model with the plate, then the same written out by hand.
    variants = [(o, i, s, u) for o, i in ((False, True), (True, False), (True, True))
                for s in (1.0, 10.0) for u in (False, True)]
    rows, checks, losses = {}, {}, []

    def call(fn):
        value, grads = fn(params)
        jax.block_until_ready(grads)
        losses.append(float(value))

    def collector_off(fn):
        # --gc-off: no cyclic collection inside the window (timeit's default). A full
        # collection of the whole process's objects costs 0.07-0.08 s here and lands in a
        # window by the allocation count since start (imports included), not by the window's
        # own work; each side pays its collections outside the window instead.
        def run():
            enabled = gc.isenabled()
            if args.gc_off:
                gc.disable()
            try:
                return fn()
            finally:
                if enabled:
                    gc.enable()
        return run

    @collector_off
    def first_model():
        t0 = clock()
        call(make(*variants[0]))
        call(make(*variants[1]))
        return clock() - t0

    @collector_off
    def later_models():
        t0 = clock()
        for v in variants[2:]:
            call(make(*v))
        return clock() - t0

    timed(rows, "first model pair, first calls", first_model)
    timed(rows, "5 more new model pairs, first calls (sum)", later_models)
    last = make(*variants[-1])
    timed(rows, "same model again (best)", lambda: best_of(lambda: call(last), args.repeat))
    if len(losses) >= len(variants):
        checks["sum of the 12 models' losses"] = sum(losses[:len(variants)])
    return rows, checks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("client", choices=["numpyro", "numpyro-models", "pyro"])
    ap.add_argument("--T", type=int, default=200)
    ap.add_argument("--K", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300, help="jitted SVI steps (numpyro)")
    ap.add_argument("--eager-steps", type=int, default=10, help="eager SVI steps (numpyro)")
    ap.add_argument("--T-discrete", type=int, default=10,
                    help="infer_discrete through markov: funsor 0.4.8 needs K**T memory")
    ap.add_argument("--K-discrete", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls first (pyro)")
    ap.add_argument("--gc-off", action="store_true",
                    help="no cyclic garbage collection inside the timed windows (numpyro-models)")
    ap.add_argument("--elbo", default="TraceEnum_ELBO",
                    choices=["TraceEnum_ELBO", "TraceMarkovEnum_ELBO"], help="pyro")
    args = ap.parse_args()
    import funsor  # the shim serves funsor-core under FUNSOR_SHIM=1

    where = os.path.normpath(funsor.__file__).split(os.sep)
    rows, checks = {"numpyro": numpyro_rows, "numpyro-models": numpyro_models_rows,
                    "pyro": pyro_rows}[args.client](args)
    print(json.dumps({"funsor": "/".join(where[-3:-1]), "rows": rows, "checks": checks}))


if __name__ == "__main__":
    main()
