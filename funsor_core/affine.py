"""funsor's ``funsor.affine``: affine recognition and extraction.

A thin face; the implementation lives in
``funsor_core.atoms.affine``."""


from funsor_core.atoms.affine import (
    extract_affine,
    extract_affine_flat,
    is_affine,
)

__all__ = [
    "extract_affine", "extract_affine_flat", "is_affine"
]
