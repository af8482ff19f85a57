"""funsor's ``funsor.cnf``: the Contraction normal form, the einsum backend strings and
``GaussianMixture``.

A thin face; the implementation lives in
``funsor_core.compat.cnf``."""


from funsor_core.compat.cnf import (
    BACKEND_TO_EINSUM_BACKEND,
    BACKEND_TO_LOGSUMEXP_BACKEND,
    BACKEND_TO_MAP_BACKEND,
    Contraction,
    GaussianMixture,
)

__all__ = [
    "BACKEND_TO_EINSUM_BACKEND", "BACKEND_TO_LOGSUMEXP_BACKEND", "BACKEND_TO_MAP_BACKEND",
    "Contraction", "GaussianMixture"
]
