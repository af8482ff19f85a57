"""The valid random programs of the bad-input fuzzer (``bad_input_fuzz``) and their mutants:
Tensor ops and substitution, ``sum_product``/``einsum`` on the contraction fuzzer's plated
graphs, and Markov chains (``MarkovProduct``, funsor's scans, smoothers, Viterbi, filters).
The distribution, Gaussian/Delta, ``Integrate`` and adjoint families are in
``bad_input_models``. ``draw(seed, backend)`` gives one mutant; the same seed gives the same
program on every backend (a mixed-backend mutant takes its foreign array from the other one).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from funsor_core.domains import Bint, Real
from funsor_core.einsum import einsum
from funsor_core.sum_product import (
    MarkovProduct,
    markov_map,
    markov_marginals,
    naive_sequential_sum_product,
    sequential_sum_product,
    sum_product,
)
from interpretations import lazy
from tests.algorithms.contract import contraction_fuzz_models as cm
from tests.algorithms.contract.contraction_fuzz import benign_arrays
from tests.terms.bad_input_fuzz import GAPS, Mutant

# Reductions and binary ops by name: (funsor op, numpy reduce, numpy binary).
SUMS = {"logaddexp": (ops.logaddexp, logsumexp, np.logaddexp), "add": (ops.add, np.sum, np.add),
        "max": (ops.max, np.max, np.maximum), "mul": (ops.mul, np.prod, np.multiply),
        "min": (ops.min, np.min, np.minimum)}
BINARY = {"add": (ops.add, np.add), "mul": (ops.mul, np.multiply), "sub": (ops.sub, np.subtract),
          "max": (ops.max, np.maximum), "logaddexp": (ops.logaddexp, np.logaddexp)}


def other_backend(backend: str) -> tuple:
    """A name and converter for an array of a backend other than ``backend``'s."""
    if backend == "numpy":
        import torch

        return "torch", torch.as_tensor
    return "numpy", np.asarray


def reduce_np(name: str, x: np.ndarray, axes: tuple) -> np.ndarray:
    if not axes:
        return x
    with np.errstate(all="ignore"):
        return np.asarray(SUMS[name][1](x, axis=axes))


def _T(x, names, sizes, dtype="real"):
    return fc.Tensor(x, {n: Bint[sizes[n]] for n in names}, dtype)


def _bcast(x: np.ndarray, names: tuple, order: tuple, sizes: dict) -> np.ndarray:
    """``x`` over ``names`` as an array over ``order`` (broadcast)."""
    names = tuple(names)
    x = np.transpose(x, [names.index(n) for n in order if n in names])
    shape = [sizes[n] if n in names else 1 for n in order]
    return np.broadcast_to(x.reshape(shape), [sizes[n] for n in order])


# ---------------------------------------------------------------------------------------------
# Tensor ops and substitution.
TENSOR_KINDS = ("wrong_name_reduce", "absent_variable_reduce", "wrong_name_subs",
                "shared_name_domain", "bint_vs_real", "size_off_by_one", "int_for_real",
                "float_for_bint", "complex_data", "object_data", "out_of_range_int",
                "out_of_range_tensor", "mixed_backend", "lazy_data", "lazy_float",
                "lazy_to_data", "float_scalar", "float_with_inputs", "nan_data", "empty_reduce")


