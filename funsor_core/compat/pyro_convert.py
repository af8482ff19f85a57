"""funsor 0.4.8's ``funsor.pyro.convert``: Pyro's conventions for moving between arrays,
distribution objects and funsors.

Batch dims sit on the left of an array and are named by position, ``_pyro_dim_{-k}`` for dim
``-k``; a caller may name the rightmost batch dims itself (``event_inputs``, e.g.
``("component",)``), and Pyro's names then count from the first dim left of those. Dims of
size 1 broadcast and name no input. Converters accept ``torch.distributions`` objects
(pyro's are subclasses) and return pyro's classes, as funsor does; ``pyro.distributions``
is imported only by the two functions that build distribution objects (``funsor_to_mvn``,
``funsor_to_cat_and_mvn``).

Example:
    >>> f = tensor_to_funsor(np.zeros((2, 3)), event_inputs=("i",))
    >>> f.inputs
    {'_pyro_dim_-1': Bint[2], 'i': Bint[3]}
    >>> funsor_to_tensor(f, 3, event_inputs=("i",)).shape
    (1, 2, 3)
"""

from __future__ import annotations

import importlib
import math

from funsor_core import ops
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.distribution.convert import torch_class
from funsor_core.domains import Array, Real, Reals, broadcast_shape
from funsor_core.interop.data import to_data
from funsor_core.terms import Funsor, to_funsor
from funsor_core.terms.contraction import Contraction

__all__ = ["DIM_TO_NAME", "NAME_TO_DIM", "default_dim_to_name", "default_name_to_dim",
           "tensor_to_funsor", "funsor_to_tensor", "dist_to_funsor", "mvn_to_funsor",
           "funsor_to_mvn", "funsor_to_cat_and_mvn", "matrix_and_mvn_to_funsor"]

# Pyro's plates use dims -1 ... -100 at most; each gets one fixed name.
DIM_TO_NAME = tuple(f"_pyro_dim_{d}" for d in range(-100, 0))
NAME_TO_DIM = dict(zip(DIM_TO_NAME, range(-100, 0)))


def default_dim_to_name(inputs_shape: tuple, event_inputs: tuple = ()) -> dict:
    """Names of the dims of a batch shape: ``event_inputs`` for the rightmost ones, Pyro's
    fixed names for the rest.

    Example:
        >>> default_dim_to_name((2, 3), ("i",))
        {-2: '_pyro_dim_-1', -1: 'i'}
    """
    names = DIM_TO_NAME + tuple(event_inputs)
    n = len(inputs_shape)
    return dict(zip(range(-n, 0), names[len(names) - n:]))


def default_name_to_dim(event_inputs: tuple = ()) -> dict:
    """The inverse of ``default_dim_to_name`` for every batch shape: name -> negative dim.

    Example:
        >>> default_name_to_dim(("i",))["i"], default_name_to_dim(("i",))["_pyro_dim_-1"]
        (-1, -2)
    """
    if not event_inputs:
        return NAME_TO_DIM
    names = DIM_TO_NAME + tuple(event_inputs)
    return dict(zip(names, range(-len(names), 0)))


def _check_event_inputs(event_inputs) -> tuple:
    if not isinstance(event_inputs, tuple):
        raise TypeError(f"event_inputs must be a tuple of names, got {event_inputs!r}")
    return event_inputs


def tensor_to_funsor(tensor, event_inputs: tuple = (), event_output: int = 0,
                     dtype="real") -> Tensor:
    """An array as a Tensor: its rightmost ``event_output`` dims are the output, the batch
    dims left of them are named by ``default_dim_to_name``.

    Example:
        >>> tensor_to_funsor(np.zeros((4, 3)), event_output=1).inputs
        {'_pyro_dim_-1': Bint[4]}
    """
    if not is_array(tensor):
        raise TypeError(f"tensor_to_funsor() needs an array, got {type(tensor).__name__}")
    _check_event_inputs(event_inputs)
    if not (isinstance(event_output, int) and 0 <= event_output <= len(tensor.shape)):
        raise ValueError(f"event_output must be an int in [0, {len(tensor.shape)}], "
                         f"got {event_output!r}")
    split = len(tensor.shape) - event_output
    output = Array[dtype, tuple(tensor.shape[split:])]
    return to_funsor(tensor, output, default_dim_to_name(tensor.shape[:split], event_inputs))


