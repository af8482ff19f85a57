"""funsor's clients on funsor 0.4.8 and on funsor-core, side by side in one run (issue #28).

NumPyro's discrete HMM through ``scan`` (``TraceEnum_ELBO``: trace + compile of the first
jitted SVI step, jitted steps, eager steps, ``infer_discrete``) and Pyro's HMM (loss and
gradient by ``TraceEnum_ELBO`` through ``markov`` and by ``TraceMarkovEnum_ELBO`` through
``vectorized_markov``). Each workload (``clients_workloads.py``) runs twice in the clients'
virtual environment, one thread, in the same kind of process: once with the real funsor 0.4.8,
once with funsor-core served as ``funsor`` the way a user serves it, by funsor-core's own
switch (the ``sitecustomize`` of ``python -m funsor_core.install --sitecustomize DIR`` and
``FUNSOR_CORE_AS_FUNSOR=1``; both sides run with ``DIR`` on ``PYTHONPATH``). ``--serve shim``
serves it by the clients' test shim instead (``FUNSOR_SHIM=1``, ``PROJECT=<this checkout>``),
as the client test runs do: the shim looks each ``funsor.X.name`` up again at every use (a
failed import of each candidate module before the one that holds it): 93 lookups, ~0.25 ms
of CPU per Pyro HMM step (T = 1,000, K = 4) that no user of ``install_as_funsor`` pays. A row
that raises on one side is reported as ``fails: <reason>`` and the run goes on.

    python benchmarks/clients.py                 # everything (about 10 minutes)
    python benchmarks/clients.py --quick         # the smaller configurations
    python benchmarks/clients.py --only "pyro T"  # the workloads whose label contains this

The clients' environment is built by ``../shared/tools/clients/run`` (its README); without it
this script says so and exits 0. ``FUNSOR_CLIENTS_PYTHON`` and ``FUNSOR_CLIENTS_DIR`` point
elsewhere.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS_PY = Path(__file__).resolve().parent / "clients_workloads.py"
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                 "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "JAX_PLATFORMS": "cpu"}

# (label, arguments of clients_workloads.py, part of --quick)
WORKLOADS = [
    ("numpyro scan HMM T=200 K=8", ["numpyro", "--T", "200", "--K", "8"], True),
    ("numpyro scan HMM T=1000 K=16", ["numpyro", "--T", "1000", "--K", "16"], False),
    ("numpyro 12 new enumerated models, eager", ["numpyro-models"], True),
    ("numpyro 12 new enumerated models, eager, no gc in the timed windows",
     ["numpyro-models", "--gc-off"], True),
] + [
    (f"pyro {elbo} HMM T={T} K={K}",
     ["pyro", "--elbo", elbo, "--T", str(T), "--K", str(K)]
     # one call at T=1,000: funsor 0.4.8 takes tens of seconds per TraceEnum_ELBO loss there
     + (["--repeat", "1", "--warmup", "0"] if T == 1000 else []),
     T == 100)
    for elbo in ("TraceEnum_ELBO", "TraceMarkovEnum_ELBO") for T in (100, 1000) for K in (4, 16)
]


def clients_paths(args) -> tuple[Path, Path] | None:
    """The clients' python and shim folder, or None (with a message) when they are missing."""
    python = Path(args.python or os.environ.get("FUNSOR_CLIENTS_PYTHON")
                  or Path.home() / ".cache/funsor-core-clients/venv/bin/python")
    found = [Path(args.clients_dir or os.environ.get("FUNSOR_CLIENTS_DIR", "/nonexistent"))]
    found += [p / "shared/tools/clients" for p in ROOT.parents]
    shim = next((d / "shim" for d in found if (d / "shim" / "sitecustomize.py").exists()), None)
    if not python.exists() or shim is None:
        print(f"clients' environment missing (python {python}, shim {shim}): build it with "
              "../shared/tools/clients/run (see its README); nothing to compare")
        return None
    return python, shim


def site_dir(python: Path) -> Path:
    """A fresh folder holding funsor-core's own ``sitecustomize`` (``funsor_core.install``),
    written by the clients' python."""
    site = Path(tempfile.mkdtemp(prefix="funsor_core_clients_site_"))
    atexit.register(shutil.rmtree, site, ignore_errors=True)
    subprocess.run([str(python), "-m", "funsor_core.install", "--sitecustomize", str(site)],
                   cwd=ROOT, check=True, capture_output=True)
    return site


