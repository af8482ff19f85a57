"""``funsor_core.install``: ``import funsor`` served by funsor-core only when a process opts in.

Each case runs in a fresh Python process (an import hook cannot be undone in this one). A
stand-in "real funsor" package on the path checks that nothing shadows an installed funsor
without the opt-in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from funsor_core.install import LOADED_AT_IMPORT, write_sitecustomize

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def real_funsor(tmp_path):
    """A directory holding a stand-in installed ``funsor`` (``funsor.WHO == "real"``)."""
    pkg = tmp_path / "site" / "funsor"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('WHO = "real"\n')
    return pkg.parent


def _run(code: str, *path: Path, env: dict | None = None, args=("-c",)) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != "FUNSOR_CORE_AS_FUNSOR"}
    full_env["PYTHONPATH"] = os.pathsep.join([str(p) for p in path] + [str(ROOT)])
    full_env.update(env or {})
    argv = [sys.executable, *args] + ([textwrap.dedent(code)] if code else [])
    done = subprocess.run(argv, capture_output=True, text=True, env=full_env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_the_call_a_real_funsor_is_imported_and_the_call_then_refuses(real_funsor):
    # funsor_core imported and the switch set, but no call and no sitecustomize: the real
    # funsor; installing after it was imported refuses, naming the fix.
    code = """
        import funsor_core as fc
        import funsor
        try:
            fc.install_as_funsor()
        except RuntimeError as e:
            print(funsor.WHO, "before anything imports funsor" in str(e))
    """
    assert _run(code, real_funsor, env={"FUNSOR_CORE_AS_FUNSOR": "1"}) == "real True"


def test_install_serves_funsor_and_its_submodules(real_funsor):
    code = """
        import sys
        import funsor_core as fc
        fc.install_as_funsor()
        import funsor
        from funsor.interpretations import normalize
        import funsor.torch.distributions as td
        assert getattr(funsor, "WHO", None) is None
        assert funsor.Tensor is fc.Tensor and funsor.cnf.Contraction is fc.Contraction
        assert funsor.tensor.get_default_prototype is fc.get_default_prototype
        assert funsor.optimizer.apply_optimizer is fc.apply_optimizer
        assert funsor.optimizer.optimize_base.name == "optimize_base"
        assert funsor.distribution.CoerceDistributionToFunsor is \\
            fc.distribution.CoerceDistributionToFunsor
        # served without importing an array library (its names load torch when read)
        assert td.__funsor_core_sources__[0] == "funsor_core.torch.distributions"
        assert "torch" not in sys.modules and normalize.name == "normalize"
        assert fc.install_as_funsor() is funsor  # a second call changes nothing
        print(" ".join(k[len("funsor."):] for k in sys.modules if k.startswith("funsor.")))
        try:  # a name funsor-core lacks: an AttributeError naming the module and the name
            funsor.cnf.no_such_name
        except AttributeError as e:
            print(e)
    """
    loaded, error = _run(code, real_funsor).splitlines()
    assert set(LOADED_AT_IMPORT) <= set(loaded.split())
    assert "'funsor.cnf'" in error and "'no_such_name'" in error


def test_sitecustomize_honours_the_switch_and_imports_lazily(real_funsor, tmp_path):
    site = tmp_path / "fc_site"
    write_sitecustomize(site)
    code = """
        import sys
        print("funsor_core" in sys.modules)
        import funsor
        print(getattr(funsor, "WHO", "funsor-core"))
        print(getattr(funsor, "cnf", funsor).__name__)
    """
    assert _run(code, site, real_funsor).splitlines() == ["False", "real", "funsor"]
    on = _run(code, site, real_funsor, env={"FUNSOR_CORE_AS_FUNSOR": "1"}).splitlines()
    assert on == ["False", "funsor-core", "funsor.cnf"]


def test_sitecustomize_runs_the_next_one_and_keeps_foreign_ones(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITE = 1\n")
    site = tmp_path / "fc_site"
    write_sitecustomize(site)
    assert _run("import builtins; print(builtins.OTHER_SITE)", site, other) == "1"
    with pytest.raises(FileExistsError, match="not written by funsor_core.install"):
        write_sitecustomize(other)


def test_command_line_runs_a_script_and_its_children(real_funsor, tmp_path):
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent("""
        import subprocess, sys
        import funsor
        child = subprocess.run([sys.executable, "-c", "import funsor; print(funsor.__version__)"],
                               capture_output=True, text=True).stdout.strip()
        print(sys.argv[1:], getattr(funsor, "WHO", "funsor-core"), child)
    """))
    out = _run("", real_funsor, args=("-m", "funsor_core.install", str(script), "x"))
    assert out == "['x'] funsor-core 0.4.8"
    out = _run("", real_funsor, args=("-m", "funsor_core.install", "-m", "json.tool", "-h"))
    assert "usage" in out
