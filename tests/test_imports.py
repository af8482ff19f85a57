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
import functools
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


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed source of ``path``, parsed once for the graph and every scan below."""
    return ast.parse(path.read_text())


def _imports(name: str, path: Path) -> set[str]:
    """Modules of ours that ``name`` imports, anywhere in its body."""
    tree = _tree(path)
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


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports of ours: built on first use, not at collection, where each of
    the suite's workers would parse all 300 modules for tests that one of them runs."""
    return {name: _imports(name, path) for name, path in MODULES.items()}


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
    importers_of_init = sorted(m for m in core if "funsor_core" in _graph()[m])
    assert not importers_of_init, f"modules importing the funsor_core package: {importers_of_init}"
    cycle = _find_cycle(_graph(), core)
    assert cycle is None, "import cycle: " + " -> ".join(cycle + cycle[:1])


def test_no_wrong_way_arrows():
    wrong = []
    for name, deps in _graph().items():
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
    assert not _graph()["funsor_core.engine.cache"]


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
    for name, deps in _graph().items():
        rank = _rank(name)
        if rank is None:
            continue
        up.extend(f"{name} -> {d}" for d in sorted(deps)
                  if (r := _rank(d)) is not None and r > rank)
    assert not up, "imports up the layers:\n" + "\n".join(up)


def test_interpretations_do_not_import_faces():
    faces = []
    for name, deps in _graph().items():
        if name.startswith("interpretations"):
            faces.extend(f"{name} -> {d}" for d in sorted(deps)
                         if _rank(d) is not None and _rank(d) >= FACE_RANK)
    assert not faces, "interpretations importing faces:\n" + "\n".join(faces)


# Public helper modules at the top level that are not faces (they hold code of their own).
NOT_FACES = {"funsor_core.domains", "funsor_core.testing", "funsor_core.install"}


def test_faces_are_thin():
    # A face holds a docstring, imports and ``__all__``; code lives in the packages below.
    thick = []
    for name, path in MODULES.items():
        if _rank(name) != FACE_RANK or name in NOT_FACES:
            continue
        tree = _tree(path)
        for node in tree.body:
            plain = isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or (
                isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets]
                == ["__all__"])
            if not plain:
                thick.append(f"{name}:{node.lineno}")
    assert not thick, f"faces holding code: {thick}"


# -- funsor_core asks its backends, never names them (issue #26 item 3) -----------------------
# Array libraries other than numpy (numpy is the core's one array dependency); only the
# backends import them.
ARRAY_LIBRARIES = ("torch", "jax", "jaxlib")
BACKEND_NAMES = ("jax", "torch", "numpy")
# The backend registry may map names to modules and array types to backends.
NAMES_BACKENDS = {"funsor_core.engine.backend"}
# The one module allowed an array-library import: funsor's face ``funsor.torch.distributions``
# exports ``dist``, the torch distributions library itself, and a face holds no code that
# could ask a backend for it.
IMPORTS_ARRAY_LIBRARY = {"funsor_core.torch.distributions"}


