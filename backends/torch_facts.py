"""Random keys and array facts of the torch backend, which the core asks for instead of
naming the backend; ``backends.torch`` re-exports them.

Example:
    >>> SPLITS_RNG_KEYS, tracks_gradients(torch.zeros(2, requires_grad=True))
    (False, True)
"""

from __future__ import annotations

import numpy as np
import torch
import torch.autograd.forward_ad as _FORWARD_AD

from backends.torch_provenance import ProvenanceTensor, provenance_of, with_provenance

__all__ = ["BROADCAST_SMALL_MATMUL", "LOGSUMEXP_GRAD_FINITE",
           "FUNSOR_DISTRIBUTIONS_MODULE", "FUNSOR_EINSUM_BACKEND",
           "FUNSOR_LOGSUMEXP_BACKEND", "FUNSOR_MAP_BACKEND", "PYRO_EINSUM_DIMS",
           "SPLITS_RNG_KEYS", "array_literal", "as_rng_key",
           "broadcast_axes", "expand_dense", "distributions", "is_raw_key",
           "promoted_einsum", "seed_values", "small_host_view", "tracks_gradients", "as_float32",
           "ProvenanceTensor", "TAGGED_ARRAY_TYPE", "provenance_of", "with_provenance"]

# Arrays tagged with (name, domain) pairs, which to_funsor makes Constants (provenance_of).
TAGGED_ARRAY_TYPE = ProvenanceTensor
# A key is a torch.Generator that advances itself (jax's keys are values, split per draw).
SPLITS_RNG_KEYS = False
# torch.logsumexp differentiates to NaN on a slice that is all -inf (the core repairs it).
LOGSUMEXP_GRAD_FINITE = False
# Whether a small batched matmul is faster as a broadcast product (XLA:CPU only).
BROADCAST_SMALL_MATMUL = False
# Pyro's einsum reads operands' dim names from a ``_pyro_dims`` attribute.
PYRO_EINSUM_DIMS = True
# funsor's einsum backend strings of this backend (``funsor.cnf.BACKEND_TO_*_BACKEND``).
FUNSOR_EINSUM_BACKEND = "torch"
FUNSOR_LOGSUMEXP_BACKEND = "pyro.ops.einsum.torch_log"
FUNSOR_MAP_BACKEND = "pyro.ops.einsum.torch_map"
# funsor's module of distribution wrappers (``funsor.distribution``'s table), as faces here.
FUNSOR_DISTRIBUTIONS_MODULE = "funsor_core.torch.distributions"


def as_rng_key(key):
    """The key torch's samplers take, from a key the caller passed (as it is).

    Example:
        >>> g = torch.Generator()
        >>> as_rng_key(g) is g
        True
    """
    return key


def seed_values(seed) -> np.ndarray:
    """The entries of a seed array, on the host.

    Example:
        >>> seed_values(torch.tensor([1, 2])).tolist()
        [1, 2]
    """
    return np.asarray(seed.detach().cpu())


def is_raw_key(values: np.ndarray) -> bool:
    """Whether host ``values`` already are a key of this backend (never: keys are Generators).

    Example:
        >>> is_raw_key(np.zeros(2, dtype=np.uint32))
        False
    """
    return False


def broadcast_axes(x) -> tuple[int, ...]:
    """The dims along which ``x`` repeats one slice in memory (stride 0, size above 1), as
    ``expand`` leaves them: work along them can be done once and broadcast.

    Example:
        >>> broadcast_axes(torch.ones(3, 1).expand(3, 4))
        (1,)
    """
    return tuple(i for i, (s, n) in enumerate(zip(x.stride(), x.shape)) if s == 0 and n > 1)


def expand_dense(x, shape: tuple):
    """``x`` broadcast to ``shape`` in memory of its own (where a stride-0 array reached
    torch's batched matmul, its derivative copied each matrix: Pyro's HMM step, 2T copies).

    Example:
        >>> expand_dense(torch.ones(1, 2), (3, 2)).stride()
        (2, 1)
    """
    return x.expand(shape).contiguous()


def tracks_gradients(x) -> bool:
    """Whether derivatives may flow through ``x``: it requires grad.

    Example:
        >>> tracks_gradients(torch.ones(2))
        False
    """
    return bool(getattr(x, "requires_grad", False))


def array_literal(x) -> str:
    """Source text that rebuilds ``x``.

    Example:
        >>> array_literal(torch.zeros(2, dtype=torch.float32))
        'torch.tensor([0.0, 0.0], dtype=torch.float32)'
    """
    data = np.asarray(x.detach().cpu())
    return f"torch.tensor({data.tolist()!r}, dtype=torch.{str(x.dtype).split('.')[-1]})"


