"""funsor's ``funsor.einsum.numpy_map``: an opt_einsum backend (``einsum``, ``tensordot``,
``transpose``) in the max-plus semiring. A thin face of
``funsor_core.algorithms.contract.semiring_einsum``; it takes numpy, torch and jax arrays."""

from funsor_core.algorithms.contract.semiring_einsum import map_einsum as einsum
from funsor_core.algorithms.contract.semiring_einsum import map_tensordot as tensordot
from funsor_core.algorithms.contract.semiring_einsum import transpose

__all__ = ["einsum", "tensordot", "transpose"]
