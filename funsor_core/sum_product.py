"""Sum-product algorithms on factor graphs: plates, Markov chains and both together.

This module is the public face of the family (funsor users write
``from funsor.sum_product import ...``); the algorithms live in three modules:

- ``algorithms.plates``: ``partial_sum_product`` and ``sum_product``, Algorithm 1 of
  "Tensor Variable Elimination for Plated Factor Graphs" (Obermeyer et al., 2019).
- ``algorithms.chains``: scans over a time input: ``sequential_sum_product`` (parallel,
  depth ``log2(T)``), its serial reference, ``mixed_sequential_sum_product``, and the
  Sarkka-Bilmes scans for factors that look back several steps.
- ``terms.markov``: the lazy ``MarkovProduct`` term, which ``exact`` evaluates with a
  strategy (``"parallel"``, ``"sequential"`` or ``"auto"``: ``algorithms.scan``) set per term
  or per block with ``markov_strategy``; ``markov_marginals`` and ``markov_map`` smooth and
  decode discrete chains by the derivative of the chain's total (``algorithms.markov_smooth``).
- ``algorithms.markov_plates``: plated elimination where some plates are Markov chains
  (``modified_partial_sum_product``, ``dynamic_partial_sum_product``) and
  ``partial_unroll``, which rewrites plates as copies of their variables.

Example:
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> sum_product(ops.add, ops.mul, [f], eliminate=frozenset({"j"})).data
    array([3., 3.])
"""

from funsor_core.algorithms.chains.cost_model import (
    get_markov_strategy,
    markov_strategy,
    set_markov_strategy,
)
from funsor_core.algorithms.chains.discrete_smooth import markov_map, markov_marginals
from funsor_core.algorithms.chains.masks import markov_product, masked_steps
from funsor_core.algorithms.chains.term_lagged import (
    naive_sarkka_bilmes_product,
    sarkka_bilmes_product,
)
from funsor_core.algorithms.chains.term_scans import (
    mixed_sequential_sum_product,
    naive_sequential_sum_product,
    sequential_sum_product,
)
from funsor_core.algorithms.eliminate.markov_plates import (
    dynamic_partial_sum_product,
    modified_partial_sum_product,
    partial_unroll,
)
from funsor_core.algorithms.eliminate.plated import (  # noqa: F401 (funsor's tests import _partition)
    PRODUCT_TO_POWER,
    PlateError,
    _partition,
    partial_sum_product,
    sum_product,
)
from funsor_core.terms.markov import MarkovProduct

__all__ = ["MarkovProduct", "markov_marginals", "markov_map", "markov_strategy",
           "set_markov_strategy", "get_markov_strategy",
           "PlateError", "PRODUCT_TO_POWER", "dynamic_partial_sum_product",
           "mixed_sequential_sum_product", "modified_partial_sum_product",
           "naive_sarkka_bilmes_product", "naive_sequential_sum_product", "partial_sum_product",
           "partial_unroll", "sarkka_bilmes_product", "sequential_sum_product", "sum_product",
           "markov_product", "masked_steps"]
