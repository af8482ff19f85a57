"""funsor's chain idioms on funsor-core, beside hand-written code and funsor 0.4.8, in one run.

Rows (issue #28, "funsor's idioms, side by side"):

- ``sequential_sum_product(logaddexp, add, trans, time, {"prev": "curr"})`` then a reduction
  of both ends (the log normalizer of T matrices), eager torch and ``jax.jit``, against a
  hand-written log-depth tree (log-space matrix products with a max shift per matrix: the
  fastest hand-written form; under ``jax.jit`` also the broadcast log-sum-exp tree);
- the Kalman log likelihood through ``sequential_sum_product`` of Gaussian steps under
  ``jax.jit`` against dynamax's filter when importable, else a hand-written ``lax.scan`` one;
- HMM pair marginals by funsor's ``AdjointTape`` against autograd of a log-depth log Z;
- the Viterbi path by the adjoint under ``argmax_approximate`` against a hand-written torch
  Viterbi (one loop forwards, one backtrack).

funsor 0.4.8 runs the same programs on the same data in a subprocess of its own python
(``FUNSOR_PYTHON``, default the clients' venv), started by this script, so both sides are
timed in one invocation. Every program is checked against the hand-written one first. One
thread; times are the best of a few repeats, in milliseconds.

Usage: ``python benchmarks/idioms.py [--quick]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from timing import best_ms  # noqa: E402

FUNSOR_PYTHON = os.environ.get("FUNSOR_PYTHON",
                               "/root/.cache/funsor-core-clients/venv/bin/python")
# (name, backend, K, T, B): the sequential_sum_product rows; B = 0 means no batch input.
CHAIN_ROWS = [("ssp K=4 T=1000 torch", "torch", 4, 1000, 0),
              ("ssp K=32 T=1000 B=16 torch", "torch", 32, 1000, 16),
              ("ssp K=4 T=1000 jax.jit", "jax", 4, 1000, 0),
              ("ssp K=32 T=1000 B=16 jax.jit", "jax", 32, 1000, 16)]
KALMAN_T = 100
ADJOINT_K, ADJOINT_T = 16, 1000
VITERBI_K, VITERBI_T = 16, 1000


def measure(fn, repeats: int = 5) -> float:
    """Best ms of one ``fn()`` call over ``repeats`` calls (``timing.best_ms``)."""
    return best_ms(fn, repeats)


def chain_data(K: int, T: int, B: int):
    shape = (T, B, K, K) if B else (T, K, K)
    return np.random.default_rng(K + T + B).normal(size=shape)


def chain_inputs(Bint, K: int, T: int, B: int) -> dict:
    inputs = {"time": Bint[T]}
    if B:
        inputs["b"] = Bint[B]
    inputs.update(prev=Bint[K], curr=Bint[K])
    return inputs


# -- hand-written --------------------------------------------------------------------------------


def _tree(mm, m):
    tails = []
    while m.shape[0] > 1:
        if m.shape[0] % 2:
            tails.append(m[-1])
            m = m[:-1]
        m = mm(m[0::2], m[1::2])
    r = m[0]
    for tail in reversed(tails):
        r = mm(r, tail)
    return r


def torch_log_tree(m):
    import torch

    def mm(a, b):  # log(exp(a) @ exp(b)), shifted by each matrix's max
        sa, sb = a.amax((-2, -1), keepdim=True), b.amax((-2, -1), keepdim=True)
        return torch.log(torch.exp(a - sa) @ torch.exp(b - sb)) + sa + sb

    return torch.logsumexp(_tree(mm, m).flatten(-2), -1)


def jax_log_tree(m):
    import jax
    import jax.numpy as jnp

    def mm(a, b):
        sa, sb = a.max((-2, -1), keepdims=True), b.max((-2, -1), keepdims=True)
        return jnp.log(jnp.exp(a - sa) @ jnp.exp(b - sb)) + sa + sb

    return jax.nn.logsumexp(_tree(mm, m), (-2, -1))


def jax_broadcast_tree(m):
    import jax

    def mm(a, b):
        return jax.nn.logsumexp(a[..., :, :, None] + b[..., None, :, :], -2)

    return jax.nn.logsumexp(_tree(mm, m), (-2, -1))


def torch_autograd_marginals(logits):
    import torch

    x = logits.detach().requires_grad_()

    def mm(a, b):
        return torch.logsumexp(a.unsqueeze(-1) + b.unsqueeze(-3), -2)

    z = torch.logsumexp(_tree(mm, x).reshape(-1), 0)
    return torch.autograd.grad(z, [x])[0]


def torch_autograd_scaled_marginals(logits):
    import torch

    x = logits.detach().requires_grad_()
    return torch.autograd.grad(torch_log_tree(x), [x])[0]


def torch_viterbi(data):
    import torch

    value, ptrs = data[0].max(0).values, [data[0].argmax(0)]
    for t in range(1, data.shape[0]):
        value, ptr = (value[:, None] + data[t]).max(0)
        ptrs.append(ptr)
    state = value.argmax()
    path = [state]
    for ptr in reversed(ptrs):
        state = ptr[state]
        path.append(state)
    return torch.stack(path[::-1])


def path_score(data, path) -> float:
    data = np.asarray(data)
    return float(sum(data[t, path[t], path[t + 1]] for t in range(data.shape[0])))


# -- the idioms, written once for funsor-core and funsor 0.4.8 -----------------------------------


def api(lib: str):
    """The names the idioms use, from funsor-core (``"core"``) or funsor 0.4.8 (``"funsor"``)."""
    from types import SimpleNamespace

    if lib == "core":
        import funsor_core as fc
        from funsor_core import ops
        from funsor_core.adjoint import AdjointTape
        from funsor_core.algorithms.adjoint import adjoint, argmax_approximate
        from funsor_core.sum_product import sequential_sum_product
        from interpretations import lazy

        return SimpleNamespace(Tensor=fc.Tensor, Variable=fc.Variable, Bint=fc.Bint,
                               Reals=fc.Reals, Gaussian=fc.Gaussian, ops=ops,
                               ssp=sequential_sum_product, lazy=lazy, argmax=argmax_approximate,
                               adjoint=adjoint, extract=fc.extract_samples,
                               AdjointTape=AdjointTape, set_backend=fc.set_backend)
    import funsor
    import funsor.util
    from funsor.adjoint import AdjointTape, adjoint
    from funsor.approximations import argmax_approximate
    from funsor.gaussian import Gaussian
    from funsor.interpretations import lazy
    from funsor.montecarlo import extract_samples
    from funsor.sum_product import sequential_sum_product

    def set_backend(name):
        funsor.set_backend(name)
        if funsor.util._JAX_COMPILED_FUNCTION_TYPE is None and "jax" in sys.modules:
            import jax  # funsor reads it whenever jax is imported (see markov_peers.py)

            funsor.util._JAX_COMPILED_FUNCTION_TYPE = type(jax.jit(lambda: 0))

    return SimpleNamespace(Tensor=funsor.Tensor, Variable=funsor.Variable, Bint=funsor.Bint,
                           Reals=funsor.Reals, Gaussian=Gaussian, ops=funsor.ops,
                           ssp=sequential_sum_product, lazy=lazy, argmax=argmax_approximate,
                           adjoint=adjoint, extract=extract_samples, AdjointTape=AdjointTape,
                           set_backend=set_backend)


def _od(d):
    from collections import OrderedDict

    return OrderedDict(d)


def ssp_total(F, K, T, B):
    """``sequential_sum_product`` of T steps, then both ends summed: log Z per batch."""
    inputs = _od(chain_inputs(F.Bint, K, T, B))
    time = F.Variable("time", F.Bint[T])

    def run(data):
        trans = F.Tensor(data, inputs)
        z = F.ssp(F.ops.logaddexp, F.ops.add, trans, time, {"prev": "curr"})
        return z.reduce(F.ops.logaddexp, frozenset({"prev", "curr"})).data

    return run


def kalman_total(F, T, dim=4, obs_dim=2):
    """The Kalman log likelihood (up to a constant) as funsor's idiom: Gaussian steps (a shared
    transition plus an observation per step), their ``sequential_sum_product``, the prior
    added and both ends integrated out. Arguments: square-root information arrays."""
    inputs = _od({"time": F.Bint[T], "x_prev": F.Reals[dim], "x_curr": F.Reals[dim]})
    obs_inputs = _od({"time": F.Bint[T], "x_curr": F.Reals[dim]})
    time = F.Variable("time", F.Bint[T])

    def run(trans_white, trans_sqrt, obs_white, obs_sqrt, prior_white, prior_sqrt):
        trans = F.Gaussian(white_vec=trans_white, prec_sqrt=trans_sqrt, inputs=inputs)
        obs = F.Gaussian(white_vec=obs_white, prec_sqrt=obs_sqrt, inputs=obs_inputs)
        prior = F.Gaussian(white_vec=prior_white, prec_sqrt=prior_sqrt,
                           inputs=_od({"x_prev": F.Reals[dim]}))
        z = F.ssp(F.ops.logaddexp, F.ops.add, trans + obs, time, {"x_prev": "x_curr"})
        return (prior + z).reduce(F.ops.logaddexp, frozenset({"x_prev", "x_curr"})).data

    return run


def kalman_arrays(T, dim=4, obs_dim=2):
    """Square-root information arrays of ``markov_peers.kalman_model`` (numpy)."""
    import markov_peers as peers

    model = peers.kalman_model(np.random.default_rng(T), dim=dim, obs_dim=obs_dim, steps=T)
    F_, Q, H, R, m0, P0, ys = (model[k] for k in ("F", "Q", "H", "R", "m0", "P0", "ys"))
    lq = np.linalg.inv(np.linalg.cholesky(Q)).T  # Q^-1 = lq lq'
    lr = np.linalg.inv(np.linalg.cholesky(R)).T
    lp = np.linalg.inv(np.linalg.cholesky(P0)).T
    trans_sqrt = np.broadcast_to(np.concatenate([-(F_.T @ lq), lq], 0), (T, 2 * dim, dim))
    obs_sqrt = np.broadcast_to((H.T @ lr)[None], (T, dim, obs_dim))
    arrays = (np.zeros((T, dim)), np.ascontiguousarray(trans_sqrt), ys @ lr,
              np.ascontiguousarray(obs_sqrt), m0 @ lp, lp)
    return model, arrays


def adjoint_marginals(F, K, T):
    """Pair marginals of T steps by funsor's adjoint of log Z (as benchmarks/adjoint.py)."""
    inputs = _od(chain_inputs(F.Bint, K, T, 0))
    time = F.Variable("time", F.Bint[T])

    def run(logits):
        trans = F.Tensor(logits, inputs)
        with F.AdjointTape() as tape:
            z = F.ssp(F.ops.logaddexp, F.ops.add, trans, time, {"prev": "curr"})
            z = z.reduce(F.ops.logaddexp, frozenset({"prev", "curr"}))
        adj = tape.adjoint(F.ops.logaddexp, F.ops.add, z, (trans,))[trans]
        return (adj + trans - z).exp().align(("time", "prev", "curr")).data

    return run


