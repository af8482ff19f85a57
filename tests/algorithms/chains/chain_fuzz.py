"""A seeded fuzzer for discrete chains: every chain entry point against float64 numpy.

``draw(seed)`` makes a random case (K states, T steps, a batch name, a global variable shared
by all steps, -inf transitions, impossible evidence, float32 near -1e4 per step, ragged
lengths or masks, the sum or max semiring, numpy / torch / jax eager / ``jax.jit``);
``check(case)`` runs ``MarkovProduct`` (each strategy), funsor's ``sequential_sum_product``,
``naive_sequential_sum_product`` and ``mixed_sequential_sum_product``, ``markov_product``,
``markov_marginals``, ``markov_map`` and ``windowed_filter`` on it and returns the list of
disagreements with the oracle: a float64 numpy semiring recursion, checked itself against
enumeration of every path where there are few (``K ** (T + 1) <= 4096``).

Run long: ``python -m tests.algorithms.chains.chain_fuzz 0 5000`` (first seed, count);
``tests/algorithms/chains/test_chain_fuzz.py`` keeps a seeded slice.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import (
    MarkovProduct,
    markov_map,
    markov_marginals,
    markov_product,
    mixed_sequential_sum_product,
    naive_sequential_sum_product,
    sequential_sum_product,
)
from interpretations import lazy

STEP = {"x_prev": "x_curr"}


@dataclass
class Case:
    seed: int
    backend: str  # numpy, torch, jax
    jit: bool
    dtype: str  # float32, float64
    semiring: str  # sum, max
    K: int
    T: int
    B: int  # 0: no batch name
    G: int  # 0: no global variable
    lazy_sum: bool  # the step as a lazy sum of a shared matrix and observations
    ninf: bool  # -inf transitions
    impossible: bool  # one entry's evidence impossible at one step
    big: bool  # log weights near -1e4 per step
    ragged: str  # none, lengths, mask
    strategy: str | None


def draw(seed: int, long_t: bool = False) -> Case:
    """A random case; ``long_t`` gives one T = 2,000 chain.

    Example:
        >>> draw(3).seed
        3
    """
    r = np.random.default_rng(seed)
    backend = str(r.choice(["numpy", "torch", "jax"]))
    jit = backend == "jax" and bool(r.random() < 0.5)
    dtype = "float32" if r.random() < 0.35 else "float64"
    ragged = str(r.choice(["none", "lengths", "mask"], p=[0.5, 0.3, 0.2]))
    B = int(r.integers(1, 4)) if (ragged != "none" or r.random() < 0.5) else 0
    return Case(seed=seed, backend=backend, jit=jit, dtype=dtype,
                semiring=str(r.choice(["sum", "max"])), K=int(r.integers(1, 6)),
                T=2000 if long_t else int(r.integers(1, 41)) if r.random() < 0.5
                else int(r.integers(1, 7)),
                B=B, G=int(r.integers(1, 4)) if r.random() < 0.3 else 0,
                lazy_sum=bool(r.random() < 0.5), ninf=bool(r.random() < 0.25),
                impossible=bool(r.random() < 0.1), big=dtype == "float32" and r.random() < 0.5,
                ragged=ragged,
                strategy=[None, "parallel", "sequential"][int(r.integers(0, 3))])


# ----- data and oracle (float64 numpy, arrays always (T, B, G, K, K) with unit B/G) -------

def make_data(c: Case) -> dict:
    """The case's arrays: init (B, G, K), a shared matrix (G, K, K), observations
    (T, B, K), the full steps (T, B, G, K, K), and the keep mask (T, B) of ragged entries.

    Example:
        >>> make_data(draw(0))["steps"].ndim
        5
    """
    r = np.random.default_rng(10_000 + c.seed)
    b, g = max(c.B, 1), max(c.G, 1)
    init = r.normal(size=(b, g, c.K))
    if not c.B:
        init = np.broadcast_to(init[:1], init.shape).copy()
    mat = r.normal(size=(g, c.K, c.K))
    obs = r.normal(size=(c.T, b, c.K)) * 2
    if c.ninf:
        mat[r.random(mat.shape) < 0.15] = -np.inf
        obs[r.random(obs.shape) < 0.03] = -np.inf
    if c.big:  # float32 with log weights near -1e4 per step: the totals reach -4e5
        obs = obs - 1e4
    if c.impossible:
        obs[int(r.integers(c.T)), int(r.integers(b))] = -np.inf
    if c.lazy_sum:
        steps = mat[None, None] + obs[:, :, None, None, :]
    else:
        steps = r.normal(size=(c.T, b, g, c.K, c.K)) * 2
        if c.ninf:
            steps[r.random(steps.shape) < 0.1] = -np.inf
        if c.big:
            steps = steps - 1e4
        if c.impossible:
            steps[int(r.integers(c.T)), int(r.integers(b))] = -np.inf
        if not c.B:
            steps = np.broadcast_to(steps[:, :1], steps.shape).copy()
        if not c.G:
            steps = np.broadcast_to(steps[:, :, :1], steps.shape).copy()
    if c.dtype == "float32":  # the oracle sees the numbers the library sees
        init, mat, obs, steps = (x.astype(np.float32).astype(np.float64)
                                 for x in (init, mat, obs, steps))
        if c.lazy_sum:
            steps = mat[None, None] + obs[:, :, None, None, :]
    keep = np.ones((c.T, b), dtype=bool)
    lengths = None
    if c.ragged == "lengths":
        lengths = r.integers(0, c.T + 1, size=b)
        lengths[int(r.integers(b))] = c.T if r.random() < 0.5 else lengths[0]
        keep = np.arange(c.T)[:, None] < lengths[None, :]
    elif c.ragged == "mask":
        keep = r.random((c.T, b)) < 0.7
    return dict(init=init, mat=mat, obs=obs, steps=steps, keep=keep, lengths=lengths)


def _red(c: Case):
    return np.logaddexp.reduce if c.semiring == "sum" else np.max


def oracle_steps(c: Case, d: dict) -> np.ndarray:
    """The steps with each masked step the identity (0 on the diagonal, -inf off it).

    Example:
        >>> c = draw(0); oracle_steps(c, make_data(c)).shape[0] == c.T
        True
    """
    eye = np.where(np.eye(c.K) > 0, 0.0, -np.inf)
    return np.where(d["keep"][:, :, None, None, None], d["steps"], eye)


def oracle_product(c: Case, steps: np.ndarray) -> np.ndarray:
    """The semiring product of all steps, (B, G, K, K), by a float64 recursion.

    Example:
        >>> c = draw(1); d = make_data(c); oracle_product(c, d["steps"]).shape[-1] == c.K
        True
    """
    red = _red(c)
    out = steps[0]
    with np.errstate(invalid="ignore"):
        for t in range(1, steps.shape[0]):
            out = red(out[..., :, :, None] + steps[t][..., None, :, :], axis=-2)
    return out


def brute_product(c: Case, steps: np.ndarray) -> np.ndarray:
    """The same product by enumerating every path (for small ``K ** (T + 1)``).

    Example:
        >>> c = draw(5); c.T, c.K = 2, 2; d = make_data(c)
        >>> np.allclose(brute_product(c, d["steps"]), oracle_product(c, d["steps"]))
        True
    """
    T, K = steps.shape[0], steps.shape[-1]
    scores = {}
    for path in itertools.product(range(K), repeat=T + 1):
        s = sum(steps[t, ..., path[t], path[t + 1]] for t in range(T))
        scores.setdefault((path[0], path[-1]), []).append(s)
    out = np.empty(steps.shape[1:])
    for (i, j), ss in scores.items():
        out[..., i, j] = _red(c)(np.stack(ss), axis=0)
    return out


def oracle_pairs(c: Case, init: np.ndarray, steps: np.ndarray) -> tuple:
    """(total (B, G), pairs (T, B, G, K, K)) in the sum semiring by forward-backward.

    Example:
        >>> c = draw(2); d = make_data(c)
        >>> oracle_pairs(c, d["init"], d["steps"])[1].shape[0] == c.T
        True
    """
    lse = np.logaddexp.reduce
    T = steps.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = [init]
        for t in range(T):
            alpha.append(lse(alpha[-1][..., :, None] + steps[t], axis=-2))
        beta = [np.zeros_like(init)]
        for t in range(T - 1, -1, -1):
            beta.insert(0, lse(steps[t] + beta[0][..., None, :], axis=-1))
        total = lse(alpha[-1], axis=-1)
        pairs = np.stack([np.exp(alpha[t][..., :, None] + steps[t] + beta[t + 1][..., None, :]
                                 - total[..., None, None]) for t in range(T)])
    return total, pairs


def oracle_viterbi(c: Case, init: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The best score (B, G) by a max-plus recursion.

    Example:
        >>> c = draw(2); d = make_data(c); oracle_viterbi(c, d["init"], d["steps"]).ndim
        2
    """
    delta = init
    for t in range(steps.shape[0]):
        delta = np.max(delta[..., :, None] + steps[t], axis=-2)
    return delta.max(-1)


