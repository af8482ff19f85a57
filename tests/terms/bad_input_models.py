"""The bad-input fuzzer's model families (``bad_input_fuzz``): distributions against scipy,
Gaussian/Delta against closed-form Gaussian algebra, ``Integrate`` and the adjoint against
numpy brute force, each with one mutated argument."""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import forward_backward
from funsor_core.distribution import (
    Bernoulli,
    Beta,
    Categorical,
    Exponential,
    Gamma,
    Normal,
    Poisson,
)
from funsor_core.domains import Bint, Reals
from interpretations import lazy
from tests.terms.bad_input_fuzz import Mutant
from tests.terms.bad_input_programs import NON_SEMIRINGS, SUMS, _bcast, other_backend

# name -> (constructor, parameter names, draw of valid parameters, draw of a valid value,
#          scipy log density, bad values of the first parameter, values outside the support)
DISTS = {
    "Normal": (lambda p, v: Normal(p[0], p[1], value=v), ("loc", "scale"),
               lambda r, n: [r.normal(size=n), r.uniform(0.5, 2, n)], lambda r, n: r.normal(size=n),
               lambda p, v: stats.norm.logpdf(v, p[0], p[1]), (np.nan, -1.0, 0.0), ()),
    "Gamma": (lambda p, v: Gamma(p[0], p[1], value=v), ("concentration", "rate"),
              lambda r, n: [r.uniform(0.5, 3, n), r.uniform(0.5, 2, n)],
              lambda r, n: r.uniform(0.1, 3, n),
              lambda p, v: stats.gamma.logpdf(v, p[0], scale=1 / p[1]), (np.nan, -1.0, 0.0),
              (-1.0,)),
    "Beta": (lambda p, v: Beta(p[0], p[1], value=v), ("concentration1", "concentration0"),
             lambda r, n: [r.uniform(0.5, 3, n), r.uniform(0.5, 3, n)],
             lambda r, n: r.uniform(0.05, 0.95, n),
             lambda p, v: stats.beta.logpdf(v, p[0], p[1]), (np.nan, -2.0, 0.0), (1.5, -0.5)),
    "Poisson": (lambda p, v: Poisson(p[0], value=v), ("rate",), lambda r, n: [r.uniform(0.5, 3, n)],
                lambda r, n: r.integers(0, 5, n).astype(float),
                lambda p, v: stats.poisson.logpmf(v, p[0]), (np.nan, -1.0), (-1.0, 2.5)),
    "Exponential": (lambda p, v: Exponential(p[0], value=v), ("rate",),
                    lambda r, n: [r.uniform(0.5, 3, n)], lambda r, n: r.uniform(0.1, 3, n),
                    lambda p, v: stats.expon.logpdf(v, scale=1 / p[0]), (np.nan, -1.0, 0.0),
                    (-1.0,)),
    "Bernoulli": (lambda p, v: Bernoulli(probs=p[0], value=v), ("probs",),
                  lambda r, n: [r.uniform(0.1, 0.9, n)],
                  lambda r, n: r.integers(0, 2, n).astype(float),
                  lambda p, v: stats.bernoulli.logpmf(v, p[0]), (np.nan, 1.5, -0.2), (2.0,)),
}
DIST_KINDS = ("bad_parameter", "outside_support", "value_domain", "shared_name_domain",
              "mixed_backend", "int_parameter", "categorical_value_out_of_range",
              "categorical_bad_probs")


