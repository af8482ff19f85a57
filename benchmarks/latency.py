"""Latency of the practitioners' small programs (issue #28, item 4), one thread:

- eager jax first calls in a fresh process (compilation included): a 100-step Gaussian chain
  (a lazily built ``MarkovProduct`` of ``Normal`` steps, integrated out) and a 1-d Normal
  integral, beside the same programs on numpy and a hand-written eager jax Kalman filter;
- building ``Normal(x_prev, sd, x_curr)`` (a Gaussian in both) against building the same
  ``Gaussian(...)`` directly, on numpy and torch, and funsor 0.4.8's torch ``Normal``;
- ``infer_discrete(query="map")`` against ``query="kbest", k=1`` and a hand-written numpy
  Viterbi, on a 30-step chain with plated observations; every query on that model by the
  tape (before) and by the cached schedule (after), beside the plain ``sum_product``.
- eager jax, an unrolled discrete chain summed out at T = 10, then 11 and 12 in one process
  (what a model with a new length compiles), beside funsor 0.4.8;
- eager jax, NumPyro's scan HMM's log density at T = 10, 11 and 12 in one process (the clients'
  virtualenv, ours through its shim), beside funsor 0.4.8;
- eager jax, our chain calls (an HMM filter, max-plus, ragged lengths, ``markov_marginals``,
  ``markov_map``) at T = 10, then 11, 12 and 13 in one process (``chains``).

funsor 0.4.8 runs in a subprocess of its own python (``FUNSOR_PEER_PYTHON``, by default the
clients' virtualenv), so both sides are timed in one invocation.

Run: ``OMP_NUM_THREADS=1 XLA_FLAGS=--xla_cpu_multi_thread_eigen=false python
benchmarks/latency.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
from timing import best_us

import funsor_core as fc
from funsor_core import ops

PEER = os.environ.get("FUNSOR_PEER_PYTHON",
                      "/root/.cache/funsor-core-clients/venv/bin/python")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# XLA compilations counted from jax's own log (load-independent), pasted at the top level of
# the scripts below that run in fresh processes.
_COUNT_COMPILES = textwrap.dedent("""
    class _Count(logging.Handler):
        n = 0
        def emit(self, record):
            _Count.n += record.getMessage().startswith("Compiling ")
    logging.getLogger("jax").addHandler(_Count())
    jax.config.update("jax_log_compiles", True)""").strip("\n")

# -- eager jax, first call in a fresh process -----------------------------------------------------
_FIRST = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import logging
    class _Count(logging.Handler):  # XLA compilations, from jax's own log (load-independent)
        n = 0
        def emit(self, record):
            _Count.n += record.getMessage().startswith("Compiling ")
    logging.getLogger("jax").addHandler(_Count())
    jax.config.update("jax_log_compiles", True)
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.distribution import Normal
    from funsor_core.sum_product import MarkovProduct
    from interpretations import lazy
    fc.set_backend({backend!r})
    y_np = np.random.RandomState(0).randn(100).cumsum()

    def chain():
        x_prev, x_curr = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
        y = fc.Tensor(fc.numeric_array(y_np), {{"t": fc.Bint[100]}})
        walk = Normal(x_prev, 1.0, x_curr) + Normal(x_curr, 0.5, y)
        with lazy:
            kalman = MarkovProduct(ops.logaddexp, ops.add, walk, "t", {{"x_prev": "x_curr"}})
        prior = Normal(0.0, 1.0, x_prev)
        return (prior + kalman).reduce(ops.logaddexp, {{"x_prev", "x_curr"}}).data

    def normal():
        return Normal(0.0, 1.0, fc.Variable("x", fc.Real)).reduce(ops.logaddexp, "x").data

    def hand():  # a scalar Kalman filter's log likelihood, op by op in eager jax
        import jax.numpy as jnp
        m, p, ll = jnp.asarray(0.0), jnp.asarray(1.0), jnp.asarray(0.0)
        for y in jnp.asarray(y_np):
            p = p + 1.0
            s = p + 0.25
            ll = ll - 0.5 * (jnp.log(2 * jnp.pi * s) + (y - m) ** 2 / s)
            m, p = m + p / s * (y - m), p - p * p / s
        return ll

    prog = {prog}
    for label in ("first", "second", "third"):
        t0 = time.perf_counter()
        np.asarray(prog())
        print(label, time.perf_counter() - t0)
        if label == "first":
            print("compiles", _Count.n)
""")

