"""Property tests: random expressions over Tensors, Gaussians and Deltas agree across chains.

A hypothesis strategy draws a small expression AST over a fixed vocabulary of names (Bint
i: 2, j: 3 and their rename targets k: 2, l: 3, index name m: 4; reals x: Real, y: Reals[2]
and rename targets u, v). ``build`` evaluates an AST with the public API only, so the same
function runs under ``exact``, under ``lazy`` / ``normalize`` followed by ``reinterpret``, on
every backend, and inside ``jax.jit``. Every AST ends by substituting constants for its real
inputs, so the value is a Tensor over Bint inputs. Oracles: exact eager evaluation, and, when
no real variable is integrated out, a brute-force enumeration that evaluates the AST pointwise
with numpy at every assignment of its free Bint inputs.
"""

# Known discrepancy (a missing rule found by these properties, kept out of the strategy as
# narrowly as we could, marked "Known discrepancy" where it is): a Delta times a positive
# Tensor has no exact rule, so integrating it stays lazy:
#     d = fc.Delta("x", fc.Number(1.0), fc.Number(0.5)); t = fc.Tensor(np.array(2.0))
#     (d * t).reduce(ops.logaddexp, "x")  # a Contraction, not a number
# Fixed since they were found (and now exercised here): Delta + Delta over one name, Delta - c,
# plate sums of a Delta plus a Tensor, and normalize leaving a reduction of a Contraction.

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funsor_core as fc
from funsor_core import ops
from funsor_core.engine.backend import backend_module
from interpretations import exact, lazy, normalize

BINT = {"i": 2, "j": 3, "k": 2, "l": 3, "m": 4, "n": 4}
REAL = {"x": 1, "y": 2, "u": 1, "v": 2}
RENAME = {"i": "k", "k": "i", "j": "l", "l": "j", "m": "n", "n": "m",
          "x": "u", "u": "x", "y": "v", "v": "y"}
LEAF_BINTS = ("i", "j")  # leaves use these; k, l, m arrive by renames and index tensors
LEAF_REALS = ("x", "y")
ATOL = RTOL = 1e-8


def domain(name):
    if name in BINT:
        return fc.Bint[BINT[name]]
    return fc.Real if REAL[name] == 1 else fc.Reals[REAL[name]]


def shape_of(names):
    return tuple(BINT[n] for n in names)


# ---------------------------------------------------------------------------------------------
# The AST. Nodes are tuples; arrays live in a dict ``arrays`` keyed by leaf number, so the same
# AST can be built from numpy, torch or jax arrays (and from jax tracers under jit).
#   ("tensor", key, names)                   Tensor over Bint names
#   ("gaussian", key, names, reals)          Gaussian(mean, covariance) batched over names
#   ("delta", point_key, density_key, var, names)   Delta(var, point, log_density) over names
#   ("unary", op, a) ("binary", op, a, b) ("reduce", op, a, names)
#   ("subs", a, name, value): value is ("int", n), ("rename", new), ("index", key, names)
#                             or ("real", key, names)
TENSOR_BINARY = ("add", "sub", "mul", "logaddexp", "max")
TENSOR_REDUCE = ("add", "logaddexp", "max")
OPS = {"add": ops.add, "sub": ops.sub, "mul": ops.mul, "logaddexp": ops.logaddexp,
       "max": ops.max}
NP_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "logaddexp": np.logaddexp,
          "max": np.maximum}


