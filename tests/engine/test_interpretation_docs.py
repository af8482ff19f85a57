"""Every public interpretation has a docstring of its own with an example, and it runs."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
import interpretations
from funsor_core import ops
from funsor_core.approximations import argmax_approximate, laplace_approximate, mean_approximate
from funsor_core.engine.interpreter import Interpretation
from tests.doc_examples import failed_examples

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
    assert failed_examples(doc, namespace, name) == 0, doc
