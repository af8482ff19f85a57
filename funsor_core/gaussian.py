"""funsor's ``funsor.gaussian``: the Gaussian atom, and the private helpers funsor's tests import.

A thin face; the implementation lives in
``funsor_core.atoms.gaussian.atom``, ``funsor_core.compat.gaussian``."""


from funsor_core.atoms.gaussian.atom import (
    COMPRESSION_THRESHOLD,
    BlockMatrix,
    BlockVector,
    Gaussian,
    align_gaussian,
    gaussian_batch_inputs,
    gaussian_layout,
    real_offsets,
)
from funsor_core.compat.gaussian import (
    _compress_rank,
    _inverse_cholesky,
    _mv,
    _norm2,
    _split_real_inputs,
    _vm,
)

__all__ = [
    "Gaussian", "BlockMatrix", "BlockVector", "align_gaussian", "real_offsets",
    "gaussian_batch_inputs", "COMPRESSION_THRESHOLD", "gaussian_layout", "_compress_rank",
    "_inverse_cholesky", "_mv", "_norm2", "_split_real_inputs", "_vm"
]