def dist_mutant(rng, backend: str) -> Mutant:
    name = str(rng.choice(sorted(DISTS)))
    make, pnames, draw_p, draw_v, logp, bads, outside = DISTS[name]
    n = int(rng.integers(1, 4))
    kind = str(rng.choice(DIST_KINDS))
    params, value = draw_p(rng, n), draw_v(rng, n)
    m = Mutant("distribution", kind, None, params + [value], out_names=("i",))
    m.desc = f"{name} n={n}"
    inputs = {"i": Bint[n]}

    def run(xs, ins=(inputs,) * 3, value=None):
        ps = [fc.Tensor(x, i) for x, i in zip(xs[:-1], ins)]
        return make(ps, fc.Tensor(xs[-1], inputs) if value is None else value)

    m.program = run
    with np.errstate(all="ignore"):
        m.expected = logp(params, value)
    if kind.startswith("categorical"):
        return categorical_mutant(rng, backend, kind)
    if kind == "bad_parameter":
        k, idx = int(rng.integers(len(pnames))), int(rng.integers(n))
        if name in ("Normal",):
            k = 1
        bad = float(rng.choice(bads))
        m.arrays[k] = p = params[k].copy()
        p[idx] = bad
        m.names, m.expected = (name, pnames[k], f"i={idx}"), None
        m.value_dependent = m.jit_nan = True
        m.desc += f" {pnames[k]}[{idx}] = {bad}"
    elif kind == "outside_support":
        if not outside:
            m.kind = "valid_value"
        else:
            idx = int(rng.integers(n))
            value = value.copy()
            value[idx] = float(rng.choice(outside))
            m.arrays[-1] = value
            with np.errstate(all="ignore"):
                m.expected = logp(params, value)
            m.expected[idx] = -np.inf
    elif kind == "value_domain":  # a Bint value of a continuous family
        if name in ("Poisson", "Bernoulli"):
            return dist_mutant(rng, backend)
        dom = Bint[3]
        m.program = lambda xs: run(xs, value=fc.Variable("value", dom))
        m.names, m.expected = ("value", str(dom)), None
    elif kind == "shared_name_domain":
        m.arrays[0] = np.concatenate([params[0], params[0][:1]])
        bad = {"i": Bint[n + 1]}
        m.program = lambda xs: run(xs, ins=(bad, inputs, inputs))
        m.names, m.expected = ("i", f"Bint[{n}]", f"Bint[{n + 1}]"), None
    elif kind == "mixed_backend":
        other, conv = other_backend(backend)
        foreign = conv(value)
        m.program = lambda xs: run(xs, value=fc.Tensor(foreign, inputs))
        m.names, m.expected = (other,), None
    elif kind == "int_parameter":
        if name in ("Poisson", "Exponential", "Gamma"):
            m.arrays[0] = p = rng.integers(1, 4, n)
            params = [p.astype(float)] + params[1:]
            with np.errstate(all="ignore"):
                m.expected = logp(params, value)
    return m


def categorical_mutant(rng, backend: str, kind: str) -> Mutant:
    n, K = int(rng.integers(1, 4)), int(rng.integers(2, 5))
    probs = rng.uniform(0.1, 1, (n, K))
    value = rng.integers(0, K, n)
    m = Mutant("distribution", kind, None, [probs, value], out_names=("i",))
    m.desc = f"Categorical n={n} K={K}"
    m.program = lambda xs: Categorical(probs=fc.Tensor(xs[0], {"i": Bint[n]}),
                                       value=fc.Tensor(xs[1], {"i": Bint[n]}, K))
    norm = probs / probs.sum(-1, keepdims=True)
    if kind == "categorical_value_out_of_range":
        idx = int(rng.integers(n))
        value = value.copy()
        value[idx] = K + int(rng.integers(2))
        m.arrays[1] = value
        m.expected = np.log(norm[np.arange(n), np.minimum(value, K - 1)])
        m.expected[idx] = -np.inf  # or a clear refusal naming the value's domain
        m.names, m.value_dependent = (f"Bint[{K}]",), True
    else:
        idx = int(rng.integers(n))
        probs = probs.copy()
        probs[idx, int(rng.integers(K))] = float(rng.choice([np.nan, -0.3]))
        m.arrays[0] = probs
        m.names, m.expected = ("Categorical", "probs"), None
        m.value_dependent = m.jit_nan = True
    return m


# ---------------------------------------------------------------------------------------------
# Gaussian and Delta: closed-form Gaussian algebra.
GAUSS_KINDS = ("cov_not_psd", "cov_nan", "mean_shape", "batch_size", "subs_shape",
               "reduce_absent", "delta_shape", "delta_value", "mixed_backend", "int_mean",
               "reduce_add_data", "to_data_free_real")


