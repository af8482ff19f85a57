"""The two readings of a Gaussian fuzz program (``gaussian_fuzz.draw``): ``run`` builds it
with the library on the active backend, ``expect`` computes it with the dense numpy oracle
(``gaussian_fuzz_oracle``), and ``compare`` checks one against the other."""

from __future__ import annotations

import math

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import MultivariateNormal, Normal
from interpretations import MonteCarlo, moment_matching
from tests.atoms.gaussian import gaussian_fuzz_oracle as qo

BINTS = {"i": 2, "j": 3}
PARTICLES = 4000


def domain(size: int):
    return fc.Real if size == 1 else fc.Reals[size]


def _T(arr, names):
    return fc.Tensor(arr, {b: fc.Bint[BINTS[b]] for b in names})


def _coord(c, var, idx):
    x = fc.Variable(var, domain(c["reals"].get(var) or c["final_reals"][var]))
    return x if x.output.shape == () else x[idx]


class LazyResult(AssertionError):
    """A number was demanded and a lazy term came back."""


# ---------------------------------------------------------------------------------------------
# The library's reading.
def _factor(c, f, a):
    key, kind, fb = f["key"], f["kind"], f["bints"]
    inputs = {b: fc.Bint[BINTS[b]] for b in fb}
    inputs.update((v, domain(c["reals"][v])) for v in f["reals"])
    if kind == "sqrt":
        return fc.Gaussian(white_vec=a[key + "_w"], prec_sqrt=a[key + "_S"], inputs=inputs)
    if kind == "info":
        return fc.Gaussian(info_vec=a[key + "_h"], precision=a[key + "_P"], inputs=inputs)
    if kind == "meanprec":
        return fc.Gaussian(mean=a[key + "_m"], precision=a[key + "_P"], inputs=inputs)
    if kind == "meancov":
        return fc.Gaussian(mean=a[key + "_m"], covariance=a[key + "_C"], inputs=inputs)
    if kind == "scale_tril":
        return fc.Gaussian(mean=a[key + "_m"], scale_tril=a[key + "_L"], inputs=inputs)
    b = _T(a[key + "_b"], fb)
    if kind == "normal":
        loc = b if f["u"] is None else f["a"] * _coord(c, *f["u"]) + b
        return Normal(loc, _T(a[key + "_s"], fb), _coord(c, *f["v"]))
    v = fc.Variable(f["v"], domain(c["reals"][f["v"]]))
    loc = b
    if f["u"] is not None:
        u = fc.Variable(f["u"], domain(c["reals"][f["u"]]))
        A = a[key + "_A"]
        loc = (fc.Tensor(A[:, 0]) * u if A.shape[1] == 1 else fc.Tensor(A) @ u) + b
    return MultivariateNormal(loc, scale_tril=_T(a[key + "_L"], fb), value=v)


def _value_of(arr, size, names):
    return _T(arr[..., 0] if size == 1 else arr, names)


def _transform(c, f, a):
    t = c["transform"]
    kind = t["kind"]
    if kind == "none":
        return f
    v = t["v"]
    s = c["reals"][v]
    if kind == "const":
        return f(**{v: _value_of(a["tv"], s, t["bints"])})
    if kind == "delta":
        d = fc.Delta(v, _value_of(a["tv"], s, t["bints"]), _T(a["tld"], t["bints"]))
        return (f + d).reduce(ops.logaddexp, v)
    if kind == "same":
        return f(**{v: fc.Variable(t["w"], domain(s))})
    if kind == "rename":
        return f(**{v: "u"})
    u = fc.Variable("u", domain(t["k"]))
    if kind == "slice":
        return f(**{v: u[t["start"]] if s == 1 else u[t["start"]:t["start"] + s]})
    A, b = a["tA"], a["tb"]
    if s == 1:
        return f(**{v: t["a"] * (u if t["k"] == 1 else u[t["idx"]]) + fc.Tensor(b[0])})
    lin = fc.Tensor(A[:, 0]) * u if t["k"] == 1 else fc.Tensor(A) @ u
    return f(**{v: lin + fc.Tensor(b)})


def _out(out, meta, label, f):
    if not isinstance(f, fc.Tensor):
        raise LazyResult(f"{label}: expected a Tensor, got {type(f).__name__}: {str(f)[:200]}")
    meta[label] = tuple(k for k in f.inputs)
    out[label] = f.data


def _moments_out(out, meta, m):
    _out(out, meta, "log_mass", m.log_mass)
    for v, t in m.mean.items():
        _out(out, meta, "mean_" + v, t)
    _out(out, meta, "cov", m.covariance)
    meta["order"] = tuple(m.reals)


