"""Every ```python block of the README runs as written (on numpy, the default backend)."""

import pathlib
import re

import pytest

import funsor_core as fc

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index):
    fc.set_backend("numpy")
    try:
        exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})
    finally:
        fc.set_backend("numpy")
