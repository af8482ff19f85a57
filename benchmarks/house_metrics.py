"""Structural counts of a funsor-core checkout, read with ``ast`` (nothing is imported).

    python benchmarks/house_metrics.py [CHECKOUT]      (default: the checkout this file is in)

Prints what a "house" closing note compares before and after a restructuring:
- modules and lines per top-level folder (and per folder of ``funsor_core/``);
- functions over 80 lines;
- caches: functools ``lru_cache``/``cache`` decorators, module- or class-level memo dicts
  (any weak dict; a ``{}``/``dict()``/``OrderedDict()`` whose name has cache/memo in it or
  that the module later ``.clear()``s), and uses of the one cache utility
  (``Cache(...)``, ``@cached(...)`` from ``funsor_core/engine/cache.py``);
- imports of torch/jax inside ``funsor_core``, and comparisons with the strings "jax",
  "torch", "numpy" there;
- the 10 rule functions (decorated with ``.register(...)``) with the most type/op tests
  (``isinstance(...)``, ``type(x) is``, ``op is ops.x``, ``op in (...)``), and every
  function with 6+;
- chain kernel implementations: functions in ``funsor_core/algorithms/chains/`` (or, in the
  flat layout, ``algorithms/scan_*.py``, ``chains.py``, ``markov_*.py``) whose names say
  log_tree, scaled_log, _sequential, log_filter, _fast_log, _eager_log, chain or scan.
Works on the flat layout (``algorithms/*.py``) and on the one with subpackages.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

LIBRARY = ("funsor_core", "interpretations", "backends")
LONG_FUNCTION = 80
CHAIN_NAME = re.compile(r"log_tree|scaled_log|_sequential|log_filter|_fast_log|_eager_log|"
                        r"chain|scan")
MEMO_NAME = re.compile(r"cache|memo", re.IGNORECASE)
BACKEND_NAMES = {"jax", "torch", "numpy"}
ARRAY_LIBRARIES = {"torch", "jax", "jaxlib"}


def python_files(root: Path, folder: str) -> list[Path]:
    return sorted(p for p in (root / folder).rglob("*.py") if ".venv" not in p.parts)


def parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError):
        return None


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def dotted(node: ast.AST) -> str:
    """``a.b.c`` of a Name/Attribute chain (the callee of a Call), else ''."""
    if isinstance(node, ast.Call):
        return dotted(node.func)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


# --- sizes --------------------------------------------------------------------------------
def sizes(root: Path) -> list[tuple[str, int, int]]:
    """(folder, modules, lines) per top-level folder with Python files, and per folder of
    funsor_core (its loose modules as ``funsor_core/*.py``)."""
    rows = []
    tops = sorted(p.name for p in root.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and python_files(root, p.name))
    for top in tops:
        files = python_files(root, top)
        rows.append((top, len(files), sum(len(f.read_text().splitlines()) for f in files)))
    core = root / "funsor_core"
    if core.is_dir():
        groups: dict[str, list[Path]] = defaultdict(list)
        for f in python_files(root, "funsor_core"):
            rel = f.relative_to(core).parts
            groups["funsor_core/" + (rel[0] if len(rel) > 1 else "*.py")].append(f)
        for name in sorted(groups):
            files = groups[name]
            rows.append((name, len(files), sum(len(f.read_text().splitlines()) for f in files)))
    return rows


# --- long functions -----------------------------------------------------------------------
def long_functions(root: Path, trees: dict[Path, ast.Module]) -> list[tuple[int, str]]:
    out = []
    for path, tree in trees.items():
        for fn in functions(tree):
            n = fn.end_lineno - fn.lineno + 1
            if n > LONG_FUNCTION:
                out.append((n, f"{path.relative_to(root)}:{fn.lineno} {fn.name}"))
    return sorted(out, reverse=True)


# --- caches -------------------------------------------------------------------------------
def _is_memo_value(value: ast.AST) -> bool:
    if isinstance(value, ast.Dict) and not value.keys:
        return True
    return isinstance(value, ast.Call) and dotted(value).split(".")[-1] in (
        "dict", "WeakKeyDictionary", "WeakValueDictionary", "OrderedDict", "defaultdict")


def _cleared_names(tree: ast.Module) -> set[str]:
    return {dotted(node.func.value) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "clear"}


_UTILITY = ("Cache", "FastCache", "CacheFamily")  # the classes of funsor_core/engine/cache.py


def caches(root: Path, trees: dict[Path, ast.Module]) -> dict[str, list[str]]:
    """Caches by style: functools decorators, module-level memo dicts, the Cache utility."""
    found: dict[str, list[str]] = defaultdict(list)
    for path, tree in trees.items():
        rel = str(path.relative_to(root))
        if rel.endswith("engine/cache.py"):
            continue  # the utility itself (its registry dict is not a memo)
        for fn in functions(tree):
            for dec in fn.decorator_list:
                name = dotted(dec)
                if name.split(".")[-1] in ("lru_cache", "cache"):
                    found["functools"].append(f"{rel}:{fn.lineno} {fn.name}")
                elif name.split(".")[-1] == "cached":
                    found["Cache utility"].append(f"{rel}:{fn.lineno} @cached {fn.name}")
        cleared = _cleared_names(tree)
        class_bodies = [n.body for n in tree.body if isinstance(n, ast.ClassDef)]
        for node in [*tree.body, *(stmt for body in class_bodies for stmt in body)]:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                name = dotted(target)
                if not name:
                    continue
                if isinstance(value, ast.Call) and dotted(value).split(".")[-1] in _UTILITY:
                    continue  # counted below with every Cache(...) call
                weak = dotted(value).split(".")[-1].startswith("Weak")
                if _is_memo_value(value) and (weak or MEMO_NAME.search(name) or name in cleared):
                    found["module/class dict"].append(f"{rel}:{node.lineno} {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and dotted(node).split(".")[-1] in _UTILITY:
                label = node.args[0].value if node.args and isinstance(
                    node.args[0], ast.Constant) else "?"
                found["Cache utility"].append(f"{rel}:{node.lineno} Cache({label!r})")
    return found


# --- backend names in the core -------------------------------------------------------------
def array_imports(root: Path, trees: dict[Path, ast.Module]) -> list[str]:
    out = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ARRAY_LIBRARIES:
                    out.append(f"{path.relative_to(root)}:{node.lineno} import {name}")
    return out


def _backend_constants(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and node.value in BACKEND_NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _backend_constants(e)]
    return []


def backend_name_tests(root: Path, trees: dict[Path, ast.Module]) -> list[str]:
    out = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                names = [c for side in [node.left, *node.comparators]
                         for c in _backend_constants(side)]
                if names:
                    out.append(f"{path.relative_to(root)}:{node.lineno} "
                               f"{' '.join(sorted(set(names)))}")
    return out


# --- type/op tests per function -------------------------------------------------------------
def _is_type_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and dotted(node) == "type"


def _is_op_ref(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_is_op_ref(e) for e in node.elts)
    return isinstance(node, ast.Attribute) and dotted(node).split(".")[0] == "ops"


def _is_op_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and (node.id == "op" or node.id.endswith("_op"))


def type_op_tests(fn: ast.AST) -> int:
    """isinstance(...) calls, and comparisons of type(x), with an ``ops.x`` op, or of a name
    ``op``/``*_op`` (inside ``ops/`` the ops are bare names)."""
    count = 0
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and dotted(node) in ("isinstance", "issubclass"):
            count += 1
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_type_call(s) or _is_op_ref(s) or _is_op_name(s) for s in sides):
                count += 1
    return count


def rule_tests(root: Path, trees: dict[Path, ast.Module]) -> tuple[list, list]:
    """(the rule functions by type/op tests, largest first; every function with 6+)."""
    rules, ladders = [], []
    for path, tree in trees.items():
        for fn in functions(tree):
            n = type_op_tests(fn)
            where = f"{path.relative_to(root)}:{fn.lineno} {fn.name}"
            if any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                   and d.func.attr == "register" for d in fn.decorator_list):
                rules.append((n, where))
            if n >= 6:
                ladders.append((n, where))
    return sorted(rules, reverse=True), sorted(ladders, reverse=True)


# --- chain kernels ---------------------------------------------------------------------------
def chain_files(root: Path) -> list[Path]:
    algorithms = root / "funsor_core" / "algorithms"
    files = sorted((algorithms / "chains").rglob("*.py")) if (algorithms / "chains").is_dir() \
        else []
    for pattern in ("scan_*.py", "chains.py", "markov_*.py"):
        files += sorted(algorithms.glob(pattern))
    return files


def chain_kernels(root: Path) -> list[str]:
    out = []
    for path in chain_files(root):
        tree = parse(path)
        for fn in functions(tree) if tree else ():
            if CHAIN_NAME.search(fn.name):
                out.append(f"{path.relative_to(root)}:{fn.lineno} {fn.name}")
    return out


# --- report ----------------------------------------------------------------------------------
def section(title: str, lines: list[str]) -> None:
    print(f"\n## {title}: {len(lines)}")
    for line in lines:
        print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    root = Path(ap.parse_args(argv).checkout).resolve()
    library = {p: t for folder in LIBRARY for p in python_files(root, folder)
               if (t := parse(p)) is not None}
    core = {p: t for p, t in library.items() if p.relative_to(root).parts[0] == "funsor_core"}
    print(f"# house metrics of {root}")
    print("\n## modules and lines per folder")
    for name, modules, lines in sizes(root):
        print(f"  {name:34} {modules:4} modules {lines:7} lines")
    section(f"functions over {LONG_FUNCTION} lines (funsor_core, interpretations, backends)",
            [f"{n:4} {w}" for n, w in long_functions(root, library)])
    found = caches(root, library)
    print(f"\n## caches: {sum(len(v) for v in found.values())}")
    for style in ("functools", "module/class dict", "Cache utility"):
        section(f"caches, {style}", found.get(style, []))
    section("torch/jax imports inside funsor_core", array_imports(root, core))
    section('comparisons with "jax"/"torch"/"numpy" inside funsor_core',
            backend_name_tests(root, core))
    rules, ladders = rule_tests(root, library)
    section("10 largest rules by type/op tests", [f"{n:4} {w}" for n, w in rules[:10]])
    section("functions with 6+ type/op tests", [f"{n:4} {w}" for n, w in ladders])
    section("chain kernel implementations", chain_kernels(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