def run(c: dict, a: dict, meta: dict) -> dict:
    """The program on the active backend: label -> array (``meta``: label -> input names)."""
    f = _factor(c, c["factors"][0], a)
    for spec in c["factors"][1:]:
        f = f + _factor(c, spec, a)
    if c["tensor"] is not None:
        f = f + _T(a["t"], c["tensor"])
    f = _transform(c, f, a)
    q, R = c["query"], c["final_reals"]
    reals = frozenset(R)
    pts = {v: _value_of(a["p_" + v], n, q["pb"][v]) for v, n in R.items()}
    out = {}
    kind = q["kind"]
    if kind == "point":
        _out(out, meta, "value", f(**pts))
    elif kind == "marginal":
        g = f.reduce(ops.logaddexp, frozenset(q["names"]))
        rest = {v: p for v, p in pts.items() if v not in q["names"]}
        _out(out, meta, "value", g(**rest) if rest else g)
    elif kind == "lognorm":
        _out(out, meta, "value", f.reduce(ops.logaddexp, reals))
    elif kind == "bint_add":
        _out(out, meta, "value", f.reduce(ops.add, q["b"])(**pts))
    elif kind == "bint_lae":
        g = (f.reduce(ops.logaddexp, reals | {q["b"]}) if q["first"]
             else f(**pts).reduce(ops.logaddexp, q["b"]))
        _out(out, meta, "value", g)
    elif kind in ("integrate", "mc"):
        qn = f - f.reduce(ops.logaddexp, reals)
        if kind == "mc":
            with MonteCarlo(rng_key=c["seed"], particle=fc.Bint[PARTICLES]):
                est = fc.Integrate(qn, (c["t"] * _coord(c, *q["coord"])).exp(), reals)
            _out(out, meta, "value", est.reduce(ops.mean, "particle"))
        else:
            x0, x1 = (_coord(c, *p) for p in q["coords"])
            a0, a1, a2 = q["a"]
            integrand = {"tensor": lambda: _T(a["it"], q["tb"]),
                         "affine": lambda: a0 * x0 + a1 * x1 + a2,
                         "quadratic": lambda: x0 * x1}[q["f"]]()
            _out(out, meta, "value", fc.Integrate(qn, integrand, reals))
    elif kind == "moments":
        _moments_out(out, meta, fc.moments(f))
        if isinstance(f, fc.Gaussian):  # its own properties too (one Gaussian, no Tensor)
            batch = tuple(k for k, d in f.inputs.items() if d.dtype != "real")
            out["g_mean"], out["g_cov"] = f.mean, f.covariance
            meta["g_mean"] = meta["g_cov"] = batch
    else:  # mm
        with moment_matching:
            g = (f + _T(a["mw"], [q["b"]])).reduce(ops.logaddexp, q["b"])
        if isinstance(g, fc.Contraction) and q["b"] in g.reduced_vars:
            raise LazyResult(f"mm: the mixture over {q['b']} stayed lazy: {str(g)[:200]}")
        _moments_out(out, meta, fc.moments(g))
    return out


# ---------------------------------------------------------------------------------------------
# The oracle's reading.
def _full(c, arr, names, event=0):
    shape = tuple(BINTS[b] if b in names else 1 for b in c["bints"])
    arr = np.asarray(arr, dtype=np.float64)
    arr = arr.reshape(shape + arr.shape[arr.ndim - event:])
    return np.broadcast_to(arr, tuple(BINTS[b] for b in c["bints"]) + arr.shape[len(shape):])


def _offsets(c, names):
    out, k = {}, 0
    for v in names:
        out[v] = k
        k += c["reals"][v]
    return out


