"""funsor's ``funsor.pyro.convert`` module path: Pyro's conventions between arrays,
distribution objects and funsors. A thin face; the implementation lives in
``funsor_core.compat.pyro_convert``.

Example:
    >>> from funsor_core.pyro.convert import tensor_to_funsor
    >>> tensor_to_funsor(np.zeros(2)).inputs
    {'_pyro_dim_-1': Bint[2]}
"""

from funsor_core.compat.pyro_convert import (
    DIM_TO_NAME,
    NAME_TO_DIM,
    default_dim_to_name,
    default_name_to_dim,
    dist_to_funsor,
    funsor_to_cat_and_mvn,
    funsor_to_mvn,
    funsor_to_tensor,
    matrix_and_mvn_to_funsor,
    mvn_to_funsor,
    tensor_to_funsor,
)

__all__ = ["DIM_TO_NAME", "NAME_TO_DIM", "default_dim_to_name", "default_name_to_dim",
           "tensor_to_funsor", "funsor_to_tensor", "dist_to_funsor", "mvn_to_funsor",
           "funsor_to_mvn", "funsor_to_cat_and_mvn", "matrix_and_mvn_to_funsor"]