def tensor_mutant(rng, backend: str) -> Mutant:
    sizes = {n: int(rng.integers(1, 5)) for n in "ijk"}
    na = tuple(n for n in "ijk" if rng.random() < 0.7) or ("i",)
    nb = tuple(n for n in "ijk" if rng.random() < 0.5)
    order = tuple(n for n in "ijk" if n in na + nb)
    bop = str(rng.choice(list(BINARY)))
    red = str(rng.choice(["logaddexp", "add", "max"]))
    reduced = tuple(n for n in order if rng.random() < 0.5)
    A = rng.normal(size=[sizes[n] for n in na])
    B = rng.normal(size=[sizes[n] for n in nb])
    kind = str(rng.choice(TENSOR_KINDS))
    kept = tuple(n for n in order if n not in reduced)
    m = Mutant("tensor", kind, None, [A, B], out_names=kept)

    def base(xs, b=None, reduced_vars=frozenset(reduced)):
        a = _T(xs[0], na, sizes)
        b = _T(xs[1], nb, sizes) if b is None else b
        return BINARY[bop][0](a, b).reduce(SUMS[red][0], reduced_vars)

    def oracle(a=A, b=B):
        with np.errstate(all="ignore"):
            full = BINARY[bop][1](_bcast(a, na, order, sizes), _bcast(b, nb, order, sizes))
        return reduce_np(red, full, tuple(order.index(n) for n in reduced))

    m.program, m.expected = base, oracle()
    m.desc = f"{bop}({na}, {nb}).reduce({red}, {reduced}) sizes {sizes}"
    if kind == "wrong_name_reduce":
        m.program = lambda xs: base(xs, reduced_vars=frozenset(reduced) | {"zz"})
        m.names, m.expected = ("zz",), None
    elif kind == "absent_variable_reduce":  # a Variable not in the term: the sum repeats
        zz = fc.Variable("zz", Bint[3])
        m.program = lambda xs: base(xs, reduced_vars=frozenset(reduced) | {zz})
        m.expected = reduce_np(red, np.stack([oracle()] * 3), (0,))
    elif kind == "wrong_name_subs":  # funsor ignores names that are not inputs
        m.program = lambda xs: base(xs)(zz=1)
    elif kind in ("shared_name_domain", "bint_vs_real"):
        n = str(rng.choice(na))
        if kind == "bint_vs_real":
            m.program = lambda xs: base(xs, b=fc.Variable(n, Real) + _T(xs[1], nb, sizes))
            m.names = (n, "Real", f"Bint[{sizes[n]}]")
        else:
            s2 = dict(sizes, **{n: sizes[n] + 1})
            nb2 = nb if n in nb else nb + (n,)
            m.arrays[1] = rng.normal(size=[s2[k] for k in nb2])
            m.program = lambda xs: base(xs, b=_T(xs[1], nb2, s2))
            m.names = (n, f"Bint[{sizes[n]}]", f"Bint[{sizes[n] + 1}]")
        m.expected = None
    elif kind == "size_off_by_one":
        n = str(rng.choice(na))
        shape = [sizes[k] + (k == n) for k in na]
        m.arrays[0] = rng.normal(size=shape)
        m.names, m.expected = (n, str(tuple(shape))), None
    elif kind == "int_for_real":
        m.arrays[0] = A = rng.integers(-3, 4, size=A.shape)
        m.expected = oracle(a=A.astype(float))
    elif kind == "float_for_bint":  # a float index Tensor substituted into a Bint input
        n = str(rng.choice(na))
        idx = rng.integers(0, sizes[n], size=2).astype(float)
        m.arrays.append(idx)
        m.program = lambda xs: base(xs, reduced_vars=frozenset())(
            **{n: fc.Tensor(xs[2], {"m": Bint[2]}, sizes[n])})
        m.names, m.expected = (f"Bint[{sizes[n]}]", "float"), None
    elif kind == "complex_data":  # a clear refusal or the complex value
        m.arrays[0] = A = A + 1j * rng.normal(size=A.shape)
        m.names, m.expected, m.skip_backends = ("complex",), None, GAPS["complex_data"]
    elif kind == "object_data":
        m.arrays[0] = A.astype(object)  # (jax.jit cannot take it as an argument)
        m.names, m.expected, m.eager_only = ("object",), None, True
    elif kind in ("out_of_range_int", "out_of_range_tensor"):
        n = str(rng.choice(na))
        bad = int(rng.choice([sizes[n], -1 - sizes[n], sizes[n] + 3]))
        if kind == "out_of_range_int":
            m.program = lambda xs: base(xs, reduced_vars=frozenset())(**{n: bad})
        else:
            m.arrays.append(np.array([0, bad]))
            m.program = lambda xs: base(xs, reduced_vars=frozenset())(
                **{n: fc.Tensor(xs[2], {"m": Bint[2]}, sizes[n])})
            m.value_dependent = m.jit_nan = True  # documented: NaN under jit
        m.names, m.expected = (n, f"Bint[{sizes[n]}]"), None
    elif kind == "mixed_backend":
        other, conv = other_backend(backend)
        foreign = conv(B)
        m.program = lambda xs: base(xs, b=_T(foreign, nb, sizes))
        m.names, m.expected = (other, "jax" if backend.startswith("jax") else backend), None
    elif kind in ("lazy_data", "lazy_float", "lazy_to_data"):
        def lazy_term(xs):
            with lazy:
                return base(xs, reduced_vars=frozenset(order)).exp()
        demand = {"lazy_data": lambda t: t.data, "lazy_float": float,
                  "lazy_to_data": fc.to_data}[kind]
        m.program = lambda xs: demand(lazy_term(xs))
        m.names, m.expected, m.eager_only = ("still lazy",), None, True
    elif kind == "float_scalar":
        m.program = lambda xs: float(base(xs, reduced_vars=frozenset(order)))
        m.expected, m.out_names, m.eager_only = reduce_np(red, oracle(), tuple(range(
            len(kept)))), (), True
    elif kind == "float_with_inputs":  # several values: refused; one value: as funsor
        m.program = lambda xs: float(base(xs, reduced_vars=frozenset()))
        m.names, m.eager_only, m.out_names = order, True, ()
        one = int(np.prod([sizes[n] for n in order])) == 1
        with np.errstate(all="ignore"):
            m.expected = BINARY[bop][1](_bcast(A, na, order, sizes), _bcast(B, nb, order, sizes)
                                        ).reshape(()) if one else None
    elif kind == "nan_data":
        A = A.copy()
        A.flat[int(rng.integers(A.size))] = np.nan
        m.arrays[0] = A
        m.expected = oracle(a=A)
    elif kind == "empty_reduce":
        m.program = lambda xs: base(xs, reduced_vars=frozenset())
        m.expected, m.out_names = oracle(), order
        with np.errstate(all="ignore"):
            m.expected = BINARY[bop][1](_bcast(A, na, order, sizes), _bcast(B, nb, order, sizes))
    return m


