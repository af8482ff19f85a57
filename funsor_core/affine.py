"""funsor's ``funsor.affine``: affine recognition and extraction.

A thin face; the implementation lives in
``funsor_core.analysis.affine``."""


from funsor_core.analysis.affine import (
    extract_affine,
    extract_affine_flat,
    is_affine,
)

__all__ = [
    "extract_affine", "extract_affine_flat", "is_affine"
]