class Gen:
    """Draws an AST and its arrays; ``draw`` is hypothesis's, arrays come from a seeded rng."""

    def __init__(self, draw, rng, allow_reals, allow_integrate):
        self.draw, self.rng = draw, rng
        self.allow_reals, self.allow_integrate = allow_reals, allow_integrate
        self.arrays = {}
        self.delta_points = {"x": [], "y": []}  # keys of arrays equal to some Delta's point

    def new_key(self, value):
        key = len(self.arrays)
        self.arrays[key] = value
        return key

    def subset(self, names):
        return tuple(n for n in names if self.draw(st.booleans()))

    # Leaves -----------------------------------------------------------------------------
    def tensor(self, names=None, positive=False):
        names = self.subset(LEAF_BINTS) if names is None else names
        data = self.rng.standard_normal(shape_of(names))
        if positive:
            data = np.abs(data) + 0.5
        return ("tensor", self.new_key(data), names), {n: BINT[n] for n in names}

    def gaussian(self):
        names = self.subset(LEAF_BINTS)
        reals = self.subset(LEAF_REALS) or (self.draw(st.sampled_from(LEAF_REALS)),)
        dim = sum(REAL[r] for r in reals)
        batch = shape_of(names)
        a = self.rng.standard_normal(batch + (dim, dim)) * 0.5
        cov = a @ np.swapaxes(a, -1, -2) + np.eye(dim)
        mean = self.rng.standard_normal(batch + (dim,))
        ast = ("gaussian", self.new_key((mean, cov)), names, reals)
        return ast, {**{n: BINT[n] for n in names}, **{r: REAL[r] for r in reals}}

    def delta(self):
        var = self.draw(st.sampled_from(LEAF_REALS))
        names = ("i",) if self.draw(st.booleans()) else ()
        point = self.rng.standard_normal(shape_of(names) + (REAL[var],) * (REAL[var] > 1))
        log_density = self.rng.standard_normal(shape_of(names))
        key = self.new_key(point)
        self.delta_points[var].append((key, names))
        ast = ("delta", key, self.new_key(log_density), var, names)
        return ast, {**{n: BINT[n] for n in names}, var: REAL[var]}

    def leaf(self):
        kinds = ["tensor"] + (["gaussian", "delta"] if self.allow_reals else [])
        kind = self.draw(st.sampled_from(kinds))
        return getattr(self, kind)()

    # Nodes ------------------------------------------------------------------------------
    def expr(self, depth):
        if depth == 0 or self.draw(st.integers(0, 3)) == 0:
            return self.leaf()
        kind = self.draw(st.sampled_from(["binary", "binary", "reduce", "subs", "unary"]))
        a, a_inputs = self.expr(depth - 1)
        has_reals = any(n in REAL for n in a_inputs)
        if kind == "unary" and not has_reals:
            op = self.draw(st.sampled_from(["neg", "exp"]))
            return ("unary", op, a), a_inputs
        if kind == "binary":
            b, b_inputs = self.expr(depth - 1)
            if not has_reals and not any(n in REAL for n in b_inputs):
                op = self.draw(st.sampled_from(TENSOR_BINARY))
            elif any(n in REAL for n in b_inputs):
                op = "add"  # a product of densities
            else:
                # A density with a Tensor: add or subtract a log factor, or scale by c > 0.
                op = self.draw(st.sampled_from(["add", "sub", "scale"]))
                if delta_vars(a) and op == "scale":  # Known discrepancy: Delta * Tensor
                    op = "add"
                if op == "scale":
                    b, b_inputs = self.tensor(positive=True)
                    op = "mul"
            return ("binary", op, a, b), {**a_inputs, **b_inputs}
        if kind == "reduce" and a_inputs:
            bints = [n for n in a_inputs if n in BINT]
            reals = [n for n in a_inputs if n in REAL] if self.allow_integrate else []
            choices = ([("bint", n) for n in bints] + [("real", n) for n in reals])
            if choices:
                what, name = self.draw(st.sampled_from(choices))
                if what == "real":
                    return ("reduce", "logaddexp", a, (name,)), _without(a_inputs, name)
                ops_ = TENSOR_REDUCE if not has_reals else ("add", "logaddexp")
                if has_reals and _has_mixture(a):
                    # A product over a plate of a mixture of densities has exponentially many
                    # components: no exact rule, by design (moment matching's job).
                    ops_ = ("logaddexp",)
                op = self.draw(st.sampled_from(ops_))
                names = tuple(n for n in bints if n == name or self.draw(st.booleans()))
                return ("reduce", op, a, names), _without(a_inputs, *names)
        if kind == "subs" and a_inputs:
            name = self.draw(st.sampled_from(sorted(a_inputs)))
            return self.subs(a, a_inputs, name)
        return a, a_inputs

    def subs(self, a, a_inputs, name):
        inputs = _without(a_inputs, name)
        how = self.draw(st.sampled_from(["constant", "tensor", "rename"]))
        if how == "rename":
            new = RENAME[name]
            return ("subs", a, name, ("rename", new)), {**inputs, new: _size(new)}
        if name in BINT:
            if how == "constant":
                return ("subs", a, name, ("int", self.draw(st.integers(0, BINT[name] - 1)))), inputs
            names = (self.draw(st.sampled_from(["i", "j", "m"])),)
            data = self.rng.randint(0, BINT[name], size=shape_of(names))
            value = ("index", self.new_key(data), names, BINT[name])
            return ("subs", a, name, value), {**inputs, **{n: BINT[n] for n in names}}
        return self.real_value(a, inputs, name, how)

    def real_value(self, a, inputs, name, how):
        # Half the time use some Delta's point, so Deltas are hit and not only -inf.
        pool = self.delta_points[name if name in LEAF_REALS else RENAME[name]]
        if pool and self.draw(st.booleans()):
            key, names = self.draw(st.sampled_from(pool))
        else:
            names = () if how == "constant" else (self.draw(st.sampled_from(["i", "m"])),)
            key = self.new_key(self.rng.standard_normal(shape_of(names) + (REAL[name],)
                                                        * (REAL[name] > 1)))
        return ("subs", a, name, ("real", key, names)), {**inputs, **{n: BINT[n] for n in names}}

    def finish(self, ast, inputs):
        """Substitute constants for every real input left, so the value is a Tensor."""
        for name in sorted(n for n in inputs if n in REAL):
            ast, inputs = self.real_value(ast, _without(inputs, name), name,
                                          self.draw(st.sampled_from(["constant", "tensor"])))
        return ast, inputs