def _factor_quad(c, f, x):
    key, kind, fb = f["key"], f["kind"], f["bints"]
    S = tuple(BINTS[b] for b in c["bints"])
    reals = {v: c["reals"][v] for v in f["reals"]}

    def g(name, event):
        return _full(c, x[key + name], fb, event)

    if kind == "sqrt":
        P, w = g("_S", 2), g("_w", 1)
        J, h = P @ np.swapaxes(P, -1, -2), np.einsum("...ij,...j->...i", P, w)
        return qo.Quad.of(reals, S, fb, J, h, -0.5 * (w * w).sum(-1))
    if kind in ("info", "meanprec"):
        J = g("_P", 2)
        if kind == "info":
            h = g("_h", 1)
            m = np.linalg.solve(J, h[..., None])[..., 0]
        else:
            if np.min(np.linalg.eigvalsh(J)) <= 1e3 * 2.0 ** -52 * np.max(np.abs(J)):
                # documented: mean= with precision= needs a positive definite precision
                raise qo.Rejected("not positive definite")
            m = g("_m", 1)
            h = np.einsum("...ij,...j->...i", J, m)
        cond = float(np.max(np.linalg.cond(J)))
        return qo.Quad.of(reals, S, fb, J, h, -0.5 * (h * m).sum(-1), cond=cond)
    if kind in ("meancov", "scale_tril"):
        C = g("_C", 2) if kind == "meancov" else g("_L", 2) @ np.swapaxes(g("_L", 2), -1, -2)
        # J = L^-T L^-1 from a Cholesky factor: symmetric positive semidefinite by
        # construction (inv(C) of a condition-1e12 C is not, beyond roundoff).
        L = np.linalg.cholesky(C) if kind == "meancov" else g("_L", 2)
        Li = np.linalg.inv(L)
        J = np.swapaxes(Li, -1, -2) @ Li
        m = g("_m", 1)
        h = np.einsum("...ij,...j->...i", J, m)
        return qo.Quad.of(reals, S, fb, J, h, -0.5 * (h * m).sum(-1),
                          cond=float(np.max(np.linalg.cond(C))))
    off = _offsets(c, f["reals"])
    if kind == "normal":
        u = None if f["u"] is None else off[f["u"][0]] + f["u"][1]
        return qo.normal_quad(reals, S, fb, u, f["a"], off[f["v"][0]] + f["v"][1],
                              g("_b", 0), g("_s", 0))
    rows = lambda v: list(range(off[v], off[v] + c["reals"][v]))  # noqa: E731
    return qo.mvn_quad(reals, S, fb, None if f["u"] is None else rows(f["u"]), x[key + "_A"],
                       rows(f["v"]), g("_b", 1), g("_L", 2))


def _transform_quad(c, q, x):
    t = c["transform"]
    kind = t["kind"]
    if kind == "none":
        return q
    v = t["v"]
    s = c["reals"][v]
    if kind in ("const", "delta"):
        q = qo.substitute(q, v, {}, _full(c, x["tv"], t["bints"], 1), {}, t["bints"])
        if kind == "delta":
            ld = _full(c, x["tld"], t["bints"])
            q.c, q.mag = q.c + ld, q.mag + np.abs(ld)
        return q
    if kind == "same":
        return qo.substitute(q, v, {t["w"]: np.eye(s)}, np.zeros(s), {})
    k = t["k"]
    if kind == "rename":
        return qo.substitute(q, v, {"u": np.eye(s)}, np.zeros(s), {"u": k})
    if kind == "slice":
        A = np.zeros((s, k))
        A[np.arange(s), t["start"] + np.arange(s)] = 1.0
        return qo.substitute(q, v, {"u": A}, np.zeros(s), {"u": k})
    if s == 1:
        A = np.zeros((1, k))
        A[0, 0 if k == 1 else t["idx"]] = t["a"]
        return qo.substitute(q, v, {"u": A}, x["tb"][:1], {"u": k})
    return qo.substitute(q, v, {"u": x["tA"]}, x["tb"], {"u": k})


def _tolerance(c, cond):
    rtol, eps, atol = (1e-9, 2.0 ** -52, 1e-9) if c["dtype"] == "float64" else \
        (2e-4, 2.0 ** -23, 1e-3)
    return rtol + 64 * eps * cond, atol