def _to_data(f: Funsor, name_to_dim: dict):
    # Only the inputs' own dims: an array of as many dims as its inputs need, not 100.
    return to_data(f, {k: name_to_dim[k] for k in f.inputs if k in name_to_dim})


def _left_pad(x, ndims: int, event_ndims: int = 0):
    """``x`` with size-1 dims prepended until its batch part has ``ndims`` dims."""
    batch = len(x.shape) - event_ndims
    if batch > ndims:
        raise ValueError(f"an array of batch shape {tuple(x.shape[:batch])} does not fit in "
                         f"ndims={ndims} batch dims")
    return ops.reshape(x, (1,) * (ndims - batch) + tuple(x.shape))


def funsor_to_tensor(funsor_: Tensor, ndims: int, event_inputs: tuple = ()):
    """A Tensor's array with its inputs at the dims ``default_name_to_dim`` gives them,
    left-padded to ``ndims`` dims.

    Example:
        >>> funsor_to_tensor(tensor_to_funsor(np.ones(3)), 2).shape
        (1, 3)
    """
    if not isinstance(funsor_, Tensor):
        raise TypeError(f"funsor_to_tensor() needs a Tensor, got {type(funsor_).__name__}")
    name_to_dim = default_name_to_dim(_check_event_inputs(event_inputs))
    unknown = [k for k in funsor_.inputs if k not in name_to_dim]
    if unknown:
        raise ValueError(f"inputs {unknown} are neither Pyro batch dims (_pyro_dim_*) nor "
                         f"among event_inputs={event_inputs}")
    data = _to_data(funsor_, name_to_dim)
    return _left_pad(data, ndims - len(funsor_.shape), len(funsor_.shape))


def dist_to_funsor(pyro_dist, event_inputs: tuple = ()) -> Funsor:
    """A distribution object as a funsor of its batch dims and ``value``.

    Example:
        >>> import torch
        >>> d = torch.distributions.Normal(torch.zeros(2), 1.0)
        >>> sorted(dist_to_funsor(d).inputs)
        ['_pyro_dim_-1', 'value']
    """
    dim_to_name = default_dim_to_name(pyro_dist.batch_shape, _check_event_inputs(event_inputs))
    return to_funsor(pyro_dist, Real, dim_to_name)


def _split_gaussian(f: Funsor) -> tuple[Gaussian, Funsor | None]:
    """``f = g + rest``: its one Gaussian, and the sum of its other terms (or None)."""
    if isinstance(f, Gaussian):
        return f, None
    if isinstance(f, Contraction) and f.red_op is None and f.bin_op is ops.add:
        parts = [t for t in f.terms if isinstance(t, Gaussian)]
        if len(parts) == 1:
            rest = [t for t in f.terms if t is not parts[0]]
            return parts[0], sum(rest[1:], rest[0])
    raise TypeError(f"expected a Gaussian or a Contraction holding one Gaussian, got {f}")


