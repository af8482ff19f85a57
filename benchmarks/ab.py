"""Interleaved A/B of any benchmark script between two checkouts of funsor-core.

    python benchmarks/ab.py A_CHECKOUT B_CHECKOUT benchmarks/overhead.py [--runs 3]
        [--rows REGEX] [--quick] [--python PATH]

Runs the script of checkout A, then that of B, then A again ... (``--runs`` times each, a fresh
process per run, cwd = that checkout, one thread), so that load on a shared machine hits both
alike. It parses the timing rows the script prints and reports, per row and timing column, the
best (min) time of A, of B, and B / A; a row is flagged ``SLOWER`` when a funsor-core column is
more than 5% slower (or any timing column, where the table names none as funsor-core's).

Rows are read generically from the two table styles of ``benchmarks/*.py``:
- fixed-width tables (``overhead.py``, ``gaussian.py``, ...): a header line of column names,
  then rows whose numbers end under their column's name (the formats pad both alike);
- markdown tables (``markov.py``): ``| a | b |`` rows under a ``| name | ... |`` header.
A row's key is the section title above the table plus its non-number cells and its small
integer "parameter" cells (K, T, B, n, dim ...); columns named ``ratio`` or ``x / y`` are left
out, since they are quotients of the times shown.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                 "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?(ms|us|s|x)?$")
PARAM_HEADER = re.compile(r"^([A-Za-z]{1,2}|n|dim|size|steps|batch|state|obs|particles)$",
                          re.IGNORECASE)
OURS_HEADER = re.compile(r"ours|funsor-core|core", re.IGNORECASE)
SKIP_HEADER = re.compile(r"ratio|/|speed-?up|rounds|^$", re.IGNORECASE)


def _number(token: str) -> float | None:
    token = token.replace(",", "")
    if not NUMBER.match(token):
        return None
    return float(re.sub(r"(ms|us|s|x)$", "", token))


def _markdown_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _plain_cells(line: str, header: str) -> list[tuple[str, str]]:
    """(column name, text) of a fixed-width row: a number is named by the header text above
    the stretch from the previous token's end to its own end; words form the label."""
    cells, label, prev_end = [], [], 0
    for m in re.finditer(r"\S+", line):
        if _number(m.group()) is None:
            label.append(m.group())
        else:
            name = header[prev_end:m.end()].strip()
            cells.append((name or f"col{len(cells)}", m.group()))
        prev_end = m.end()
    return [("label", " ".join(t for t in label if t != "-"))] + cells


def _key_and_timings(section: str, named: list[tuple[str, str]]) -> tuple[str, list]:
    key, timings = [section[:60]], []
    for name, text in named:
        value = _number(text)
        if value is None or name == "label":
            key.append(text if text != "-" else "")
        elif PARAM_HEADER.match(name) and value.is_integer():
            key.append(f"{name}={text}")
        elif not SKIP_HEADER.search(name):
            timings.append((name, value))
    return " | ".join(k for k in key if k), timings


def parse(output: str) -> dict[tuple[str, str], float]:
    """{(row key, column name): value} of every timing cell in a script's output.

    Lines of words before a table: the last is its header, the one before it (if any) its
    section title."""
    values: dict[tuple[str, str], float] = {}
    section, header, words, md_header = "", "", [], None
    for line in output.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("|"):
            cells = _markdown_cells(stripped)
            if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                continue
            if not any(_number(c) is not None for c in cells):
                md_header = cells
                section = words[-1] if words else section
                words = []
                continue
            named = list(zip(md_header or [], cells))
        elif not any(_number(t) is not None for t in stripped.split()):
            words.append(line)
            continue
        else:
            if words:
                header = words[-1]
                section = words[-2].strip() if len(words) > 1 else section
                words = []
            named = _plain_cells(line, header)
        key, timings = _key_and_timings(section, named)
        for name, value in timings:
            values[(key, name)] = value
    return values


def run_once(checkout: str, script: str, python: str, extra: list[str]) -> str:
    env = dict(os.environ, **SINGLE_THREAD)
    env["PYTHONPATH"] = checkout  # that checkout's funsor_core, whatever the venv installed
    proc = subprocess.run([python, script, *extra], cwd=checkout, env=env, text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"{script} failed in {checkout}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def supports_quick(checkout: str, script: str) -> bool:
    with open(os.path.join(checkout, script)) as f:
        return "--quick" in f.read()


def compare(runs_a: list[dict], runs_b: list[dict], rows: str | None) -> list[tuple]:
    """(key, column, min A, min B, B / A, flagged) for the cells both sides printed."""
    best = [defaultdict(lambda: float("inf")), defaultdict(lambda: float("inf"))]
    for side, runs in enumerate((runs_a, runs_b)):
        for run in runs:
            for cell, value in run.items():
                best[side][cell] = min(best[side][cell], value)
    cells = [c for c in best[0] if c in best[1] and (not rows or re.search(rows, c[0]))]
    ours_named = {c[0] for c in cells if OURS_HEADER.search(c[1])}
    table = []
    for key, column in cells:
        a, b = best[0][(key, column)], best[1][(key, column)]
        ratio = b / a if a > 0 else float("nan")
        counts = key not in ours_named or OURS_HEADER.search(column)
        table.append((key, column, a, b, ratio, bool(counts) and ratio > 1.05))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="checkout A (the baseline)")
    ap.add_argument("b", help="checkout B (the candidate)")
    ap.add_argument("script", help="benchmark script, relative to each checkout")
    ap.add_argument("--runs", type=int, default=3, help="runs of each side, interleaved")
    ap.add_argument("--rows", help="only rows whose key matches this regular expression")
    ap.add_argument("--quick", action="store_true", help="pass --quick where the script has it")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--save", help="a folder to keep each run's raw output in (A1.txt, B1.txt...)")
    args = ap.parse_args(argv)
    runs: tuple[list, list] = ([], [])
    for k in range(args.runs):
        for side, checkout in enumerate((args.a, args.b)):
            extra = ["--quick"] if args.quick and supports_quick(checkout, args.script) else []
            out = run_once(os.path.abspath(checkout), args.script, args.python, extra)
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                with open(os.path.join(args.save, f"{'AB'[side]}{k + 1}.txt"), "w") as f:
                    f.write(out)
            runs[side].append(parse(out))
            print(f"run {k + 1}/{args.runs} {'AB'[side]}: {len(runs[side][-1])} cells",
                  file=sys.stderr, flush=True)
    table = compare(*runs, args.rows)
    width = max([len(k) for k, *_ in table] + [3])
    print(f"A = {args.a}  B = {args.b}  script = {args.script}  best of {args.runs} each")
    print(f"{'row':{width}}  {'column':14} {'min A':>10} {'min B':>10} {'B/A':>6}")
    for key, column, a, b, ratio, slower in table:
        flag = "  SLOWER" if slower else ""
        print(f"{key:{width}}  {column[:14]:14} {a:10.4g} {b:10.4g} {ratio:6.3f}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
