"""The gradient fuzzer's programs: seeded random computations with a scalar result.

``draw(seed)`` gives a ``Program``: named input arrays (float64 numpy, rounded to float32 for
a float32 case), the entries that may be moved by finite differences (``free``: False at
-inf entries, which stay -inf), and ``run(xs)``, which builds the computation with the
library on the active backend from ``xs`` (a dict of that backend's arrays) and returns a
scalar array. Families: plated and unplated factor graphs (``sum_product``,
``partial_sum_product``, ``einsum``) in (logaddexp, add) and (add, mul); discrete chains
(``MarkovProduct`` with each strategy, ``sequential_sum_product``), their smoothed
marginals (``markov_marginals``: a second derivative); Gaussian programs (a Gaussian from a
mean and a covariance, an affine Normal, integrated, conditioned, ``fc.moments``); compiled
eliminations (``fc.compile``) with parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from funsor_core.sum_product import (
    MarkovProduct,
    markov_marginals,
    partial_sum_product,
    sequential_sum_product,
    sum_product,
)
from interpretations import lazy

FAMILIES = ("contract", "einsum", "chain", "marginals", "gaussian", "compiled", "infer",
            "maxplus", "functional", "gchain")


@dataclass
class Program:
    seed: int
    family: str
    dtype: str
    xs: dict
    run: Callable
    free: dict = field(default_factory=dict)
    smooth: bool = True  # False: only finiteness is checked (max-plus ties)
    jit_ok: bool = True
    desc: str = ""


def _round(xs: dict, dtype: str) -> dict:
    if dtype == "float32":
        return {k: v.astype(np.float32).astype(np.float64) for k, v in xs.items()}
    return xs


# ----- factor graphs ------------------------------------------------------------------------

def _graph(r, plated: bool):
    sizes = {v: int(r.integers(2, 5)) for v in "abcde"[: int(r.integers(2, 6))]}
    names = list(sizes)
    local = names[len(names) // 2:] if plated else []
    factors = []
    for _ in range(int(r.integers(2, 6))):
        vs = sorted(set(r.choice(names, size=int(r.integers(1, 4)))))
        factors.append(vs)
    factors.append(names)  # every variable in some factor; in the plate if any is local
    factors = [[str(v) for v in vs] for vs in factors]
    for _ in factors[:-1]:
        if r.random() < 0.3:
            factors.append([names[0]])
    return sizes, local, factors


def draw_contract(seed: int, r, einsum: bool = False, maxplus: bool = False) -> Program:
    plated = bool(r.random() < 0.5) and not einsum
    sizes, local, factors = _graph(r, plated)
    P = int(r.integers(2, 4))
    semiring = str(r.choice(["log", "linear"]))
    dtype = "float32" if r.random() < 0.3 else "float64"
    ninf = semiring == "log" and r.random() < 0.25
    xs, free = {}, {}
    for n, vs in enumerate(factors):
        shape = ((P,) if plated and set(vs) & set(local) else ()) + tuple(sizes[v] for v in vs)
        x = r.normal(size=shape) if semiring == "log" else r.uniform(0.5, 2.0, size=shape)
        if ninf:
            x[r.random(shape) < 0.1] = -np.inf
        xs[f"f{n}"] = x
    xs = _round(xs, dtype)
    free = {k: np.isfinite(v) for k, v in xs.items()}
    sum_op, prod_op = (ops.logaddexp, ops.add) if semiring == "log" else (ops.add, ops.mul)
    if maxplus:
        semiring, sum_op, prod_op = "max", ops.max, ops.add
    partial = bool(r.random() < 0.3)

    def inputs_of(n):
        vs = factors[n]
        d = {"i": fc.Bint[P]} if plated and set(vs) & set(local) else {}
        d.update((v, fc.Bint[sizes[v]]) for v in vs)
        return d

    def run(a):
        fs = [fc.Tensor(a[f"f{n}"], inputs_of(n)) for n in range(len(factors))]
        if einsum:
            eq = ",".join("".join(vs) for vs in factors) + "->"
            be = {"numpy": "numpy", "torch": "torch", "jax": "jax.numpy"}[fc.get_backend()]
            be = ("pyro.ops.einsum.torch_log" if be == "torch" else be + "_log") \
                if semiring == "log" else be
            out = fc.einsum(eq, *fs, backend=be)
            return out.data if isinstance(out, fc.Funsor) else out
        elim = frozenset(sizes) | (frozenset("i") if plated else frozenset())
        plates = frozenset("i") if plated else frozenset()
        if partial:
            parts = partial_sum_product(sum_op, prod_op, fs, elim, plates)
            total = None
            for p in parts:
                p = p.reduce(sum_op, frozenset(p.inputs) - plates) if p.inputs else p
                if plates & frozenset(p.inputs):
                    p = p.reduce(prod_op, plates)
                total = p if total is None else prod_op(total, p)
            return total.data
        return sum_product(sum_op, prod_op, fs, elim, plates).data

    desc = f"{'einsum' if einsum else 'partial' if partial else 'sum_product'} {semiring} " \
           f"plated={plated} factors={factors} sizes={sizes} local={local} P={P} ninf={ninf}"
    return Program(seed, "einsum" if einsum else "contract", dtype, xs, run, free, desc=desc)


# ----- chains -------------------------------------------------------------------------------

def _chain_data(r):
    K = int(r.choice([2, 3, 4, 8, 16]))
    T = int(r.choice([1, 2, 5, 17, 64, 300])) if r.random() < 0.9 else int(r.integers(1, 40))
    B = int(r.integers(1, 4)) if r.random() < 0.5 else 0
    dtype = "float32" if r.random() < 0.4 else "float64"
    kind = str(r.choice(["plain", "ninf", "big", "wide", "zeros"], p=[0.4, 0.2, 0.2, 0.1, 0.1]))
    b = max(B, 1)
    trans = r.normal(size=(T, b, K, K))
    init = r.normal(size=(b, K))
    if kind == "ninf":
        trans[r.random(trans.shape) < 0.15] = -np.inf
        trans[..., 0] = np.where(np.isfinite(trans[..., 0]), trans[..., 0], 0.0)
    if kind == "zeros":  # states with no way on, states never reached: true zeros
        trans[r.random(trans.shape[:-1]) < 0.2] = -np.inf
        trans.swapaxes(-1, -2)[r.random(trans.shape[:-1]) < 0.2] = -np.inf
        trans[r.random(trans.shape) < 0.2] = -np.inf
    if kind == "big":  # near -1e4 per step: the guarded linear-space tree's fallback
        trans = trans - 1e4 + r.normal(size=(T, b, 1, 1)) * 50
    if kind == "wide":  # a range past the float exponent within a step
        trans = trans * (60.0 if dtype == "float32" else 600.0) / np.sqrt(K)
    xs = _round({"trans": trans if B else trans[:, 0], "init": init if B else init[0]}, dtype)
    return K, T, B, dtype, kind, xs


def _chain_inputs(K, T, B):
    d = {"time": fc.Bint[T]}
    if B:
        d["batch"] = fc.Bint[B]
    d.update(prev=fc.Bint[K], curr=fc.Bint[K])
    return d


def draw_chain(seed: int, r, maxplus: bool = False) -> Program:
    K, T, B, dtype, kind, xs = _chain_data(r)
    how = str(r.choice(["sequential_sum_product", "parallel", "sequential", "auto"]))
    sum_op = ops.max if maxplus else ops.logaddexp
    lazy_sum = bool(r.random() < 0.3)

    def run(a):
        ins = _chain_inputs(K, T, B)
        if lazy_sum:  # a shared matrix (the first step) plus per-step observations
            mat = fc.Tensor(a["trans"][0], {k: v for k, v in ins.items() if k != "time"})
            obs_in = {k: v for k, v in ins.items() if k != "prev"}
            obs = fc.Tensor(a["trans"][..., 0, :], obs_in)
            with lazy:
                trans = mat + obs
        else:
            trans = fc.Tensor(a["trans"], ins)
        if how == "sequential_sum_product":
            out = sequential_sum_product(sum_op, ops.add, trans, "time",
                                         {"prev": "curr"})
        else:
            out = MarkovProduct(sum_op, ops.add, trans, "time", {"prev": "curr"},
                                strategy=how)
        init_in = ({"batch": fc.Bint[B]} if B else {}) | {"prev": fc.Bint[K]}
        init = fc.Tensor(a["init"], init_in)
        tot = (out + init).reduce(sum_op, frozenset({"prev", "curr"}))
        return tot.reduce(ops.add).data if B else tot.data

    desc = f"{how} K={K} T={T} B={B} {dtype} {kind} lazy_sum={lazy_sum}"
    free = {k: np.isfinite(v) for k, v in xs.items()}
    return Program(seed, "chain", dtype, xs, run, free, desc=desc)


def draw_marginals(seed: int, r) -> Program:
    K, T, B, dtype, kind, xs = _chain_data(r)
    T = min(T, 64)
    xs["trans"] = xs["trans"][:T]
    strategy = [None, "parallel", "sequential"][int(r.integers(0, 3))]
    wr = r.normal(size=xs["trans"].shape)

    def run(a):
        trans = fc.Tensor(a["trans"], _chain_inputs(K, T, B))
        init_in = ({"batch": fc.Bint[B]} if B else {}) | {"prev": fc.Bint[K]}
        init = fc.Tensor(a["init"], init_in)
        total, pairs = markov_marginals(ops.logaddexp, ops.add, trans, "time",
                                        {"prev": "curr"}, factors=[init], strategy=strategy)
        wt = fc.Tensor(_like(a["trans"], wr), _chain_inputs(K, T, B))
        s = (pairs * wt).reduce(ops.add) + total.reduce(ops.add)
        return s.data

    desc = f"markov_marginals K={K} T={T} B={B} {dtype} {kind} strategy={strategy}"
    free = {k: np.isfinite(v) for k, v in xs.items()}
    return Program(seed, "marginals", dtype, xs, run, free, desc=desc)


def _like(x, arr):
    """``arr`` (numpy float64) as an array of ``x``'s backend and dtype (a constant)."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch

        return torch.as_tensor(arr, dtype=x.dtype)
    if mod.startswith("jax"):
        import jax.numpy as jnp

        return jnp.asarray(arr, dtype=x.dtype)
    return np.asarray(arr, dtype=x.dtype)