def gauss_mutant(rng, backend: str) -> Mutant:
    n, d = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    mean = rng.normal(size=(n, d))
    L = np.tril(rng.normal(size=(n, d, d)), -1) + np.eye(d) * rng.uniform(0.5, 2, (n, 1, 1))
    cov = L @ np.swapaxes(L, -1, -2)
    point = rng.normal(size=(n, d))
    kind = str(rng.choice(GAUSS_KINDS))
    m = Mutant("gaussian", kind, None, [mean, cov, point], out_names=("i",))
    m.desc = f"n={n} d={d}"
    x_dom = Reals[d]

    def g_of(xs, inputs=None, mean_inputs=None):
        inputs = inputs or {"i": Bint[n], "x": x_dom}
        return fc.Gaussian(mean=xs[0], covariance=xs[1], inputs=inputs)

    def at(xs):  # the Gaussian's log density at the point
        return g_of(xs)(x=fc.Tensor(xs[2], {"i": Bint[n]}))

    diff = point - mean
    quad = -0.5 * np.einsum("na,nab,nb->n", diff, np.linalg.inv(cov), diff)
    total = 0.5 * d * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(cov)[1]
    if rng.random() < 0.5:
        m.program, m.expected = at, quad
    else:
        m.program, m.expected = lambda xs: g_of(xs).reduce(ops.logaddexp, "x"), total
    if kind == "cov_not_psd":
        c = cov.copy()
        c[int(rng.integers(n))] *= -1
        m.arrays[1] = c
        m.names, m.expected, m.value_dependent = ("covariance",), None, True
        m.jit_nan = True  # NaN under jit
    elif kind == "cov_nan":
        c = cov.copy()
        c[int(rng.integers(n)), 0, 0] = np.nan
        m.arrays[1] = c
        m.names, m.expected, m.value_dependent = ("covariance",), None, True
        m.jit_nan = True
    elif kind == "mean_shape":
        m.arrays[0] = rng.normal(size=(n, d + 1))
        m.names, m.expected = ("mean", str(d)), None
    elif kind == "batch_size":
        m.arrays[0] = rng.normal(size=(n + 1, d))
        m.names, m.expected = ("i", f"Bint[{n}]"), None
    elif kind == "subs_shape":
        m.arrays[2] = rng.normal(size=(n, d + 1))
        m.program = at
        m.names, m.expected = ("x", f"Reals[{d}]"), None
    elif kind == "reduce_absent":
        m.program = lambda xs: g_of(xs).reduce(ops.logaddexp, "y")
        m.names, m.expected = ("y",), None
    elif kind == "delta_shape":
        m.arrays[2] = rng.normal(size=(n, d + 1))
        m.program = lambda xs: (fc.Delta("x", fc.Tensor(xs[2], {"i": Bint[n]})) + g_of(xs))
        m.names, m.expected = ("x", f"Reals[{d}]", f"Reals[{d + 1}]"), None
    elif kind == "delta_value":
        m.program = lambda xs: (fc.Delta("x", fc.Tensor(xs[2], {"i": Bint[n]})) + g_of(xs)
                                ).reduce(ops.logaddexp, "x")
        m.expected = quad
    elif kind == "mixed_backend":
        other, conv = other_backend(backend)
        foreign = conv(point)
        m.program = lambda xs: g_of(xs)(x=fc.Tensor(foreign, {"i": Bint[n]}))
        m.names, m.expected = (other,), None
    elif kind == "int_mean":
        m.arrays[0] = mi = rng.integers(-2, 3, (n, d))
        diff = point - mi
        m.program = at
        m.expected = -0.5 * np.einsum("na,nab,nb->n", diff, np.linalg.inv(cov), diff)
    elif kind == "reduce_add_data":  # a sum over a continuum has no value
        m.program = lambda xs: g_of(xs).reduce(ops.add, "x").data
        m.names, m.expected = ("x",), None
    elif kind == "to_data_free_real":
        m.program = lambda xs: fc.to_data(g_of(xs))
        m.names, m.expected = ("x",), None
    return m


# ---------------------------------------------------------------------------------------------
# Integrate: sum over the variables of exp(log_measure) * integrand.
INTEGRATE_KINDS = ("absent", "empty", "domain_clash", "mixed_backend", "int_integrand", "valid")


