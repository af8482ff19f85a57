"""funsor-core: probabilistic inference by term rewriting over named, typed functional tensors.

``import funsor_core as fc`` loads the default rules (``exact``) and the numpy backend.

Example:
    >>> import funsor_core as fc
    >>> f = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> f.reduce(ops.logaddexp, "j").inputs
    {'i': Bint[2]}
"""

import backends.numpy  # noqa: F401  (the default backend's kernels)

# Last: the rule modules import the terms above; this installs them and makes exact default.
import interpretations as _interpretations  # noqa: E402,I001
from backends.jax_import import register_pytrees_with_jax as _pytrees_with_jax
from funsor_core import ops
from funsor_core.algorithms.adjoint import (
    AdjointTape,
    DiscreteModel,
    PosteriorSample,
    adjoint,
    forward_backward,
    infer_discrete,
)
from funsor_core.algorithms.adjoint.scatter import Scatter
from funsor_core.algorithms.compiled import (
    MemoryBudgetError,
    compile,
    cost,
    functional,
    memory_budget,
    plan,
)
from funsor_core.algorithms.contract.einsum import naive_einsum, naive_plated_einsum
from funsor_core.algorithms.filter.windowed import windowed_filter
from funsor_core.analysis.affine import extract_affine, is_affine
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.summary import Moments, moments
from funsor_core.atoms.int_range import IntRangeError
from funsor_core.atoms.tensor import Tensor
from funsor_core.atoms.tensor_idioms import (
    REDUCE_OP_TO_NUMERIC,
    Einsum,
    Finitary,
    Getitem,
    get_default_prototype,
    numeric_array,
    tensordot,
)
from funsor_core.domains import Array, Bint, Domain, Real, Reals, bint, reals
from funsor_core.engine.backend import get_backend, set_backend, set_default_backend
from funsor_core.engine.cache import cache_info, clear_caches
from funsor_core.engine.interpreter import (
    Interpretation,
    get_interpretation,
    reflect,
    set_debug,
    set_default_interpretation,
)
from funsor_core.interop.data import (
    LazyTermError,
    NoDataError,
    SeveralValuesError,
    array_to_funsor,
    function,
    to_data,
)
from funsor_core.sampling.draw import extract_samples, sample  # extract_samples: issue 16
from funsor_core.sum_product import (
    naive_sequential_sum_product,
    partial_sum_product,
    sequential_sum_product,
)
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import (
    Align,
    Binary,
    DomainError,
    Funsor,
    Number,
    Reduce,
    Subs,
    Unary,
    Variable,
    to_funsor,
)
from funsor_core.terms.constant import Constant
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.factory import make_funsor
from funsor_core.terms.integrate import Integrate
from funsor_core.terms.lifting import symbolic
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.printing import pretty, quote
from funsor_core.terms.product import Product, Tuple
from funsor_core.terms.reshaping import Cat, Function, Independent, Lambda, Slice, Stack
from funsor_core.terms.traversal import reinterpret, substitute

# Submodules, not attributes of the package: when a user imports ``interpretations`` first,
# that package is still half-initialized here (issue 27, item 14).
from interpretations.exact import exact as _exact  # noqa: E402
from interpretations.optimize import apply_optimizer  # noqa: E402

set_default_interpretation(_exact)


# ``fc.einsum`` and ``fc.sum_product`` are the modules, as in funsor (``funsor.einsum.einsum``,
# ``from funsor.sum_product import sum_product``). Calling the module calls its namesake
# function, so ``fc.sum_product(...)`` keeps working without shadowing the module.
class _CallableModule(type(ops)):
    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rsplit(".", 1)[-1])(*args, **kwargs)


def _expose_module(module) -> None:
    module.__class__ = _CallableModule
    globals()[module.__name__.rsplit(".", 1)[-1]] = module


import funsor_core.adjoint as _adjoint_module  # noqa: E402
import funsor_core.distribution as distribution  # noqa: E402  (``fc.distribution.Normal``)
import funsor_core.einsum as _einsum_module  # noqa: E402
import funsor_core.sum_product as _sum_product_module  # noqa: E402

_expose_module(_adjoint_module)  # fc.adjoint(...) and fc.adjoint.AdjointTape both work
_expose_module(_einsum_module)
_expose_module(_sum_product_module)



def install_as_funsor():
    """Serve ``import funsor`` (and funsor 0.4.8's ``funsor.*`` modules) from funsor-core in
    this process; opt-in, see ``funsor_core.install``. Returns the ``funsor`` module.

    Example (in a fresh process; see ``funsor_core.install`` for the command line):
        >>> from funsor_core.install import ENVIRONMENT_SWITCH
        >>> ENVIRONMENT_SWITCH  # the variable a written sitecustomize honours
        'FUNSOR_CORE_AS_FUNSOR'
    """
    # Imported on call: ``python -m funsor_core.install`` runs that module as __main__.
    from funsor_core.install import install_as_funsor as install

    return install()


__version__ = "0.1.0"

# The interpretation objects live in the ``interpretations`` package (funsor_core imports no
# interpretation: the rules import it); a user who looks for them here is told where they are.
_INTERPRETATION_NAMES = frozenset({
    "exact", "eager", "EXACT", "lazy", "LAZY", "normalize", "NORMALIZE", "optimize", "OPTIMIZE",
    "moment_matching", "MOMENTMATCHING", "MonteCarlo", "MONTECARLO", "monte_carlo",
    "memoize", "Memoize", "sequential", "SEQUENTIAL", "sharded", "Sharded", "LoopyBP", "Gibbs"})


def __getattr__(name: str):
    if name in _INTERPRETATION_NAMES:
        raise AttributeError(f"module 'funsor_core' has no attribute {name!r}: interpretations "
                             f"are in the interpretations package, e.g. `from interpretations "
                             f"import {name}` (then `with {name}: ...`)")
    raise AttributeError(f"module 'funsor_core' has no attribute {name!r}")

__all__ = [
    "Align", "Array", "Binary", "Bint", "Cat", "Domain", "DomainError", "Function", "Funsor",
    "Independent", "Interpretation", "Lambda", "LazyTermError", "NoDataError", "Number", "Real",
    "SeveralValuesError",
    "Reals", "Reduce", "Slice",
    "Stack", "Subs", "Tensor", "Unary", "Variable", "array_to_funsor", "bint", "function",
    "get_backend", "get_interpretation", "ops", "set_default_backend", "pretty", "quote",
    "reals", "reflect",
    "reinterpret", "set_backend", "set_debug", "set_default_interpretation", "substitute",
    "to_data", "to_funsor", "Contraction", "Delta", "Integrate", "einsum", "naive_einsum",
    "naive_plated_einsum", "naive_sequential_sum_product", "partial_sum_product",
    "sequential_sum_product", "sum_product", "Gaussian", "align_gaussian", "Moments", "moments",
    "extract_affine",
    "apply_optimizer", "is_affine", "sample", "Einsum", "Finitary", "Getitem",
    "REDUCE_OP_TO_NUMERIC", "get_default_prototype",
    "numeric_array", "tensordot", "Constant", "Product", "Tuple", "make_funsor", "Scatter",
    "symbolic", "Approximate", "AdjointTape", "PosteriorSample", "adjoint", "extract_samples",
    "forward_backward", "DiscreteModel", "infer_discrete",
    "distribution",
    "MarkovProduct", "windowed_filter", "cache_info", "clear_caches", "install_as_funsor",
    "functional", "plan", "cost", "memory_budget", "MemoryBudgetError", "IntRangeError",
]  # fc.compile is public too, but kept out of __all__: a star import must not shadow the builtin

_pytrees_with_jax()