# ----- Gaussians ----------------------------------------------------------------------------

def draw_gaussian(seed: int, r) -> Program:
    n = int(r.integers(1, 4))
    m = int(r.integers(1, 3))
    dtype = "float32" if r.random() < 0.3 else "float64"
    what = str(r.choice(["integrate", "marginal", "condition", "moments"]))
    xs = _round({"mean": r.normal(size=n), "L": r.normal(size=(n, n)) * 0.5,
                 "A": r.normal(size=(m, n)), "b": r.normal(size=m),
                 "s": r.uniform(0.5, 1.5, size=m), "y": r.normal(size=m)}, dtype)
    wm, wc = r.normal(size=n), r.normal(size=(n, n))

    def run(a):
        L = a["L"]
        eye = _like(L, np.eye(n))
        cov = L @ (L.T if hasattr(L, "T") else L) + eye
        x = fc.Variable("x", fc.Reals[n])
        g = fc.Gaussian(mean=a["mean"], covariance=cov, inputs={"x": fc.Reals[n]})
        y = fc.Variable("y", fc.Reals[m])
        loc = fc.Tensor(a["A"]) @ x + fc.Tensor(a["b"])
        f = g
        for j in range(m):
            f = f + Normal(loc[j], fc.Tensor(a["s"][j]), y[j])
        if what == "integrate":  # the evidence of y at the data
            return f(y=fc.Tensor(a["y"])).reduce(ops.logaddexp, "x").data
        if what == "marginal":
            h = f.reduce(ops.logaddexp, "x")
            return h(y=fc.Tensor(a["y"])).data
        post = f(y=fc.Tensor(a["y"]))
        if what == "condition":
            return post(x=fc.Tensor(_like(L, wm))).data
        mo = fc.moments(post)
        mean, cv = mo.mean["x"].data, mo.covariance.data
        return (mean * _like(L, wm)).sum() + (cv * _like(L, wc)).sum() + mo.log_mass.data

    desc = f"gaussian n={n} m={m} {dtype} {what}"
    free = {k: np.ones(v.shape, bool) for k, v in xs.items()}
    return Program(seed, "gaussian", dtype, xs, run, free, desc=desc)