def integrate_mutant(rng, backend: str) -> Mutant:
    sizes = {k: int(rng.integers(1, 4)) for k in "ijk"}
    lm, f = rng.normal(size=(sizes["i"], sizes["j"])), rng.normal(size=(sizes["j"], sizes["k"]))
    reduced = tuple(k for k in "ijk" if rng.random() < 0.6) or ("j",)
    kind = str(rng.choice(INTEGRATE_KINDS))
    order = ("i", "j", "k")
    kept = tuple(k for k in order if k not in reduced)
    m = Mutant("integrate", kind, None, [lm, f], out_names=kept)
    m.desc = f"sizes {sizes} over {reduced}"

    def T(x, names, s=sizes):
        return fc.Tensor(x, {k: Bint[s[k]] for k in names})

    def run(xs, rv=frozenset(reduced), fn=None):
        return fc.Integrate(T(xs[0], "ij"), T(xs[1], "jk") if fn is None else fn, rv)

    def oracle(lm=lm, f=f, axes=reduced):
        full = np.exp(_bcast(lm, "ij", order, sizes)) * _bcast(f, "jk", order, sizes)
        return full.sum(axis=tuple(order.index(k) for k in axes))

    m.program, m.expected = run, oracle()
    if kind == "absent":
        m.program = lambda xs: run(xs, frozenset(reduced) | {"zz"})
        m.names, m.expected = ("zz",), None
    elif kind == "empty":
        m.program = lambda xs: run(xs, frozenset())
        m.expected, m.out_names = oracle(axes=()), order
    elif kind == "domain_clash":
        s2 = dict(sizes, j=sizes["j"] + 1)
        m.arrays[1] = rng.normal(size=(s2["j"], sizes["k"]))
        m.program = lambda xs: run(xs, fn=T(xs[1], "jk", s2))
        m.names, m.expected = ("j", f"Bint[{sizes['j']}]", f"Bint[{sizes['j'] + 1}]"), None
    elif kind == "mixed_backend":
        other, conv = other_backend(backend)
        foreign = conv(f)
        m.program = lambda xs: run(xs, fn=T(foreign, "jk"))
        m.names, m.expected = (other,), None
    elif kind == "int_integrand":
        m.arrays[1] = fi = rng.integers(-3, 4, f.shape)
        m.expected = oracle(f=fi.astype(float))
    return m


# ---------------------------------------------------------------------------------------------
# The adjoint: marginals of a lazy sum of two factors against numpy.
ADJOINT_KINDS = ("non_semiring", "not_lazy", "batch_absent", "mixed_backend", "valid")


def adjoint_mutant(rng, backend: str) -> Mutant:
    sizes = {k: int(rng.integers(1, 4)) for k in "ijk"}
    A, B = rng.normal(size=(sizes["i"], sizes["j"])), rng.normal(size=(sizes["j"], sizes["k"]))
    kind = str(rng.choice(ADJOINT_KINDS))
    m = Mutant("adjoint", kind, None, [A, B], out_names=("i", "j"))
    m.desc = f"sizes {sizes}"
    joint = A[:, :, None] + B[None]
    m.expected = logsumexp(joint, axis=2) - logsumexp(joint)

    def run(xs, s=ops.logaddexp, p=ops.add, b=None, eager=False, batch=frozenset()):
        a = fc.Tensor(xs[0], {"i": Bint[sizes["i"]], "j": Bint[sizes["j"]]})
        b = fc.Tensor(xs[1] if b is None else b, {"j": Bint[sizes["j"]], "k": Bint[sizes["k"]]})
        if eager:
            expr = (a + b).reduce(ops.logaddexp)
        else:
            with lazy:
                expr = (a + b).reduce(ops.logaddexp)
        value, adj = forward_backward(s, p, expr, batch)
        return adj[a] + a - value

    m.program = run
    if kind == "non_semiring":
        s, p = NON_SEMIRINGS[int(rng.integers(len(NON_SEMIRINGS)))]
        m.program = lambda xs: run(xs, SUMS[s][0], SUMS[p][0])
        m.names, m.expected = (s, p), None
    elif kind == "not_lazy":
        m.program = lambda xs: run(xs, eager=True)
        m.names, m.expected = ("lazy",), None
    elif kind == "batch_absent":
        m.program = lambda xs: run(xs, batch=frozenset({"zz"}))
        m.names = ("zz",)
    elif kind == "mixed_backend":
        other, conv = other_backend(backend)
        foreign = conv(B)
        m.program = lambda xs: run(xs, b=foreign)
        m.names, m.expected = (other,), None
    return m


FAMILIES = {"distribution": dist_mutant, "gaussian": gauss_mutant,
            "integrate": integrate_mutant, "adjoint": adjoint_mutant}