def _array_library_imports(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that import an array library, anywhere in its body."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            roots = [(node.module or "").split(".")[0]]
        elif _is_dynamic_import(node):  # importlib.import_module("torch.distributions")
            roots = [node.args[0].value.split(".")[0]]
        else:
            continue
        if any(root in ARRAY_LIBRARIES for root in roots):
            lines.append(node.lineno)
    return lines


def _is_dynamic_import(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("import_module", "__import__")


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in BACKEND_NAMES


def _backend_name_tests(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that compare with a backend's name (``==``, ``in (...)``) or use one
    as a dict key or a subscript."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for x in operands:
                elts = x.elts if isinstance(x, (ast.Tuple, ast.List, ast.Set)) else [x]
                if any(_is_name(e) for e in elts):
                    lines.append(node.lineno)
                    break
        elif isinstance(node, ast.Dict) and any(k is not None and _is_name(k) for k in node.keys):
            lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_name(node.slice):
            lines.append(node.lineno)
    return lines


def _violations(finder, modules: dict[str, Path], allowed: set[str]) -> list[str]:
    return [f"{name}:{line}" for name, path in sorted(modules.items()) if name not in allowed
            for line in finder(_tree(path))]


def _core_modules() -> dict[str, Path]:
    return {n: p for n, p in MODULES.items() if n == "funsor_core" or n.startswith("funsor_core.")}


PLANTED = '''
import numpy as np
import torch.distributions as td
def f(x):
    import jax
    from jaxlib import xla_client
    if backend_name_of(x) == "jax" or name in ("numpy", "torch"):
        return {"torch": 1}["numpy"]
    return x == "numpyro"
lib = importlib.import_module("torch.distributions")
'''


def test_array_library_finder_finds_planted_imports():
    assert _array_library_imports(ast.parse(PLANTED)) == [3, 5, 6, 10]


def test_backend_name_finder_finds_planted_tests():
    assert sorted(set(_backend_name_tests(ast.parse(PLANTED)))) == [7, 8]
    assert _backend_name_tests(ast.parse("def f(backend='numpy'):\n    return backend")) == []


def test_core_imports_no_array_library():
    found = _violations(_array_library_imports, _core_modules(), IMPORTS_ARRAY_LIBRARY)
    assert not found, ("funsor_core imports torch or jax (ask the backend module instead, "
                       "e.g. backend_of(x).scan):\n" + "\n".join(found))


def test_core_never_names_a_backend():
    found = _violations(_backend_name_tests, _core_modules(), NAMES_BACKENDS)
    assert not found, ("funsor_core compares a backend's name (ask the backend for a fact or "
                       "a function instead, e.g. backend_of(x).SPLITS_RNG_KEYS):\n"
                       + "\n".join(found))


# Each public package imported first, and the submodule forms (issue 27, item 14; what follows
# the first import is already loaded by it): each runs in a fresh interpreter, evaluates a
# small term, and prints the rule tables, which must not depend on the order.
_IMPORT_ORDERS = [
    "import interpretations; import funsor_core; import backends",
    "import funsor_core; import interpretations; import backends",
    "import backends; import interpretations; import funsor_core",
    "from interpretations import lazy; import funsor_core",
    "from interpretations.lazy import lazy; import funsor_core",
    "from backends import get_default_dtype; import funsor_core",
]

_RULE_TABLES = """
import numpy as np
import funsor_core as fc
import interpretations
from funsor_core.engine.interpreter import Interpretation
with interpretations.lazy:
    lazy_sum = fc.Tensor(np.ones(3), {"i": fc.Bint[3]}).reduce(fc.ops.add, "i")
assert fc.get_interpretation() is interpretations.exact
assert float(fc.reinterpret(lazy_sum).data) == 3.0
def kinds(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from kinds(sub)
for kind in sorted(kinds(Interpretation), key=lambda k: k.__qualname__):
    for term, dispatcher in sorted(kind._dispatchers.items(), key=lambda kv: kv[0].__name__):
        for sig, fns in sorted(dispatcher.funcs.items(), key=repr):
            print(kind.__qualname__, term.__name__, repr(sig), [f.__qualname__ for f in fns])
"""


def _tables_after(order: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", order + "\n" + _RULE_TABLES], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{order!r} failed:\n{done.stderr[-3000:]}"
    return done.stdout


def test_every_public_import_order_works_and_loads_the_same_rules():
    tables = {order: _tables_after(order) for order in _IMPORT_ORDERS}
    reference = tables[_IMPORT_ORDERS[1]]  # funsor_core first: the usual order
    assert reference.count("\n") > 100
    differ = [order for order, table in tables.items() if table != reference]
    assert not differ, f"these import orders load other rules than `import funsor_core`: {differ}"
