"""funsor's ``funsor.montecarlo``: reading samples out of Monte Carlo results.

A thin face; the implementation lives in ``funsor_core.atoms.sampling`` and
``funsor_core.atoms.rng``. The ``MonteCarlo`` interpretation is
``interpretations.monte_carlo.MonteCarlo``."""


from funsor_core.atoms.rng import (
    KeyStream,
)
from funsor_core.atoms.sampling import (
    extract_samples,
)

__all__ = [
    "extract_samples", "KeyStream"
]