def expect(c: dict, x: dict) -> dict:
    """label -> (expected, tolerance, Bint names, coordinate order or None), full batch shape;
    raises ``Singular`` where an integral diverges."""
    q = _factor_quad(c, c["factors"][0], x)
    for f in c["factors"][1:]:
        q = qo.add(q, _factor_quad(c, f, x))
    if c["tensor"] is not None:
        t = _full(c, x["t"], c["tensor"])
        q.c, q.mag = q.c + t, q.mag + np.abs(t)
        q.present = tuple(b for b in c["bints"] if b in q.present or b in c["tensor"])
    q = _transform_quad(c, q, x)
    spec, R = c["query"], c["final_reals"]
    pts = {v: _full(c, x["p_" + v], spec["pb"][v], 1) for v in R}
    pb = tuple(b for v in R for b in spec["pb"][v])
    kind = spec["kind"]
    ax = c["bints"].index(spec["b"]) if "b" in spec else None

    def done(val, mag, present, cond):
        fac, atol = _tolerance(c, cond)
        return {"value": (val, mag * fac + atol, _ordered(c, present), None)}

    if kind == "point":
        val, mag = qo.value(q, pts, pb)
        return done(val, mag, q.present + pb, q.cond)
    if kind == "marginal":
        m = qo.integrate(q, spec["names"])
        rest = {v: p for v, p in pts.items() if v not in spec["names"]}
        rb = tuple(b for v in rest for b in spec["pb"][v])
        val, mag = qo.value(m, rest, rb)
        return done(val, mag, m.present + rb, m.cond)
    if kind == "lognorm":
        m = qo.integrate(q, list(R))
        return done(m.c, m.mag, m.present, m.cond)
    if kind == "bint_add":
        m = qo.reduce_add(q, spec["b"], ax)
        val, mag = qo.value(m, pts, pb)
        return done(val, mag, m.present + pb, m.cond)
    if kind == "bint_lae":
        if spec["first"]:
            m = qo.integrate(q, list(R))
            val, mag, pres, cond = m.c, m.mag, m.present, m.cond
        else:
            val, mag = qo.value(q, pts, pb)
            pres, cond = q.present + pb, q.cond
        val, mag = qo.reduce_logaddexp(val, mag, ax)
        return done(val, mag, tuple(b for b in pres if b != spec["b"]), cond)
    if kind == "mm":
        w = _full(c, x["mw"], [spec["b"]])
        q.c, q.mag = q.c + w, q.mag + np.abs(w)
        lz, mean, cov = qo.mixture_moments(q, ax)
        pres = tuple(b for b in q.present if b != spec["b"])
        # Roundoff in the components' log masses (on the scale of what was summed into
        # them) moves the weights, and so the mixture's mean and spread.
        _, mean_k, _ = qo.moments(q)
        werr = qo.integrate(q, list(q.reals)).mag.max(ax, keepdims=True) \
            * _tolerance(c, q.cond)[0]
        d = np.abs(mean_k - mean).max(-1).max(ax, keepdims=True)
        return _moments_expected(c, q, lz, mean, cov, pres, werr * d, werr * d * d)
    lz, mean, cov = qo.moments(q)
    if kind == "moments":
        return _moments_expected(c, q, lz, mean, cov, q.present)
    return _integral_expected(c, q, lz, mean, cov, x)


def _moments_expected(c, q, lz, mean, cov, present, mean_err=0.0, cov_err=0.0):
    condJ = max(q.cond, float(np.max(np.linalg.cond(q.J))))
    fac, atol = _tolerance(c, condJ)
    atol_mean, atol_cov = atol + mean_err, atol + cov_err
    mass = qo.integrate(q, list(q.reals))
    sd = np.sqrt(np.abs(np.diagonal(cov, axis1=-2, axis2=-1))).max(-1)
    scale = np.abs(mean).max(-1) + sd
    pres = _ordered(c, present)
    out = {"log_mass": (lz, mass.mag * fac + atol, pres, None)}
    for v, rows in q.offsets().items():
        m = mean[..., rows]
        tol = scale * fac + atol_mean
        out["mean_" + v] = (m[..., 0] if len(rows) == 1 else m,
                            tol[..., None] * np.ones(len(rows)) if len(rows) > 1 else tol,
                            pres, None)
    big = np.abs(cov).max((-1, -2))
    out["cov"] = (cov, (big * fac + atol_cov)[..., None, None] * np.ones(cov.shape[-2:]),
                  pres, q.offsets())
    # Gaussian.mean / .covariance: the same, the coordinates in the Gaussian's order
    # (optional: only where the library's result is one Gaussian).
    out["g_cov"] = out["cov"]
    out["g_mean"] = (mean, (scale * fac + atol_mean)[..., None] * np.ones(mean.shape[-1]),
                     pres, "vector")
    return out


