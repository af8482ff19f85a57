"""A bad-input mutation fuzzer over the public API: a clear error or the right number.

Each seed draws a valid random program of one family (``bad_input_programs``: Tensor ops,
substitution, ``sum_product``/``einsum`` on the contraction fuzzer's plated graphs, Markov
chains and their smoothers and filters, distributions, Gaussian/Delta, ``Integrate``, the
adjoint) and mutates one argument (``KINDS``). A mutant states its oracle:

- ``names``: the mistake must raise a ``ValueError``/``TypeError``/``NotImplementedError`` (or a
  subclass) from our own code (the innermost frame in ``funsor_core``, ``interpretations`` or
  ``backends``, never numpy/torch/jax internals), whose message names every one of ``names``
  (the variables, domains, parameters involved); never ``IndexError``/``KeyError``/
  ``AttributeError`` unless it is one of our documented classes;
- ``expected``: the mutant is a valid program, and its value (a float64 numpy brute force over
  ``out_names``) must come back as a number, never a lazy term;
- both: either is right (funsor-compatible programs that we may also refuse clearly).

Backends: numpy, torch, jax eagerly, and ``jax.jit`` (the arrays traced). Under ``jit`` a
mistake that is only visible in the values (a NaN scale, an index out of range) cannot raise:
those mutants (``value_dependent``) are checked only where documented (a distribution's bad
parameter gives NaN), and otherwise counted as skipped.

Run long from the worktree root::

    PYTHONPATH=. python tests/terms/bad_input_fuzz.py 3000 [first_seed] [backend ...]

It prints each failure with its seed and the counts by mutation kind and outcome.
"""

from __future__ import annotations

import collections
import os
import sys
import traceback
from dataclasses import dataclass, field

import numpy as np

import funsor_core as fc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OURS = tuple(os.path.join(ROOT, d) + os.sep for d in ("funsor_core", "interpretations", "backends"))
BACKENDS = ("numpy", "torch", "jax", "jax.jit")
# Known gaps, skipped where they apply (none at present).
GAPS: dict[str, tuple[str, ...]] = {"complex_data": ()}


@dataclass
class Mutant:
    family: str
    kind: str
    program: object  # program(arrays: list) -> funsor / number / tuple whose [0] is checked
    arrays: list = field(default_factory=list)  # numpy arrays, moved to the backend
    names: tuple | None = None  # the error must name all of these
    expected: object = None  # float64 numpy value over out_names, when the program is valid
    out_names: tuple = ()
    value_dependent: bool = False  # the mistake is in the values: no error is possible under jit
    jit_nan: bool = False  # ... and the documented answer under jit is NaN
    eager_only: bool = False  # Python-level calls (float(), .data) that jit cannot trace
    skip_backends: tuple = ()  # known gaps, named in the report (see ``GAPS``)
    backend: str = "numpy"
    desc: str = ""


def to_backend(a, backend: str):
    """``a`` (numpy) as an array of ``backend``; ints and bools keep their kind."""
    if not isinstance(a, np.ndarray) or a.dtype == object:
        return a
    if backend == "torch":
        import torch

        return torch.as_tensor(a)
    if backend.startswith("jax"):
        import jax.numpy as jnp

        return jnp.asarray(a)
    return a