def run_side(python: Path, path: Path, argv: list[str], core: bool, args) -> dict:
    """One workload on one side: its JSON line, or ``{"error": reason}``. ``path``: the
    folder put on ``PYTHONPATH`` on both sides (the clients' shim, or funsor-core's site)."""
    switches = ("FUNSOR_SHIM", "PROJECT", "FUNSOR_CORE_AS_FUNSOR")
    env = {k: v for k, v in os.environ.items() if k not in switches}
    env.update(SINGLE_THREAD, PYTHONPATH=str(path), CLIENTS_CLOCK=args.clock)
    timeout = args.timeout
    if args.repeat:
        argv = [*argv, "--repeat", str(args.repeat)]
    if core and args.serve == "shim":
        env.update(FUNSOR_SHIM="1", PROJECT=str(ROOT))
    elif core:
        env.update(FUNSOR_CORE_AS_FUNSOR="1")
    try:
        proc = subprocess.run([str(python), str(WORKLOADS_PY), *argv], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:150]}"}
    return json.loads(lines[-1])


def cell(value) -> str:
    """Seconds with three significant digits, or the failure as given."""
    if isinstance(value, (int, float)):
        return f"{value:.3g} s" if value >= 0.01 else f"{value * 1e3:.3g} ms"
    return str(value) if value is not None else "-"


def table_rows(label: str, peer: dict, ours: dict) -> list[str]:
    """Markdown rows of one workload: each timed part, both sides and peer / ours."""
    names = list(dict.fromkeys([*peer.get("rows", {}), *ours.get("rows", {})]))
    if not names:
        names = ["(whole workload)"]
    out = []
    for name in names:
        p = peer.get("rows", {}).get(name, "fails: " + peer["error"] if "error" in peer else None)
        o = ours.get("rows", {}).get(name, "fails: " + ours["error"] if "error" in ours else None)
        both = all(isinstance(v, (int, float)) for v in (p, o))
        ratio = f"{p / o:.2f}x" if both and o > 0 else "-"
        out.append(f"| {label} | {name} | {cell(p)} | {cell(o)} | {ratio} |")
    return out


def check_lines(label: str, peer: dict, ours: dict) -> list[str]:
    """The workload's checks (losses, Viterbi checksums) on both sides, and whether they agree."""
    out = []
    for key, p in peer.get("checks", {}).items():
        o = ours.get("checks", {}).get(key)
        if o is None:
            out.append(f"  {label}, {key}: funsor 0.4.8 {p:.6g}, funsor-core none")
            continue
        same = abs(p - o) <= 1e-5 * max(1.0, abs(p))  # float32 on NumPyro's side
        out.append(f"  {label}, {key}: funsor 0.4.8 {p:.6g}, funsor-core {o:.6g} "
                   f"({'agree' if same else 'DIFFER'})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the smaller configurations")
    ap.add_argument("--only", default="",
                    help="workloads whose label contains this ('pyro T': Pyro's only)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per workload and side")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="process CPU time (default: robust to other processes' load) or wall")
    ap.add_argument("--repeat", type=int, help="best of this many (default: per workload)")
    ap.add_argument("--python", help="the clients' python (FUNSOR_CLIENTS_PYTHON)")
    ap.add_argument("--clients-dir", help="shared/tools/clients (FUNSOR_CLIENTS_DIR)")
    ap.add_argument("--serve", choices=["install", "shim"], default="install",
                    help="how funsor-core is served as funsor: funsor_core.install (default, "
                         "a user's way) or the clients' test shim")
    args = ap.parse_args()
    paths = clients_paths(args)
    if paths is None:
        return
    if args.serve == "install":
        paths = (paths[0], site_dir(paths[0]))
    chosen = [w for w in WORKLOADS if args.only in w[0] and (w[2] or not args.quick)]
    print(f"{args.clock} seconds, best of repeats, one thread, funsor-core served by "
          f"{args.serve}", file=sys.stderr)
    rows = ["| workload | timed | funsor 0.4.8 | funsor-core | 0.4.8 / core |",
            "| --- | --- | ---: | ---: | ---: |"]
    checks = []
    for label, argv, _ in chosen:
        print(f"running {label} ...", file=sys.stderr, flush=True)
        peer, ours = (run_side(*paths, argv, core, args) for core in (False, True))
        rows += table_rows(label, peer, ours)
        checks += check_lines(label, peer, ours)
        print("\n".join(rows[-len(table_rows(label, peer, ours)):]), file=sys.stderr, flush=True)
    print("\n".join(rows))
    if checks:
        print("\nchecks (the same numbers both ways):\n" + "\n".join(checks))


if __name__ == "__main__":
    main()
