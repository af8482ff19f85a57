"""Planned contraction: tree-shaped factor graphs and a plated model, against hand-written
code and peers measured in the same run, one thread.

Workloads (log semiring, ``logaddexp``/``add``, unless a row says otherwise):

- a tree-shaped discrete Bayesian network of 20, 100 and 1,000 variables of domain 4: a root
  prior, one conditional table per edge (each node's parent drawn uniformly among the nodes
  before it, seed 0) and one evidence likelihood per node, in [0.5, 1], so that the
  partition function is finite even in probability space. funsor-core's ``einsum``,
  ``sum_product`` and ``apply_optimizer`` (of the lazy ``sum_product``) on Tensors of the log
  factors built inside the timed call, as users do, and ``einsum`` of the arrays themselves;
  second call on (plans are cached). Against the hand-written code: opt_einsum's
  ``contract_expression`` (a precomputed path) on the probabilities, on this backend and on
  numpy (linear space: it overflows or underflows on larger graphs where the log semiring
  does not), and a level-by-level batched elimination in log space written here
  (``level_batched``: per level of the tree one broadcast ``logsumexp`` and one scatter-add).
  Also the linear semiring on our side, Pyro's ``torch_log`` backend through the same
  precomputed path, pgmpy's variable elimination, and funsor 0.4.8, where installed;
- a plated model: a global variable z, plate i with a local variable x_i, plate j inside it
  with observations of x_i; (domain, I, J) = (16, 100, 100) and (4, 10, 10). ``einsum("z,
  izx,ijx->", plates="ij")`` on the arrays, ``sum_product`` and ``apply_optimizer`` on
  Tensors built in the call, against the hand-written computation, exact (sum over j,
  logsumexp over x, sum over i, logsumexp over z) and in linear space with one max shift
  per factor (one einsum over (i, z, x)), the faster taken as reference: numpy and torch
  eager, and every side under ``jax.jit``.

Every peer's value is checked against ours before it is timed. Run with one thread:
``make bench`` (or ``OMP_NUM_THREADS=1 python benchmarks/contraction.py``); ``--cpu`` times
by CPU time, for a loaded machine.
"""

from __future__ import annotations

import os
import sys
import time
import timeit
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import json  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402
import opt_einsum  # noqa: E402

# funsor 0.4.8's rows run in a subprocess of its own python (as overhead.py's), which times
# funsor alone: ``--peer`` is that process, and it never imports funsor_core.
FUNSOR_PYTHON = os.environ.get("FUNSOR_PYTHON",
                               "/root/.cache/funsor-core-clients/venv/bin/python")
PEER = "--peer" in sys.argv
if not PEER:
    # This checkout's funsor_core, not whichever one the virtualenv installed.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.sum_product import sum_product

DOMAIN = 4
SIZES = (20, 100, 1000)


def tree(n: int, seed: int = 0):
    """(subscripts, probability arrays, parents) of the tree-shaped network."""
    rng = np.random.default_rng(seed)
    sym = [opt_einsum.get_symbol(k) for k in range(n)]
    parents = [None] + [int(rng.integers(k)) for k in range(1, n)]
    inputs, arrays = [sym[0]], [rng.dirichlet(np.ones(DOMAIN))]
    for k in range(1, n):
        inputs.append(sym[parents[k]] + sym[k])
        arrays.append(rng.dirichlet(np.ones(DOMAIN), size=DOMAIN))
    for k in range(n):
        inputs.append(sym[k])
        arrays.append(rng.uniform(0.5, 1.0, size=DOMAIN))
    return inputs, arrays, parents


def timed(fn, budget_us: float = 2e5) -> float:
    """Best mean time of fn() in microseconds; the number of calls scales to the budget."""
    return interleaved({"fn": fn}, budget_us)["fn"]


# ``--cpu``: time by the process's CPU time instead of the wall clock. On a machine shared by
# more runnable threads than cores, wall-clock times of one-thread code stretch by how long
# the process waits for a core; its CPU time does not (XLA's threads count too).
TIMER = time.process_time if "--cpu" in sys.argv else time.perf_counter