def adjoint_viterbi(F, K, T):
    """The MAP path by the adjoint of a lazily built max chain under ``argmax_approximate``."""
    inputs = _od(chain_inputs(F.Bint, K, T, 0))
    time = F.Variable("time", F.Bint[T])

    def run(data):
        trans = F.Tensor(data, inputs)
        with F.lazy:
            z = F.ssp(F.ops.max, F.ops.add, trans, time, {"prev": "curr"})
            z = z.reduce(F.ops.max, frozenset({"prev", "curr"}))
        with F.argmax:
            adj = F.adjoint(F.ops.max, F.ops.add, z)
        points = F.extract(adj[trans])
        return points["prev"].data, points["curr"].data

    return run


# -- the runs ----------------------------------------------------------------------------------


def _jit(backend: str, fn):
    if backend != "jax":
        return fn
    import jax

    jitted = jax.jit(fn)
    return lambda *a: jax.block_until_ready(jitted(*a))


def _array(backend: str, x):
    if backend == "torch":
        import torch

        return torch.tensor(np.asarray(x))
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return np.asarray(x)


def _big(K: int, B: int) -> bool:
    return K * max(B, 1) > 64


def run_rows(lib: str, quick: bool) -> dict:
    """Time every idiom with one library: ``{row: (ms, values as a list)}``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    F = api(lib)
    out = {}
    for name, backend, K, T, B in CHAIN_ROWS:
        if quick and _big(K, B):
            continue
        F.set_backend(backend)
        if backend == "torch":
            import torch

            torch.set_num_threads(1)
        data = _array(backend, chain_data(K, T, B))
        fn = _jit(backend, ssp_total(F, K, T, B))
        value = fn(data)
        out[name] = (measure(lambda fn=fn, data=data: fn(data), 2 if _big(K, B) else 10),
                     np.asarray(value).reshape(-1).tolist())
    F.set_backend("jax")
    _, arrays = kalman_arrays(KALMAN_T)
    arrays = [_array("jax", a) for a in arrays]
    fn = _jit("jax", kalman_total(F, KALMAN_T))
    value = fn(*arrays)
    out["kalman T=100 jax.jit"] = (measure(lambda: fn(*arrays), 20), [float(value)])
    F.set_backend("torch")
    logits = _array("torch", np.random.default_rng(0).normal(size=(ADJOINT_T, ADJOINT_K,
                                                                    ADJOINT_K)))
    fn = adjoint_marginals(F, ADJOINT_K, ADJOINT_T)
    value = fn(logits)
    out["adjoint marginals K=16 T=1000 torch"] = (measure(lambda: fn(logits), 5),
                                                   [float(value.sum())])
    data = _array("torch", np.random.default_rng(1).normal(size=(VITERBI_T, VITERBI_K,
                                                                  VITERBI_K)))
    fn = adjoint_viterbi(F, VITERBI_K, VITERBI_T)
    slow = lib == "funsor"
    if quick and slow:
        return out
    try:
        prev, curr = fn(data)
    except NotImplementedError as e:  # funsor 0.4.8: compute_argmax of a Cat of Tensors
        print(f"Viterbi by the argmax adjoint fails on {lib}: {e!r}", file=sys.stderr)
        return out
    path = np.append(np.asarray(prev), np.asarray(curr)[-1])
    out["argmax adjoint Viterbi K=16 T=1000 torch"] = (
        measure(lambda: fn(data), 1 if slow else 5), [path_score(data, path)])
    return out


def hand_rows(quick: bool) -> dict:
    """The hand-written programs of the same rows: ``{row: (ms, values)}``."""
    import jax
    import markov_peers as peers
    import torch

    jax.config.update("jax_enable_x64", True)
    torch.set_num_threads(1)
    out = {}
    for name, backend, K, T, B in CHAIN_ROWS:
        if quick and _big(K, B):
            continue
        data = _array(backend, chain_data(K, T, B))
        progs = ({"tree": torch_log_tree} if backend == "torch" else
                 {"tree": _jit("jax", jax_log_tree),
                  "broadcast": _jit("jax", jax_broadcast_tree)})
        repeats = 2 if _big(K, B) else 10
        times = {k: measure(lambda f=f, d=data: f(d), repeats) for k, f in progs.items()}
        best = min(times, key=times.get)
        out[name] = (times[best], np.asarray(progs[best](data)).reshape(-1).tolist(), best)
    model, _ = kalman_arrays(KALMAN_T)
    args = {k: _array("jax", v) for k, v in model.items()}
    fn = _jit("jax", lambda a: peers.jax_kalman(**a))
    # The row is against dynamax's sequential filter when it imports (the acceptance's
    # peer; PYTHONPATH, benchmarks/README "dynamax"), else a hand lax.scan filter.
    dyn = peers.dynamax_kalman(False)
    name, fn = (("jax lax.scan", fn) if dyn is None else
                ("dynamax", _jit("jax", lambda a: dyn(**a))))
    out["kalman T=100 jax.jit"] = (measure(lambda: fn(args), 20), [float(fn(args))], name)
    logits = _array("torch", np.random.default_rng(0).normal(size=(ADJOINT_T, ADJOINT_K,
                                                                    ADJOINT_K)))
    hand = {"autograd, broadcast tree": torch_autograd_marginals,
            "autograd, matmul tree": torch_autograd_scaled_marginals}
    times = {k: measure(lambda f=f: f(logits), 5) for k, f in hand.items()}
    best = min(times, key=times.get)
    out["adjoint marginals K=16 T=1000 torch"] = (times[best],
                                                  [float(hand[best](logits).sum())], best)
    data = _array("torch", np.random.default_rng(1).normal(size=(VITERBI_T, VITERBI_K,
                                                                  VITERBI_K)))
    path = torch_viterbi(data)
    out["argmax adjoint Viterbi K=16 T=1000 torch"] = (
        measure(lambda: torch_viterbi(data), 5), [path_score(data, path.numpy())], "loop")
    return out


def peer_rows(quick: bool) -> dict | None:
    """funsor 0.4.8's rows, from a subprocess of its python; None where it cannot run."""
    if not os.path.exists(FUNSOR_PYTHON):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    args = [FUNSOR_PYTHON, os.path.abspath(__file__), "--peer"] + (["--quick"] if quick else [])
    done = subprocess.run(args, capture_output=True, text=True, cwd=here, timeout=1800)
    if done.returncode:
        print("funsor 0.4.8 failed:", done.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _close(a, b) -> bool:
    return np.allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the largest rows")
    parser.add_argument("--peer", action="store_true", help="(internal) funsor 0.4.8's rows")
    args = parser.parse_args()
    if args.peer:
        # The hand-written programs again in funsor's process, so that its ratios compare
        # programs timed in the same window of a shared machine.
        out = run_rows("funsor", args.quick)
        hand = hand_rows(args.quick)
        print(json.dumps({k: list(v) + [hand[k][0]] for k, v in out.items()}))
        return
    peer = peer_rows(args.quick)
    hand = hand_rows(args.quick)
    core = run_rows("core", args.quick)
    print("funsor idioms, one thread, best of repeats (ms); ratio = time / hand-written "
          "(funsor 0.4.8's against the hand-written code timed again in its process)")
    print(f"{'row':42} {'funsor-core':>11} {'hand':>9} {'funsor 0.4.8':>12} "
          f"{'core/hand':>9} {'0.4.8/hand':>10}  hand-written")
    for name, (ms, values) in core.items():
        h_ms, h_values, h_name = hand[name]
        kalman = name.startswith("kalman")  # the idiom drops normalizing constants
        ok = "" if kalman or _close(values, h_values) else "  MISMATCH vs hand"
        old = peer.get(name) if peer else None
        if old is not None and not _close(values, old[1]):
            ok += "  MISMATCH vs funsor 0.4.8"
        old_ms = f"{old[0]:12.3f}" if old else f"{'-':>12}"
        old_ratio = f"{old[0] / old[2]:10.2f}" if old else f"{'-':>10}"
        print(f"{name:42} {ms:11.3f} {h_ms:9.3f} {old_ms} {ms / h_ms:9.2f} {old_ratio}  "
              f"{h_name}{ok}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
