"""funsor's ``funsor.einsum``: einsum in any semiring, naive and plated variants.

A thin face; the implementation lives in
``funsor_core.algorithms.contract.einsum``. The module is callable: ``fc.einsum(...)`` is
``einsum``.

Example:
    >>> a = fc.Tensor(np.array([1.0, 2.0]))["i"]  # the output dim named i
    >>> b = fc.Tensor(np.array([3.0, 4.0]))["i"]
    >>> fc.einsum("i,i->", a, b).item()  # 1 * 3 + 2 * 4
    11.0
"""

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
