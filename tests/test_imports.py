"""The import graph: no cycle inside ``funsor_core`` and no wrong-way arrow, counting imports
inside functions (a deferred import is still an arrow). Also: no oversized module.

The graph is read from the source with ``ast``, so it sees every import statement wherever
it is, not only the ones that ran.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("funsor_core", "interpretations", "backends")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


MODULES = _all_modules()


def _imports(name: str, path: Path) -> set[str]:
    """Modules of ours that ``name`` imports, anywhere in its body."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                # `from pkg import submodule` is an arrow to the submodule, not the package.
                out.add(sub if sub in MODULES else module)
    return {m for m in out if m in MODULES}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _find_cycle(graph: dict[str, set[str]], nodes: set[str]) -> list[str] | None:
    # Iterative DFS with colors; returns one cycle as a list of modules.
    color = dict.fromkeys(nodes, 0)
    parent: dict[str, str] = {}
    for start in sorted(nodes):
        if color[start]:
            continue
        stack = [(start, iter(sorted(graph[start] & nodes)))]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
            elif color[nxt] == 0:
                color[nxt] = 1
                parent[nxt] = node
                stack.append((nxt, iter(sorted(graph[nxt] & nodes))))
            elif color[nxt] == 1:
                cycle, cur = [nxt], node
                while cur != nxt:
                    cycle.append(cur)
                    cur = parent[cur]
                return cycle[::-1]
    return None


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert sorted(_find_cycle(graph, set(graph))) == ["a", "b", "c"]
    assert _find_cycle({"a": {"b"}, "b": set()}, {"a", "b"}) is None


def test_no_import_cycle_inside_funsor_core():
    # The package __init__ imports everything on purpose (it installs the defaults); it is
    # left out, and nothing inside may import it back.
    core = {m for m in MODULES if m.startswith("funsor_core.")}
    importers_of_init = sorted(m for m in core if "funsor_core" in GRAPH[m])
    assert not importers_of_init, f"modules importing the funsor_core package: {importers_of_init}"
    cycle = _find_cycle(GRAPH, core)
    assert cycle is None, "import cycle: " + " -> ".join(cycle + cycle[:1])


def test_no_wrong_way_arrows():
    wrong = []
    for name, deps in GRAPH.items():
        if name.startswith("funsor_core.") or name == "funsor_core.ops":
            bad = {d for d in deps if d.split(".")[0] in ("interpretations", "backends")}
        elif name.startswith("backends"):
            # Backends plug kernels into ops and glue into funsor_core.backend, nothing else.
            bad = {d for d in deps if d.startswith("funsor_core") and not (
                d.startswith("funsor_core.ops") or d in ("funsor_core.backend",
                                                         "funsor_core.domains"))}
            bad |= {d for d in deps if d.startswith("interpretations")}
        else:
            continue
        wrong.extend(f"{name} -> {d}" for d in sorted(bad))
    assert not wrong, "wrong-way imports:\n" + "\n".join(wrong)


@pytest.mark.parametrize("package", ["funsor_core", "interpretations", "backends"])
def test_no_module_over_600_lines(package):
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / package).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 600}
    assert not long, f"modules over 600 lines: {long}"
