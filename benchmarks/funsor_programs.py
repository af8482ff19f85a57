"""funsor's public API as users write it: the differential fuzzer's programs, timed on
funsor-core and on funsor 0.4.8 (issue #28).

The programs are those of ``tests/compat/funsor_diff`` (seeded random programs over funsor's
public API, twenty families: tensors, substitution, Stack/Cat/Lambda, sum_product, einsum,
Gaussian and Delta algebra, adjoint, interpretations, distributions, the chain algorithms,
integrate, slices, conversions, Monte Carlo). Each side runs in its own process of the
clients' python (``FUNSOR_PYTHON``): funsor 0.4.8 as installed there, funsor-core served as
``funsor`` by ``funsor_core.install_as_funsor()``. A program is timed when it runs without
error on both sides and the two results agree (``compare.differ``): run once (warm), then the
best of 5 batches of enough iterations for ``--target`` seconds. Sides alternate, ``--rounds``
rounds, minimum per program. One thread. Per family: the distribution of ours / funsor 0.4.8,
then every program slower than ``--slow``.

``--base DIR`` adds a third side, another funsor-core checkout (``git archive REV | tar -x -C
DIR``), timed in the same rounds: the before/after of a change, beside funsor 0.4.8.

Usage: ``python benchmarks/funsor_programs.py [--backend numpy] [--n 300] [--rounds 2]``
(from the repository root).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FUNSOR_PYTHON = os.environ.get("FUNSOR_PYTHON",
                               "/root/.cache/funsor-core-clients/venv/bin/python")
EXECUTE = os.path.join(ROOT, "tests", "compat", "funsor_diff", "execute.py")


# -- one side (run in the clients' python) -------------------------------------------------------
def _side(backend: str, programs: str, results: str, target: float) -> None:
    project = os.environ.get("FUNSOR_CORE")
    if project:  # before anything imports funsor
        sys.path.insert(0, project)
        import funsor_core

        funsor_core.install_as_funsor()
    import importlib.util

    sys.argv[1:2] = [backend]  # execute.py reads its backend from argv[1]
    spec = importlib.util.spec_from_file_location("funsor_diff_execute", EXECUTE)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    with open(programs) as f, open(results, "w") as out:
        for p in json.load(f):
            r = ex.run_one(p["src"])
            r["id"] = p["id"]
            if r.get("kind") not in ("error", "timeout"):
                r["t"] = _time(ex, compile(p["src"], "<program>", "exec"), target)
            out.write(json.dumps(r) + "\n")


def _time(ex, code, target: float) -> float:
    def once():
        ns = ex._namespace()
        exec(code, ns)

    start = time.perf_counter()
    once()
    n = max(1, min(200, int(target / max(time.perf_counter() - start, 1e-6))))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            once()
        best = min(best, (time.perf_counter() - start) / n)
    return best


# -- the driver --------------------------------------------------------------------------------
def _run(backend: str, path: str, out: str, project: str | None, target: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    env.pop("FUNSOR_CORE", None)
    if project:
        env["FUNSOR_CORE"] = project
    subprocess.run([FUNSOR_PYTHON, os.path.abspath(__file__), "--side", backend, path, out,
                    str(target)], env=env, cwd=os.path.dirname(path), check=False,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
        return {r["id"]: r for r in map(json.loads, f)}


def measure(backend: str, n: int, seed: int, rounds: int, target: float, workdir: str,
            base: str | None = None, families=None) -> list[dict]:
    """One row per agreeing program: its family, tags, source and each side's best time."""
    sys.path.insert(0, ROOT)
    from tests.compat.funsor_diff import compare
    from tests.compat.funsor_diff.__main__ import generate

    progs = generate(backend, n, seed, families)
    path = os.path.join(workdir, f"{backend}-programs.json")
    with open(path, "w") as f:
        json.dump([{"id": p["id"], "src": p["src"]} for p in progs], f)
    sides = {"funsor": None, "ours": ROOT, **({"base": base} if base else {})}
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    results = {}
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for side in order:
            res = _run(backend, path, os.path.join(workdir, f"{backend}-{side}-{r}.jsonl"),
                       sides[side], target)
            results[side] = res
            for k, v in res.items():
                if "t" in v:
                    times[side][k].append(v["t"])
    rows = []
    for p in progs:
        t, o = results["funsor"].get(p["id"]), results["ours"].get(p["id"])
        if t is None or o is None or compare.differ(t, o) is not None:
            continue
        if not all(times[s][p["id"]] for s in sides):
            continue
        rows.append(dict(id=p["id"], family=p["family"], tags=p["tags"], src=p["src"],
                         **{s: min(times[s][p["id"]]) for s in sides}))
    return rows


def report(rows: list[dict], backend: str, slow: float) -> None:
    fam = collections.defaultdict(list)
    for r in rows:
        fam[r["family"]].append(r)
    head = f"{'family':17s} {'n':>4s}" + "".join(f" {c:>6s}" for c in ("min", "q25", "median",
                                                                          "q75", "max"))
    print(f"== {backend}: {len(rows)} agreeing programs, ours / funsor 0.4.8")
    print(head + f" {'>' + str(slow):>5s}" + ("   median new/base" if rows and "base" in rows[0]
                                               else ""))
    for f, rs in sorted(fam.items()) + [("ALL", rows)]:
        x = sorted(r["ours"] / r["funsor"] for r in rs)
        q = [x[min(len(x) - 1, int(a * len(x)))] for a in (0.25, 0.75)]
        line = (f"{f:17s} {len(x):4d} {x[0]:6.2f} {q[0]:6.2f} {statistics.median(x):6.2f} "
                f"{q[1]:6.2f} {x[-1]:6.2f} {sum(v > slow for v in x):5d}")
        if "base" in rs[0]:
            line += f"   {statistics.median(r['ours'] / r['base'] for r in rs):6.2f}"
        print(line)
    for r in sorted(rows, key=lambda r: -r["ours"] / r["funsor"]):
        if r["ours"] / r["funsor"] <= slow:
            break
        was = f" (base {r['base'] / r['funsor']:.2f}x)" if "base" in r else ""
        print(f"  {r['ours'] / r['funsor']:5.2f}x{was} #{r['id']} {r['family']}: ours "
              f"{r['ours'] * 1e3:.3f} ms, funsor {r['funsor'] * 1e3:.3f} ms  "
              f"{' '.join(map(str, r['tags']))[:70]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", action="append")
    ap.add_argument("--n", type=int, default=300, help="programs per backend")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--target", type=float, default=0.01, help="seconds per timed batch")
    ap.add_argument("--slow", type=float, default=1.1)
    ap.add_argument("--family", action="append")
    ap.add_argument("--base", help="another funsor-core checkout, timed as a third side")
    ap.add_argument("--out", help="keep the programs, results and rows here")
    args = ap.parse_args(argv)
    workdir = args.out or tempfile.mkdtemp(prefix="funsor_programs_")
    os.makedirs(workdir, exist_ok=True)
    for backend in args.backend or ["numpy"]:
        rows = measure(backend, args.n, args.seed, args.rounds, args.target, workdir,
                       args.base and os.path.abspath(args.base), args.family)
        with open(os.path.join(workdir, f"{backend}-rows.json"), "w") as f:
            json.dump(rows, f)
        report(rows, backend, args.slow)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--side":
        _side(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        main()
