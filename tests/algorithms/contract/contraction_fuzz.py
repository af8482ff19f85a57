"""A seeded fuzzer for contraction (#29's exactness acceptance): random plated graphs and trees
in every semiring, through every entry point, on every backend, against numpy enumeration.

The cases and their oracle (numpy enumeration of the unrolled graph, ``PlateError`` exactly
where Theorem 1's minor is found) are described in ``contraction_fuzz_models``.

Run it long from the worktree root (prints each failure with its seed)::

    PYTHONPATH=. python tests/algorithms/contract/contraction_fuzz.py 2000 [first_seed]
"""

from __future__ import annotations

import sys

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum
from funsor_core.sum_product import partial_sum_product, sum_product
from tests.algorithms.contract.contraction_fuzz_models import (  # noqa: F401 (the test's names)
    SEMIRINGS,
    Case,
    PlateError,
    _enumerate,
    _equation,
    check_close,
    enumerate_unrolled,
    has_minor,
    oracle,
    random_case,
    random_tree_case,
    variable_plates,
)


# ---------------------------------------------------------------------------------------------
# The entry points: each takes a case and its arrays on the active backend, returns the answer
# over ``case.kept`` as an array (or raises), or None where it does not apply.
def tensors_of(case: Case, arrays) -> list:
    return [fc.Tensor(a, {n: fc.Bint[case.sizes[n]] for n in tuple(fp) + names})
            for (names, fp), a in zip(case.factors, arrays)]


def _aligned(case, f):
    if not isinstance(f, fc.Tensor):
        raise AssertionError(f"expected a Tensor, got {type(f).__name__}: {f}")
    missing = set(case.kept) - set(f.inputs)
    extra = set(f.inputs) - set(case.kept)
    if extra:
        raise AssertionError(f"result has inputs {sorted(extra)} that should be eliminated")
    data = f.align(tuple(n for n in case.kept if n in f.inputs)).data
    if missing:  # a kept name no result factor has: constant along it
        shape = [case.sizes[n] if n in f.inputs else 1 for n in case.kept]
        data = ops.expand(ops.reshape(data, tuple(shape)),
                          tuple(case.sizes[n] for n in case.kept))
    return data


def _semiring(case):
    return SEMIRINGS[case.semiring][:2]


def run_sum_product(case, arrays):
    sum_op, prod_op = _semiring(case)
    return _aligned(case, sum_product(sum_op, prod_op, tensors_of(case, arrays), case.eliminate,
                                      frozenset(case.plates)))


def run_partial_sum_product(case, arrays):
    sum_op, prod_op = _semiring(case)
    parts = partial_sum_product(sum_op, prod_op, tensors_of(case, arrays), case.eliminate,
                                frozenset(case.plates))
    total = fc.Number(1.0 if SEMIRINGS[case.semiring][2] else 0.0)
    for f in parts:
        total = prod_op(total, f)
    if not isinstance(total, fc.Tensor):  # no factor left: the unit, as a Tensor
        total = fc.Tensor(ops.new_full(arrays[0], (), float(total.data)))
    return _aligned(case, total)


def run_einsum(case, arrays):
    return einsum(_equation(case), *arrays, plates=case.plates,
                  backend=SEMIRINGS[case.semiring][3], modulo_total=True)


def run_einsum_tensors(case, arrays):
    out = einsum(_equation(case), *tensors_of(case, arrays), plates=case.plates,
                 backend=SEMIRINGS[case.semiring][3], modulo_total=True)
    return _aligned(case, out)


def run_einsum_linear_form(case, arrays):
    # The log semiring's answer through the linear-space einsum, where exp stays in range.
    if case.semiring != "log" or case.dtype != "float64" or max(
            np.max(np.abs(a[np.isfinite(a)]), initial=0.0) for a in case.arrays) > 30:
        return None
    out = einsum(_equation(case), *[ops.exp(a) for a in arrays], plates=case.plates,
                 backend="numpy", modulo_total=True)
    with np.errstate(divide="ignore"):  # log(0) = -inf: an all -inf factor
        return ops.log(out)


def _lazy_root(case, arrays):
    from interpretations import lazy

    sum_op, prod_op = _semiring(case)
    ts = tensors_of(case, arrays)
    with lazy:
        return sum_product(sum_op, prod_op, ts, case.eliminate, frozenset(case.plates))


def run_apply_optimizer(case, arrays):
    from interpretations.optimize import apply_optimizer

    return _aligned(case, apply_optimizer(_lazy_root(case, arrays)))


def run_reinterpret_optimize(case, arrays):
    from interpretations import exact, optimize

    expr = _lazy_root(case, arrays)
    with optimize:
        planned = fc.reinterpret(expr)
    with exact:
        return _aligned(case, fc.reinterpret(planned))