def mvn_to_funsor(pyro_dist, event_inputs: tuple = (), real_inputs: dict | None = None):
    """A ``MultivariateNormal`` as a funsor whose value is split into ``real_inputs`` (their
    sizes add up to the event size), in order.

    Example:
        >>> import torch
        >>> d = torch.distributions.MultivariateNormal(torch.zeros(3), torch.eye(3))
        >>> mvn_to_funsor(d, (), {"x": fc.Real, "y": fc.Reals[2]}).inputs
        {'x': Real, 'y': Reals[2]}
    """
    if not isinstance(pyro_dist, torch_class("MultivariateNormal")):
        raise TypeError(f"mvn_to_funsor() needs a MultivariateNormal, got {type(pyro_dist)}")
    funsor_dist = dist_to_funsor(pyro_dist, event_inputs)
    if not real_inputs:
        return funsor_dist
    size = sum(d.num_elements for d in real_inputs.values())
    if size != pyro_dist.event_shape[0]:
        raise ValueError(f"real_inputs {dict(real_inputs)} hold {size} numbers but the "
                         f"distribution's event shape is {tuple(pyro_dist.event_shape)}")
    gaussian, rest = _split_gaussian(funsor_dist(value="value"))  # rest: the normalizer
    inputs = {k: d for k, d in gaussian.inputs.items() if d.dtype != "real"}
    inputs.update(real_inputs)
    g = Gaussian(white_vec=gaussian.white_vec, prec_sqrt=gaussian.prec_sqrt, inputs=inputs)
    return g if rest is None else rest + g


def _pyro_distributions():
    # Pyro's classes, as funsor returns them (pyro is needed only by these converters).
    return importlib.import_module("pyro.distributions")


def _mvn_from_gaussian(gaussian: Gaussian, name_to_dim: dict, ndims: int):
    batch = gaussian.batch_inputs
    n = gaussian.dim
    loc = Tensor(gaussian.mean, tuple(batch.items()))
    prec = Tensor(gaussian.precision, tuple(batch.items()))
    loc = _left_pad(_to_data(loc, name_to_dim), ndims, 1)
    prec = _left_pad(_to_data(prec, name_to_dim), ndims, 2)
    prec = ops.expand(prec, tuple(loc.shape[:-1]) + (n, n))
    return _pyro_distributions().MultivariateNormal(loc, precision_matrix=prec)


def _one_real_input(f: Funsor) -> None:
    real = [k for k, d in f.inputs.items() if d.dtype == "real"]
    if len(real) != 1:
        raise ValueError(f"expected one real input, got {real} in {dict(f.inputs)}")


def funsor_to_mvn(gaussian: Funsor, ndims: int, event_inputs: tuple = ()):
    """A Gaussian (or a Gaussian plus a Tensor, whose constant is dropped) of one real input
    as pyro's ``MultivariateNormal`` with ``ndims`` batch dims.

    Example:
        >>> import torch
        >>> d = torch.distributions.MultivariateNormal(torch.ones(2), torch.eye(2))
        >>> funsor_to_mvn(dist_to_funsor(d)(value="v"), 1).loc.shape
        torch.Size([1, 2])
    """
    _one_real_input(gaussian)
    name_to_dim = default_name_to_dim(_check_event_inputs(event_inputs))
    return _mvn_from_gaussian(_split_gaussian(gaussian)[0], name_to_dim, ndims)


def funsor_to_cat_and_mvn(funsor_: Funsor, ndims: int, event_inputs: tuple):
    """A mixture of Gaussians (a Tensor plus a Gaussian of one real input, the last of
    ``event_inputs`` naming the components) as pyro's ``(Categorical, MultivariateNormal)``:
    the mixture weights, and the components along the mvn's rightmost batch dim.

    Example:
        >>> import torch
        >>> d = torch.distributions.MultivariateNormal(torch.zeros(3, 2), torch.eye(2))
        >>> cat, mvn = funsor_to_cat_and_mvn(dist_to_funsor(d, ("c",))(value="v"), 0, ("c",))
        >>> cat.probs.shape, mvn.batch_shape
        (torch.Size([3]), torch.Size([3]))
    """
    _one_real_input(funsor_)
    if not event_inputs:
        raise ValueError("funsor_to_cat_and_mvn() needs event_inputs, the last naming the "
                         "mixture components")
    gaussian, rest = _split_gaussian(funsor_)
    # log ∫ (t + g) dx = t + log ∫ g dx: the mixture weights; g normalized is each component.
    logits = gaussian.log_normalizer if rest is None else rest + gaussian.log_normalizer
    if not isinstance(logits, Tensor):
        raise TypeError(f"expected a Tensor plus one Gaussian, got {funsor_}")
    name_to_dim = default_name_to_dim(_check_event_inputs(event_inputs))
    component = event_inputs[-1]
    if component not in logits.inputs:
        raise ValueError(f"the components {component!r} are not an input of {funsor_}")
    logits = _left_pad(_to_data(logits, name_to_dim), ndims + 1)
    cat = _pyro_distributions().Categorical(logits=logits)
    return cat, _mvn_from_gaussian(gaussian, name_to_dim, ndims + 1)