_PEER_FIRST = textwrap.dedent("""
    import time
    import jax
    jax.config.update("jax_enable_x64", True)
    import logging
    class _Count(logging.Handler):  # XLA compilations, from jax's own log (load-independent)
        n = 0
        def emit(self, record):
            _Count.n += record.getMessage().startswith("Compiling ")
    logging.getLogger("jax").addHandler(_Count())
    jax.config.update("jax_log_compiles", True)
    import funsor
    funsor.set_backend("jax")
    import funsor.ops as ops
    from funsor.jax.distributions import Normal
    for label in ("first", "second", "third"):
        t0 = time.perf_counter()
        x = funsor.Variable("x", funsor.Real)
        funsor.to_data(Normal(0.0, 1.0, x).reduce(ops.logaddexp, "x"))
        print(label, time.perf_counter() - t0)
        if label == "first":
            print("compiles", _Count.n)
""")


def _fresh(python: str, code: str) -> dict | None:
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ), check=True, timeout=600).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {k: float(v) for k, v in (line.split() for line in out.strip().splitlines()
                                     if line.split()[0] in ("first", "second", "third",
                                                            "normal", "compiles"))}


def first_calls() -> None:
    print("\n## Eager first call in a fresh process (s), compilation included")
    print("| program | backend | first call | XLA compilations | second call | third call |")
    print("|---|---|---:|---:|---:|---:|")
    rows = [("100-step Gaussian chain", "jax", "chain"), ("100-step Gaussian chain", "numpy",
                                                          "chain"),
            ("hand-written Kalman loop, eager jax", "jax", "hand"),
            ("1-d Normal integral", "jax", "normal"), ("1-d Normal integral", "numpy", "normal")]
    for name, backend, prog in rows:
        r = _fresh(sys.executable, _FIRST.format(root=ROOT, backend=backend, prog=prog))
        print(f"| {name} | {backend} | {r['first']:.3g} | {r['compiles']:.0f} | "
              f"{r['second']:.3g} | {r['third']:.3g} |", flush=True)
    r = _fresh(PEER, _PEER_FIRST) if os.path.exists(PEER) else None
    if r is not None:
        print(f"| 1-d Normal integral, funsor 0.4.8 | jax | {r['first']:.3g} | "
              f"{r['compiles']:.0f} | {r['second']:.3g} | {r['third']:.3g} |")


# -- eager jax, an unrolled chain one step longer -------------------------------------------------
# A model unrolled by a Python loop (NumPyro's ``markov``) has a new length each time its data
# does: a chain of T discrete steps summed out by ``sum_product``, then T + 1 and T + 2 in the
# same process. What each longer chain compiles anew is what a user pays per new length.
_LONGER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import logging
    {count_compiles}
    {imports}
    rng = np.random.default_rng(0)
    K = 4

    def factors(T):
        log = lambda a: jnp.asarray(np.log(a))
        fs = [Tensor(log(rng.dirichlet(np.ones(K))), OrderedDict(x0=Bint[K]))]
        for t in range(1, T):
            fs.append(Tensor(log(rng.dirichlet(np.ones(K), size=K)),
                             OrderedDict([(f"x{{t - 1}}", Bint[K]), (f"x{{t}}", Bint[K])])))
        for t in range(T):
            fs.append(Tensor(log(rng.uniform(0.1, 1.0, K)), OrderedDict([(f"x{{t}}", Bint[K])])))
        return fs

    for T in (10, 11, 12):
        fs = factors(T)
        before, t0 = _Count.n, time.process_time()
        value = float(np.asarray(sum_product(ops.logaddexp, ops.add, fs,
                                             frozenset(f"x{{t}}" for t in range(T))).data))
        print(f"T{{T}}", time.process_time() - t0, _Count.n - before)
