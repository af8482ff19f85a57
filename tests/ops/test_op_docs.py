"""Every op has a docstring with an example, and every example prints what numpy computes."""

from __future__ import annotations

import doctest

import pytest

from funsor_core import ops
from funsor_core.ops.op import Op
from funsor_core.ops.op_docs import DOCS

OPS = sorted(name for name in dir(ops) if isinstance(getattr(ops, name), Op))


def test_every_op_is_documented():
    assert [name for name in OPS if name not in DOCS] == []
    assert all(getattr(ops, name).__doc__ == DOCS[name] for name in OPS)


@pytest.mark.parametrize("name", OPS)
def test_example_runs(name):
    test = doctest.DocTestParser().get_doctest(DOCS[name], {}, f"ops.{name}", None, 0)
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    runner = doctest.DocTestRunner(optionflags=flags)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, DOCS[name]