def _best_us(fn, number: int) -> float:
    fn()
    return timeit.repeat(fn, number=number, repeat=1, timer=TIMER)[0] / number * 1e6


def interleaved(fns: dict, budget_us: float = 1e5, rounds: int = 7) -> dict:
    """Best mean time of each fn() in microseconds, measured in alternating rounds, so that
    load on a shared machine hits every candidate alike."""
    numbers = {}
    for name, fn in fns.items():
        first = _best_us(fn, 1)
        numbers[name] = max(1, min(2000, int(budget_us / max(first, 1.0))))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], _best_us(fn, numbers[name]))
    return best


def close(a, b, what: str, rtol: float = 1e-6) -> None:
    a, b = (float(np.asarray(x.detach() if hasattr(x, "detach") else x)) for x in (a, b))
    if not np.isclose(a, b, rtol=rtol):
        raise AssertionError(f"{what}: {a} != {b}")


def peer(name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return __import__(name)
    except ImportError:
        return None


# ---------------------------------------------------------------------------------------------
# Trees.
def tree_rows(backend: str) -> list:
    fc.set_backend(backend)
    rows = [tree_row(backend, n) for n in SIZES]
    fc.set_backend("numpy")
    return rows


def level_batched(parents, backend: str):
    """The hand-written level-by-level elimination of the tree in log space: the structure
    (depths, the nodes and parents of each level) is worked out once, as a user would; each
    call stacks the factors (the tables in level order), then per level one broadcast
    ``logsumexp`` for all its nodes and one scatter-add of the messages into the parents."""
    n = len(parents)
    depth = [0] * n
    for k in range(1, n):
        depth[k] = depth[parents[k]] + 1
    levels = [[k for k in range(1, n) if depth[k] == d] for d in range(max(depth), 0, -1)]
    order = [k for level in levels for k in level]
    bounds, start = [], 0
    for level in levels:
        bounds.append((start, start + len(level)))
        start += len(level)
    if backend == "torch":
        import torch

        nodes = [torch.tensor(level) for level in levels]
        ups = [torch.tensor([parents[k] for k in level]) for level in levels]

        def run(arrays):
            tables = torch.stack([arrays[k] for k in order])  # (n - 1, parent, child)
            b = torch.stack(arrays[n:])  # (n, D): each node's evidence
            for (s, e), nd, up in zip(bounds, nodes, ups):
                b.index_add_(0, up, torch.logsumexp(tables[s:e] + b[nd][:, None, :], -1))
            return torch.logsumexp(b[0] + arrays[0], 0)
    else:
        from scipy.special import logsumexp

        nodes = [np.array(level) for level in levels]
        ups = [np.array([parents[k] for k in level]) for level in levels]

        def run(arrays):
            tables = np.stack([arrays[k] for k in order])
            b = np.stack(arrays[n:])
            for (s, e), nd, up in zip(bounds, nodes, ups):
                np.add.at(b, up, logsumexp(tables[s:e] + b[nd][:, None, :], -1))
            return logsumexp(b[0] + arrays[0], 0)
    return run


def tree_row(backend: str, n: int) -> dict:
    from interpretations import lazy
    from interpretations.optimize import apply_optimizer

    torch = peer("torch") if backend == "torch" else None
    pyro_log = peer("pyro.ops.einsum.torch_log") if torch is not None else None
    inputs, probs, parents = tree(n)
    eq = ",".join(inputs) + "->"
    convert = torch.tensor if torch is not None else np.asarray
    p_arrays = [convert(p) for p in probs]
    l_arrays = [convert(np.log(p)) for p in probs]
    domains = [{c: fc.Bint[DOMAIN] for c in ins} for ins in inputs]
    expr = opt_einsum.contract_expression(eq, *[p.shape for p in probs])
    names = frozenset(opt_einsum.get_symbol(k) for k in range(n))
    hand = level_batched(parents, backend)
    Tensor = fc.Tensor

    # Our side builds its Tensors inside the timed call, as users do.
    def oe_linear():
        return expr(*p_arrays)

    def oe_numpy():
        return expr(*probs)

    def hand_levels():
        return hand(l_arrays)

    def ours_log():
        return fc.einsum(eq, *[Tensor(a, d) for a, d in zip(l_arrays, domains)],
                         backend="log").data

    def ours_arrays():
        return fc.einsum(eq, *l_arrays, backend="log")

    def ours_linear():
        return fc.einsum(eq, *[Tensor(a, d) for a, d in zip(p_arrays, domains)],
                         backend=backend).data

    def ours_sum_product():
        ts = [Tensor(a, d) for a, d in zip(l_arrays, domains)]
        return sum_product(ops.logaddexp, ops.add, ts, names).data

    def tensors_alone():  # the floor of the rows that build Tensors in the call
        return [Tensor(a, d) for a, d in zip(l_arrays, domains)]

    def ours_optimizer():
        ts = [Tensor(a, d) for a, d in zip(l_arrays, domains)]
        with lazy:
            e = sum_product(ops.logaddexp, ops.add, ts, names)
        return apply_optimizer(e).data

    expected = np.log(float(np.asarray(oe_numpy())))
    close(ours_log(), expected, f"einsum log n={n}")
    close(ours_arrays(), expected, f"einsum log arrays n={n}")
    close(ours_linear(), np.exp(expected), f"einsum linear n={n}")
    close(ours_sum_product(), expected, f"sum_product n={n}")
    close(ours_optimizer(), expected, f"apply_optimizer n={n}")
    close(hand_levels(), expected, f"level-batched hand code n={n}")
    row = {"backend": backend, "n": n}
    fns = {"oe": oe_linear, "hand": hand_levels, "log": ours_log, "arrays": ours_arrays,
           "linear": ours_linear, "sum_product": ours_sum_product, "optimizer": ours_optimizer,
           "tensors": tensors_alone}
    if backend != "numpy":
        fns["oe_numpy"] = oe_numpy
    row.update(interleaved(fns))
    # The Acceptance's reference: opt_einsum (the faster of this backend's and numpy's) for
    # 20 and 100 variables, the level-batched hand code for 1,000.
    row["ref"] = row["hand"] if n >= 1000 else min(row["oe"], row.get("oe_numpy", row["oe"]))
    if pyro_log is not None and n <= 100:
        def pyro():
            return expr(*l_arrays, backend="pyro.ops.einsum.torch_log")

        close(pyro(), expected, f"pyro torch_log n={n}")
        row["pyro_log"] = timed(pyro)
    if PEER_ROWS and n <= 100:
        row["funsor"] = PEER_ROWS["trees"].get(f"{backend} {n}")
    if backend == "numpy":
        row["pgmpy"] = pgmpy_tree(inputs, probs, parents, expected)
    return row


def funsor_tree(funsor, backend, n):
    """funsor 0.4.8's log-space ``einsum`` of the tree (in the ``--peer`` process)."""
    from collections import OrderedDict

    inputs, probs, _ = tree(n)
    eq = ",".join(inputs) + "->"
    expected = np.log(float(opt_einsum.contract(eq, *probs)))
    convert = __import__("torch").tensor if backend == "torch" else np.asarray
    arrays = [convert(np.log(p)) for p in probs]
    funsor.set_backend(backend)
    ts = [funsor.Tensor(a, OrderedDict((c, funsor.Bint[DOMAIN]) for c in ins))
          for ins, a in zip(inputs, arrays)]
    log_backend = "pyro.ops.einsum.torch_log" if backend == "torch" else \
        "funsor.einsum.numpy_log"

    def run():
        return funsor.einsum.einsum(eq, *ts, backend=log_backend).data

    close(run(), expected, "funsor 0.4.8")
    return timed(run, budget_us=1e6)


def pgmpy_tree(inputs, probs, parents, expected):
    if peer("pgmpy") is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgmpy.factors.discrete import DiscreteFactor
        from pgmpy.inference import VariableElimination
        from pgmpy.models import DiscreteMarkovNetwork

        n = len(parents)
        model = DiscreteMarkovNetwork()
        model.add_nodes_from(range(n))
        model.add_edges_from((parents[k], k) for k in range(1, n))
        sym = {opt_einsum.get_symbol(k): k for k in range(n)}
        model.add_factors(*[DiscreteFactor([sym[c] for c in ins], [DOMAIN] * len(ins), p)
                            for ins, p in zip(inputs, probs)])
        infer = VariableElimination(model)
        order = list(range(n - 1, 0, -1))  # leaves first: children come after parents

        def run():
            return infer.query([0], elimination_order=order, joint=True, show_progress=False,
                               )

        # pgmpy returns the unnormalized marginal of the root: its total is the partition
        # function, and its shape our root marginal.
        marginal = run().values
        close(np.log(marginal.sum()), expected, "pgmpy")
        root = np.asarray(fc.einsum(",".join(inputs) + "->" + inputs[0], *probs))
        np.testing.assert_allclose(marginal / marginal.sum(), root / root.sum(), rtol=1e-6)
        return timed(run, budget_us=1e6)


# ---------------------------------------------------------------------------------------------
# The plated model.
PLATE_I, PLATE_J, PLATED_DOMAIN = 100, 100, 16
PLATED_SIZES = ((16, 100, 100), (4, 10, 10))  # (domain, plate i, plate j)


def plated_arrays(seed: int = 1, size: tuple = (PLATED_DOMAIN, PLATE_I, PLATE_J)):
    d, i, j = size
    rng = np.random.default_rng(seed)
    prior = np.log(rng.dirichlet(np.ones(d)))
    trans = np.log(rng.dirichlet(np.ones(d), size=(i, d)))
    obs = rng.normal(size=(i, j, d)) - 2.0
    return prior, trans, obs


def plated_rows() -> list:
    rows = []
    for size in PLATED_SIZES:
        for backend in ("numpy", "torch", "jax"):
            if peer(backend) is not None:
                fc.set_backend(backend)
                rows.append(plated_row(backend, size))
    fc.set_backend("numpy")
    return rows


def plated_hand(backend: str) -> dict:
    """The hand-written computations, exact in log space and in linear space with one max
    shift per factor (the issue's: sum the observations over j, one shifted einsum over
    (z, x, i), log, sum over i, logsumexp over z)."""
    if backend == "torch":
        import torch

        lse, xp = torch.logsumexp, torch

        def amax(x):
            return x.max()
    elif backend == "jax":
        import jax.numpy as xp
        from jax.scipy.special import logsumexp as jlse

        def lse(x, axis):
            return jlse(x, axis=axis)

        def amax(x):
            return x.max()
    else:
        from scipy.special import logsumexp

        xp = np

        def lse(x, axis):
            return logsumexp(x, axis=axis)

        def amax(x):
            return x.max()

    def exact(prior, trans, obs):
        a = obs.sum(1)
        return lse(lse(trans + a[:, None, :], -1).sum(0) + prior, 0)

    def shifted(prior, trans, obs):
        a = obs.sum(1)
        ma, mt = amax(a), amax(trans)
        b = xp.log(xp.einsum("izx,ix->iz", xp.exp(trans - mt), xp.exp(a - ma))) + (ma + mt)
        return lse(b.sum(0) + prior, 0)

    return {"hand_exact": exact, "hand_shifted": shifted}


def plated_row(backend: str, size: tuple) -> dict:
    from scipy.special import logsumexp

    from interpretations import lazy
    from interpretations.optimize import apply_optimizer

    d, ni, nj = size
    prior, trans, obs = plated_arrays(size=size)
    a = obs.sum(1)
    expected = logsumexp(logsumexp(trans + a[:, None, :], axis=-1).sum(0) + prior)
    convert = {"torch": lambda x: __import__("torch").tensor(x),
               "jax": lambda x: __import__("jax").numpy.asarray(x)}.get(backend, np.asarray)
    arrays = [convert(x) for x in (prior, trans, obs)]
    B = fc.Bint
    domains = ({"z": B[d]}, {"i": B[ni], "z": B[d], "x": B[d]},
               {"i": B[ni], "j": B[nj], "x": B[d]})
    names = frozenset("zxij")

    def einsum(prior, trans, obs):
        return fc.einsum("z,izx,ijx->", prior, trans, obs, plates="ij", backend="log")

    def by_sum_product(*xs):
        ts = [fc.Tensor(x, dom) for x, dom in zip(xs, domains)]
        return sum_product(ops.logaddexp, ops.add, ts, names, frozenset("ij")).data

    def by_optimizer(*xs):
        ts = [fc.Tensor(x, dom) for x, dom in zip(xs, domains)]
        with lazy:
            e = sum_product(ops.logaddexp, ops.add, ts, names, frozenset("ij"))
        return apply_optimizer(e).data

    def lazy_alone(*xs):  # the floor of the apply_optimizer row: its Tensors and lazy terms
        ts = [fc.Tensor(x, dom) for x, dom in zip(xs, domains)]
        with lazy:
            return sum_product(ops.logaddexp, ops.add, ts, names, frozenset("ij"))

    fns = {**plated_hand(backend), "einsum": einsum, "sum_product": by_sum_product,
           "optimizer": by_optimizer}
    if backend == "jax":
        import jax

        def runner(fn):
            jitted = jax.jit(fn)
            return lambda: jitted(*arrays).block_until_ready()
    else:
        def runner(fn):
            return lambda: fn(*arrays)

    runs = {name: runner(fn) for name, fn in fns.items()}
    for name, run in runs.items():
        close(run(), expected, f"{name} {backend} {size}")
    if backend != "jax":  # (under jax.jit the lazy terms exist at trace time only)
        runs["lazy_alone"] = lambda: lazy_alone(*arrays)
    row = {"backend": backend + (" (jit)" if backend == "jax" else ""), "size": size}
    row.update(interleaved(runs))
    row["hand"] = min(row["hand_exact"], row["hand_shifted"])
    if PEER_ROWS and backend in ("numpy", "torch"):
        row["funsor"] = PEER_ROWS["plated"].get(f"{backend} {size}")
    return row


def funsor_plated(funsor, backend, size):
    """funsor 0.4.8's plated log-space ``einsum`` (in the ``--peer`` process)."""
    from collections import OrderedDict

    from scipy.special import logsumexp

    d, ni, nj = size
    prior, trans, obs = plated_arrays(size=size)
    expected = logsumexp(logsumexp(trans + obs.sum(1)[:, None, :], axis=-1).sum(0) + prior)
    convert = __import__("torch").tensor if backend == "torch" else np.asarray
    arrays = [convert(x) for x in (prior, trans, obs)]
    funsor.set_backend(backend)
    names = ("z", "izx", "ijx")
    sizes = {"z": d, "x": d, "i": ni, "j": nj}
    ts = [funsor.Tensor(a, OrderedDict((c, funsor.Bint[sizes[c]]) for c in ns))
          for ns, a in zip(names, arrays)]
    log_backend = "pyro.ops.einsum.torch_log" if backend == "torch" else \
        "funsor.einsum.numpy_log"

    def run():
        return funsor.einsum.einsum("z,izx,ijx->", *ts, plates="ij", backend=log_backend).data

    close(run(), expected, f"funsor 0.4.8 {backend}")
    return timed(run)


# ---------------------------------------------------------------------------------------------
def fmt(value, base=None) -> str:
    if value is None:
        return f"{'-':>9}"
    if base is None:
        return f"{value / 1e3:9.3f}"
    return f"{value / 1e3:9.3f} ({value / base:5.2f}x)"


def peer_main() -> dict:
    """funsor 0.4.8's rows, printed as one line of JSON (the ``--peer`` process)."""
    funsor = peer("funsor")
    out: dict = {"trees": {}, "plated": {}}
    for backend in ("numpy", "torch"):
        if backend == "torch":
            __import__("torch").set_num_threads(1)
        for n in SIZES[:2]:
            out["trees"][f"{backend} {n}"] = funsor_tree(funsor, backend, n)
        for size in PLATED_SIZES:
            out["plated"][f"{backend} {size}"] = funsor_plated(funsor, backend, size)
    print(json.dumps(out))
    return out


def peer_rows() -> dict | None:
    """funsor 0.4.8's times from a subprocess of ``FUNSOR_PYTHON``; None if it is absent."""
    if not os.path.exists(FUNSOR_PYTHON):
        return None
    args = [FUNSOR_PYTHON, os.path.abspath(__file__), "--peer"] + (
        ["--cpu"] if "--cpu" in sys.argv else [])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    if done.returncode:
        print("funsor 0.4.8 failed:", done.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


PEER_ROWS: dict | None = None


def main() -> dict:
    global PEER_ROWS
    if PEER:
        return peer_main()
    PEER_ROWS = peer_rows()
    result = {"trees": [], "plated": []}
    print("Tree-shaped network, domain 4, milliseconds per call (our Tensors built in the call; "
          "'arrays': einsum of the arrays); ratios to opt_einsum with a precomputed path on the "
          "probabilities (the faster of this backend's and numpy's) for n <= 100, to the "
          "level-batched hand code for n = 1000; 'Tensors alone': building the operands' Tensors, "
          "the floor of the rows that build them")
    print(f"{'backend':>8} {'n':>5} {'opt_einsum':>10} {'oe numpy':>10} {'levels':>10} "
          f"{'einsum log':>19} {'einsum arrays':>19} {'sum_product':>19} "
          f"{'apply_optimizer':>19} {'einsum linear':>19} {'pyro torch_log':>19} "
          f"{'pgmpy VE':>19} {'funsor 0.4.8':>19} {'Tensors alone':>19}")
    for backend in ("numpy", "torch"):
        if backend == "torch" and peer("torch") is None:
            continue
        for row in tree_rows(backend):
            result["trees"].append(row)
            base = row["ref"]
            print(f"{row['backend']:>8} {row['n']:>5} {fmt(row['oe']):>10} "
                  f"{fmt(row.get('oe_numpy', row['oe'])):>10} {fmt(row['hand']):>10} "
                  f"{fmt(row['log'], base):>19} {fmt(row['arrays'], base):>19} "
                  f"{fmt(row['sum_product'], base):>19} "
                  f"{fmt(row['optimizer'], base):>19} {fmt(row['linear'], base):>19} "
                  f"{fmt(row.get('pyro_log'), base):>19} {fmt(row.get('pgmpy'), base):>19} "
                  f"{fmt(row.get('funsor'), base):>19} {fmt(row['tensors'], base):>19}",
                  flush=True)
    print()
    print("Plated model (z global, x in plate i, observations in plates i x j), milliseconds "
          "per call; ratios to the faster hand-written computation (exact or shifted); 'lazy "
          "terms alone': building the Tensors and the lazy sum_product, the floor of the "
          "apply_optimizer row")
    print(f"{'backend':>10} {'D,I,J':>10} {'hand exact':>10} {'shifted':>10} {'einsum':>19} "
          f"{'sum_product':>19} {'apply_optimizer':>19} {'funsor 0.4.8':>19} "
          f"{'lazy terms alone':>19}")
    for row in plated_rows():
        result["plated"].append(row)
        base = row["hand"]
        print(f"{row['backend']:>10} {','.join(map(str, row['size'])):>10} "
              f"{fmt(row['hand_exact']):>10} {fmt(row['hand_shifted']):>10} "
              f"{fmt(row['einsum'], base):>19} {fmt(row['sum_product'], base):>19} "
              f"{fmt(row['optimizer'], base):>19} {fmt(row.get('funsor'), base):>19} "
              f"{fmt(row.get('lazy_alone'), base):>19}", flush=True)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