# ----- building the case's funsors on its backend ----------------------------------------

def _arr(c: Case, x):
    x = np.asarray(x)
    if c.backend == "torch":
        import torch
        return torch.tensor(x)
    if c.backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    return x


def _names(c: Case, *rest) -> tuple:
    return (("b",) if c.B else ()) + (("g",) if c.G else ()) + rest


def _inputs(c: Case, names) -> dict:
    doms = {"t": fc.Bint[c.T], "b": fc.Bint[c.B], "g": fc.Bint[c.G],
            "x_prev": fc.Bint[c.K], "x_curr": fc.Bint[c.K]}
    return {n: doms[n] for n in names}


def host_arrays(c: Case, d: dict) -> dict:
    """The arrays the funsors are built of (squeezed of absent names, in the case's dtype).

    Example:
        >>> c = draw(0); sorted(host_arrays(c, make_data(c)))[0]
        'init'
    """
    dt = np.dtype(c.dtype)
    sl_b = slice(None) if c.B else 0
    sl_g = slice(None) if c.G else 0
    out = {"init": d["init"][sl_b, sl_g].astype(dt)}
    if c.lazy_sum:
        out["mat"] = d["mat"][sl_g].astype(dt)
        out["obs"] = d["obs"][:, sl_b].astype(dt)
    else:
        out["steps"] = d["steps"][:, sl_b, sl_g].astype(dt)
    if c.ragged == "lengths":
        out["lengths"] = d["lengths"].astype(np.int64)
    elif c.ragged == "mask":
        out["mask"] = d["keep"].astype(np.int64)
    return out


