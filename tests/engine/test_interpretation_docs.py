"""Every public interpretation has a docstring of its own with an example, and it runs."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import funsor_core as fc
import interpretations
from funsor_core import ops
from funsor_core.approximations import argmax_approximate, laplace_approximate, mean_approximate
from funsor_core.engine.interpreter import Interpretation

NAMES = sorted(n for n in interpretations.__all__
               if isinstance(getattr(interpretations, n), Interpretation))
KINDS = {n: getattr(interpretations, n) for n in NAMES}
KINDS.update(argmax_approximate=argmax_approximate, mean_approximate=mean_approximate,
             laplace_approximate=laplace_approximate)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_docstring_example_runs(name):
    doc = type(KINDS[name]).__doc__
    assert doc and ">>>" in doc, f"{name} has no docstring example"
    # the interpretations' module docstrings read fc, np and ops from the doctest namespace
    namespace = {"fc": fc, "np": np, "ops": ops}
    namespace.update((n, getattr(interpretations, n)) for n in interpretations.__all__)
    test = doctest.DocTestParser().get_doctest(doc, namespace, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    was = fc.get_backend()
    fc.set_backend("numpy")  # the examples print numpy results
    try:
        runner.run(test)
    finally:
        fc.set_backend(was)
    assert runner.summarize(verbose=False).failed == 0, doc