# ---------------------------------------------------------------------------------------------
# sum_product and einsum on the contraction fuzzer's plated graphs.
CONTRACT_KINDS = ("eliminate_absent", "plate_absent", "empty_eliminate", "empty_plates",
                  "shared_name_domain", "non_semiring", "mixed_backend", "einsum_plate_absent",
                  "einsum_extra_dim", "einsum_size_off_by_one")
SEMIRING_PAIRS = {("logaddexp", "add"), ("max", "add"), ("min", "add"), ("add", "mul"),
                  ("max", "mul"), ("min", "mul")}  # (max, mul), (min, mul): on nonnegatives
NON_SEMIRINGS = (("add", "add"), ("logaddexp", "mul"), ("mul", "add"), ("max", "mul"),
                 ("mul", "mul"))


def _factors(case, xs):
    return [_T(x, tuple(fp) + names, case.sizes) for (names, fp), x in zip(case.factors, xs)]


def _brute(factors, arrays, sizes, eliminate, sum_name, prod_name):
    order = tuple(sorted({n for names, _ in factors for n in names}))
    with np.errstate(all="ignore"):
        full = None
        for (names, _), a in zip(factors, arrays):
            b = _bcast(a.astype(np.float64), names, order, sizes)
            full = b if full is None else SUMS[prod_name][2](full, b)
        axes = tuple(order.index(n) for n in order if n in eliminate)
        return tuple(n for n in order if n not in eliminate), reduce_np(sum_name, full, axes)