def run_reduce(case, arrays):
    # Funsor.reduce of the product: only where no plate is eliminated (a plate is then a batch
    # input like any kept name).
    if set(case.plates) & case.eliminate:
        return None
    from interpretations import exact, lazy
    from interpretations.optimize import apply_optimizer

    sum_op, prod_op = _semiring(case)
    ts = tensors_of(case, arrays)
    tree = hasattr(case, "tame")
    # A tree's eager product would hold every joint assignment: build it lazily and plan the
    # reduction of the whole product (apply_optimizer) instead.
    with lazy if tree else exact:
        total = ts[0]
        for t in ts[1:]:
            total = prod_op(total, t)
        names = case.eliminate & frozenset(total.inputs)
        result = total.reduce(sum_op, names) if names else total
    return _aligned(case, apply_optimizer(result) if tree else result)


def adjoint_marginals(case, arrays):
    """adj[f] * f for each factor f of an unplated graph with nothing kept: the semiring sum
    of the joint over every variable but f's (marginals under logaddexp, max-marginals under
    max), as arrays over f's variables; factors repeated in the list are left out (None)."""
    from funsor_core.adjoint import AdjointTape

    sum_op, prod_op = _semiring(case)
    ts = tensors_of(case, arrays)
    with AdjointTape() as tape:
        z = sum_product(sum_op, prod_op, ts, case.eliminate, frozenset(case.plates))
    adj = tape.adjoint(sum_op, prod_op, z, tuple(ts))
    out = []
    for (names, _), t in zip(case.factors, ts):
        if sum(u is t for u in ts) > 1:
            out.append(None)
            continue
        m = prod_op(adj[t], t)
        out.append(m.align(names).data if names else m.data)
    return out


def adjoint_oracle(case):
    _, _, linear, _, reduce = SEMIRINGS[case.semiring]
    sizes = case.sizes
    letters = sorted({v for names, _ in case.factors for v in names})
    joint = np.full(tuple(sizes[v] for v in letters), 1.0 if linear else 0.0)
    for (names, _), a in zip(case.factors, case.arrays):
        a = a.astype(np.float64)
        order = sorted(range(len(names)), key=lambda k: letters.index(names[k]))
        a = np.transpose(a, order) if names else a
        shape = [sizes[v] if v in names else 1 for v in letters]
        joint = joint * a.reshape(shape) if linear else joint + a.reshape(shape)
    out = []
    for names, _ in case.factors:
        axes = tuple(k for k, v in enumerate(letters) if v not in names)
        m = reduce(joint, axis=axes) if axes else joint
        kept = [v for v in letters if v in names]
        out.append(np.transpose(m, [kept.index(v) for v in names]) if names else m)
    return out


def check_adjoint(case, backend) -> list[str]:
    """The adjoint marginals where they apply: no plates, nothing kept, logaddexp or max."""
    if case.plates or case.kept or case.semiring not in ("log", "max") or hasattr(case, "tame"):
        return []
    where = f"seed {case.seed} {case.semiring} {case.dtype} adjoint on {backend}"
    fc.set_backend(backend)
    try:
        actual = adjoint_marginals(case, [_as_backend(a, backend) for a in case.arrays])
    except Exception as e:  # noqa: BLE001
        return [f"{where}: {type(e).__name__}: {str(e)[:300]}"]
    finally:
        fc.set_backend("numpy")
    failures = []
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = adjoint_oracle(case)
    for k, (a, e) in enumerate(zip(actual, expected)):
        if a is None:
            continue
        a = np.asarray(a.detach() if hasattr(a, "detach") else a, dtype=np.float64)
        try:
            check_close(case, a, np.asarray(e), f"{where} (factor {k})")
        except AssertionError as err:
            failures.append(str(err))
    return failures


# A pair that is no semiring: where plates are eliminated sum_product must raise the
# documented ValueError, or else give the enumerated answer.
NOT_DISTRIBUTIVE = (ops.add, ops.add)


def check_not_distributive(case) -> list[str]:
    if case.kept or case.dtype != "float64" or not case.factors or hasattr(case, "tame"):
        return []
    where = f"seed {case.seed} (add, add) sum_product"
    arrays = [np.clip(a.astype(np.float64), -5.0, 5.0) for a in case.arrays]
    ts = tensors_of(case, arrays)
    try:
        actual = sum_product(*NOT_DISTRIBUTIVE, ts, case.eliminate, frozenset(case.plates))
    except PlateError:
        return [] if has_minor(case.factors) else [f"{where}: PlateError without the minor"]
    except ValueError as e:
        if "does not distribute" not in str(e):
            return [f"{where}: unclear ValueError: {e}"]
        return [] if _must_distribute(case) else [f"{where}: raised where no distribution "
                                                   f"is needed: {e}"]
    if has_minor(case.factors):
        return []
    expected = enumerate_unrolled(case.factors, arrays, case.sizes, np.add, np.sum, 0.0)
    try:
        check_close(case, np.asarray(actual.data), np.asarray(expected), where)
    except AssertionError as e:
        return [str(e)]
    return []