def free_vars(ast):
    """The free names of ``ast``."""
    kind = ast[0]
    if kind == "tensor":
        return set(ast[2])
    if kind == "gaussian":
        return set(ast[2]) | set(ast[3])
    if kind == "delta":
        return set(ast[4]) | {ast[3]}
    if kind == "unary":
        return free_vars(ast[2])
    if kind == "binary":
        return free_vars(ast[2]) | free_vars(ast[3])
    if kind == "reduce":
        return free_vars(ast[2]) - set(ast[3])
    _, a, name, value = ast
    return (free_vars(a) - {name}) | value_vars(value)


def value_vars(value):
    if value[0] == "int":
        return set()
    if value[0] == "rename":
        return {value[1]}
    return set(value[2])


def delta_vars(ast):
    """Free real names of ``ast`` that some Delta in it is a point mass over."""
    kind = ast[0]
    if kind == "delta":
        return {ast[3]}
    if kind in ("tensor", "gaussian"):
        return set()
    if kind == "unary":
        return delta_vars(ast[2])
    if kind == "binary":
        return delta_vars(ast[2]) | delta_vars(ast[3])
    if kind == "reduce":
        return delta_vars(ast[2]) - set(ast[3])
    _, a, name, value = ast
    inner = delta_vars(a)
    if name in inner and value[0] == "rename":
        return (inner - {name}) | {value[1]}
    return inner - {name}


def _has_mixture(ast):
    """Whether ``ast`` sums (logaddexp) a density over a Bint name: a mixture."""
    if ast[0] == "reduce" and ast[1] == "logaddexp" and any(n in BINT for n in ast[3]):
        return True
    return any(_has_mixture(c) for c in ast[1:] if _is_ast(c))


def _is_ast(x):
    return isinstance(x, tuple) and bool(x) and x[0] in (
        "tensor", "gaussian", "delta", "unary", "binary", "reduce", "subs")


def _without(inputs, *names):
    return {n: d for n, d in inputs.items() if n not in names}


def _size(name):
    return BINT[name] if name in BINT else REAL[name]


@st.composite
def expressions(draw, allow_reals=True, allow_integrate=True, depth=4):
    """(ast, arrays, free Bint names) of a random expression whose value is a Tensor."""
    rng = np.random.RandomState(draw(st.integers(0, 2**32 - 1)))
    gen = Gen(draw, rng, allow_reals, allow_integrate)
    ast, inputs = gen.finish(*gen.expr(depth))
    return ast, gen.arrays, tuple(sorted(inputs))


