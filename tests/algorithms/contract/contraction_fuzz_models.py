"""The models and oracles of the contraction fuzzer (``contraction_fuzz.py``, #29's exactness
acceptance): random plated graphs and trees, and their answers by numpy enumeration.

A case is a small plated factor graph: 2-6 variables of domains 1-4, 0-3 plates of sizes 1-4,
factors over random subsets of variables and plates (scalars, repeated factors, size-1 domains,
-inf entries, all -inf factors), values drawn in log space from ranges up to 1e-300..1e300, in
float32 or float64. The oracle unrolls the graph (each variable has one copy per assignment of
its plates: the plates common to every factor that uses it) and enumerates every joint
assignment of every copy in float64 (``enumerate_unrolled``); kept variables and
kept plates are conditioned on, one value at a time. The library's answer must match to the
rounding of the input dtype, or raise the documented error: ``PlateError`` exactly when the
unrolled graph has Theorem 1's minor, found by an independent search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from funsor_core import ops
from funsor_core.sum_product import PlateError
from tests.algorithms.eliminate.test_plated_graphs import has_minor, variable_plates

# name -> (sum_op, prod_op, linear space?, einsum backend string, numpy sum for the oracle)
SEMIRINGS = {
    "log": (ops.logaddexp, ops.add, False, "log", logsumexp),
    "max": (ops.max, ops.add, False, "max", np.max),
    "min": (ops.min, ops.add, False, "min", np.min),
    "linear": (ops.add, ops.mul, True, "numpy", np.sum),
}
VARS, PLATES = "abcdef", "pqr"
MAX_ENUMERATION = 1 << 12
# Log-space half-widths of the drawn values: ordinary, wide, either side of float32's and of
# float64's exact linear-space range (about e**71 and e**672), and 1e-300..1e300.
RANGES = (1.0, 30.0, 40.0, 340.0, 690.0)


@dataclass
class Case:
    seed: int
    semiring: str
    dtype: str
    factors: list  # (variable names tuple, plates string in PLATES order)
    sizes: dict  # name -> size, variables and plates
    plates: str  # every plate name
    kept: str  # kept variables and plates (the result's inputs, in this order)
    arrays: list  # numpy arrays of ``dtype``: plates lead, then variables

    @property
    def eliminate(self) -> frozenset:
        used = {n for names, fp in self.factors for n in tuple(fp) + names}
        return frozenset(used - set(self.kept))


def random_case(seed: int) -> Case:
    """One random case; every draw comes from ``seed``."""
    rng = np.random.default_rng(seed)
    while True:
        case = _draw_case(rng, seed)
        if _enumeration_size(case) <= MAX_ENUMERATION and _copies(case) <= 32:
            return case


def _draw_case(rng, seed):
    semiring = str(rng.choice(list(SEMIRINGS)))
    dtype = "float32" if rng.random() < 0.3 else "float64"
    plates = PLATES[: rng.integers(0, 4)]
    var_names = VARS[: rng.integers(2, 7)]
    sizes = {p: int(rng.integers(1, 5)) for p in plates}
    sizes.update({v: int(rng.choice([1, 2, 2, 3, 3, 4])) for v in var_names})
    tree = rng.random() < 0.3  # a random tree: each variable after the first joins one before
    var_plates = {}
    nested = rng.random() < 0.5
    for v in var_names:
        var_plates[v] = (plates[: rng.integers(0, len(plates) + 1)] if nested
                         else "".join(p for p in plates if rng.random() < 0.4))
    shapes = []
    if tree:
        for k, v in enumerate(var_names):
            names = (v,) if k == 0 else (str(rng.choice(list(var_names[:k]))), v)
            shapes.append(names)
    else:
        for _ in range(rng.integers(1, 6)):
            count = int(rng.integers(0, min(3, len(var_names)) + 1))
            shapes.append(tuple(str(v) for v in rng.choice(list(var_names), count,
                                                             replace=False)))
    factors = []
    for names in shapes:
        fplates = set().union(*(set(var_plates[v]) for v in names)) if names else set()
        fplates |= {p for p in plates if rng.random() < 0.2}
        factors.append((names, "".join(p for p in plates if p in fplates)))
    if rng.random() < 0.2 and factors:  # the same factor twice
        factors.append(factors[int(rng.integers(len(factors)))])
    used = [n for names, fp in factors for n in tuple(fp) + names]
    used = sorted(set(used), key=used.index)
    kept = "".join(n for n in used if rng.random() < 0.15)
    width = float(rng.choice(RANGES))
    _, _, linear, _, _ = SEMIRINGS[semiring]
    if linear:  # linear space: products must stay finite in the oracle's float64
        width = min(width, 3.0 if dtype == "float32" else 30.0)
    arrays = []
    for k, (names, fp) in enumerate(factors):
        if k > 0 and factors[k] == factors[k - 1] and rng.random() < 0.5:
            arrays.append(arrays[-1])
            continue
        shape = tuple(sizes[n] for n in tuple(fp) + names)
        logs = rng.uniform(-width, width, size=shape)
        if rng.random() < 0.3 and not linear:  # far from zero: the shifts must absorb it
            logs += rng.uniform(-width, width)
        if rng.random() < 0.3:
            logs[rng.random(size=shape) < 0.3] = -np.inf
        if rng.random() < 0.05:
            logs[...] = -np.inf
        arrays.append(np.asarray(np.exp(logs) if linear else logs).astype(dtype))
    return Case(seed, semiring, dtype, factors, sizes, plates, kept, arrays)


def _copies(case):
    # numpy arrays have at most 64 dims: one per copy of a variable in the enumeration.
    vplates = variable_plates(case.factors)
    return sum(math.prod(case.sizes[p] for p in vplates[v]) for v in vplates)


def _enumeration_size(case):
    vplates = variable_plates(case.factors)
    return math.prod(case.sizes[v] ** math.prod(case.sizes[p] for p in vplates[v])
                     for v in vplates if v not in case.kept) * math.prod(
        case.sizes[n] for n in case.kept)


# ---------------------------------------------------------------------------------------------
# The oracle.
def condition(factors, arrays, name, value):
    """Fix ``name`` (a variable or a plate) to ``value`` in every factor that has it."""
    out_f, out_a = [], []
    for (names, fp), a in zip(factors, arrays):
        dims = tuple(fp) + names
        if name in dims:
            a = np.take(a, value, axis=dims.index(name))
            names = tuple(n for n in names if n != name)
            fp = fp.replace(name, "")
        out_f.append((names, fp))
        out_a.append(a)
    return out_f, out_a


TREE_VARS = "abcdefghijklmnostuvwxyz"  # no plates: any letter but the plates' is a variable


def random_tree_case(seed: int) -> Case:
    """A random tree of 8-20 variables (domains 1-4, no plates) in the log or linear
    semiring, too big to enumerate: its oracle is ``opt_einsum.contract`` in linear space on
    values of a narrow range. Half the cases then get adversarial values with the same
    answer: each child's unary factor gets a term ``-g(child)`` and its edge factor
    ``+g(child)``, with ``g`` spanning far more than the dtype's linear-space range, so only
    the products of the factors are tame."""
    rng = np.random.default_rng(seed)
    semiring = str(rng.choice(["log", "linear"]))
    dtype = "float32" if rng.random() < 0.3 else "float64"
    names = TREE_VARS[: rng.integers(8, 21)]
    sizes = {v: int(rng.choice([1, 2, 3, 4])) for v in names}
    factors = [((v,), "") for v in names]
    factors += [((names[int(rng.integers(k))], names[k]), "") for k in range(1, len(names))]
    order = rng.permutation(len(factors))
    factors = [factors[k] for k in order]
    kept = "".join(v for v in names if rng.random() < 0.1)
    logs = [rng.uniform(-1.0, 1.0, size=tuple(sizes[v] for v in f)) for f, _ in factors]
    for x in logs:
        if rng.random() < 0.2:
            x[rng.random(size=x.shape) < 0.2] = -np.inf
    tame = [x.copy() for x in logs]
    if semiring == "log" and rng.random() < 0.5:
        width = 600.0 if dtype == "float64" else 80.0
        for k, (f, _) in enumerate(factors):
            if len(f) == 2:
                g = rng.uniform(-width, width, size=sizes[f[1]])
                logs[k] = logs[k] + g[None, :]
                unary = factors.index(((f[1],), ""))
                logs[unary] = logs[unary] - g
    linear = semiring == "linear"
    arrays = [np.asarray(np.exp(x) if linear else x).astype(dtype) for x in logs]
    case = Case(seed, semiring, dtype, factors, sizes, "", kept, arrays)
    case.tame = [np.asarray(np.exp(x) if linear else x).astype(dtype) for x in tame]
    return case


def tree_oracle(case: Case):
    """opt_einsum.contract in linear space (float64) of the tame values."""
    import opt_einsum

    eq = _equation(case)
    with np.errstate(divide="ignore"):
        if case.semiring == "linear":
            return opt_einsum.contract(eq, *[a.astype(np.float64) for a in case.tame])
        return np.log(opt_einsum.contract(eq, *[np.exp(a.astype(np.float64))
                                                for a in case.tame]))


def oracle(case: Case):
    """The answer over ``case.kept`` (float64 numpy), or ``PlateError`` for the minor."""
    if hasattr(case, "tame"):
        return tree_oracle(case)
    sem = case.semiring
    arrays = [a.astype(np.float64) for a in case.arrays]
    shape = tuple(case.sizes[n] for n in case.kept)
    out = np.empty(shape)
    minor = None
    for index in np.ndindex(*shape):
        fs, arrs = case.factors, arrays
        for n, i in zip(case.kept, index):
            fs, arrs = condition(fs, arrs, n, i)
        this_minor = has_minor(fs)
        assert minor is None or minor == this_minor
        minor = this_minor
        if minor:
            return PlateError
        with np.errstate(divide="ignore", invalid="ignore"):
            out[index] = _enumerate(fs, arrs, case.sizes, sem)
    return out


def _enumerate(factors, arrays, sizes, sem):
    _, _, linear, _, reduce = SEMIRINGS[sem]
    return enumerate_unrolled(factors, arrays, sizes, np.multiply if linear else np.add, reduce,
                              1.0 if linear else 0.0)


def enumerate_unrolled(factors, arrays, sizes, prod, reduce, unit):
    """``reduce`` over every joint assignment of every copy of every variable of the product
    (``prod``) of every copy of every factor: the unrolled graph, enumerated (float64)."""
    vplates = variable_plates(factors)
    copies = [(v, values) for v in sorted(vplates)
              for values in np.ndindex(*(sizes[p] for p in vplates[v]))]
    axis = {c: k for k, c in enumerate(copies)}
    shape = tuple(sizes[v] for v, _ in copies)
    joint = np.full(shape, unit)
    for (names, fplates), data in zip(factors, arrays):
        for values in np.ndindex(*(sizes[p] for p in fplates)):
            at = dict(zip(fplates, values))
            piece = data[values] if fplates else data  # plates lead, then variables
            axes = [axis[(v, tuple(at[p] for p in vplates[v]))] for v in names]
            # Move the piece's dims to their copies' axes of the joint, 1 elsewhere.
            piece = np.transpose(piece, np.argsort(axes)) if len(names) > 1 else piece
            full = [1] * len(shape)
            for k in axes:
                full[k] = shape[k]
            joint = prod(joint, np.reshape(piece, full))
    return reduce(joint, axis=None) if shape else joint


def tolerance(case: Case, expected) -> tuple[float, float]:
    """(atol, rtol): the dtype's rounding times the number of terms summed in the answer."""
    eps = float(np.finfo(case.dtype).eps)
    terms = sum(a.size for a in case.arrays) + 1
    if SEMIRINGS[case.semiring][2]:
        return 0.0, eps * 16 * terms
    mags = [np.max(np.abs(a[np.isfinite(a)]), initial=0.0) * a.size for a in case.arrays]
    return eps * 16 * (1.0 + float(sum(mags)) + terms), eps * 16


def check_close(case, actual, expected, where: str) -> None:
    actual = np.asarray(actual, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{where}: shape {actual.shape}, expected {expected.shape}")
    atol, rtol = tolerance(case, expected)
    same_inf = np.isinf(expected) & (actual == expected)
    with np.errstate(invalid="ignore"):
        bad = ~same_inf & ~(np.abs(actual - expected) <= atol + rtol * np.abs(expected))
    if SEMIRINGS[case.semiring][2] and case.dtype == "float32":
        # Linear space in float32: an answer below float32's normal range may flush to zero.
        bad &= ~((np.abs(expected) < 1e-30) & (np.abs(actual) < 1e-30))
    if bad.any():
        raise AssertionError(f"{where}: got {actual[bad][:4]}, expected {expected[bad][:4]} "
                             f"(atol {atol:.3g}, rtol {rtol:.3g})")


def _equation(case):
    return ",".join(fp + "".join(names) for names, fp in case.factors) + "->" + case.kept