def funsors(c: Case, a: dict) -> tuple:
    """(init, step, ragged kwargs) of backend arrays ``a`` (see ``host_arrays``)."""
    init = fc.Tensor(a["init"], _inputs(c, _names(c, "x_prev")))
    if c.lazy_sum:
        m = fc.Tensor(a["mat"], _inputs(c, (("g",) if c.G else ()) + ("x_prev", "x_curr")))
        o = fc.Tensor(a["obs"], _inputs(c, ("t",) + (("b",) if c.B else ()) + ("x_curr",)))
        with lazy:
            step = m + o
    else:
        step = fc.Tensor(a["steps"], _inputs(c, ("t",) + _names(c, "x_prev", "x_curr")))
    kw = {}
    if "lengths" in a:
        kw["lengths"] = fc.Tensor(a["lengths"], {"b": fc.Bint[c.B]}, dtype=c.T + 1)
    if "mask" in a:
        kw["mask"] = fc.Tensor(a["mask"], {"t": fc.Bint[c.T], "b": fc.Bint[c.B]}, dtype=2)
    return init, step, kw


def _sum_op(c: Case):
    return ops.logaddexp if c.semiring == "sum" else ops.max


def _np(x) -> np.ndarray:
    return np.asarray(ops.to_numpy(x), dtype=np.float64)


# ----- the entry points: each returns {name: numpy array} -------------------------------