def _mvn_scale_tril(mvn):
    """The scale_tril of a MultivariateNormal or an Independent Normal (diagonal)."""
    if isinstance(mvn, torch_class("MultivariateNormal")):
        return mvn.loc, mvn.scale_tril
    base = getattr(mvn, "base_dist", None)  # an Independent (torch's, or pyro's subclass)
    if isinstance(base, torch_class("Normal")) and mvn.reinterpreted_batch_ndims == 1:
        return mvn.base_dist.loc, ops.diag_embed(mvn.base_dist.scale)
    raise TypeError("matrix_and_mvn_to_funsor() needs a MultivariateNormal or a Normal "
                    f"with to_event(1), got {mvn}")


def matrix_and_mvn_to_funsor(matrix, mvn, event_dims: tuple = (), x_name: str = "value_x",
                             y_name: str = "value_y") -> Funsor:
    """The normalized conditional density of ``y = x @ matrix + noise``, noise ~ ``mvn``,
    as a funsor of ``x_name`` and ``y_name`` (and batch dims named as in
    ``tensor_to_funsor``). A diagonal ``mvn`` (an Independent Normal) is made dense, an
    O(Y^2) matrix where funsor keeps O(Y).

    Example:
        >>> import torch
        >>> noise = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
        >>> matrix_and_mvn_to_funsor(torch.ones(3, 2), noise).inputs
        {'value_x': Reals[3], 'value_y': Reals[2]}
    """
    loc, scale_tril = _mvn_scale_tril(mvn)
    x_size, y_size = matrix.shape[-2:]
    if tuple(loc.shape[-1:]) != (y_size,):
        raise ValueError(f"matrix of shape {tuple(matrix.shape)} maps to {y_size} numbers "
                         f"but the noise's event shape is {tuple(loc.shape[-1:])}")
    # w = L^-1 (y - x A - m) is standard normal: in square-root information form
    # z = [x, y], prec_sqrt = [-A L^-T; L^-T], white_vec = m L^-T, and w = z @ P - white_vec.
    prec_y = ops.transpose(ops.triangular_inv(scale_tril), -1, -2)
    prec_x = -ops.matmul(matrix, prec_y)
    batch = broadcast_shape(tuple(prec_x.shape[:-2]), tuple(prec_y.shape[:-2]),
                                tuple(loc.shape[:-1]))
    prec_sqrt = ops.cat([ops.expand(prec_x, batch + (x_size, y_size)),
                         ops.expand(prec_y, batch + (y_size, y_size))], -2)
    white_vec = ops.expand(ops.matmul(loc[..., None, :], prec_y)[..., 0, :], batch + (y_size,))
    log_det = ops.sum(ops.log(ops.diagonal(scale_tril, -2, -1)), -1)
    log_norm = -0.5 * y_size * math.log(2 * math.pi) - ops.expand(log_det, batch)
    white_vec = tensor_to_funsor(white_vec, event_dims, 1)
    prec_sqrt = tensor_to_funsor(prec_sqrt, event_dims, 2)
    inputs = dict(white_vec.inputs)
    inputs.update({x_name: Reals[x_size], y_name: Reals[y_size]})
    prec_sqrt = prec_sqrt.align(tuple(white_vec.inputs))
    g = Gaussian(white_vec=white_vec.data, prec_sqrt=prec_sqrt.data, inputs=inputs)
    return g + tensor_to_funsor(log_norm, event_dims)