# ----- compiled eliminations ----------------------------------------------------------------

def draw_compiled(seed: int, r) -> Program:
    sizes, _, factors = _graph(r, False)
    dtype = "float32" if r.random() < 0.3 else "float64"
    semiring = str(r.choice(["log", "linear"]))
    xs = {}
    for n, vs in enumerate(factors):
        shape = tuple(sizes[v] for v in vs)
        xs[f"f{n}"] = r.normal(size=shape) if semiring == "log" else r.uniform(0.5, 2, shape)
    xs = _round(xs, dtype)
    sum_op, prod_op = (ops.logaddexp, ops.add) if semiring == "log" else (ops.add, ops.mul)
    cache = {}

    def program():
        if "p" not in cache:
            fs = []
            for n, vs in enumerate(factors):
                v = fc.Variable(f"f{n}", fc.Reals[tuple(sizes[u] for u in vs)])
                fs.append(v[tuple(vs)] if len(vs) > 1 else v[vs[0]])
            with lazy:
                expr = sum_product(sum_op, prod_op, fs, frozenset(sizes), frozenset())
            cache["p"] = fc.compile(expr)
        return cache["p"]

    def run(a):
        return program()(**a)

    desc = f"compiled {semiring} factors={factors} sizes={sizes} {dtype}"
    free = {k: np.ones(v.shape, bool) for k, v in xs.items()}
    return Program(seed, "compiled", dtype, xs, run, free, desc=desc)


