"""funsor's ``funsor.montecarlo``: reading samples out of Monte Carlo results.

A thin face; the implementation lives in ``funsor_core.sampling.draw`` and
``funsor_core.sampling.keys``. The ``MonteCarlo`` interpretation is
``interpretations.monte_carlo.MonteCarlo``."""


from funsor_core.sampling.draw import (
    extract_samples,
)
from funsor_core.sampling.keys import (
    KeyStream,
)

__all__ = [
    "extract_samples", "KeyStream"
]
