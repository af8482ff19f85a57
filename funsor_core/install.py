"""Serve ``import funsor`` from funsor-core, for code written against funsor 0.4.8 (Pyro's
``pyro.contrib.funsor``, NumPyro's ``numpyro.contrib.funsor``, your own scripts).

funsor-core ships no module named ``funsor``: an installed funsor is never shadowed by
accident. A process opts in, in one of three ways:

- ``funsor_core.install_as_funsor()`` before anything imports ``funsor``;
- ``python -m funsor_core.install SCRIPT [ARGS]`` or ``python -m funsor_core.install -m
  MODULE [ARGS]`` (e.g. ``-m pytest``): runs it with ``funsor`` served, child Python
  processes included;
- ``python -m funsor_core.install --sitecustomize DIR`` writes ``DIR/sitecustomize.py``; any
  Python process with ``DIR`` on ``PYTHONPATH`` and ``FUNSOR_CORE_AS_FUNSOR=1`` in its
  environment then serves ``funsor`` from funsor-core (and without the variable, does
  nothing). Another ``sitecustomize`` further along the path still runs.

After the switch, ``funsor`` and each of funsor 0.4.8's modules (``funsor.cnf``,
``funsor.optimizer``, ``funsor.torch.distributions``, ...) is a module whose names are
funsor-core's objects, looked up where funsor-core keeps them (``funsor.optimizer`` in
``interpretations.optimize``, ``funsor.interpretations`` in ``interpretations``, then the
``funsor_core`` package). As with funsor, ``import funsor`` loads the submodules funsor
loads, so ``funsor.cnf.Contraction`` works as an attribute. A name funsor-core lacks raises
``AttributeError`` naming it.

Example:
    >>> SOURCES["optimizer"]  # where funsor.optimizer's names are looked up first
    ('interpretations.optimize',)
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types
from pathlib import Path

__all__ = ["install_as_funsor", "add_import_hook", "install_from_environment",
           "write_sitecustomize", "ENVIRONMENT_SWITCH"]

ENVIRONMENT_SWITCH = "FUNSOR_CORE_AS_FUNSOR"
FUNSOR_VERSION = "0.4.8"  # the funsor API served (clients only print funsor.__version__)

# funsor 0.4.8's modules that `import funsor` leaves loaded (the torch and jax ones: after
# `funsor.set_backend`), each an attribute of its parent: clients write `import funsor` and
# then `funsor.optimizer.apply_optimizer`. Serving them imports no array library.
LOADED_AT_IMPORT = """adam adjoint affine approximations cnf compiler constant delta distribution
domains einsum elbo factory gaussian instrument integrate interpretations interpreter joint
montecarlo op_factory ops ops.array ops.builtin ops.op ops.program ops.tracer optimizer
precondition recipes registry sum_product syntax tensor terms testing typing util torch
torch.distributions torch.ops torch.provenance jax jax.distributions jax.ops""".split()
# funsor 0.4.8's other modules, served when imported.
ON_DEMAND = """compat compat.ops einsum.numpy_log einsum.numpy_map einsum.util minipyro pyro
pyro.convert pyro.distribution pyro.hmm""".split()
# Where a funsor module's names live when funsor-core keeps them outside the module of the
# same path (searched first); ``compat`` is an internal package of ours with another meaning.
SOURCES = {
    "interpretations": ("interpretations", "funsor_core.compat.stateful"),
    "adam": ("interpretations.adam",),
    "minipyro": ("interpretations.minipyro", "interpretations.minipyro_infer"),
    "optimizer": ("interpretations.optimize",),
    "montecarlo": ("funsor_core.montecarlo", "interpretations.monte_carlo"),
    "approximations": ("funsor_core.approximations", "interpretations.approximations"),
    "joint": ("interpretations.moment_matching",),
    "util": ("funsor_core.engine.backend", "funsor_core.domains"),  # broadcast_shape
    "compat": (),
    "compat.ops": ("funsor_core.compat.array_ops", "funsor_core.ops"),
    "ops.tracer": ("funsor_core.ops.tracer",),
    "torch.ops": ("funsor_core.ops",),
    "jax.ops": ("funsor_core.ops",),
}
LAST_RESORT = ("funsor_core", "interpretations")

_NOT_SERVED = ("funsor-core serves funsor's module {module!r} but has no {name!r} there; "
               "looked in {places}. Use funsor-core's own name for it, if it has one.")
_TOO_LATE = ("install_as_funsor(): a funsor module was already imported from {where}; "
             "call install_as_funsor() (or set {switch}=1 with the sitecustomize of "
             "`python -m funsor_core.install --sitecustomize DIR`) before anything imports "
             "funsor.")


def _sources(sub: str) -> tuple[str, ...]:
    """funsor-core's modules for ``funsor.<sub>``, most specific first."""
    out: list[str] = []
    parts = sub.split(".") if sub else []
    for k in range(len(parts), 0, -1):  # funsor.a.b: then what serves funsor.a
        prefix = ".".join(parts[:k])
        own = "funsor_core." + prefix
        if prefix in SOURCES:
            out.extend(SOURCES[prefix])
        elif importlib.util.find_spec(own.rsplit(".", 1)[0]) and importlib.util.find_spec(own):
            out.append(own)
    return tuple(dict.fromkeys(out + list(LAST_RESORT)))


