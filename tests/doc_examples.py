"""Run one docstring's examples the way ``--doctest-modules`` would, for docstrings it cannot
find (methods built from a table, ``Interpretation`` instances' docs).

    >>> failed_examples(">>> 1 + 1\\n2\\n", {}, "sum")
    0
"""

from __future__ import annotations

import doctest

import funsor_core as fc


def failed_examples(doc: str, namespace: dict, name: str) -> int:
    """The number of failed examples of ``doc``, run on the numpy backend (the examples print
    numpy results), with ``namespace`` as globals."""
    test = doctest.DocTestParser().get_doctest(doc, dict(namespace), name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    was = fc.get_backend()
    fc.set_backend("numpy")
    try:
        runner.run(test)
    finally:
        fc.set_backend(was)
    return runner.summarize(verbose=False).failed
