"""funsor's ``funsor.tensor``: the Tensor atom and its array terms.

A thin face; the implementation lives in
``funsor_core.atoms.tensor``, ``funsor_core.atoms.tensor_idioms``."""


from funsor_core.atoms.tensor import (
    INDEX_TYPES,
    REDUCE_OP_TO_NUMERIC,
    Einsum,
    Getitem,
    Tensor,
    align_binary,
    align_tensor,
    align_tensors,
    fold_axes,
    get_default_prototype,
    getitem_tensor,
    index_tensor,
    index_tensor_numbers,
    is_array,
    name_output_dim,
    numeric_array,
    tensordot,
)
from funsor_core.atoms.tensor_idioms import (
    Finitary,
    getitem_funsor,
)

__all__ = [
    "Tensor", "align_tensor", "align_tensors", "align_binary", "is_array", "index_tensor",
    "index_tensor_numbers", "INDEX_TYPES", "getitem_tensor", "name_output_dim",
    "REDUCE_OP_TO_NUMERIC", "Einsum", "Getitem", "get_default_prototype", "numeric_array",
    "tensordot", "fold_axes", "Finitary", "getitem_funsor"
]
