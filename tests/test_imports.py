"""The import graph: no cycle inside ``funsor_core``, no wrong-way arrow and no arrow up the
layers, counting imports inside functions (a deferred import is still an arrow). Also: no
oversized module, and the faces at funsor's module paths stay thin.

The layers of ``funsor_core``, bottom to top (a module imports its own layer or those below):
``engine.cache`` <- ``domains`` <- ``ops`` <- ``engine`` <- ``terms`` <- ``atoms`` <- ``algorithms``
<- ``distribution`` <- ``compat`` <- the faces (top-level modules such as
``funsor_core.gaussian``) <- ``funsor_core/__init__``.
``interpretations`` sit above the implementation packages and never import the faces.

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
            # Backends plug kernels into ops and glue into funsor_core.engine.backend, nothing else.
            bad = {d for d in deps if d.startswith("funsor_core") and not (
                d.startswith("funsor_core.ops") or d in ("funsor_core.engine.backend",
                                                         "funsor_core.engine.cache",
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


# The layers, bottom first; a module's layer is the longest prefix that names one.
# A layer may hold several packages: the atoms share theirs with the analyses, draws and
# conversions that the atoms' own rules and math call.
# The cache utility is a leaf below them all (every layer keeps its memos there).
LAYERS = (("funsor_core.engine.cache",), ("funsor_core.domains",), ("funsor_core.ops",),
          ("funsor_core.engine",),
          ("funsor_core.terms",),
          ("funsor_core.atoms", "funsor_core.analysis", "funsor_core.sampling",
           "funsor_core.interop"),
          ("funsor_core.algorithms",), ("funsor_core.distribution",), ("funsor_core.compat",))
FACE_RANK = len(LAYERS)  # top-level modules of funsor_core: faces and public helper modules


def _rank(module: str) -> int | None:
    if module == "funsor_core":
        return FACE_RANK + 1
    for k, layer in enumerate(LAYERS):
        if any(module == pkg or module.startswith(pkg + ".") for pkg in layer):
            return k
    if module.startswith("funsor_core."):
        return FACE_RANK
    return None


def test_cache_utility_is_a_leaf():
    assert not GRAPH["funsor_core.engine.cache"]


def test_layer_ranks():
    assert _rank("funsor_core.engine.cache") < _rank("funsor_core.domains")
    assert _rank("funsor_core.engine.interpreter") < _rank("funsor_core.terms.base")
    assert (_rank("funsor_core.atoms.gaussian.sqrt_info")
            < _rank("funsor_core.algorithms.contract.einsum"))
    assert _rank("funsor_core.gaussian") == FACE_RANK and _rank("interpretations.lazy") is None
    assert _rank("funsor_core.algorithms.contract.einsum") < _rank("funsor_core.distribution.base")
    assert _rank("funsor_core.torch.distributions") == FACE_RANK


def test_no_arrow_up_the_layers():
    up = []
    for name, deps in GRAPH.items():
        rank = _rank(name)
        if rank is None:
            continue
        up.extend(f"{name} -> {d}" for d in sorted(deps)
                  if (r := _rank(d)) is not None and r > rank)
    assert not up, "imports up the layers:\n" + "\n".join(up)


def test_interpretations_do_not_import_faces():
    faces = []
    for name, deps in GRAPH.items():
        if name.startswith("interpretations"):
            faces.extend(f"{name} -> {d}" for d in sorted(deps)
                         if _rank(d) is not None and _rank(d) >= FACE_RANK)
    assert not faces, "interpretations importing faces:\n" + "\n".join(faces)


# Public helper modules at the top level that are not faces (they hold code of their own).
NOT_FACES = {"funsor_core.domains", "funsor_core.testing"}


def test_faces_are_thin():
    # A face holds a docstring, imports and ``__all__``; code lives in the packages below.
    thick = []
    for name, path in MODULES.items():
        if _rank(name) != FACE_RANK or name in NOT_FACES:
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            plain = isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or (
                isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets]
                == ["__all__"])
            if not plain:
                thick.append(f"{name}:{node.lineno}")
    assert not thick, f"faces holding code: {thick}"