# ---------------------------------------------------------------------------------------------
# Building with the public API.
def to_backend(arrays):
    """The leaf arrays on the active backend (ints stay ints)."""
    module = backend_module()

    def conv(x):
        kind = "int" if np.issubdtype(np.asarray(x).dtype, np.integer) else "real"
        return module.asarray(np.asarray(x), kind)

    return {k: tuple(map(conv, v)) if isinstance(v, tuple) else conv(v) for k, v in arrays.items()}


def build(ast, arrays):
    """The funsor of ``ast`` from leaf ``arrays``, under whatever interpretation is active."""
    kind = ast[0]
    if kind == "tensor":
        return fc.Tensor(arrays[ast[1]], {n: domain(n) for n in ast[2]})
    if kind == "gaussian":
        _, key, names, reals = ast
        mean, cov = arrays[key]
        inputs = {**{n: domain(n) for n in names}, **{r: domain(r) for r in reals}}
        return fc.Gaussian(mean=mean, covariance=cov, inputs=inputs)
    if kind == "delta":
        _, point_key, density_key, var, names = ast
        point, log_density = arrays[point_key], arrays[density_key]
        bints = {n: domain(n) for n in names}
        return fc.Delta(var, fc.Tensor(point, bints), fc.Tensor(log_density, bints))
    if kind == "unary":
        a = build(ast[2], arrays)
        return -a if ast[1] == "neg" else a.exp()
    if kind == "binary":
        return OPS[ast[1]](build(ast[2], arrays), build(ast[3], arrays))
    if kind == "reduce":
        return build(ast[2], arrays).reduce(OPS[ast[1]], frozenset(ast[3]))
    assert kind == "subs"
    _, a, name, value = ast
    return build(a, arrays)(**{name: build_value(value, arrays)})


def build_value(value, arrays):
    if value[0] == "int":
        return value[1]
    if value[0] == "rename":
        return value[1]
    if value[0] == "index":
        _, key, names, size = value
        return fc.Tensor(arrays[key], {n: domain(n) for n in names}, size)
    _, key, names = value
    return fc.Tensor(arrays[key], {n: domain(n) for n in names})


def as_array(result, names):
    """The data of a Tensor result in the order ``names``, as numpy."""
    assert isinstance(result, (fc.Tensor, fc.Number)), (
        f"expected a Tensor, got {type(result).__name__}:\n{result!r}")
    assert set(result.inputs) == set(names), f"inputs {dict(result.inputs)} != {names}"
    if names:
        result = result.align(names)
    return np.asarray(ops.to_numpy(ops.detach(result.data)), dtype=float)


def evaluate(ast, arrays, names, interpretation):
    """Build under ``exact``, or under ``lazy``/``normalize`` then ``reinterpret`` eagerly."""
    arrays = to_backend(arrays)
    if interpretation is exact:
        with exact:
            return as_array(build(ast, arrays), names)
    with interpretation:
        term = build(ast, arrays)
    with exact:
        result = fc.reinterpret(term)
    return as_array(result, names)


# ---------------------------------------------------------------------------------------------
# Brute-force oracle: evaluate the AST at one assignment of its free variables with numpy.
# A reduction loops over its names (shadowing the outer assignment, which is exactly binding);
# a substitution evaluates its value at the outer assignment and extends the assignment.
def brute(ast, arrays, env):
    kind = ast[0]
    if kind == "tensor":
        return float(arrays[ast[1]][tuple(env[n] for n in ast[2])])
    if kind == "gaussian":
        _, key, names, reals = ast
        mean, cov = arrays[key]
        idx = tuple(env[n] for n in names)
        point = np.concatenate([np.atleast_1d(env[r]) for r in reals])
        diff = point - mean[idx]
        return float(-0.5 * diff @ np.linalg.solve(cov[idx], diff))
    if kind == "delta":
        _, point_key, density_key, var, names = ast
        point, log_density = arrays[point_key], arrays[density_key]
        idx = tuple(env[n] for n in names)
        hit = np.all(np.asarray(point[idx]) == np.asarray(env[var]))
        return float(log_density[idx]) if hit else -math.inf
    if kind == "unary":
        a = brute(ast[2], arrays, env)
        return -a if ast[1] == "neg" else math.exp(a) if a < 700 else math.inf
    if kind == "binary":
        a, b = brute(ast[2], arrays, env), brute(ast[3], arrays, env)
        with np.errstate(all="ignore"):
            return float(NP_OPS[ast[1]](a, b))
    if kind == "reduce":
        _, op, a, names = ast
        assert all(n in BINT for n in names), "brute force cannot integrate reals"
        values = [brute(a, arrays, {**env, **dict(zip(names, vs))})
                  for vs in itertools.product(*(range(BINT[n]) for n in names))]
        with np.errstate(all="ignore"):
            return float(NP_OPS[op].reduce(np.asarray(values)))
    _, a, name, value = ast
    return brute(a, arrays, {**env, name: brute_value(value, arrays, env)})


