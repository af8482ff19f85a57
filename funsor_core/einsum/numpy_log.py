"""funsor's ``funsor.einsum.numpy_log``: an opt_einsum backend (``einsum``, ``tensordot``,
``transpose``) in the log semiring. A thin face of
``funsor_core.algorithms.contract.semiring_einsum``; despite its name it takes numpy, torch and
jax arrays."""

from funsor_core.algorithms.contract.semiring_einsum import log_einsum as einsum
from funsor_core.algorithms.contract.semiring_einsum import log_tensordot as tensordot
from funsor_core.algorithms.contract.semiring_einsum import transpose

__all__ = ["einsum", "tensordot", "transpose"]