class FunsorModule(types.ModuleType):
    """A ``funsor.*`` module served by funsor-core: each name is found once in funsor-core's
    modules for it (``__funsor_core_sources__``) and kept."""

    def __getattr__(self, name: str):
        sources = self.__dict__["__funsor_core_sources__"]
        if name == "__all__":  # `from funsor.X import *`: the public names of its first source
            return list(getattr(importlib.import_module(sources[0]), "__all__", ()))
        if name.startswith("__"):
            raise AttributeError(name)
        for source in sources:
            value = getattr(importlib.import_module(source), name, _ABSENT)
            if value is not _ABSENT:
                setattr(self, name, value)
                return value
        raise AttributeError(_NOT_SERVED.format(module=self.__name__, name=name,
                                                places=", ".join(sources)))

    def __dir__(self):
        names = set(self.__dict__)
        for source in self.__dict__["__funsor_core_sources__"]:
            names.update(n for n in dir(importlib.import_module(source)) if n[:1] != "_")
        return sorted(names)


_ABSENT = object()


class _FunsorFinder:
    """The import hook: ``funsor`` and funsor 0.4.8's ``funsor.*`` module names."""

    known = frozenset(LOADED_AT_IMPORT + ON_DEMAND)

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname == "funsor" or (fullname.startswith("funsor.") and fullname[7:] in self.known):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        sub = spec.name[7:]
        module = FunsorModule(spec.name, f"funsor{'.' + sub if sub else ''} (funsor-core)")
        module.__funsor_core_sources__ = _sources(sub)
        module.__path__ = []
        # Tools that read a module's file (inspect, tracebacks) see its first source's.
        origin = importlib.util.find_spec(module.__funsor_core_sources__[0]).origin
        if origin:
            module.__file__ = origin
        return module

    def exec_module(self, module) -> None:
        if module.__name__ == "funsor":
            module.__version__ = FUNSOR_VERSION
            for sub in LOADED_AT_IMPORT:
                child = importlib.import_module("funsor." + sub)
                parent, _, last = child.__name__.rpartition(".")
                setattr(module if parent == "funsor" else sys.modules[parent], last, child)


def install_as_funsor() -> types.ModuleType:
    """Serve ``import funsor`` and funsor's ``funsor.*`` modules from funsor-core in this
    process (see the module docstring); returns the ``funsor`` module. Calling it again does
    nothing more.

    Raises:
        RuntimeError: a real ``funsor`` was imported already (it cannot be swapped out).

    Example:
        >>> import subprocess, sys
        >>> code = ("import funsor_core; funsor_core.install_as_funsor(); import funsor; "
        ...         "print(funsor.optimizer.apply_optimizer.__module__)")
        >>> subprocess.run([sys.executable, "-c", code], capture_output=True,
        ...                text=True).stdout.strip()
        'interpretations.optimize'
    """
    current = sys.modules.get("funsor")
    if isinstance(current, FunsorModule):
        return current
    if current is not None:
        raise RuntimeError(_TOO_LATE.format(where=getattr(current, "__file__", "?"),
                                            switch=ENVIRONMENT_SWITCH))
    add_import_hook()
    return importlib.import_module("funsor")