def brute_value(value, arrays, env):
    if value[0] == "int":
        return value[1]
    if value[0] == "rename":
        return env[value[1]]
    key, names = value[1], value[2]
    return arrays[key][tuple(env[n] for n in names)]


def brute_array(ast, arrays, names):
    out = np.empty(shape_of(names))
    for idx in itertools.product(*(range(BINT[n]) for n in names)):
        out[idx] = brute(ast, arrays, dict(zip(names, idx)))
    return out


def integrates_reals(ast):
    if ast[0] == "reduce" and any(n in REAL for n in ast[3]):
        return True
    return any(integrates_reals(c) for c in ast[1:] if _is_ast(c))


def assert_same(actual, expected, what):
    np.testing.assert_allclose(actual, expected, atol=ATOL, rtol=RTOL, equal_nan=True,
                               err_msg=what)


# ---------------------------------------------------------------------------------------------
# Properties.

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@settings(max_examples=150, **SETTINGS)
@given(expressions(allow_reals=False))
def test_tensor_expressions_match_brute_force(example):
    ast, arrays, names = example
    expected = brute_array(ast, arrays, names)
    for interpretation in (exact, lazy, normalize):
        assert_same(evaluate(ast, arrays, names, interpretation), expected,
                    f"{interpretation} vs brute force")


@settings(max_examples=150, **SETTINGS)
@given(expressions())
def test_mixed_expressions_agree_across_interpretations(example):
    ast, arrays, names = example
    expected = evaluate(ast, arrays, names, exact)
    if not integrates_reals(ast):
        assert_same(expected, brute_array(ast, arrays, names), "exact vs brute force")
    for interpretation in (lazy, normalize):
        assert_same(evaluate(ast, arrays, names, interpretation), expected,
                    f"{interpretation} vs exact")


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
@settings(max_examples=15, **SETTINGS)
@given(example=expressions())
def test_backends_agree_with_numpy(backend_name, example):
    ast, arrays, names = example
    expected = evaluate(ast, arrays, names, exact)
    fc.set_backend(backend_name)
    try:
        for interpretation in (exact, lazy, normalize):
            assert_same(evaluate(ast, arrays, names, interpretation), expected,
                        f"{backend_name} {interpretation} vs numpy exact")
    finally:
        fc.set_backend("numpy")


@settings(max_examples=10, **SETTINGS)
@given(expressions(depth=3))
def test_jax_jit_agrees_with_numpy(example):
    import jax

    ast, arrays, names = example
    expected = evaluate(ast, arrays, names, exact)
    fc.set_backend("jax")
    try:
        leaves = to_backend(arrays)
        result = jax.jit(lambda leaves: build(ast, leaves))(leaves)  # a funsor crosses jit
        assert_same(as_array(result, names), expected, "jax.jit vs numpy exact")
    finally:
        fc.set_backend("numpy")


# ---------------------------------------------------------------------------------------------
# Gaussian reductions in every order agree with each other and with the moment form.
GAUSS_VARS = {"a": 1, "b": 2, "c": 1, "d": 2}