def draw_functional(seed: int, r) -> Program:
    # A compiled elimination with a declared functional table y = F(x): the backends run the
    # declared program (its gradient in F is the model's, gradients.py); the numpy oracle
    # runs the same expression compiled without the declaration, which has that gradient.
    sizes = {v: int(r.integers(2, 5)) for v in "uxya"}
    factors = [["x", "y"], ["u", "x"]]
    for _ in range(int(r.integers(2, 5))):
        factors.append(sorted({str(v) for v in r.choice(list("uxya"), size=int(r.integers(1, 4)))}))
    factors.append(["y"])
    dtype = "float32" if r.random() < 0.3 else "float64"
    method = str(r.choice(["auto", "jointree"]))
    xs = {f"f{n}": r.uniform(0.5, 2.0, size=tuple(sizes[v] for v in vs))
          for n, vs in enumerate(factors)}
    xs["f0"] = np.eye(sizes["y"])[r.integers(0, sizes["y"], size=sizes["x"])]
    xs = _round(xs, dtype)
    cache = {}

    def program(declare: bool):
        if declare not in cache:
            fs = []
            for n, vs in enumerate(factors):
                v = fc.Variable(f"f{n}", fc.Reals[tuple(sizes[u] for u in vs)])
                fs.append(v[tuple(vs)] if len(vs) > 1 else v[vs[0]])
            with lazy:
                expr = sum_product(ops.add, ops.mul, fs, frozenset(sizes), frozenset())
            cache[declare] = fc.compile(expr, functional={"y": fs[0]} if declare else None,
                                        method=method)
        return cache[declare]

    def run(a):
        return program(not isinstance(a["f0"], np.ndarray))(**a)

    desc = f"compiled functional y=F(x) factors={factors} sizes={sizes} {method} {dtype}"
    free = {k: np.ones(v.shape, bool) for k, v in xs.items()}
    return Program(seed, "functional", dtype, xs, run, free, desc=desc)


