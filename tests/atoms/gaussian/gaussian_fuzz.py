"""Fuzzing the Gaussian atom (#28's correctness): random programs over 1-3 real variables
(``Real``, ``Reals[2]``, ``Reals[3]``) batched over 0-2 Bint inputs, against the dense float64
numpy algebra of ``gaussian_fuzz_oracle`` (precision, information vector, constant; Schur
complements; enumeration over the Bint inputs).

A program sums 1-3 factors, each built as users build them: ``Gaussian`` in each constructor
form (``white_vec/prec_sqrt``, ``info_vec/precision``, ``mean`` with ``covariance``,
``precision`` or ``scale_tril``), ``Normal(a * u + b, s, v)`` and ``MultivariateNormal(A @ u + b,
scale_tril=L, value=v)``, plus a Tensor; then substitutes one variable (a constant, a new or an
existing variable, an affine expression, a slice of a longer one, a point mass ``Delta``
integrated out); then asks one question: its value at a point, a marginal, the log normalizer,
``reduce(ops.add)`` or ``reduce(ops.logaddexp)`` over a Bint input, ``Integrate`` of a Tensor,
an affine or a quadratic function under the normalized density, ``fc.moments``, a
``moment_matching`` collapse of the mixture over a Bint input, a ``MonteCarlo`` estimate of
``E exp(t x_k)`` (a seeded 5-sigma bound). Numerics: ordinary, near-singular (precision
condition 1e8..1e12 in float64, 1e2..1e4 in float32), rank-deficient factors (the sum is full
rank while no factor is), information vectors of 1e6; float64 and float32;
numpy, torch, jax
eager and under ``jax.jit``. Where the oracle's integral diverges, the library must raise a
``ValueError`` (under ``jax.jit``: raise, or give a non-finite number); a precision that is
positive definite only beyond float64's resolution (condition above 1e14) may go either way.
Tolerances follow the magnitude of what was summed into each number and the condition of the
blocks solved on the way (``gaussian_fuzz_program._tolerance``).

Run long: ``python -m tests.atoms.gaussian.gaussian_fuzz FIRST COUNT``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

import funsor_core as fc
from tests.algorithms.chains.chain_fuzz import run_cases
from tests.atoms.gaussian import gaussian_fuzz_oracle as qo
from tests.atoms.gaussian.gaussian_fuzz_program import (
    BINTS,
    LazyResult,
    compare,
    expect,
    maybe_rejected,
    mc_scale,
    run,
)

VARS = ("x", "y", "z")
KINDS = ("sqrt", "info", "meancov", "meanprec", "scale_tril", "normal", "mvn")
TRANSFORMS = ("none", "const", "rename", "same", "affine", "slice", "delta")
QUERIES = ("point", "marginal", "lognorm", "bint_add", "bint_lae", "integrate", "moments", "mm",
           "mc")
BACKENDS = ("numpy", "numpy32", "torch", "torch32", "jax", "jax.jit")
_BACKEND_P = (0.45, 0.15, 0.15, 0.05, 0.1, 0.1)
NUMERICS = ("plain", "illcond", "rankdef", "huge")


def _subset(r, items, lo=0):
    items = list(items)
    k = int(r.integers(lo, len(items) + 1))
    return [items[i] for i in sorted(r.choice(len(items), size=k, replace=False))]


def draw(seed: int) -> dict:
    """A random Gaussian program (structure only; ``data`` draws its arrays).

    Example:
        >>> draw(0)["query"]["kind"] in QUERIES
        True
    """
    r = np.random.default_rng(seed)
    backend = BACKENDS[int(r.choice(len(BACKENDS), p=_BACKEND_P))]
    c = dict(seed=seed, backend=backend.replace("32", ""), jit=backend == "jax.jit",
             dtype="float32" if "32" in backend else "float64",
             numerics=NUMERICS[int(r.choice(4, p=(0.45, 0.2, 0.2, 0.15)))])
    c["backend"] = "jax" if c["jit"] else c["backend"]
    c["bints"] = tuple(_subset(r, BINTS))
    names = _subset(r, VARS, 1)
    c["reals"] = {v: int(r.integers(1, 4)) for v in names}
    factors = []
    for k in range(int(r.integers(1, 4))):
        kind = KINDS[int(r.integers(len(KINDS)))]
        f = dict(kind=kind, key=f"f{k}", bints=_subset(r, c["bints"]),
                 reals=_subset(r, names, 1))
        vec = [v for v in names if c["reals"][v] > 1]
        if kind == "normal":
            v = str(r.choice(names))
            u = str(r.choice(names)) if r.random() < 0.8 else None
            f["v"] = (v, int(r.integers(c["reals"][v])))
            f["u"] = None if u is None else (u, int(r.integers(c["reals"][u])))
            if f["u"] == f["v"]:
                f["u"] = None
            f["a"] = float(np.round(r.normal() * 2, 2))
            f["reals"] = list(dict.fromkeys([v] + ([u] if f["u"] else [])))
        elif kind == "mvn" and vec:
            v = str(r.choice(vec))
            others = [u for u in names if u != v]
            f["v"], f["u"] = v, (str(r.choice(others)) if others and r.random() < 0.8 else None)
            f["reals"] = [v] + ([f["u"]] if f["u"] else [])
        elif kind == "mvn":
            f["kind"] = "sqrt"
        factors.append(f)
    c["factors"] = factors
    c["tensor"] = _subset(r, c["bints"]) if r.random() < 0.4 else None
    reals = {v: c["reals"][v] for v in names if any(v in f["reals"] for f in factors)}
    c["transform"], reals = _draw_transform(r, c, reals)
    c["query"] = _draw_query(r, c, reals)
    c["final_reals"] = reals
    return c


def _draw_transform(r, c, reals):
    kind = TRANSFORMS[int(r.integers(len(TRANSFORMS)))]
    v = str(r.choice(list(reals)))
    s = reals[v]
    t = dict(kind=kind, v=v, bints=_subset(r, c["bints"]))
    out = {k: n for k, n in reals.items() if k != v}
    same = [w for w in reals if w != v and reals[w] == s]
    if kind == "same" and not same:
        kind = t["kind"] = "rename"
    if kind == "slice" and s == 3:
        kind = t["kind"] = "affine"
    if kind == "none" or (kind in ("const", "delta") and len(reals) == 1 and r.random() < 0.5):
        return dict(kind="none"), reals
    if kind in ("const", "delta"):
        return t, out
    if kind == "same":
        t["w"] = str(r.choice(same))
        return t, out
    t["u"] = "u"
    if kind == "rename":
        t["k"] = s
    elif kind == "affine":
        t["k"] = int(r.integers(1, 4))
        if s == 1 and t["k"] > 1:
            t["idx"] = int(r.integers(t["k"]))
        t["a"] = float(np.round(r.normal() * 2, 2))
    else:  # slice
        t["k"] = int(r.integers(s + 1, 4))
        t["start"] = int(r.integers(0, t["k"] - s + 1))
    out["u"] = t["k"]
    return t, out


def _draw_query(r, c, reals):
    kind = QUERIES[int(r.integers(len(QUERIES)))]
    present = _present(c)
    q = dict(kind=kind)
    if not reals:  # every variable substituted: a Tensor is left
        kind = q["kind"] = "bint_lae" if present and kind != "point" else "point"
        q["first"] = False
    if kind in ("bint_add", "bint_lae", "mm") and not present:
        kind = q["kind"] = "lognorm"
    if kind in ("bint_add", "bint_lae", "mm"):
        q["b"] = str(r.choice(present))
        q.setdefault("first", bool(r.random() < 0.5))  # bint_lae: the reals with the Bint, or after
    if kind == "marginal":
        q["names"] = _subset(r, reals, 1)
        if len(q["names"]) == len(reals) and len(reals) > 1:
            q["names"] = q["names"][:-1]
    if kind == "integrate":
        q["f"] = str(r.choice(["tensor", "affine", "quadratic"]))
        q["tb"] = _subset(r, c["bints"])
        coords = [(v, k) for v, n in reals.items() for k in range(n)]
        q["coords"] = [coords[int(i)] for i in r.integers(len(coords), size=2)]
        q["a"] = [float(np.round(x, 2)) for x in r.normal(size=3)]
    if kind == "mc":
        coords = [(v, k) for v, n in reals.items() for k in range(n)]
        q["coord"] = coords[int(r.integers(len(coords)))]
    q["pb"] = {v: _subset(r, c["bints"]) for v in reals}  # the batch inputs of each point
    return q


def _present(c) -> list:
    names = set(c["tensor"] or ())
    for f in c["factors"]:
        names.update(f["bints"])
        if f["kind"] in ("normal", "mvn"):
            names.update(f["bints"])
    if c["transform"]["kind"] in ("const", "delta"):
        names.update(c["transform"]["bints"])
    return [b for b in c["bints"] if b in names]


# ---------------------------------------------------------------------------------------------
# The arrays of a case: float64 numpy, already rounded to the case's dtype.
def _sqrt_factor(r, shape, n, c):
    num = c["numerics"]
    if num == "rankdef" and n >= 2:
        rank = int(r.integers(1, n))
        return r.normal(size=shape + (n, rank))
    if num == "illcond" and n >= 2:
        lo, hi = (8, 12) if c["dtype"] == "float64" else (2, 4)
        cond = 10.0 ** r.uniform(lo, hi)
        q1 = np.linalg.qr(r.normal(size=shape + (n, n)))[0]
        q2 = np.linalg.qr(r.normal(size=shape + (n, n)))[0]
        s = np.logspace(0, -0.5 * math.log10(cond), n)
        return np.einsum("...ij,j,...jk->...ik", q1, s, q2) * r.uniform(0.5, 3)
    rank = int(r.integers(n, n + 3))
    return r.normal(size=shape + (n, rank)) * 0.7 + np.eye(n, rank)


def _lower(r, shape, m, c):
    S = _sqrt_factor(r, shape, m, dict(c, numerics="plain" if c["numerics"] == "rankdef"
                                        else c["numerics"]))
    cov = np.linalg.inv(np.einsum("...ij,...kj->...ik", S, S))
    return np.linalg.cholesky(0.5 * (cov + np.swapaxes(cov, -1, -2)))


def data(c: dict) -> dict:
    """The arrays of the case (float64, rounded to its dtype).

    Example:
        >>> sorted(data(draw(0)))[0]
        'f0_b'
    """
    r = np.random.default_rng(10_000 + c["seed"])
    # float32 keeps 7 digits: information vectors of 1e6 give log constants of 1e12 whose
    # roundoff (1e5) overflows any exp: an Integrate then raises (``check_mass``).
    big = 1e6 if c["numerics"] == "huge" else 1.0
    a = {}
    for f in c["factors"]:
        shape = tuple(BINTS[b] for b in f["bints"])
        n = sum(c["reals"][v] for v in f["reals"])
        key, kind = f["key"], f["kind"]
        if kind in ("sqrt", "info", "meanprec"):
            S = _sqrt_factor(r, shape, n, c if kind != "info" else
                             dict(c, numerics="plain" if c["numerics"] == "rankdef"
                                  else c["numerics"]))
            w = r.normal(size=shape + (S.shape[-1],)) * big
            if kind == "sqrt":
                a[key + "_w"], a[key + "_S"] = w, S
            else:
                P = np.einsum("...ij,...kj->...ik", S, S)
                a[key + "_P"] = 0.5 * (P + np.swapaxes(P, -1, -2))
                a[key + "_h"] = np.einsum("...ij,...j->...i", S, w)
                if kind == "meanprec":
                    a[key + "_m"] = r.normal(size=shape + (n,)) * big
                    del a[key + "_h"]
        elif kind in ("meancov", "scale_tril"):
            L = _lower(r, shape, n, c)
            a[key + "_m"] = r.normal(size=shape + (n,)) * big
            if kind == "meancov":
                C = np.einsum("...ij,...kj->...ik", L, L)
                a[key + "_C"] = 0.5 * (C + np.swapaxes(C, -1, -2))
            else:
                a[key + "_L"] = L
        elif kind == "normal":
            a[key + "_b"] = r.normal(size=shape) * big
            a[key + "_s"] = r.uniform(0.3, 2.0, size=shape)
        else:  # mvn
            m = c["reals"][f["v"]]
            k = c["reals"][f["u"]] if f["u"] else 1
            a[key + "_A"] = r.normal(size=(m, k))
            a[key + "_b"] = r.normal(size=shape + (m,)) * big
            a[key + "_L"] = _lower(r, shape, m, c)
    if c["tensor"] is not None:
        a["t"] = r.normal(size=tuple(BINTS[b] for b in c["tensor"]))
    t = c["transform"]
    if t["kind"] in ("const", "delta"):
        a["tv"] = r.normal(size=tuple(BINTS[b] for b in t["bints"]) + (c["reals"][t["v"]],))
        a["tld"] = r.normal(size=tuple(BINTS[b] for b in t["bints"]))
    if t["kind"] == "affine":
        a["tA"] = r.normal(size=(c["reals"][t["v"]], t["k"]))
        a["tb"] = r.normal(size=(c["reals"][t["v"]],))
    q = c["query"]
    for v, n in c["final_reals"].items():
        a["p_" + v] = r.normal(size=tuple(BINTS[b] for b in q["pb"][v]) + (n,))
    if q["kind"] == "integrate":
        a["it"] = r.normal(size=tuple(BINTS[b] for b in q["tb"]))
    if q["kind"] == "mm":
        a["mw"] = r.normal(size=(BINTS[q["b"]],))
    dt = np.dtype(c["dtype"])
    return {k: np.asarray(v).astype(dt).astype(np.float64) for k, v in a.items()}


def _as_backend(x: dict, c: dict) -> dict:
    dt = np.dtype(c["dtype"])
    if c["backend"] == "torch":
        import torch

        return {k: torch.tensor(v.astype(dt)) for k, v in x.items()}
    if c["backend"] == "jax":
        import jax.numpy as jnp

        return {k: jnp.asarray(v.astype(dt)) for k, v in x.items()}
    return {k: v.astype(dt) for k, v in x.items()}


def check(c: dict) -> list:
    """Disagreements of the library with the oracle on case ``c`` (empty when it agrees).

    Example:
        >>> check(draw(3))
        []
    """
    x = data(c)
    if c["query"]["kind"] == "mc":
        try:
            c["t"] = mc_scale(c, x)
        except (qo.Singular, qo.Rejected, np.linalg.LinAlgError):
            c["t"] = 0.5
    try:
        expected = expect(c, x)
        singular = None
    except (qo.Singular, qo.Rejected) as e:
        expected, singular = None, e
    previous = fc.get_backend()
    fc.set_backend(c["backend"])
    meta = {}
    try:
        arrays = _as_backend(x, c)
        if c["jit"]:
            import jax

            actual = jax.jit(lambda a: run(c, a, meta))(arrays)
        else:
            actual = run(c, arrays, meta)
    except ValueError as e:
        if isinstance(singular, qo.Rejected):
            # under jax.jit the precision is not read (its entries become NaN), so another
            # clear error, made from shapes, may come first
            ok = singular.args[0] in str(e) or c["jit"] or maybe_rejected(c, x)
            return [] if ok else [f"unclear ValueError: {e}"]
        if singular is not None:
            return []
        if (c["dtype"] == "float32" and c["numerics"] == "huge"
                and "beyond the largest float32" in str(e)):
            return []  # the log mass's roundoff overflows exp: a clear error, not an inf
        if "not positive definite" in str(e) and maybe_rejected(c, x):
            # positive definite only within the dtype's roundoff: a Cholesky may fail
            return []
        return [f"raised ValueError where the oracle is finite: {str(e)[:300]}"]
    except LazyResult as e:
        if singular is not None and c["query"]["kind"] == "mm":
            # tested behaviour: a mixture whose Gaussian has rank < dim by shapes stays
            # lazy under moment_matching (test_a_flat_component_stays_lazy)
            return []
        return [f"lazy: {e}"]
    except Exception as e:  # noqa: BLE001 (a fuzzer reports every failure)
        return [f"raised {type(e).__name__}: {str(e)[:300]}"]
    finally:
        fc.set_backend(previous)
    for label, v in actual.items():
        got = np.asarray(fc.ops.to_numpy(v), dtype=np.float64)
        if got.dtype != np.float64 or np.asarray(fc.ops.to_numpy(v)).dtype != np.dtype(c["dtype"]):
            return [f"{label}: dtype {np.asarray(fc.ops.to_numpy(v)).dtype}, expected {c['dtype']}"]
    if getattr(singular, "ambiguous", False) or (
            c["numerics"] == "illcond" and np.isfinite(getattr(singular, "cond", np.inf))):
        # Positive definite beyond float64's resolution: either answer. Near-singular blocks
        # times an affine map reach condition 1e16, where the dense oracle cannot tell (the
        # square-root form can: seed 7539's log normalizer agrees with 60-digit mpmath to
        # 3e-11), so in those cases a finite answer is not checked.
        return []
    if isinstance(singular, qo.Rejected) and maybe_rejected(c, x):
        return []  # positive definite within roundoff: taken, it has no checkable answer
    if singular is not None:
        if c["jit"] and any(not np.isfinite(np.asarray(fc.ops.to_numpy(v))).all()
                            for v in actual.values()):
            return []
        return [f"finite numbers where the integral diverges ({singular})"]
    return compare(c, actual, meta, expected)


def main(argv) -> int:
    """Run ``count`` cases from seed ``first``: ``argv[1:3]``."""
    return run_cases(draw, check, argv, "Gaussian program ")


if __name__ == "__main__":
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    sys.exit(main(sys.argv))