def contract_mutant(rng, backend: str) -> Mutant:
    case = cm.random_case(int(rng.integers(1 << 30)))
    if backend.startswith("jax"):  # float32 (no x64): the same graph, values it can hold
        case = dataclasses.replace(case, arrays=benign_arrays(case))
    sum_op, prod_op, linear, eq_backend, _ = cm.SEMIRINGS[case.semiring]
    kind = str(rng.choice(CONTRACT_KINDS))
    plated = bool(case.plates)
    if (plated and kind in ("empty_eliminate", "non_semiring", "einsum_extra_dim",
                            "einsum_size_off_by_one")) or (kind == "einsum_plate_absent" and any(
                                p in case.kept for p in case.plates)):
        kind = "empty_plates"
    m = Mutant("contract", kind, None, list(case.arrays), out_names=tuple(case.kept))
    m.desc = f"case seed {case.seed} ({case.semiring}, plates {case.plates!r})"
    plates = frozenset(case.plates)

    def sp(xs, eliminate=case.eliminate, plates=plates, s=sum_op, p=prod_op):
        return sum_product(s, p, _factors(case, xs), eliminate, plates)

    expected = cm.oracle(case)
    m.program, m.expected = sp, expected
    if expected is cm.PlateError:
        m.expected, m.names = None, ("plate",)
    if kind == "eliminate_absent":
        m.program = lambda xs: sp(xs, eliminate=case.eliminate | {"zz"})
        m.names = m.names or ("zz",)
    elif kind == "plate_absent":
        m.program = lambda xs: sp(xs, eliminate=case.eliminate | {"zz"}, plates=plates | {"zz"})
        m.names = m.names or ("zz",)
    elif kind == "empty_eliminate":
        m.program = lambda xs: sp(xs, eliminate=frozenset())
        m.out_names, m.expected = _brute(case.factors, case.arrays, case.sizes, (),
                                         "add", "mul" if linear else "add")
        m.names = None
    elif kind == "empty_plates":  # the plates become ordinary variables
        flat = cm.Case(case.seed, case.semiring, case.dtype,
                       [(tuple(fp) + names, "") for names, fp in case.factors], case.sizes, "",
                       case.kept, case.arrays)
        m.program = lambda xs: sp(xs, plates=frozenset())
        m.expected, m.names = cm.oracle(flat), None
    elif kind == "shared_name_domain":
        uses = [n for names, fp in case.factors for n in set(tuple(fp) + names)]
        shared = sorted({n for n in uses if uses.count(n) > 1})
        if not shared:  # a name in one factor only: another size is a valid program
            return contract_mutant(rng, backend)
        n = str(rng.choice(shared))
        k = next(j for j, (nm, f) in enumerate(case.factors) if n in tuple(f) + nm)
        dims = tuple(case.factors[k][1]) + case.factors[k][0]
        shape = [case.sizes[d] + (d == n) for d in dims]
        m.arrays[k] = rng.normal(size=shape).astype(case.dtype)
        s2 = dict(case.sizes, **{n: case.sizes[n] + 1})
        m.program = lambda xs: sum_product(
            sum_op, prod_op, [_T(x, tuple(f) + nm, s2 if j == k else case.sizes)
                              for j, ((nm, f), x) in enumerate(zip(case.factors, xs))],
            case.eliminate, plates)
        m.names, m.expected = (n, f"Bint[{case.sizes[n]}]", f"Bint[{case.sizes[n] + 1}]"), None
    elif kind == "non_semiring":
        s, p = NON_SEMIRINGS[int(rng.integers(len(NON_SEMIRINGS)))]
        m.arrays = [rng.uniform(0.2, 1.5, a.shape).astype(a.dtype) for a in case.arrays]
        m.program = lambda xs: sp(xs, s=SUMS[s][0], p=SUMS[p][0])
        out, m.expected = _brute(case.factors, m.arrays, case.sizes, case.eliminate, s, p)
        m.out_names, m.names = out, (s, p)
        m.desc += f" ({s}, {p})"
    elif kind == "mixed_backend":
        if not case.factors:
            return contract_mutant(rng, backend)
        other, conv = other_backend(backend)
        foreign = conv(case.arrays[0])
        names0 = tuple(case.factors[0][1]) + case.factors[0][0]
        m.program = lambda xs: sum_product(  # one more factor, of the other backend
            sum_op, prod_op, _factors(case, xs) + [_T(foreign, names0, case.sizes)],
            case.eliminate, plates)
        m.names, m.expected = (other,), None
    elif kind.startswith("einsum"):
        eq = cm._equation(case)
        pl = case.plates + ("z" if kind == "einsum_plate_absent" else "")
        m.program = lambda xs: einsum(eq, *xs, plates=pl, backend=eq_backend)
        m.desc += f" einsum {eq!r} plates {pl!r}"
        if kind == "einsum_plate_absent":
            m.names = m.names or ("z",)
        else:
            uses = [n for nm, f in case.factors for n in set(nm + tuple(f))]
            k = [j for j, (nm, f) in enumerate(case.factors)
                 if (nm + tuple(f)) and uses.count((nm + tuple(f))[-1]) > 1]
            if not k:  # a letter of one operand only takes any size
                return contract_mutant(rng, backend)
            k = k[0]
            a = case.arrays[k]
            m.arrays[k] = (a[..., None] if kind == "einsum_extra_dim"
                           else np.concatenate([a, a[..., :1]], axis=-1))
            m.names, m.expected = (eq.split("->")[0].split(",")[k][-1],), None
    return m


# ---------------------------------------------------------------------------------------------
# Markov chains: products, scans, smoothers, Viterbi, filters.
CHAIN_KINDS = ("T0", "T1", "time_absent", "time_size", "time_real", "step_name",
               "step_domain", "non_semiring", "mixed_backend", "nan_map", "lengths_out_of_range",
               "mixed_factor", "mixed_lengths")
ENTRIES = ("MarkovProduct", "sequential_sum_product", "naive_sequential_sum_product",
           "markov_marginals", "markov_map", "windowed_filter")
STEP = {"x_prev": "x_curr"}