def draw_gchain(seed: int, r) -> Program:
    # A Gaussian chain (a Kalman filter's evidence): square-root steps pinning x_curr near a
    # contracting linear map of x_prev, an initial factor, all states integrated.
    d, T, B = int(r.integers(1, 4)), int(r.choice([1, 2, 5, 17, 40])), int(r.integers(0, 3))
    b = max(B, 1)
    dtype = "float32" if r.random() < 0.3 else "float64"
    S = r.normal(size=(T, b, 2 * d, 2 * d)) * 0.3
    S[..., d:, :] += np.eye(d, 2 * d)
    xs = _round({"S": S, "W": r.normal(size=(T, b, 2 * d)),
                 "S0": r.normal(size=(d, d)) * 0.3 + np.eye(d), "W0": r.normal(size=d)}, dtype)
    if not B:
        xs["S"], xs["W"] = xs["S"][:, 0], xs["W"][:, 0]
    strategy = [None, "parallel", "sequential"][int(r.integers(0, 3))]
    how = str(r.choice(["MarkovProduct", "sequential_sum_product"]))

    def run(a):
        ins = {"time": fc.Bint[T]} | ({"batch": fc.Bint[B]} if B else {})
        ins |= {"x_prev": fc.Reals[d], "x_curr": fc.Reals[d]}
        trans = fc.Gaussian(white_vec=a["W"], prec_sqrt=a["S"], inputs=ins)
        if how == "MarkovProduct":
            out = MarkovProduct(ops.logaddexp, ops.add, trans, "time", {"x_prev": "x_curr"},
                                strategy=strategy)
        else:
            out = sequential_sum_product(ops.logaddexp, ops.add, trans, "time",
                                         {"x_prev": "x_curr"})
        init = fc.Gaussian(white_vec=a["W0"], prec_sqrt=a["S0"], inputs={"x_prev": fc.Reals[d]})
        tot = (out + init).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
        return tot.reduce(ops.add).data if B else tot.data

    desc = f"gaussian chain {how} d={d} T={T} B={B} {dtype} strategy={strategy}"
    free = {k: np.ones(v.shape, bool) for k, v in xs.items()}
    return Program(seed, "gchain", dtype, xs, run, free, desc=desc)


def draw_infer(seed: int, r) -> Program:
    plated = bool(r.random() < 0.5)
    sizes, local, factors = _graph(r, plated)
    P = int(r.integers(2, 4))
    dtype = "float32" if r.random() < 0.3 else "float64"
    query = str(r.choice(["log_partition", "entropy", "marginals"]))
    shapes = [((P,) if plated and set(vs) & set(local) else ()) + tuple(sizes[v] for v in vs)
              for vs in factors]
    xs = _round({f"f{n}": r.normal(size=sh) for n, sh in enumerate(shapes)}, dtype)
    ws = {v: r.normal(size=((P,) if v in local else ()) + (sizes[v],)) for v in sizes}

    def run(a):
        fs = []
        for n, vs in enumerate(factors):
            d = {"i": fc.Bint[P]} if plated and set(vs) & set(local) else {}
            d.update((v, fc.Bint[sizes[v]]) for v in vs)
            fs.append(fc.Tensor(a[f"f{n}"], d))
        out = fc.infer_discrete(fs, frozenset("i") if plated else frozenset(), query)
        if query != "marginals":
            return out.data
        total = 0.0
        for v, m in out.items():
            d = ({"i": fc.Bint[P]} if v in local and plated else {}) | {v: fc.Bint[sizes[v]]}
            w = ws[v] if plated and v in local else ws[v][0] if v in local else ws[v]
            total = total + (m * fc.Tensor(_like(a["f0"], w), d)).reduce(ops.add).data
        return total

    desc = f"infer_discrete {query} plated={plated} factors={factors} sizes={sizes} " \
           f"local={local} P={P} {dtype}"
    free = {k: np.ones(v.shape, bool) for k, v in xs.items()}
    return Program(seed, "infer", dtype, xs, run, free, desc=desc)


def draw_maxplus(seed: int, r) -> Program:
    # (max, add): piecewise linear; only the value and finiteness are checked (ties).
    p = draw_contract(seed, r, maxplus=True) if r.random() < 0.5 else draw_chain(seed, r, True)
    p.family, p.smooth, p.desc = "maxplus", False, "max-plus " + p.desc
    return p


def draw(seed: int, family: str | None = None) -> Program:
    """A random program.

    Example:
        >>> draw(3, "chain").family
        'chain'
    """
    r = np.random.default_rng(seed)
    weights = [0.15, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05]
    fam = family or str(r.choice(FAMILIES, p=weights))
    if fam in ("contract", "einsum"):
        return draw_contract(seed, r, einsum=fam == "einsum")
    return {"chain": draw_chain, "marginals": draw_marginals, "gaussian": draw_gaussian,
            "compiled": draw_compiled, "infer": draw_infer, "maxplus": draw_maxplus,
            "functional": draw_functional, "gchain": draw_gchain}[fam](seed, r)