def distributions():
    """``torch.distributions``, the library of distribution objects that ``to_funsor`` and
    ``to_data`` convert.

    Example:
        >>> distributions().Normal.__name__
        'Normal'
    """
    import torch.distributions

    return torch.distributions


def promoted_einsum(equation, *operands):
    """``torch.einsum`` promoting mixed dtypes as numpy and jax do (torch raises).

    Only a failed einsum pays for the check.

    Example:
        >>> x = torch.ones(2, dtype=torch.float32)
        >>> promoted_einsum("i,i->", x, torch.ones(2, dtype=torch.float64)).dtype
        torch.float64
    """
    try:
        return torch.einsum(equation, *operands)
    except RuntimeError:
        dtypes = {x.dtype for x in operands}
        if len(dtypes) == 1:
            raise
    dtype = operands[0].dtype
    for other in dtypes:
        dtype = torch.promote_types(dtype, other)
    return torch.einsum(equation, *[x.to(dtype) for x in operands])


# The kernels of ``ops.scatter_add`` and ``ops.scatter_set`` in ``backends.torch``'s table.
def _index_add_rows(dest, rows, values) -> bool:
    # One int64 index of rows of ``dest`` and one row of values each (a level's messages into
    # their parents): what ``index_add`` takes.
    return (type(rows) is torch.Tensor and type(values) is torch.Tensor
            and rows.dtype == torch.int64 and rows.dim() == 1 and dest.dim() >= 1
            and values.dtype == dest.dtype and rows.device == dest.device == values.device
            and values.shape[1:] == dest.shape[1:] and values.shape[:1] == rows.shape)


def torch_scatter_add(dest, index, values):
    """``dest`` with ``values`` added at ``index`` (a tuple of index arrays), out of place;
    repeated indices accumulate, as numpy's ``np.add.at``.

    Example:
        >>> torch_scatter_add(torch.zeros(3), (torch.tensor([2, 0, 2]),), torch.ones(3))
        tensor([1., 0., 2.])
    """
    if type(index) is tuple and len(index) == 1 and _index_add_rows(dest, index[0], values):
        return dest.index_add(0, index[0], values)  # (3 us; index_put 4-15 us, 1,000 rows)
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(torch.as_tensor(i, dtype=torch.int64, device=dest.device) for i in index)
    values = torch.as_tensor(values, dtype=dest.dtype, device=dest.device)
    return dest.index_put(index, values, accumulate=True)


def torch_scatter_set(dest, index, values):
    """``dest`` with ``dest[index] = values``, out of place (indices that do not repeat).

    Example:
        >>> torch_scatter_set(torch.zeros(3), (torch.tensor([2]),), torch.ones(1))
        tensor([0., 0., 1.])
    """
    index = tuple(torch.as_tensor(i, dtype=torch.int64, device=dest.device) for i in index)
    return dest.index_put(index, torch.as_tensor(values, dtype=dest.dtype, device=dest.device))


def as_float32(a):
    """``a`` as float32 (a 16-bit float array widened for kernels that need 32 bits).

    Example:
        >>> as_float32(torch.ones(2, dtype=torch.float16)).dtype
        torch.float32
    """
    return a.float()


_HOST_DTYPES = (torch.float32, torch.float64)


def small_host_view(x) -> np.ndarray | None:
    """A numpy view of ``x`` (no copy) when small eager Gaussian work on it may run in numpy
    (``atoms.gaussian.host``: 1 us a call where torch's dispatch costs 3-8 us on a few
    entries): a plain float32/float64 CPU tensor outside autograd (no ``requires_grad``),
    ``torch.jit.trace`` and ``torch.compile``; None otherwise (a provenance tensor, a
    functorch-wrapped one, other dtypes), and the work stays in torch.

    Example:
        >>> grad = torch.ones(2, requires_grad=True)
        >>> small_host_view(torch.ones(2)).tolist(), small_host_view(grad)
        ([1.0, 1.0], None)
    """
    if (type(x) is not torch.Tensor or x.requires_grad or x.dtype not in _HOST_DTYPES
            or x.device.type != "cpu" or _FORWARD_AD._current_level >= 0
            or torch.jit.is_tracing() or torch.compiler.is_compiling()):
        return None  # (inside a dual level a tensor may carry a tangent: numpy would drop it)
    try:
        return x.numpy()
    except (RuntimeError, TypeError):  # a wrapped tensor (torch.func transforms) has no data
        return None
