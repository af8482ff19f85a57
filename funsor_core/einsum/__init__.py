"""funsor's ``funsor.einsum``: einsum in any semiring, naive and plated variants.

A thin face; the implementation lives in
``funsor_core.algorithms.contract.einsum``."""

from funsor_core.algorithms.contract.einsum import (
    BACKEND_ADJOINT_OPS,
    BACKEND_OPS,
    SEMIRINGS,
    contract_arrays,
    contract_tensors,
    einsum,
    naive_contract_einsum,
    naive_einsum,
    naive_plated_einsum,
    semiring_of_backend,
)

__all__ = [
    "einsum", "naive_einsum", "naive_plated_einsum", "naive_contract_einsum", "contract_arrays",
    "contract_tensors", "semiring_of_backend", "SEMIRINGS", "BACKEND_OPS", "BACKEND_ADJOINT_OPS",
]