def _integral_expected(c, q, lz, mean, cov, x):
    spec = c["query"]
    condJ = max(q.cond, float(np.max(np.linalg.cond(q.J))))
    fac, atol = _tolerance(c, condJ)
    off = q.offsets()
    sd = np.sqrt(np.abs(np.diagonal(cov, axis1=-2, axis2=-1)))
    spread = np.abs(mean).max(-1) + sd.max(-1)
    if spec["kind"] == "mc":
        p = off[spec["coord"][0]][spec["coord"][1]]
        tt, mu, var = c["t"], mean[..., p], cov[..., p, p]
        val = np.exp(tt * mu + 0.5 * tt * tt * var)
        sd_est = val * np.sqrt(np.expm1(tt * tt * var)) / math.sqrt(PARTICLES)
        lzmag = qo.integrate(q, list(q.reals)).mag
        tol = 5 * sd_est + val * (fac * (tt * spread + 1 + lzmag)) + atol
        return {"value": (val, tol, _ordered(c, q.present), None)}
    (v0, k0), (v1, k1) = spec["coords"]
    p0, p1 = off[v0][k0], off[v1][k1]
    a0, a1, a2 = spec["a"]
    pres = q.present
    if spec["f"] == "tensor":
        val = _full(c, x["it"], spec["tb"])
        scale = np.abs(val)
        pres = q.present + tuple(spec["tb"])
    elif spec["f"] == "affine":
        val = a0 * mean[..., p0] + a1 * mean[..., p1] + a2
        scale = (abs(a0) + abs(a1)) * spread + abs(a2)
    else:
        val = mean[..., p0] * mean[..., p1] + cov[..., p0, p1]
        scale = spread ** 2
    # The density is normalized by its own log normalizer: its roundoff (on the scale of
    # what was summed into it) scales the integral.
    lzmag = qo.integrate(q, list(q.reals)).mag
    return {"value": (val, (scale + np.abs(val) * lzmag) * fac + atol, _ordered(c, pres), None)}


def mc_scale(c: dict, x: dict) -> float:
    """The static ``t`` of the Monte Carlo integrand ``exp(t x_k)``: ``t^2 var <= 1/4`` and
    ``|t mean| <= 20`` in every batch entry (finite, informative draws)."""
    q = _factor_quad(c, c["factors"][0], x)
    for f in c["factors"][1:]:
        q = qo.add(q, _factor_quad(c, f, x))
    q = _transform_quad(c, q, x)
    _, mean, cov = qo.moments(q)
    p = q.offsets()[c["query"]["coord"][0]][c["query"]["coord"][1]]
    return float(min(0.5 / math.sqrt(np.max(cov[..., p, p])),
                     20.0 / max(np.max(np.abs(mean[..., p])), 1e-9)))


def maybe_rejected(c: dict, x: dict) -> bool:
    """Whether a factor's ``precision=`` or ``covariance=`` is positive definite only within
    roundoff of the case's dtype (the library may then refuse it, or take it)."""
    eps = 2.0 ** -52 if c["dtype"] == "float64" else 2.0 ** -23
    for f in c["factors"]:
        key = {"meanprec": "_P", "info": "_P", "meancov": "_C"}.get(f["kind"])
        if key is not None:
            e = np.linalg.eigvalsh(x[f["key"] + key])
            if (e[..., 0] <= 1e3 * eps * e[..., -1]).any():
                return True
    return False


def _ordered(c, names) -> tuple:
    return tuple(b for b in c["bints"] if b in names)


def compare(c: dict, actual: dict, meta: dict, expected: dict) -> list:
    """Disagreements of the library's outputs with the oracle's."""
    fails = []
    for label, (exp, tol, present, offsets) in expected.items():
        names = meta.get(label)
        if names is None and label.startswith("g_"):
            continue  # not one Gaussian: fc.moments alone
        if names is None:
            fails.append(f"{label}: missing")
            continue
        if set(names) != set(present):
            fails.append(f"{label}: inputs {names}, expected {present}")
            continue
        got = np.asarray(ops.to_numpy(actual[label]), dtype=np.float64)
        got = np.transpose(got, [names.index(b) for b in present] +
                           list(range(len(names), got.ndim)))
        index = tuple(slice(None) if b in present else 0 for b in c["bints"])
        exp, tol = exp[index], tol[index]
        if offsets == "vector":  # a flat mean, in the library's coordinate order
            perm = [i for v in meta["order"] for i in expected["cov"][3][v]]
            exp, tol = exp[..., perm], tol[..., perm]
        elif offsets is not None:  # the covariance, in the library's coordinate order
            perm = [i for v in meta["order"] for i in offsets[v]]
            exp, tol = exp[..., perm, :][..., :, perm], tol[..., perm, :][..., :, perm]
        if got.shape != exp.shape:
            fails.append(f"{label}: shape {got.shape}, expected {exp.shape}")
            continue
        bad = ~(np.abs(got - exp) <= tol)
        if bad.any():
            k = np.flatnonzero(bad)[0]
            fails.append(f"{label}: {got.ravel()[k]!r} expected {exp.ravel()[k]!r} "
                         f"(tolerance {tol.ravel()[k]:.3g}, {int(bad.sum())} of {bad.size} off)")
    return fails
