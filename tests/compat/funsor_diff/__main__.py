"""Differential fuzzing of funsor-core against funsor 0.4.8 on random funsor programs.

Generates seeded random programs over funsor's public API (``programs.py``,
``programs_models.py``), runs them in two subprocesses of the clients venv (funsor 0.4.8, and
funsor-core served as ``funsor`` by ``shared/tools/clients/shim``), and compares each result's
kind (Tensor, Number, Gaussian, lazy), inputs, output, data dtype, values (to a tolerance) and
the error's class where either side raises. Not part of ``make test`` (it needs the clients
venv built by ``../shared/tools/clients/run``). The seeded slice, from the worktree root::

    ~/.cache/funsor-core-clients/venv/bin/python -m tests.compat.funsor_diff \
        --backend numpy --n 300 --seed 0

Options: ``--backend numpy|torch|jax`` (several may be given), ``--n`` programs per backend,
``--seed``, ``--family NAME`` (repeatable), ``--show K`` example programs per difference
class, ``--out DIR`` to keep the programs and both sides' results. Exit status 0 when every
difference is in ``KNOWN`` (deliberate, or funsor's own wrong number), 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile

from tests.compat.funsor_diff import compare, known, programs, programs_chains, programs_models

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SHIM = os.path.abspath(os.path.join(ROOT, "..", "..", "shared", "tools", "clients", "shim"))
if not os.path.isdir(SHIM):
    SHIM = "/work/shared/tools/clients/shim"
CLIENT_PY = os.path.expanduser("~/.cache/funsor-core-clients/venv/bin/python")

FAMILIES = {
    "tensor": (programs.tensor_program, 4),
    "subs": (programs.subs_program, 2),
    "terms": (programs.terms_program, 2),
    "sum_product": (programs_models.sum_product_program, 2),
    "einsum": (programs_models.einsum_program, 2),
    "gaussian": (programs_models.gaussian_program, 2),
    "delta": (programs_models.delta_program, 1),
    "adjoint": (programs_models.adjoint_program, 1),
    "interpretation": (programs_models.interpretation_program, 1),
    "distribution": (programs_models.distribution_program, 2),
    "sequential": (programs_chains.sequential_program, 2),
    "sarkka": (programs_chains.sarkka_program, 1),
    "modified": (programs_chains.modified_program, 1),
    "forward_backward": (programs_chains.forward_backward_program, 1),
    "integrate": (programs_chains.integrate_program, 1),
    "naive_einsum": (programs_chains.naive_einsum_program, 1),
    "slices": (programs_chains.slices_program, 1),
    "symbolic_dist": (programs_chains.symbolic_dist_program, 1),
    "convert": (programs_chains.convert_program, 1),
    "montecarlo": (programs_chains.montecarlo_program, 1),
}
# funsor 0.4.8 has distributions for torch and jax only, and funsor.pyro for torch only
ONLY = {"distribution": ("torch", "jax"), "symbolic_dist": ("torch", "jax"),
        "convert": ("torch",)}


def generate(backend: str, n: int, seed: int, families=None) -> list[dict]:
    """``n`` programs for ``backend``; program ``k`` depends only on (seed, backend, k)."""
    names = [f for f in sorted(families or FAMILIES) if backend in ONLY.get(f, (backend,))]
    weights = [FAMILIES[f][1] for f in names]
    out = []
    for k in range(n):
        rng = random.Random(f"{seed}/{backend}/{k}")
        fam = rng.choices(names, weights)[0]
        family, tags, src = FAMILIES[fam][0](rng, backend)
        out.append({"id": k, "family": family, "tags": tags, "src": src, "backend": backend})
    return out


def run_side(backend: str, progs: list[dict], shim: bool, workdir: str) -> list[dict]:
    path = os.path.join(workdir, f"{backend}-programs.json")
    with open(path, "w") as f:
        json.dump([{"id": p["id"], "src": p["src"]} for p in progs], f)
    res = os.path.join(workdir, f"{backend}-{'ours' if shim else 'funsor'}.jsonl")
    env = dict(os.environ, OMP_NUM_THREADS="1", XLA_FLAGS="--xla_cpu_multi_thread_eigen=false",
               PYTHONPATH=SHIM)
    env.pop("FUNSOR_SHIM", None)
    if shim:
        env.update(FUNSOR_SHIM="1", PROJECT=ROOT)
    cmd = ["nice", "-n", "10", CLIENT_PY, os.path.join(HERE, "execute.py"), backend, path, res]
    return subprocess.Popen(cmd, env=env, cwd=workdir), res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", action="append")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family", action="append")
    ap.add_argument("--show", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    workdir = args.out or tempfile.mkdtemp(prefix="funsor_diff_")
    os.makedirs(workdir, exist_ok=True)
    unknown_total = 0
    for backend in args.backend or ["numpy"]:
        progs = generate(backend, args.n, args.seed, args.family)
        a, ra = run_side(backend, progs, False, workdir)
        b, rb = run_side(backend, progs, True, workdir)
        a.wait()
        b.wait()
        theirs = {r["id"]: r for r in map(json.loads, open(ra))}
        ours = {r["id"]: r for r in map(json.loads, open(rb))}
        classes = collections.defaultdict(list)
        same = 0
        for p in progs:
            t, o = theirs.get(p["id"]), ours.get(p["id"])
            if t is None or o is None:
                classes[("UNCLASSIFIED", "crashed", p["family"])].append(p)
                continue
            diff = compare.differ(t, o)
            if diff is None:
                same += 1
                continue
            p["theirs"], p["ours"] = t, o
            label = known.classify(diff, p["family"], p) or "UNCLASSIFIED"
            classes[(label, diff, p["family"])].append(p)
        by_label = collections.Counter()
        for (label, _, _), ps in classes.items():
            by_label[label.split(")")[0] + ")" if label.startswith("(") else label] += len(ps)
        print(f"== {backend}: {len(progs)} programs, {same} agree, {len(progs) - same} differ: "
              + ", ".join(f"{k} {v}" for k, v in sorted(by_label.items())))
        fams = collections.defaultdict(collections.Counter)
        for p in progs:
            fams[p["family"]]["programs"] += 1
        for (label, _, family), ps in classes.items():
            fams[family][label.split(")")[0] + ")" if label.startswith("(") else label] += len(ps)
        for family, c in sorted(fams.items()):
            differ = sum(v for k, v in c.items() if k != "programs")
            print(f"   {family}: {c['programs']} programs, {c['programs'] - differ} agree"
                  + "".join(f", {k} {v}" for k, v in sorted(c.items()) if k != "programs"))
        for key, ps in sorted(classes.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
            label, diff, family = key
            unknown_total += (label == "UNCLASSIFIED") * len(ps)
            print(f"-- {len(ps):4d}  {family}: {diff}  [{label}]")
            for p in ps[:args.show if label.startswith(("UNCL", "(b)")) else 0]:
                print("   tags:", p["tags"])
                print("   " + p["src"].rstrip().replace("\n", "\n   "))
                print("   funsor:", compare.brief(p["theirs"]))
                print("   ours:  ", compare.brief(p["ours"]))
    print(f"results in {workdir}")
    return 1 if unknown_total else 0


if __name__ == "__main__":
    sys.exit(main())