def add_import_hook() -> None:
    """The first half of ``install_as_funsor``: the import hook, without importing ``funsor``
    (for a hook that runs while ``funsor`` is being imported).

    Example:
        >>> import subprocess, sys
        >>> code = ("import funsor_core.install as i; i.add_import_hook(); import funsor; "
        ...         "print(type(funsor).__name__)")
        >>> subprocess.run([sys.executable, "-c", code], capture_output=True,
        ...                text=True).stdout.strip()
        'FunsorModule'
    """
    if not any(isinstance(f, _FunsorFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _FunsorFinder())


def install_from_environment() -> bool:
    """``install_as_funsor()`` if ``FUNSOR_CORE_AS_FUNSOR`` is ``1`` (or ``true``/``yes``);
    returns whether it did.

    Example:
        >>> os.environ.get(ENVIRONMENT_SWITCH) is None and not install_from_environment()
        True
    """
    if os.environ.get(ENVIRONMENT_SWITCH, "").lower() not in ("1", "true", "yes"):
        return False
    install_as_funsor()
    return True


# The written sitecustomize stays cheap: it imports funsor-core only when a process imports
# funsor, and then runs the next sitecustomize on the path (Python runs only the first).
_SITECUSTOMIZE = '''"""Written by `python -m funsor_core.install --sitecustomize`: with {switch}=1,
`import funsor` is served by funsor-core (checkout: {root})."""
import importlib.machinery, os, sys

if os.environ.get("{switch}", "").lower() in ("1", "true", "yes"):
    class _FunsorCoreOnFirstImport:
        def find_spec(self, fullname, path=None, target=None):
            if fullname != "funsor":
                return None
            sys.meta_path.remove(self)
            if importlib.util.find_spec("funsor_core") is None:
                sys.path.append({root!r})
            import funsor_core.install
            funsor_core.install.add_import_hook()
            return importlib.util.find_spec("funsor")
    import importlib.util
    sys.meta_path.insert(0, _FunsorCoreOnFirstImport())

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_next = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _next is not None and _next.loader is not None:
    _next.loader.exec_module(importlib.util.module_from_spec(_next))
'''


def write_sitecustomize(directory: str | os.PathLike) -> Path:
    """Write ``directory/sitecustomize.py``, which serves ``funsor`` from funsor-core in any
    process that has ``directory`` on ``PYTHONPATH`` and ``FUNSOR_CORE_AS_FUNSOR=1`` set.
    Refuses to overwrite a ``sitecustomize.py`` it did not write.

    Example:
        >>> import tempfile
        >>> write_sitecustomize(tempfile.mkdtemp()).name
        'sitecustomize.py'
    """
    path = Path(directory) / "sitecustomize.py"
    if path.exists() and "funsor_core.install" not in path.read_text():
        raise FileExistsError(f"{path} exists and was not written by funsor_core.install; "
                              "choose another directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    root = str(Path(__file__).resolve().parent.parent)
    path.write_text(_SITECUSTOMIZE.format(switch=ENVIRONMENT_SWITCH, root=root))
    return path


_USAGE = """usage: python -m funsor_core.install SCRIPT [ARGS...]
       python -m funsor_core.install -m MODULE [ARGS...]
       python -m funsor_core.install --sitecustomize DIR"""


def main(argv: list[str]) -> int:
    """The command line (see ``_USAGE``): run a script or module with ``funsor`` served by
    funsor-core (child Python processes too), or write a sitecustomize."""
    if not argv or argv[0] in ("-h", "--help") or (argv[0] in ("-m", "--sitecustomize")
                                                    and len(argv) < 2):
        print(_USAGE, file=sys.stderr)
        return 2
    if argv[0] == "--sitecustomize":
        print(write_sitecustomize(argv[1]))
        return 0
    import atexit
    import shutil
    import tempfile

    site = tempfile.mkdtemp(prefix="funsor_core_site_")
    atexit.register(shutil.rmtree, site, ignore_errors=True)
    write_sitecustomize(site)
    os.environ[ENVIRONMENT_SWITCH] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [site] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    install_as_funsor()
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # The importable module's main, so that the hook's classes are the ones that
    # ``funsor_core.install_as_funsor`` sees (this file also runs as ``__main__``).
    sys.exit(importlib.import_module(__spec__.name).main(sys.argv[1:]))