@st.composite
def gaussian_sums(draw):
    """A sum of random Gaussians over real inputs drawn from GAUSS_VARS (a full-rank prior
    over all of them, in a random input order, plus up to two factors over subsets) and the
    names to integrate out. Returns ``(pieces, names, reduced)`` with numpy pieces
    ``(vars, prec_sqrt, white_vec)``."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    names = draw(st.lists(st.sampled_from(sorted(GAUSS_VARS)), min_size=2, max_size=4,
                          unique=True))
    pieces = []
    order = list(rng.permutation(names))
    dim = sum(GAUSS_VARS[v] for v in order)
    pieces.append((order, rng.normal(size=(dim, dim)) * 0.3 + np.eye(dim),
                   rng.normal(size=dim)))
    for _ in range(draw(st.integers(0, 2))):
        sub = list(rng.permutation(names))[: draw(st.integers(1, len(names)))]
        size = sum(GAUSS_VARS[v] for v in sub)
        rank = draw(st.integers(1, size + 1))
        pieces.append((sub, rng.normal(size=(size, rank)), rng.normal(size=rank)))
    reduced = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    return pieces, names, reduced


def _gauss_dom(name):
    return fc.Real if GAUSS_VARS[name] == 1 else fc.Reals[GAUSS_VARS[name]]


def _moment_form(pieces, names, reduced, point):
    """log ∫ exp(sum of pieces) d(reduced) at the kept values ``point``, with numpy."""
    offsets = dict(zip(names, np.cumsum([0] + [GAUSS_VARS[v] for v in names])))
    n = sum(GAUSS_VARS[v] for v in names)
    p, info, const = np.zeros((n, n)), np.zeros(n), 0.0
    for vars_, s, w in pieces:
        idx = np.concatenate([np.arange(offsets[v], offsets[v] + GAUSS_VARS[v]) for v in vars_])
        full = np.zeros((n, s.shape[1]))
        full[idx] = s
        p += full @ full.T
        info += full @ w
        const -= 0.5 * w @ w
    b = np.concatenate([np.arange(offsets[v], offsets[v] + GAUSS_VARS[v]) for v in reduced])
    a = np.array([i for i in range(n) if i not in set(b)], dtype=int)
    x_a = (np.concatenate([np.atleast_1d(point[v]) for v in names if v not in reduced])
           if len(a) else np.zeros(0))
    # f = -0.5 z'Pz + i'z + const; integrate z_b: Schur complement of P_bb.
    p_bb, p_ba = p[np.ix_(b, b)], p[np.ix_(b, a)]
    h = info[b] - p_ba @ x_a
    return (const + 0.5 * len(b) * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(p_bb)[1]
            + 0.5 * h @ np.linalg.solve(p_bb, h) - 0.5 * x_a @ p[np.ix_(a, a)] @ x_a
            + info[a] @ x_a)


@settings(max_examples=40, **SETTINGS)
@given(gaussian_sums())
def test_gaussian_reductions_agree_in_every_order(example):
    pieces, names, reduced = example
    terms = [fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={v: _gauss_dom(v) for v in vars_})
             for vars_, s, w in pieces]
    rng = np.random.default_rng(len(pieces) * 7 + len(reduced))
    point = {v: (rng.normal(size=GAUSS_VARS[v]) if GAUSS_VARS[v] > 1 else float(rng.normal()))
             for v in names if v not in reduced}
    expected = _moment_form(pieces, names, reduced, point)
    schedules = [[reduced]] + [[[v] for v in perm] for perm in itertools.permutations(reduced)]
    if len(reduced) > 2:
        schedules.append([reduced[:1], reduced[1:]])
    for term_order in (terms, terms[::-1]):
        joint = term_order[0]
        for t in term_order[1:]:
            joint = joint + t
        for schedule in schedules:
            result = joint
            for group in schedule:
                result = result.reduce(ops.logaddexp, frozenset(group))
            value = result(**point) if point else result
            np.testing.assert_allclose(np.asarray(value.data), expected, rtol=1e-7, atol=1e-7,
                                       err_msg=f"{schedule}")


# ---------------------------------------------------------------------------------------------
# einsum: random equations (letters repeated within an operand take the diagonal) in every
# semiring against numpy, and plated equations built lazily then optimized against eager.
EINSUM_SIZES = {"a": 2, "b": 3, "c": 1, "d": 2}
_SEMIRING_FNS = {"numpy": (np.add, np.multiply, np.sum), "log": (np.logaddexp, np.add, None),
                 "max": (np.maximum, np.add, np.max)}


@st.composite
def einsum_equations(draw):
    n = draw(st.integers(1, 3))
    inputs = [draw(st.text(alphabet="abcd", min_size=0, max_size=3)) for _ in range(n)]
    letters = sorted(set("".join(inputs)))
    output = "".join(draw(st.permutations(letters))[:draw(st.integers(0, len(letters)))])
    return ",".join(inputs) + "->" + output


def _einsum_oracle(eq, operands, semiring):
    # Take each operand's diagonal with numpy, broadcast all to every letter, combine, reduce.
    inputs, out = eq.split("->")
    inputs = inputs.split(",")
    letters = sorted(set("".join(inputs)))
    total = None
    _, prod, _ = _SEMIRING_FNS[semiring]
    for x, lx in zip(operands, inputs):
        unique = "".join(dict.fromkeys(lx))
        x = np.einsum(f"{lx}->{unique}", x) if lx else x
        x = np.transpose(x, [unique.index(c) for c in letters if c in unique])
        x = x.reshape([EINSUM_SIZES[c] if c in unique else 1 for c in letters])
        total = x if total is None else prod(total, x)
    total = np.broadcast_to(total, [EINSUM_SIZES[c] for c in letters])
    axes = tuple(i for i, c in enumerate(letters) if c not in out)
    if axes:
        if semiring == "log":
            m = np.max(total, axis=axes, keepdims=True)
            total = np.log(np.sum(np.exp(total - m), axis=axes)) + np.squeeze(m, axes)
        else:
            total = _SEMIRING_FNS[semiring][2](total, axis=axes)
    kept = [c for c in letters if c in out]
    return np.transpose(total, [kept.index(c) for c in out])


@settings(max_examples=120, **SETTINGS)
@given(eq=einsum_equations(), semiring=st.sampled_from(sorted(_SEMIRING_FNS)),
       seed=st.integers(0, 2**16))
def test_einsum_equations_match_numpy(eq, semiring, seed):
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    operands = [rng.normal(size=[EINSUM_SIZES[c] for c in lx]) for lx in inputs]
    got = fc.einsum(eq, *operands, backend=semiring)
    assert_same(np.asarray(got), _einsum_oracle(eq, operands, semiring), eq)


@st.composite
def plated_equations(draw):
    # Operands over global letters a, b and plated letters x (in plate i), y (in plates i, j).
    n = draw(st.integers(1, 4))
    inputs = []
    for _ in range(n):
        plates = draw(st.sampled_from(["", "i", "ij", "j"]))
        pool = {"": "ab", "i": "abx", "ij": "abxy", "j": "ab"}[plates]
        letters = draw(st.lists(st.sampled_from(pool), unique=True, max_size=2))
        inputs.append("".join(letters) + plates)
    return ",".join(inputs) + "->"


@settings(max_examples=30, **SETTINGS)
@given(eq=plated_equations(), seed=st.integers(0, 2**16))
def test_lazy_plated_einsum_then_optimize_matches_eager(eq, seed):
    from funsor_core.algorithms.eliminate.plated import PlateError

    sizes = {"a": 2, "b": 3, "x": 2, "y": 2, "i": 2, "j": 3}
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    tensors = [fc.Tensor(rng.uniform(0.5, 1.5, size=[sizes[c] for c in lx]),
                         {c: fc.Bint[sizes[c]] for c in lx}) for lx in inputs]
    try:
        eager = fc.einsum(eq, *tensors, plates="ij")
    except PlateError:
        with lazy, pytest.raises(PlateError):
            fc.einsum(eq, *tensors, plates="ij")
        return
    with lazy:
        expr = fc.einsum(eq, *tensors, plates="ij")
    assert_same(fc.apply_optimizer(expr).data, eager.data, eq)
    # And both equal the unrolled factor graph, enumerated by hand.
    from tests.algorithms.contract.test_einsum_checks import _unrolled

    plates = "".join(sorted(set("ij") & set(eq)))
    assert_same(eager.data, _unrolled(eq, [np.asarray(t.data) for t in tensors], plates), eq)