def _must_distribute(case) -> bool:
    # A summed variable inside a plate of more than one member, or two groups of factors
    # that share no summed variable (one of them with one): the documented conditions.
    vplates = variable_plates(case.factors)
    if any(case.sizes[p] > 1 for ps in vplates.values() for p in ps):
        return True
    # Or one summed before a factor outside its plates multiplies the sum.
    if any(set(ps) - set(fp) for ps in vplates.values() for _, fp in case.factors):
        return True
    groups = []  # connected components of factors joined by shared variables
    for names, _ in case.factors:
        joined = [g for g in groups if g[0] & set(names)]
        merged = (set(names), [names])
        for g in joined:
            groups.remove(g)
            merged = (merged[0] | g[0], merged[1] + g[1])
        groups.append(merged)
    return len(groups) > 1 and any(g[0] for g in groups)


ENTRY_POINTS = {
    "sum_product": run_sum_product,
    "partial_sum_product": run_partial_sum_product,
    "einsum": run_einsum,
    "einsum_tensors": run_einsum_tensors,
    "einsum_linear_form": run_einsum_linear_form,
    "apply_optimizer": run_apply_optimizer,
    "reinterpret_optimize": run_reinterpret_optimize,
    "reduce": run_reduce,
}
BACKENDS = ("numpy", "torch", "jax", "jax.jit")


def _as_backend(a, name):
    if name == "torch":
        import torch

        return torch.as_tensor(a)
    if name == "jax":
        import jax.numpy as jnp

        return jnp.asarray(a)
    return a


def benign_arrays(case: Case) -> list:
    """Values of the case's shapes and dtype in a narrow range, no -inf (same structure)."""
    rng = np.random.default_rng(case.seed + 1)
    linear = SEMIRINGS[case.semiring][2]
    return [np.asarray(np.exp(x) if linear else x).astype(case.dtype)
            for x in (rng.uniform(-1, 1, size=a.shape) for a in case.arrays)]


def run_entry(case, entry, backend):
    """The entry point's answer as float64 numpy, None where it does not apply; raises."""
    fn = ENTRY_POINTS[entry]
    name = "jax" if backend == "jax.jit" else backend
    fc.set_backend(name)
    try:
        arrays = [_as_backend(a, name) for a in case.arrays]
        if case.seed % 2:
            # Odd seeds first run the same structure on ordinary values, so that the case's
            # own values go through whatever the first call cached or recorded (plans, array
            # programs, the linear-space choice) and must still come out exact.
            fn(case, [_as_backend(a, name) for a in benign_arrays(case)])
        if backend == "jax.jit":
            import jax

            if fn(case, arrays) is None:
                return None
            out = jax.jit(lambda *xs: fn(case, list(xs)))(*arrays)
        else:
            out = fn(case, arrays)
        if out is None:
            return None
        out = out.detach() if hasattr(out, "detach") else out
        out = np.asarray(out)
        if out.dtype != np.dtype(case.dtype):
            raise AssertionError(f"dtype {out.dtype}, expected {case.dtype}")
        return out.astype(np.float64)
    finally:
        fc.set_backend("numpy")


def check_case(case: Case, entries=None, backends=BACKENDS) -> list[str]:
    """Every entry point on every backend against the oracle: a list of failure lines."""
    expected = oracle(case)
    failures = []
    for backend in backends:
        for entry in entries or ENTRY_POINTS:
            where = f"seed {case.seed} {case.semiring} {case.dtype} {entry} on {backend}"
            try:
                actual = run_entry(case, entry, backend)
            except PlateError as e:
                if expected is not PlateError:
                    failures.append(f"{where}: PlateError on a graph without the minor: {e}")
                continue
            except Exception as e:  # noqa: BLE001 (a fuzzer reports every failure)
                failures.append(f"{where}: {type(e).__name__}: {str(e)[:300]}")
                continue
            if expected is PlateError:
                if actual is not None:
                    failures.append(f"{where}: no PlateError on a graph with the minor")
                continue
            if actual is None:
                continue
            try:
                check_close(case, actual, expected, where)
            except AssertionError as e:
                failures.append(str(e))
        if backend != "jax.jit" and entries is None:
            failures += check_adjoint(case, backend)
    if entries is None:
        failures += check_not_distributive(case)
    return failures


def describe(case: Case) -> str:
    return (f"seed={case.seed} semiring={case.semiring} dtype={case.dtype} "
            f"eq={_equation(case)} plates={case.plates!r} sizes={case.sizes}")


def main(argv) -> int:
    make = random_tree_case if "--trees" in argv else random_case
    argv = [a for a in argv if a != "--trees"]
    import jax

    jax.config.update("jax_enable_x64", True)  # as conftest.py does for the suite
    count = int(argv[1]) if len(argv) > 1 else 200
    first = int(argv[2]) if len(argv) > 2 else 0
    backends = tuple(argv[3].split(",")) if len(argv) > 3 else BACKENDS
    bad = 0
    for seed in range(first, first + count):
        case = make(seed)
        failures = check_case(case, backends=backends)
        if failures:
            bad += 1
            print(describe(case))
            for line in failures:
                print("   ", line)
            sys.stdout.flush()
    print(f"{bad} of {count} cases failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