def _host(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu()
    return np.asarray(x, dtype=np.result_type(np.asarray(x).dtype, np.float64))


def _from_ours(exc: BaseException) -> str | None:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    where = frames[-1].filename
    return None if where.startswith(OURS) else where


def judge_error(m: Mutant, exc: BaseException) -> str | None:
    """None where ``exc`` is a clear answer to mutant ``m``, else what is wrong with it."""
    text = f"{type(exc).__name__}: {exc}"
    if m.names is None:
        return f"raised for a valid program: {text[:300]}"
    ours = type(exc).__module__.startswith(("funsor_core", "interpretations"))
    if isinstance(exc, (IndexError, KeyError, AttributeError)) and not ours:
        return f"unclear type {text[:300]}"
    if not isinstance(exc, (ValueError, TypeError, NotImplementedError)):
        return f"unclear type {text[:300]}"
    where = _from_ours(exc)
    if where is not None:
        return f"raised inside {where}: {text[:300]}"
    missing = [n for n in m.names if str(n) not in str(exc)]
    if missing:
        return f"message does not name {missing}: {text[:400]}"
    return None


def judge_value(m: Mutant, result) -> str | None:
    """None where ``result`` is the right number for mutant ``m``."""
    if isinstance(result, tuple):
        result = result[0]
    if isinstance(result, fc.Funsor):
        if not isinstance(result, (fc.Tensor, fc.Number)):
            return (f"a lazy {type(result).__name__} where a number was demanded: "
                    f"{str(result)[:200]}")
        if m.jit_nan and m.backend == "jax.jit":  # documented: NaN where the values are bad
            result = result.data
        elif set(result.inputs) != set(m.out_names):
            return f"inputs {list(result.inputs)} but the oracle's are {list(m.out_names)}"
        else:
            result = result.align(tuple(m.out_names)).data if result.inputs else result.data
    actual = _host(result)
    if m.jit_nan and m.backend == "jax.jit":
        return None if np.isnan(actual).any() else f"no NaN under jit: {actual}"
    if m.expected is None:
        return f"returned {str(actual)[:200]} where an error naming {m.names} was due"
    expected = np.asarray(m.expected, dtype=np.float64)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, oracle {expected.shape}"
    single = m.backend.startswith("jax") and not _jax_x64()  # jax computes in float32
    # torch makes int parameters floats of its default dtype, float32 (see the README)
    single = single or (m.backend == "torch" and m.kind == "int_parameter")
    tol = 1e-4 if single or any(getattr(a, "dtype", None) == np.float32 for a in m.arrays) \
        else 1e-8
    if not np.allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True):
        return f"wrong number {str(actual)[:200]}, oracle {str(expected)[:200]}"
    return None


def _jax_x64() -> bool:
    import jax

    return bool(jax.config.jax_enable_x64)


def run_mutant(m: Mutant) -> tuple[str, str | None]:
    """``(outcome, failure)``: outcome is 'error', 'value' or 'skip'; failure None if right."""
    jit = m.backend == "jax.jit"
    if m.backend in m.skip_backends or (
            jit and (m.eager_only or (m.value_dependent and not m.jit_nan))):
        return "skip", None
    fc.set_backend("jax" if jit else m.backend)
    try:
        arrays = [to_backend(a, m.backend) for a in m.arrays]
        try:
            with np.errstate(all="ignore"):  # NaN and inf data are the point of some mutants
                if jit:
                    import jax

                    result = jax.jit(lambda *xs: m.program(list(xs)))(*arrays)
                else:
                    result = m.program(arrays)
        except RecursionError as e:  # noqa: PERF203
            return "error", f"RecursionError {e}"
        except Exception as e:  # noqa: BLE001
            failure = judge_error(m, e)
            if failure is not None and m.expected is None and m.jit_nan and jit:
                failure = None  # documented: no value check under jit
            return "error", failure
        try:
            return "value", judge_value(m, result)
        except Exception as e:  # noqa: BLE001
            return "value", f"the result cannot be read: {type(e).__name__}: {str(e)[:200]}"
    finally:
        fc.set_backend("numpy")


def check_seed(seed: int, backends=BACKENDS) -> tuple[list, list]:
    """Run one seed's mutant on every backend: ``(records, failures)``, records being
    ``(family, kind, backend, outcome)``."""
    from tests.terms.bad_input_programs import draw

    records, failures = [], []
    for backend in backends:
        m = draw(seed, backend)
        if m is None:
            continue
        m.backend = backend
        outcome, failure = run_mutant(m)
        records.append((m.family, m.kind, backend, outcome if failure is None else "FAIL"))
        if failure is not None:
            failures.append(f"seed {seed} {backend} {m.family}/{m.kind} {m.desc}: {failure}")
    return records, failures


def main(argv) -> int:
    count = int(argv[1]) if len(argv) > 1 else 1000
    first = int(argv[2]) if len(argv) > 2 else 0
    backends = tuple(argv[3:]) or BACKENDS
    counts = collections.Counter()
    failures = []
    for seed in range(first, first + count):
        records, fails = check_seed(seed, backends)
        counts.update((f, k, o) for f, k, _, o in records)
        for line in fails:
            print(line, flush=True)
        failures += fails
    by_kind = collections.defaultdict(collections.Counter)
    for (f, k, o), n in counts.items():
        by_kind[f"{f}/{k}"][o] += n
    for key in sorted(by_kind):
        print(f"{key:40s} " + " ".join(f"{o}={n}" for o, n in sorted(by_kind[key].items())))
    print(f"{sum(counts.values())} mutants, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