def chain_paths(steps: np.ndarray, s: str, p: str) -> np.ndarray:
    """The semiring product of a (T, K, K) chain over (x_0, x_T), by enumerating paths."""
    T, K = steps.shape[0], steps.shape[1]
    out = np.empty((K, K))
    with np.errstate(all="ignore"):
        for a, b in itertools.product(range(K), repeat=2):
            vals = []
            for mid in itertools.product(range(K), repeat=T - 1):
                path = (a,) + mid + (b,)
                v = steps[0, path[0], path[1]]
                for t in range(1, T):
                    v = SUMS[p][2](v, steps[t, path[t], path[t + 1]])
                vals.append(v)
            out[a, b] = reduce_np(s, np.array(vals), (0,))
    return out


def left_fold(steps: np.ndarray, s: str, p: str) -> np.ndarray:
    """A chain's product as the left fold along time: the definition of a chain whose
    ``(s, p)`` is no semiring (``check_semiring``: as in funsor)."""
    msg = steps[0]
    with np.errstate(all="ignore"):
        for t in range(1, steps.shape[0]):
            msg = reduce_np(s, SUMS[p][2](msg[:, :, None], steps[t][None]), (1,))
    return msg


def with_init(steps: np.ndarray, init: np.ndarray, s: str, p: str) -> np.ndarray:
    """The forward message after the last step, by paths: ``init`` is a first step out of
    a dummy state, so it meets each path before any sum (right in a non-semiring too)."""
    K = init.shape[0]
    if steps.shape[0] == 0:
        return init
    steps = np.concatenate([np.broadcast_to(init[None, :], (K, K))[None], steps])
    return (chain_paths(steps, s, p) if (s, p) in SEMIRING_PAIRS else left_fold(steps, s, p))[0]