def run_products(c: Case, a: dict) -> dict:
    """The chain's matrix and total by every product entry point."""
    init, step, kw = funsors(c, a)
    sop = _sum_op(c)
    order = _names(c, "x_prev", "x_curr")
    out = {}
    if kw:
        mp = markov_product(sop, ops.add, step, "t", STEP, strategy=c.strategy, **kw)
    else:
        mp = MarkovProduct(sop, ops.add, step, "t", STEP, strategy=c.strategy)
        dense = step if not c.lazy_sum else step.reduce(ops.add, frozenset())
        if not c.lazy_sum or not c.jit:
            out["sequential_sum_product"] = sequential_sum_product(
                sop, ops.add, dense, "t", STEP).align(order).data
            if c.T <= 12:
                out["naive_sequential_sum_product"] = naive_sequential_sum_product(
                    sop, ops.add, dense, "t", STEP).align(order).data
            out["mixed_sequential_sum_product"] = mixed_sequential_sum_product(
                sop, ops.add, dense, "t", STEP, num_segments=max(1, c.T // 3)).align(order).data
    out["product"] = mp.align(order).data
    with lazy:
        mp_lazy = (markov_product(sop, ops.add, step, "t", STEP, strategy=c.strategy, **kw)
                   if kw else MarkovProduct(sop, ops.add, step, "t", STEP, strategy=c.strategy))
        total = (init + mp_lazy).reduce(sop, frozenset({"x_prev", "x_curr"}))
    total = fc.reinterpret(total)
    out["total"] = total.align(_names(c)).data if _names(c) else total.data
    out["filter"] = fc.windowed_filter(sop, ops.add, step, "t", STEP, init, **kw).align(
        _names(c, "x_curr")).data
    return out


def run_smooth(c: Case, a: dict) -> dict:
    """markov_marginals (sum semiring) or markov_map (max)."""
    init, step, kw = funsors(c, a)
    if c.semiring == "sum":
        total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", STEP, [init],
                                        c.strategy, **kw)
        return {"m_total": total.align(_names(c)).data if _names(c) else total.data,
                "pairs": pairs.align(("t",) + _names(c, "x_prev", "x_curr")).data}
    score, path = markov_map(step, "t", STEP, [init], c.strategy, **kw)
    return {"score": score.align(_names(c)).data if _names(c) else score.data,
            "path": path["x_prev"].align(("t",) + _names(c)).data}


def _call(c: Case, fn, a: dict) -> dict:
    if c.backend == "jax" and c.jit:
        import jax
        return jax.jit(lambda arrs: fn(c, arrs))(a)
    return fn(c, a)


# ----- comparison ------------------------------------------------------------------------

def _expand(c: Case, x: np.ndarray, lead: int) -> np.ndarray:
    # an actual array of shape (lead..., [B], [G], rest...) -> (lead..., B, G, rest...)
    if not c.B:
        x = np.expand_dims(x, lead)
    if not c.G:
        x = np.expand_dims(x, lead + 1)
    return x


def _tol(c: Case, d: dict) -> tuple:
    if c.dtype == "float64":
        return 1e-9, 1e-9
    scale = np.abs(np.where(np.isfinite(d["steps"]), d["steps"], 0)).max() * c.T + 1
    return 5e-7 * scale + 1e-4, 1e-5


def _close(name: str, actual, expected, atol, rtol, fails: list) -> None:
    actual = np.broadcast_to(actual, expected.shape) if actual.size == 1 else actual
    if actual.shape != expected.shape:
        fails.append(f"{name}: shape {actual.shape} != {expected.shape}")
        return
    same_inf = (np.isneginf(actual) == np.isneginf(expected))
    if not same_inf.all():
        fails.append(f"{name}: -inf pattern differs: actual {actual[~same_inf][:3]} "
                     f"expected {expected[~same_inf][:3]}")
        return
    fin = np.isfinite(expected)
    if np.isnan(actual[fin]).any():
        fails.append(f"{name}: NaN where expected {expected[fin & np.isnan(actual)][:3]}")
        return
    err = np.abs(actual[fin] - expected[fin])
    bad = err > atol + rtol * np.abs(expected[fin])
    if bad.any():
        fails.append(f"{name}: max err {err.max():.3g}; actual {actual[fin][bad][:3]} "
                     f"expected {expected[fin][bad][:3]}")


def _path_score(init, steps, path, b, g) -> float:
    s = init[b, g, path[0]]
    for t in range(steps.shape[0]):
        s += steps[t, b, g, path[t], path[t + 1]]
    return s


def check(c: Case) -> list:
    """The disagreements of every entry point with the oracle on case ``c`` (empty: all agree).

    Example:
        >>> check(Case(0, "numpy", False, "float64", "sum", 2, 3, 0, 0, False, False, False,
        ...            False, "none", None))
        []
    """
    d = make_data(c)
    steps = oracle_steps(c, d)
    fails: list = []
    red = _red(c)
    prod = oracle_product(c, steps)
    if c.K ** (c.T + 1) <= 4096:  # the recursion itself against enumeration
        brute = brute_product(c, steps)
        if not np.allclose(np.nan_to_num(prod, neginf=-1e300), np.nan_to_num(brute, neginf=-1e300),
                           rtol=1e-9, atol=1e-9):
            fails.append("oracle: recursion != enumeration")
    with np.errstate(invalid="ignore"):
        filt = red(d["init"][..., :, None] + prod, axis=-2)
        total = red(filt, axis=-1)
    atol, rtol = _tol(c, d)
    previous = fc.get_backend() if hasattr(fc, "get_backend") else "numpy"
    fc.set_backend(c.backend)
    try:
        try:
            out = _call(c, run_products, host_arrays(c, d) if c.backend == "numpy"
                        else {k: _arr(c, v) for k, v in host_arrays(c, d).items()})
        except Exception as e:  # noqa: BLE001 (a fuzzer reports every failure)
            return fails + [f"products raised {type(e).__name__}: {e}"]
        for name, x in out.items():
            x = _np(x)
            if name == "total":
                _close(name, _expand(c, x, 0), total, atol, rtol, fails)
            elif name == "filter":
                _close(name, _expand(c, x, 0), filt, atol, rtol, fails)
            else:
                _close(name, _expand(c, x, 0), prod, atol, rtol, fails)
        arrs = host_arrays(c, d)
        dead = not np.isfinite(total).all()
        try:
            sm = _call(c, run_smooth, {k: _arr(c, v) for k, v in arrs.items()})
        except ValueError as e:
            if not dead or c.jit:
                fails.append(f"smooth raised ValueError on a live chain: {e}")
            return fails
        except Exception as e:  # noqa: BLE001
            return fails + [f"smooth raised {type(e).__name__}: {e}"]
        if dead and not c.jit:
            fails.append("smooth: no ValueError for a chain of mass zero")
            return fails
        live = np.isfinite(total)
        if c.semiring == "sum":
            et, ep = oracle_pairs(c, d["init"], steps)
            at = _expand(c, _np(sm["m_total"]), 0)
            ap = _expand(c, _np(sm["pairs"]), 1)
            _close("m_total", np.where(live, at, -np.inf), np.where(live, et, -np.inf),
                   atol, rtol, fails)
            if c.jit and (~live).any() and not np.isnan(ap[:, ~live]).all():
                fails.append("pairs: a dead entry under jit is not NaN")
            pa = 2e-5 if c.dtype == "float32" else 1e-7  # a careful float32 FB: ~1e-7
            _close("pairs", ap[:, live], ep[:, live], pa, 0, fails)
        else:
            ev = oracle_viterbi(c, d["init"], steps)
            av = _expand(c, _np(sm["score"]), 0)
            _close("score", np.where(live, av, -np.inf), np.where(live, ev, -np.inf),
                   atol, rtol, fails)
            path = _expand(c, np.asarray(ops.to_numpy(sm["path"])), 1).astype(np.int64)
            for b, g in zip(*np.nonzero(live)):
                p = path[:, b, g]
                if (p < 0).any() or (p >= c.K).any():
                    fails.append(f"path[{b},{g}] out of range: {p}")
                    continue
                s = _path_score(d["init"], steps, p, b, g)
                if not abs(s - ev[b, g]) <= atol + rtol * abs(ev[b, g]):
                    fails.append(f"path[{b},{g}] scores {s}, best {ev[b, g]}")
            if c.jit:
                for b, g in zip(*np.nonzero(~live)):
                    if not (path[:, b, g] == -1).all():
                        fails.append(f"dead path[{b},{g}] under jit not -1: {path[:, b, g]}")
    finally:
        fc.set_backend(previous)
    return fails


def run_cases(draw_case, check_case, argv, what: str = "") -> int:
    """Run ``count`` cases from seed ``first`` (``argv[1:3]``); print each failing case and its
    disagreements; 1 if any failed. Every fuzz module's ``main``."""
    first, count = int(argv[1]), int(argv[2])
    bad = 0
    for seed in range(first, first + count):
        c = draw_case(seed)
        fails = check_case(c)
        if fails:
            bad += 1
            print(c, *fails, sep="\n  ", flush=True)
    print(f"{bad} of {count} {what}cases failed")
    return int(bad > 0)


def main(argv) -> int:
    """Run ``count`` cases from seed ``first``; print each failing case and its disagreements."""
    return run_cases(draw, check, argv)

if __name__ == "__main__":
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    math.prod([])
    sys.exit(main(sys.argv))
