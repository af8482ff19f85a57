"""Every public name has a docstring with a runnable example, and the examples run.

Public names: ``funsor_core.__all__``, ``interpretations.__all__``, the ``__all__`` of every
module under ``funsor_core``, and the public methods and properties of the atoms' classes
(``Funsor``, ``Tensor``, ``Gaussian``, ``Delta``). Data (tables, constants) and re-exported
modules carry no docstring of their own and are not counted.

Most examples run under ``pytest --doctest-modules`` (``pyproject.toml``), where they are found
in their defining module; ops (``tests/ops/test_op_docs.py``) and interpretations
(``tests/engine/test_interpretation_docs.py``) run in tests of their own. Methods installed on
``Funsor`` by another module (``terms/operators.py`` builds them from a table) are found by no
module's doctest collection, so their examples run here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import types

import numpy as np
import pytest

import funsor_core as fc
import interpretations
from funsor_core import Delta, Funsor, Gaussian, Tensor, ops
from tests.doc_examples import failed_examples

# Modules whose import needs a peer library (pyro) that the test extra may lack.
_OPTIONAL = ("funsor_core.pyro", "funsor_core.compat.pyro_")
ATOM_CLASSES = (Funsor, Tensor, Gaussian, Delta)
OURS = ("funsor_core", "interpretations", "backends")

# Public names in module ``__all__`` lists that still lack an example: empty (every public
# name has one); keep it so. A new public name comes with its example, never onto this list.
TO_DO: frozenset[str] = frozenset()


def _modules() -> list[types.ModuleType]:
    out = [fc, interpretations]
    for info in pkgutil.walk_packages(fc.__path__, "funsor_core."):
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:  # pragma: no cover  (an optional peer library is missing)
            assert info.name.startswith(_OPTIONAL), info.name
    return out


def _documentable(obj) -> bool:
    # A table or a constant has its type's docstring, not one of its own, and a name handed
    # on from another library (``typing.get_type_hints``, ``NullOp`` = ``type(None)``) has that
    # library's. A module in an ``__all__`` is a namespace handed on (``funsor_core.torch``'s
    # ``dist``), unless it is called as a function (``fc.einsum(...)``: its docstring is the
    # module's).
    if isinstance(obj, types.ModuleType):
        return callable(obj)
    module = getattr(obj, "__module__", None) if callable(obj) else type(obj).__module__
    return (module or "").split(".")[0] in OURS


def _public_names() -> dict[str, object]:
    """``qualified name -> object`` of every public name, each object once."""
    found, seen = {}, set()
    for module in _modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if id(obj) not in seen and _documentable(obj):
                seen.add(id(obj))
                found[f"{module.__name__}.{name}"] = obj
    for cls in ATOM_CLASSES:
        for name in dir(cls):
            if name.startswith("_"):
                continue
            attr = inspect.getattr_static(cls, name)
            fn = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
            if callable(fn) and id(fn) not in seen:
                seen.add(id(fn))
                found[f"{cls.__name__}.{name}"] = fn
    return found


PUBLIC = _public_names()


def _has_example(obj) -> bool:
    doc = inspect.getdoc(obj)
    return bool(doc) and ">>>" in doc


def test_every_public_name_has_an_example():
    missing = sorted(k for k, v in PUBLIC.items() if not _has_example(v) and k not in TO_DO)
    assert missing == [], "public names without a docstring example:\n" + "\n".join(missing)


def test_to_do_list_only_shrinks():
    done = sorted(k for k in TO_DO if k not in PUBLIC or _has_example(PUBLIC[k]))
    assert done == [], "these have an example now (or are gone): drop them from TO_DO"


def _collected_elsewhere(cls, fn) -> bool:
    # --doctest-modules finds a method in its class's module when it was defined there, or a
    # function that its own module holds (terms/methods.py's ``_align``).
    fn = inspect.unwrap(fn)
    if getattr(fn, "__globals__", None) is vars(sys.modules[cls.__module__]):
        return True
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return module is not None and any(v is fn for v in vars(module).values())


_ATOMS = {cls.__name__: cls for cls in ATOM_CLASSES}
INSTALLED = sorted(k for k, v in PUBLIC.items() if k.split(".")[0] in _ATOMS and _has_example(v)
                   and not _collected_elsewhere(_ATOMS[k.split(".")[0]], v))


@pytest.mark.parametrize("name", INSTALLED)
def test_installed_method_example_runs(name):
    doc = inspect.getdoc(PUBLIC[name])
    assert failed_examples(doc, {"fc": fc, "np": np, "ops": ops}, name) == 0, doc