def chain_mutant(rng, backend: str) -> Mutant:
    K, T = int(rng.integers(1, 4)), int(rng.integers(2, 5))
    entry = str(rng.choice(ENTRIES))
    kind = str(rng.choice(CHAIN_KINDS))
    T = {"T0": 0, "T1": 1}.get(kind, T)
    sem = "max" if entry == "markov_map" else str(rng.choice(["logaddexp", "max"]))
    steps = rng.normal(size=(T, K, K))
    init = rng.normal(size=K)
    m = Mutant("chain", kind, None, [steps, init], out_names=("x_prev", "x_curr"))
    m.desc = f"{entry} {sem} K={K} T={T}"
    time = fc.Variable("t", Bint[T])

    def run(xs, s=sem, p="add", time=time, step=STEP, trans=None, first=None, **kw):
        trans = fc.Tensor(xs[0], {"t": Bint[T], "x_prev": Bint[K], "x_curr": Bint[K]}) \
            if trans is None else trans
        so, po = SUMS[s][0], SUMS[p][0]
        if entry == "MarkovProduct":
            return MarkovProduct(so, po, trans, time, step)
        if entry == "sequential_sum_product":
            return sequential_sum_product(so, po, trans, time, step)
        if entry == "naive_sequential_sum_product":
            return naive_sequential_sum_product(so, po, trans, time, step)
        if entry == "markov_marginals":
            return markov_marginals(so, po, trans, time, step, **kw)[0]
        if entry == "markov_map":
            return markov_map(trans, time, step, **kw)[0]
        first = fc.Tensor(xs[1], {"x_prev": Bint[K]}) if first is None else first
        return windowed_filter(so, po, trans, time, step, first)

    def oracle(s=sem, p="add"):
        steps = m.arrays[0]
        if T == 0:
            prod = np.where(np.eye(K) > 0, 0.0, -np.inf) if p == "add" else np.eye(K)
        else:
            prod = chain_paths(steps, s, p) if (s, p) in SEMIRING_PAIRS else left_fold(steps, s, p)
        if entry in ("markov_marginals", "markov_map"):
            return (), reduce_np(s, prod, (0, 1))
        if entry == "windowed_filter":
            return ("x_curr",), with_init(steps, init, s, p)
        return ("x_prev", "x_curr"), prod

    m.program = run
    m.out_names, m.expected = oracle()
    if kind == "T0":
        m.names = ("t", "Bint[0]")
    elif kind == "time_absent":  # a chain of T copies of each step: or refuse naming 's'
        m.program = lambda xs: run(xs, time=fc.Variable("s", Bint[T]))
        m.out_names = ("t",) + m.out_names
        m.expected = np.stack([oracle_of(np.stack([steps[t]] * T), entry, sem, init)
                               for t in range(T)])
        m.names = ("s",)
    elif kind in ("time_size", "time_real"):
        dom = f"Bint[{T + 1}]" if kind == "time_size" else "Real"
        m.program = lambda xs: run(xs, time=fc.Variable("t", Bint[T + 1] if kind == "time_size"
                                                        else Real))
        m.names, m.expected = ("t", dom), None
    elif kind == "step_name":
        m.program = lambda xs: run(xs, step={"x_prev": "y_curr"})
        m.names, m.expected = ("y_curr",), None
    elif kind == "step_domain":
        m.arrays[0] = rng.normal(size=(T, K, K + 1))
        m.program = lambda xs: run(xs, trans=fc.Tensor(xs[0], {"t": Bint[T], "x_prev": Bint[K],
                                                               "x_curr": Bint[K + 1]}))
        m.names, m.expected = ("x_prev", "x_curr", f"Bint[{K}]", f"Bint[{K + 1}]"), None
    elif kind == "non_semiring":
        if entry == "markov_map":  # it takes no semiring
            return chain_mutant(rng, backend)
        s, p = NON_SEMIRINGS[int(rng.integers(len(NON_SEMIRINGS)))]
        m.arrays[0] = steps = rng.uniform(0.2, 1.5, steps.shape)
        m.program = lambda xs: run(xs, s=s, p=p)
        m.out_names, m.expected = oracle(s, p)
        m.names = (s, p)
        m.desc += f" ({s}, {p})"
    elif kind == "mixed_backend":
        other, conv = other_backend(backend)
        obs = conv(rng.normal(size=K))
        m.program = lambda xs: run(xs, trans=fc.Tensor(xs[0], {
            "t": Bint[T], "x_prev": Bint[K], "x_curr": Bint[K]}) + fc.Tensor(
                obs, {"x_curr": Bint[K]}))
        m.names, m.expected = (other,), None
    elif kind == "nan_map":
        m.arrays[0] = np.full_like(steps, np.nan)
        m.names, m.expected, m.value_dependent = ("NaN",), None, True
        m.jit_nan = True  # documented: the NaN score is returned under jit
        if entry == "markov_marginals":  # NaN in, NaN out, or a refusal naming it
            m.expected = np.full_like(oracle()[1], np.nan)
        elif entry != "markov_map":
            m.names, m.expected = None, np.full_like(oracle()[1], np.nan)
            m.value_dependent = False
    elif kind == "lengths_out_of_range":
        if entry not in ("markov_map", "markov_marginals"):
            return chain_mutant(rng, backend)
        m.arrays.append(np.array(T + 1 + int(rng.integers(3))))
        m.program = lambda xs: run(xs, lengths=fc.Tensor(xs[2]))
        m.names, m.expected, m.value_dependent = ("lengths",), None, True
        m.jit_nan = True  # documented: NaN for that entry under jit
    elif kind in ("mixed_factor", "mixed_lengths"):  # a boundary factor or lengths of another
        other, conv = other_backend(backend)
        if entry not in ("markov_map", "markov_marginals", "windowed_filter") or (
                kind == "mixed_lengths" and entry == "windowed_filter"):
            return chain_mutant(rng, backend)
        if kind == "mixed_factor":
            init_f = fc.Tensor(conv(init), {"x_prev": Bint[K]})
            m.program = (lambda xs: run(xs, first=init_f)) if entry == "windowed_filter" else (
                lambda xs: run(xs, factors=(init_f,)))
        else:
            lengths = fc.Tensor(conv(np.array(T)))
            m.program = lambda xs: run(xs, lengths=lengths)
        m.names, m.expected = (other,), None
    return m


def oracle_of(steps, entry, s, init):
    prod = chain_paths(steps, s, "add")
    if entry in ("markov_marginals", "markov_map"):
        return reduce_np(s, prod, (0, 1))
    if entry == "windowed_filter":
        return with_init(steps, init, s, "add")
    return prod


FAMILIES = {"tensor": tensor_mutant, "contract": contract_mutant, "chain": chain_mutant}


def draw(seed: int, backend: str) -> Mutant:
    """The mutant of ``seed`` for ``backend`` (the same program on every backend)."""
    from tests.terms import bad_input_models

    families = dict(FAMILIES, **bad_input_models.FAMILIES)
    rng = np.random.default_rng(seed)
    name = sorted(families)[seed % len(families)]
    return families[name](rng, backend)
