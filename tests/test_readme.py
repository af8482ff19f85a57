"""Every ```python block of the README runs as written (on numpy, the default backend)."""

import pathlib
import re

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index):
    fc.set_backend("numpy")
    try:
        exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})
    finally:
        fc.set_backend("numpy")


def _run(index: int) -> dict:
    namespace: dict = {}
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), namespace)
    return namespace


def _block(first_line: str) -> int:
    return next(i for i, b in enumerate(BLOCKS) if first_line in b)


def test_readme_numbers_are_what_the_comments_say():
    # The values the README's comments state, against closed forms worked by hand.
    fc.set_backend("numpy")
    ns = _run(_block("model = Beta(1.0, 1.0"))
    # Beta(1, 1) prior, clicks 1, 0, 1: p(data) = B(3, 2) / B(1, 1) = 2! 1! / 4! = 1 / 12
    assert abs(float(ns["model"].reduce(ops.logaddexp, "p")) - np.log(1 / 12)) < 1e-12
    ns = _run(_block('query="marginals"'))
    joint = np.array([[0.3 * 0.9, 0.3 * 0.1], [0.7 * 0.2, 0.7 * 0.8]])  # p(x0, x1)
    marginal = ns["fc"].infer_discrete([ns["first"], ns["trans"]], query="marginals")["x1"]
    np.testing.assert_allclose(np.asarray(marginal.data), joint.sum(0))  # [0.41, 0.59]
    assert (ns["best"]["x0"].item(), ns["best"]["x1"].item()) == np.unravel_index(
        joint.argmax(), joint.shape)  # (1, 1)