""")
_OURS_IMPORTS = ("import sys; sys.path.insert(0, {root!r}); from collections import OrderedDict\n"
                 "import funsor_core as fc; from funsor_core import ops, Tensor, Bint\n"
                 "fc.set_backend('jax')\n"
                 "sum_product = lambda s, p, f, e: fc.sum_product(s, p, f, e)")
_PEER_IMPORTS = ("from collections import OrderedDict\nimport funsor; funsor.set_backend('jax')\n"
                 "import funsor.ops as ops; from funsor import Tensor, Bint\n"
                 "from funsor.sum_product import sum_product as _sp\n"
                 "sum_product = lambda s, p, f, e: _sp(s, p, f, eliminate=e)")


def _run_longer(python: str, imports: str) -> dict | None:
    try:
        code = _LONGER.format(imports=imports, count_compiles=_COUNT_COMPILES)
        out = subprocess.run([python, "-c", code], capture_output=True,
                             text=True, env=dict(os.environ), check=True, timeout=600).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line.split()[0]: (float(line.split()[1]), int(line.split()[2]))
            for line in out.strip().splitlines() if line.startswith("T")}


def longer_chain() -> None:
    print("\n## Eager jax: an unrolled chain (K = 4) summed out at T = 10, then 11 and 12 in the "
          "same process (CPU s, new XLA compilations)")
    print("| library | T = 10 (first) | T = 11 | T = 12 |")
    print("|---|---:|---:|---:|")
    sides = [("funsor-core", sys.executable, _OURS_IMPORTS.format(root=ROOT))]
    if os.path.exists(PEER):
        sides.append(("funsor 0.4.8", PEER, _PEER_IMPORTS))
    for name, python, imports in sides:
        r = _run_longer(python, imports)
        if r is None:
            print(f"| {name} | fails | | |")
            continue
        cells = " | ".join(f"{r[f'T{T}'][0]:.3g} s, {r[f'T{T}'][1]}" for T in (10, 11, 12))
        print(f"| {name} | {cells} |", flush=True)


# -- eager jax, our chain calls one step longer ---------------------------------------------------
# Each call at T = 10 (cold), then 11, 12, 13 in one fresh process: CPU s and XLA compilations.
_CHAINS = textwrap.dedent("""
    import sys, time, logging
    sys.path.insert(0, {root!r})
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.sum_product import (MarkovProduct, markov_map, markov_marginals,
                                         markov_product)
    from interpretations import lazy
    {count_compiles}
    fc.set_backend("jax")
    rng, K, step = np.random.default_rng(0), 3, {{"x_prev": "x_curr"}}
    init = fc.Tensor(jnp.asarray(np.log(np.full(K, 1 / K))), {{"x_prev": fc.Bint[K]}})
    trans = fc.Tensor(jnp.asarray(np.log(0.1 + 0.7 * np.eye(K))),
                      {{"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]}})
    def steps(T, batch=()):
        names = {{"t": fc.Bint[T], **{{"b": fc.Bint[n] for n in batch}}, "x_curr": fc.Bint[K]}}
        with lazy:
            return trans + fc.Tensor(jnp.asarray(rng.normal(size=(T, *batch, K))), names)
    def reduced(chain, op):
        return (init + chain).reduce(op, {{"x_prev", "x_curr"}}).data
    def filtered(op, T):  # built lazily: the boundary reaches the chain (a filter)
        with lazy:
            chain = MarkovProduct(op, ops.add, steps(T), "t", step)
        return reduced(chain, op)
    def ragged(T):
        n = fc.Tensor(jnp.asarray([T, T - 3, 1]), {{"b": fc.Bint[3]}})
        with lazy:
            chain = markov_product(ops.logaddexp, ops.add, steps(T, (3,)), "t", step, lengths=n)
        return reduced(chain, ops.logaddexp)
    CALLS = {{
        "filter": lambda T: filtered(ops.logaddexp, T),
        "max-plus": lambda T: filtered(ops.max, T),
        "ragged": ragged,
        "marginals": lambda T: markov_marginals(ops.logaddexp, ops.add, steps(T), "t", step,
                                                [init])[1].data,
        "map": lambda T: markov_map(steps(T), "t", step, [init])[1]["x_prev"].data}}
    for name, call in CALLS.items():
        for T in (10, 11, 12, 13):
            before, t0 = _Count.n, time.process_time()
            jax.block_until_ready(call(T))
            print(name, T, time.process_time() - t0, _Count.n - before, flush=True)
""")


def markov_chains() -> None:
    print("\n## Eager jax: our chain calls (K = 3) at T = 10, then 11, 12, 13 in one process "
          "(CPU s, new XLA compilations)")
    print("| call | T = 10 (first) | T = 11 | T = 12 | T = 13 |")
    print("|---|---:|---:|---:|---:|")
    try:
        code = _CHAINS.format(root=ROOT, count_compiles=_COUNT_COMPILES)
        out = subprocess.run([sys.executable, "-c", code],
                             capture_output=True, text=True, env=dict(os.environ), check=True,
                             timeout=600).stdout
    except (OSError, subprocess.SubprocessError) as e:
        print(f"| fails: {type(e).__name__} | | | | |")
        return
    rows: dict = {}
    for line in out.strip().splitlines():
        name, _, cpu, n = line.split()
        rows.setdefault(name, []).append(f"{float(cpu):.2f} s, {n}")
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


# -- eager jax, NumPyro's scan HMM one step longer -----------------------------------------------
# NumPyro's HMM through ``contrib.control_flow.scan`` (its test_scan_enum_one_latent), its
# enumerated log density (``log_density``, no jax.jit) at T = 10, then 11 and 12 in one process:
# funsor's ``sequential_sum_product`` of a (T, 2, 2) chain. Both sides run in the clients'
# virtualenv (NumPyro), ours through its shim; compilations counted from jax's log, split into
# those called from funsor's side and the rest (NumPyro's own, the same on both sides).
_SCAN = textwrap.dedent("""
    import logging, time, traceback
    import jax
    import jax.numpy as jnp
    import numpyro, numpyro.distributions as dist
    from numpyro.contrib.control_flow import scan
    from numpyro.contrib.funsor import config_enumerate, enum, log_density
    import funsor
    class _Count(logging.Handler):
        n = ours = 0
        def emit(self, record):
            if record.getMessage().startswith("Compiling "):
                _Count.n += 1
                _Count.ours += any("/funsor_core/" in f.filename or "/site-packages/funsor/"
                                   in f.filename for f in traceback.extract_stack())
    logging.getLogger("jax").addHandler(_Count())
    logging.getLogger("jax").propagate = False
    jax.config.update("jax_log_compiles", True)
    init, trans, locs = jnp.array([0.6, 0.4]), jnp.array([[0.8, 0.2], [0.1, 0.9]]), jnp.array(
        [-1.0, 1.0])

    def model(data):
        def step(x, y):
            x = numpyro.sample("x", dist.Categorical(init if x is None else trans[x]))
            numpyro.sample("y", dist.Normal(locs[x], 1), obs=y)
            return x, 1
        scan(step, None, data)

    for T in (10, 11, 12):
        data = jax.random.normal(jax.random.PRNGKey(0), (T,))
        n, ours, t0 = _Count.n, _Count.ours, time.process_time()
        value = float(log_density(enum(config_enumerate(model)), (data,), {{}}, {{}})[0])
        print(f"T{{T}}", time.process_time() - t0, _Count.n - n, _Count.ours - ours, value)
""")
SHIM = os.environ.get("FUNSOR_CLIENT_SHIM", os.path.join(ROOT, "..", "shared", "tools", "clients",
                                                         "shim"))
if not os.path.isdir(SHIM):
    SHIM = "/work/shared/tools/clients/shim"


def _run_scan(env: dict) -> dict | None:
    try:
        out = subprocess.run([PEER, "-c", _SCAN.format()], capture_output=True, text=True,
                             env={k: v for k, v in {**os.environ, **env}.items() if v},
                             check=True, timeout=600).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {p[0]: (float(p[1]), int(p[2]), int(p[3]), float(p[4]))
            for p in (line.split() for line in out.strip().splitlines()) if p[0][0] == "T"}


def scan_hmm() -> None:
    print("\n## Eager jax: NumPyro's scan HMM (K = 2) log density at T = 10, then 11 and 12 in "
          "the same process (CPU s, new XLA compilations: all / from funsor's side)")
    print("| library | T = 10 (first) | T = 11 | T = 12 | log density at T = 12 |")
    print("|---|---:|---:|---:|---:|")
    if not os.path.exists(PEER):
        print("| (no clients' virtualenv: FUNSOR_PEER_PYTHON) | | | | |")
        return
    sides = [("funsor-core", {"FUNSOR_SHIM": "1", "PROJECT": ROOT, "PYTHONPATH": SHIM}),
             ("funsor 0.4.8", {"PYTHONPATH": SHIM, "FUNSOR_SHIM": ""})]
    for name, env in sides:
        r = _run_scan(env)
        if r is None:
            print(f"| {name} | fails | | | |")
            continue
        cells = " | ".join(f"{r[f'T{T}'][0]:.3g} s, {r[f'T{T}'][1]} / {r[f'T{T}'][2]}"
                           for T in (10, 11, 12))
        print(f"| {name} | {cells} | {r['T12'][3]:.7g} |", flush=True)


# -- Normal with affine arguments against the same Gaussian ---------------------------------------
_PEER_NORMAL = textwrap.dedent("""
    import timeit
    import funsor
    funsor.set_backend("torch")
    from funsor.torch.distributions import Normal
    x_prev, x_curr = funsor.Variable("x_prev", funsor.Real), funsor.Variable("x_curr", funsor.Real)
    fn = lambda: Normal(x_prev, 1.0, x_curr)
    fn()
    print("normal", min(timeit.repeat(fn, number=300, repeat=5)) / 300 * 1e6)
""")


def interleaved_us(a, b, number: int = 20, repeat: int = 300) -> tuple[float, float]:
    """Best-of-``repeat`` microseconds per call of ``a`` and ``b``, measured alternately in
    windows of ``number`` calls, after a warm-up call of each."""
    a(), b()
    best = [float("inf"), float("inf")]
    clock = time.perf_counter
    for _ in range(repeat):
        for k, fn in enumerate((a, b)):
            start = clock()
            for _ in range(number):
                fn()
            best[k] = min(best[k], (clock() - start) / number * 1e6)
    return best[0], best[1]


def normal_build() -> None:
    from funsor_core.distribution import Normal

    print("\n## Building Normal(x_prev, 1.0, x_curr) against the same Gaussian (us)")
    print("| backend | Normal(x_prev, 1.0, x_curr) | Gaussian(white_vec, prec_sqrt) | ratio | "
          "Gaussian(mean, covariance) + Tensor | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    x_prev, x_curr = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    for backend in ("numpy", "torch"):
        fc.set_backend(backend)
        g = Normal(x_prev, 1.0, x_curr).terms[0]
        w, p, inputs = g.white_vec, g.prec_sqrt, g.inputs
        mean, cov = fc.numeric_array(np.zeros(2)), fc.numeric_array(np.eye(2) + 1.0)
        const = fc.numeric_array(np.array(-0.9189))
        # fresh arrays each call: the same arrays would hit the cons-hash cache. Timed in
        # alternate short windows (best of many): load on a shared machine hits both alike.
        normal, sqrt = interleaved_us(
            lambda: Normal(x_prev, 1.0, x_curr),
            lambda w=w, p=p, inputs=inputs: fc.Gaussian(w * 1.0, p * 1.0, inputs))
        moments = best_us(lambda mean=mean, cov=cov, inputs=inputs, const=const: fc.Gaussian(
            mean=mean * 1.0, covariance=cov * 1.0, inputs=inputs) + fc.Tensor(const * 1.0),
            number=300)
        print(f"| {backend} | {normal:.1f} | {sqrt:.1f} | {normal / sqrt:.1f} | {moments:.1f} | "
              f"{normal / moments:.1f} |", flush=True)
    fc.set_backend("numpy")
    r = _fresh(PEER, _PEER_NORMAL) if os.path.exists(PEER) else None
    if r is not None:
        print(f"| torch, funsor 0.4.8 | {r['normal']:.1f} | - | - | - | - |")


# -- MAP against k best with k = 1 ----------------------------------------------------------------
def _chain_model(T: int = 30, N: int = 5, K: int = 4):
    rng = np.random.default_rng(0)
    init = rng.normal(size=K)
    trans = rng.normal(size=(T - 1, K, K))
    obs = rng.normal(size=(T - 1, N, K))
    return init, trans, obs


def _factors(init, trans, obs):
    K, N = len(init), obs.shape[1]
    a = fc.numeric_array
    fs = [fc.Tensor(a(init), {"x0": fc.Bint[K]})]
    for t in range(1, len(trans) + 1):
        fs.append(fc.Tensor(a(trans[t - 1]), {f"x{t - 1}": fc.Bint[K], f"x{t}": fc.Bint[K]}))
        fs.append(fc.Tensor(a(obs[t - 1]), {"n": fc.Bint[N], f"x{t}": fc.Bint[K]}))
    return fs


def _viterbi(init, trans, obs):
    score, back = init, []
    for t in range(len(trans)):
        cand = score[:, None] + trans[t]
        back.append(cand.argmax(0))
        score = cand.max(0) + obs[t].sum(0)
    path = [int(score.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return path[::-1]


def map_vs_kbest() -> None:
    from funsor_core.algorithms.adjoint import infer_discrete

    model = _chain_model()
    print("\n## infer_discrete MAP, 30-step chain K = 4 with plated observations (ms)")
    print("| backend | query='map' | query='kbest', k=1 | hand-written numpy Viterbi | "
          "map / kbest |")
    print("|---|---:|---:|---:|---:|")
    hand = best_us(lambda: _viterbi(*model), number=20) / 1e3
    for backend in ("numpy", "torch"):
        fc.set_backend(backend)
        fs = _factors(*model)
        best = infer_discrete(fs, {"n"}, query="map")
        assert [int(ops.to_numpy(best[f"x{t}"].data)) for t in range(len(best))] == \
            _viterbi(*model)
        m = best_us(lambda fs=fs: infer_discrete(fs, {"n"}, query="map"), number=5) / 1e3
        k = best_us(lambda fs=fs: infer_discrete(fs, {"n"}, query="kbest", k=1),
                    number=5) / 1e3
        print(f"| {backend} | {m:.2f} | {k:.2f} | {hand:.3f} | {m / k:.2f} |", flush=True)
    fc.set_backend("numpy")


def discrete_queries(rounds: int = 7) -> None:
    """Every ``infer_discrete`` query on the same model, before (the tape: recorded terms,
    replayed) and after (the cached schedule replayed on the arrays), beside the plain
    ``sum_product`` of the same factors and the hand Viterbi; old and new alternate in
    windows of 5 calls, min over ``rounds`` (h115)."""
    from unittest import mock

    from funsor_core.algorithms.adjoint import DiscreteModel, infer_discrete
    from funsor_core.sum_product import sum_product

    model = _chain_model()
    print("\n## infer_discrete queries, 30-step chain K = 4, plate of 5 (ms): tape -> schedule")
    print("| backend | query | tape (before) | schedule (after) | speed-up | plain sum_product "
          "| after / sum_product | after / hand Viterbi |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    hand = best_us(lambda: _viterbi(*model), number=50) / 1e3
    queries = [("map", {}, ops.max), ("kbest", {"k": 1}, ops.max),
               ("kbest", {"k": 5}, ops.max), ("marginals", {}, ops.logaddexp),
               ("entropy", {}, ops.logaddexp), ("sample", {"rng_key": 0}, ops.logaddexp)]
    tape = mock.patch.object(DiscreteModel, "_recipe", lambda self: None)  # the old path
    for backend in ("numpy", "torch"):
        fc.set_backend(backend)
        fs = _factors(*model)
        names = frozenset(n for f in fs for n in f.inputs)
        for query, kw, sum_op in queries:
            def new(fs=fs, query=query, kw=kw):
                return infer_discrete(fs, {"n"}, query=query, **kw)

            def old(new=new):
                with tape:
                    return new()

            before, after = interleaved_us(old, new, number=5, repeat=rounds)
            plain = best_us(lambda fs=fs, op=sum_op, names=names: sum_product(
                op, ops.add, fs, names, frozenset({"n"})), number=20)
            semiring = "max" if sum_op is ops.max else "lse"
            label = query + "".join(f" {k}={v}" for k, v in kw.items() if k != "rng_key")
            print(f"| {backend} | {label} | {before / 1e3:.2f} | {after / 1e3:.2f} | "
                  f"{before / after:.1f}x | {plain / 1e3:.2f} ({semiring}) "
                  f"| {after / plain:.1f} | {after / 1e3 / hand:.0f} |", flush=True)
    print(f"(hand-written numpy Viterbi: {hand:.3f} ms)")
    fc.set_backend("numpy")


if __name__ == "__main__":
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    which = sys.argv[1:] or ["first", "normal", "map", "longer", "scan", "chains"]
    if "chains" in which:
        markov_chains()
    if "longer" in which:
        longer_chain()
    if "scan" in which:
        scan_hmm()
    if "normal" in which:
        normal_build()
    if "map" in which:
        map_vs_kbest()
        discrete_queries()
    if "first" in which:
        first_calls()
