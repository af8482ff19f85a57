"""The examples of the pyro distribution classes, which are built on first access (they
subclass pyro's ``TorchDistribution``), so that no module's doctest collection finds them."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from tests.doc_examples import failed_examples

pytest.importorskip("pyro")

NAMES = [("funsor_core.compat.pyro_distribution", "FunsorDistribution"),
         ("funsor_core.compat.pyro_hmm", "DiscreteHMM"),
         ("funsor_core.compat.pyro_hmm", "GaussianHMM"),
         ("funsor_core.compat.pyro_hmm", "GaussianMRF"),
         ("funsor_core.compat.pyro_hmm", "SwitchingLinearHMM")]


@pytest.mark.parametrize("module, name", NAMES)
def test_pyro_class_example_runs(module, name):
    import importlib

    cls = getattr(importlib.import_module(module), name)
    namespace = {"fc": fc, "np": np, "ops": ops, name: cls}
    assert failed_examples(cls.__doc__, namespace, f"{module}.{name}") == 0, cls.__doc__
