"""Array math on distribution terms: alignment of the arguments for broadcasting, the
batched log density, moments, enumeration and sampling. Pure functions of a distribution
term's arrays, called by its methods and by the rules in ``interpretations/exact``.

Example:
    >>> from funsor_core.distribution import Poisson
    >>> d = Poisson(fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]}), value=1.0)
    >>> np.round(d.data, 4)  # log(r) - r: log_density_tensor(Poisson, args) did it
    array([-1.    , -1.3069])
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.distribution.random import Rng
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.terms.base import Number, Variable
from funsor_core.terms.inputs import merge_all_inputs

__all__ = ["concrete", "with_arrays", "nan_invalid", "aligned", "aligned_arrays", "shapes",
           "floats_promoted", "int_as_real", "log_density_tensor", "take_last",
           "distinct_rows", "distinct_entries", "moment_tensor", "enumerate_tensor", "normalizer",
           "sample_distribution"]


def _infer_domains(cls, param_domains, value_domain):
    # The family's own (cached) shape inference; a class attribute set by base.py, so that
    # this module needs no import of it.
    return cls._infer_domains(param_domains, value_domain)


def concrete(*arrays) -> bool:
    """Whether every array has values now (a jax tracer under jit has none).

    Example:
        >>> concrete(np.zeros(2), np.ones(3))
        True
    """
    return all(ops.is_concrete(a) for a in arrays)


def with_arrays(args: tuple) -> tuple:
    """``args`` with each Number made a 0-d Tensor in the float dtype and backend of the first
    array among ``args`` (else of the active backend). A Python number given to a family stays
    a Number while no array is given with it, so that a template built under ``lazy`` holds
    no backend's array until a number is demanded (issue #27 item 17).

    Example:
        >>> with_arrays((fc.Number(2.0), fc.Tensor(np.ones(2, dtype=np.float32))))[0].data
        array(2., dtype=float32)
    """
    if Number not in map(type, args):
        return args
    for a in args:
        if isinstance(a, Tensor) and ops.is_floating(a.data):
            proto = a.data
            break
    else:
        proto = backend_module().asarray(0.0, "real")
    return tuple(Tensor.make(ops.new_full(proto, (), float(a.data)), {}) if type(a) is Number
                 else a for a in args)


def nan_invalid(cls, arrays: dict) -> dict:
    """``arrays`` (aligned parameters) with NaN where a traced entry breaks a constraint:
    under ``jax.jit`` nothing can be raised, so the density becomes NaN, never a wrong
    number. Concrete arrays were checked when the term was built and pass unchanged.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from funsor_core.distribution import Normal
        >>> f = jax.jit(lambda s: nan_invalid(Normal, {"loc": s, "scale": s})["scale"])
        >>> f(jnp.array([1.0, -1.0]))
        Array([ 1., nan], dtype=float64)
    """
    out = dict(arrays)
    for name, param in cls.params.items():
        x = out[name]
        if param.constraint.trivial or concrete(x):
            continue
        ok = param.constraint.check(x)
        ok = ops.reshape(ok, tuple(ok.shape) + (1,) * param.constraint.event_ndim)
        out[name] = ops.where(ok, x, ops.full_like(x, math.nan))
    for name, _, fn in cls.relations:
        if not concrete(*out.values()):
            ok = fn(**out)
            out[name] = ops.where(ok, out[name], ops.full_like(out[name], math.nan))
    return out


# -- evaluation --------------------------------------------------------------------------------
def aligned(t: Tensor, inputs: dict, nb: int, event_ndim: int | None):
    """``t``'s data with one dim per input of ``inputs`` (size 1 where absent), then ``nb``
    batch output dims (padded with 1s on the left) and its event dims.

    Example:
        >>> t = fc.Tensor(np.zeros((2, 3)), {"j": fc.Bint[2]})  # output Reals[3], one vector
        >>> aligned(t, {"i": fc.Bint[4], "j": fc.Bint[2]}, 1, 1).shape
        (1, 2, 1, 3)
    """
    data = align_tensor(inputs, t)
    shape = tuple(data.shape)
    n_in = len(inputs)
    out = shape[n_in:]
    k = len(out) if event_ndim is None else event_ndim
    pad = nb - (len(out) - k)
    if pad > 0:
        data = ops.reshape(data, shape[:n_in] + (1,) * pad + out)
    return data


def _full(x, shape: tuple):
    """``x`` broadcast to ``shape``, as an array (numpy gives scalars for 0-d arithmetic)."""
    if isinstance(x, np.generic):
        x = np.asarray(x)
    return ops.expand(x, shape) if tuple(x.shape) != shape else x


def shapes(cls, args: tuple) -> tuple:
    """``(batch output shape, event ndim of each argument)`` of ``cls(*args)``.

    Example:
        >>> from funsor_core.distribution import Dirichlet
        >>> shapes(Dirichlet, (fc.Tensor(np.ones((2, 3))), fc.Variable("v", fc.Reals[2, 3])))
        ((2,), (1, 1))
    """
    from_params = tuple(a.output for a in args[:-1])
    domain, out_batch = _infer_domains(cls, from_params, args[-1].output)
    ndims = tuple(len(a.shape) if p.event_ndim is None else p.event_ndim
                  for p, a in zip(cls.params.values(), args))
    return out_batch, ndims + (len(domain.shape) - len(out_batch),)


def aligned_arrays(cls, args: tuple, inputs: dict, with_value: bool = True) -> dict:
    """The Tensor arguments of ``cls(*args)`` aligned for broadcasting over ``inputs`` and the
    batch output dims (see ``aligned``), by field name; traced invalid parameters made NaN.

    Example:
        >>> from funsor_core.distribution import Normal
        >>> args = (fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}), fc.Tensor(np.ones(3)),
        ...         fc.Tensor(np.zeros(3)))
        >>> {k: a.shape for k, a in aligned_arrays(Normal, args, {"i": fc.Bint[2]}).items()}
        {'loc': (2, 1), 'scale': (1, 3), 'value': (1, 3)}
    """
    out_batch, ndims = shapes(cls, args)
    names = cls.fields if with_value else cls.fields[:-1]
    arrays = {name: aligned(arg, inputs, len(out_batch), k)
              for name, arg, k in zip(names, args, ndims)}
    arrays.update(nan_invalid(cls, {k: arrays[k] for k in cls.params}))
    return arrays


def floats_promoted(arrays: dict, params) -> dict:
    """``arrays`` with each integer parameter among ``params`` in the float dtype that the
    backend's promotion gives the floating arrays (parameters and value), as torch's own
    ``log_prob`` computes: ``Binomial(total_count=int64, probs=float64)`` evaluates its
    ``lgamma(total_count + 1)`` in float64, not in the default float32 (2e-7 off). With no
    floating array, or no integer parameter, ``arrays`` is returned as it is.

    Example:
        >>> out = floats_promoted({"total_count": np.array([10]), "probs": np.array([0.5]),
        ...                        "value": np.array([3.0])}, ("total_count", "probs"))
        >>> out["total_count"].dtype
        dtype('float64')
    """
    ints = [k for k in params if not ops.is_floating(arrays[k])]
    if not ints:
        return arrays
    zero = None
    for a in arrays.values():
        if ops.is_floating(a):  # a 0-d zero per float dtype: their sum has the promoted one
            z = ops.new_zeros(a, ())
            zero = z if zero is None or z.dtype == zero.dtype else ops.add(zero, z)
    if zero is None:
        return arrays
    out = dict(arrays)
    for k in ints:
        if not str(arrays[k].dtype).endswith("bool"):  # (a bool is a mask, not a number)
            out[k] = ops.add(arrays[k], zero)
    return out


def int_as_real(x, proto):
    """The integer array ``x`` as the float dtype its backend promotes it to with the float
    array ``proto`` given with it (torch: ``proto``'s; numpy: float64), as the family's own
    ``log_prob`` computes; with no ``proto`` (or one of another backend), the default float.
    Cast to torch's default float32 first, ``loc = 2**24 + 1`` became ``2**24``.

    Example:
        >>> int_as_real(np.array([2**24 + 1]), np.zeros((), np.float64))
        array([16777217.])
    """
    if proto is None or type(proto) is not type(x):
        return ops.astype(x, "real")
    return ops.add(x, ops.new_zeros(proto, ()))


def log_density_tensor(cls, args: tuple) -> Tensor:
    """The log density of ``cls(*args)`` with all-Tensor ``args``, as a Tensor over the union
    of their inputs (-inf outside the support; summed over batch output dims).

    Example:
        >>> from funsor_core.distribution import Exponential
        >>> args = (fc.Tensor(np.array(2.0)), fc.Tensor(np.array([-1.0, 1.0])))
        >>> log_density_tensor(Exponential, args).data  # a value of two independent draws
        array(-inf)
    """
    inputs = merge_all_inputs(args, cls.__name__)
    out_batch, ndims = shapes(cls, args)
    arrays = floats_promoted(aligned_arrays(cls, args, inputs), cls.params)
    value = arrays.pop("value")
    ok = cls.in_support(value, **arrays)
    if ok is not None and _all_true(ok):
        ok = None  # every value in the support: no mask (two passes over the density fewer)
    if ok is not None:
        fill = cls.fill_value(value, **arrays)
        mask = ops.reshape(ok, tuple(ok.shape) + (1,) * ndims[-1]) if ndims[-1] else ok
        if ops.is_floating(value):  # a NaN value is in no support, yet its density is NaN:
            mask = ops.or_(mask, ops.ne(value, value))  # kept, log_prob makes it NaN
        value = ops.where(mask, value, fill)
    lp = cls.log_prob(value, **arrays)
    if ok is not None:
        # -inf outside the support, but NaN stays NaN: a traced invalid parameter (made NaN
        # above) or a NaN value must not turn into a -inf that looks like an impossible value.
        ok = ops.or_(ok, ops.ne(lp, lp))
        lp = ops.where(ok, lp, ops.full_like(lp, -math.inf))
    if out_batch:
        lp = ops.sum(lp, tuple(range(-len(out_batch), 0)))
    return Tensor.make(_full(lp, tuple(dom.size for dom in inputs.values())), inputs)


def _all_true(ok) -> bool:
    # Read on the host (no compile of a reduction per new shape on jax); a traced mask is
    # never known to be all true.
    return ops.is_concrete(ok) and bool(np.all(ops.to_numpy(ok)))


def moment_tensor(cls, args: tuple, which: int) -> Tensor:
    """The mean (``which=0``) or variance (1) of the value of ``cls(*args)``, a Tensor over
    the parameters' inputs.

    Example:
        >>> from funsor_core.distribution import Poisson
        >>> moment_tensor(Poisson, (fc.Tensor(np.array(3.0)), fc.Variable("value", fc.Real)),
        ...               1).data
        array(3.)
    """
    args = with_arrays(args)
    params = args[:-1]
    if not all(isinstance(p, Tensor) for p in params):
        raise NotImplementedError(f"{cls.__name__}.mean()/variance() need Tensor parameters, "
                                  f"got {[type(p).__name__ for p in params]}")
    inputs = merge_all_inputs(params)
    arrays = aligned_arrays(cls, args, inputs, with_value=False)
    result = cls.moments(**arrays)[which]
    shape = tuple(dom.size for dom in inputs.values()) + args[-1].output.shape
    return Tensor.make(_full(result, shape), dict(inputs), "real")


def enumerate_tensor(cls, args: tuple, expand: bool) -> Tensor:
    """The finite support of ``cls(*args)``'s value along a new input named like it.

    Example:
        >>> from funsor_core.distribution import BernoulliProbs
        >>> v = fc.Variable("value", fc.Real)
        >>> enumerate_tensor(BernoulliProbs, (fc.Tensor(np.array(0.5)), v), False).data
        array([0., 1.])
    """
    args = with_arrays(args)
    value = args[-1]
    size = value.output.dtype
    proto = next(t.data for t in args if isinstance(t, Tensor) and ops.is_floating(t.data))
    if size == "real":  # Bernoulli: the values 0.0 and 1.0, in the parameters' float dtype
        data, dtype = ops.getitem(ops.new_eye(proto, 2), (1,)), "real"
    else:
        data, dtype = ops.new_arange(proto, size), size
    n = data.shape[0]
    inputs = {value.name: Bint[n]}
    if expand:
        batch = merge_all_inputs(args[:-1])
        batch = {k: v for k, v in batch.items() if v.dtype != "real"}
        shape = (n,) + tuple(v.size for v in batch.values())
        data = ops.expand(ops.reshape(data, (n,) + (1,) * len(batch)), shape)
        inputs.update(batch)
    return Tensor(data, inputs, dtype)


def normalizer(cls, params: tuple):
    """The log mass of ``cls(*params, value)`` over its value: 0, as a Number; a Tensor of 0
    and NaN over the parameters' inputs where a traced parameter breaks a constraint (under
    ``jax.jit`` an invalid distribution must not integrate to 1).

    Example:
        >>> from funsor_core.distribution import Normal
        >>> normalizer(Normal, (fc.Tensor(np.array(0.0)), fc.Tensor(np.array(1.0)))).data
        0.0
    """
    if not all(isinstance(p, Tensor) for p in params) or concrete(*(p.data for p in params)):
        return Number(0.0)
    inputs = merge_all_inputs(params)
    nb = max(len(p.shape) - (len(p.shape) if q.event_ndim is None else q.event_ndim)
             for p, q in zip(params, cls.params.values()))
    arrays = {k: aligned(p, inputs, nb, q.event_ndim)
              for (k, q), p in zip(cls.params.items(), params)}
    checked = nan_invalid(cls, arrays)
    zero = None
    for x in checked.values():
        event = len(x.shape) - len(inputs) - nb
        part = 0.0 * x
        if event + nb:
            part = ops.sum(part, tuple(range(-(event + nb), 0)))
        zero = part if zero is None else zero + part
    return Tensor.make(_full(zero, tuple(d.size for d in inputs.values())), inputs)


# -- a table's entries at integer values ------------------------------------------------------
# Below this many numbers in the broadcast (*batch, n), the one-hot sum's five array calls
# beat the gather's Python (numpy and torch, K = 3: 42 against 85 us per call on numpy).
GATHER_ABOVE = 1 << 12


def take_last(table, index):
    """``table[..., index]`` with the batch dims of both broadcast: for a large broadcast, a
    gather, ``n`` times fewer numbers than a one-hot sum over the broadcast ``(*batch, n)``
    (Pyro's enumerated HMMs: ``K^2 T`` against ``K^3 T``). An index outside ``0 .. n - 1``
    (a value outside the support, which ``log_density_tensor`` masks) is clamped into it.

    Example:
        >>> take_last(np.array([[0.1, 0.2, 0.7]]), np.array([[2], [0]])).tolist()
        [[0.7], [0.1]]
    """
    n = table.shape[-1]
    ndim = max(len(table.shape) - 1, len(index.shape))
    tb = (1,) * (ndim - len(table.shape) + 1) + tuple(table.shape[:-1])
    ib = (1,) * (ndim - len(index.shape)) + tuple(index.shape)
    if (n * math.prod(max(t, i) for t, i in zip(tb, ib)) > GATHER_ABOVE
            and not ops.is_floating(index) and ops.is_floating(table)):
        index = ops.clamp(index, 0, n - 1)
        if not any(t > 1 and i > 1 for t, i in zip(tb, ib)):
            return _take_apart(table, index, tb, ib)
        return ops.getitem(table, _broadcast_index(table, ops.reshape(index, ib)))
    hit = ops.eq(ops.new_arange(index, 0, n, 1), index[..., None])
    return ops.sum(ops.where(hit, table, ops.full_like(table, 0.0)), -1)


def _take_apart(table, index, tb: tuple, ib: tuple):
    # No batch dim is > 1 in both table and index (Pyro's enumerated steps: probs over
    # (x_prev, time), the value over x_curr): a take of the flat index along the last dim,
    # (*table batch, m), whose dims are then interleaved back into the broadcast order. A
    # 1-d index is several times faster than one advanced index per dim (torch: 1.0 against
    # 2.4 ms at (16, 999, 1, 16) by (1, 1, 16); with the gradient 2.8 against 17.6 ms).
    taken = ops.reshape(ops.getitem(table, (Ellipsis, ops.reshape(index, (-1,)))), tb + ib)
    shape = tuple(max(t, i) for t, i in zip(tb, ib))
    last_table = max((k for k, t in enumerate(tb) if t > 1), default=-1)
    if all(i == 1 for i in ib[:last_table + 1]):
        return ops.reshape(taken, shape)  # the index's dims all follow the table's
    ndim = len(tb)
    axes = tuple(a for k in range(ndim) for a in (k, ndim + k))
    return ops.reshape(ops.permute(taken, axes), shape)


def _broadcast_index(table, index) -> tuple:
    # One integer array per dim of ``table``, broadcasting together with ``index`` (padded
    # to the batch's ndim) to the batch shape: aranges over table's batch dims (size 1:
    # zeros), then the index. All dims are advanced indices, so the result keeps the
    # broadcast order of the dims.
    ndim = len(index.shape)
    pad = ndim - (len(table.shape) - 1)
    lead = tuple(ops.reshape(ops.new_arange(index, 0, size, 1),
                             (1,) * (pad + k) + (size,) + (1,) * (ndim - pad - k - 1))
                 for k, size in enumerate(table.shape[:-1]))
    return (*lead, index)



def distinct_rows(x):
    """``x`` with one row (last dim) per dim along which it repeats a row in memory (stride 0,
    size above 1, as ``expand`` leaves them: Pyro broadcasts an HMM site's ``K x K`` probs over
    its ``T`` time steps); ``x`` itself where there is none. A function acting on each row alone
    is then computed once per distinct row and ``ops.expand``ed back to ``x.shape``: the same
    numbers, and the derivative of the expand sums over those dims, as the original
    ``expand``'s does.

    Example:
        >>> x = np.broadcast_to(np.array([[1.0, 3.0]]), (1000, 2))
        >>> y = ops.expand(np.log(distinct_rows(x)), x.shape)  # two logs, not 2,000
        >>> distinct_rows(x).shape, y.strides, bool(np.allclose(y, np.log(x)))
        ((1, 2), (0, 8), True)
    """
    axes = backend_of(x).broadcast_axes(x)
    last = len(x.shape) - 1
    if not axes or axes == (last,):
        return x
    return x[tuple(slice(0, 1) if i in axes and i != last else slice(None)
                   for i in range(last + 1))]

def distinct_entries(x, event_ndim: int):
    """``x`` with one entry per batch dim along which it repeats in memory (stride 0, size
    above 1, as ``expand`` leaves them), its last ``event_ndim`` dims whole: a per-entry check
    (a scale's sign, a probability vector's) made on it answers for all of ``x``, and a bad
    entry's index in it is an index of the same bad entry in ``x``. ``x`` itself where nothing
    repeats (always on jax, whose arrays show no strides).

    Example:
        >>> x = np.broadcast_to(np.array([[2.0]]), (1000, 3))  # one number, 3,000 times
        >>> distinct_entries(x, 0).shape, distinct_entries(x, 1).shape
        ((1, 1), (1, 3))
    """
    axes = backend_of(x).broadcast_axes(x)
    batch = len(x.shape) - event_ndim
    if not any(i < batch for i in axes):
        return x
    return x[tuple(slice(0, 1) if i in axes and i < batch else slice(None)
                   for i in range(len(x.shape)))]


# -- sampling --------------------------------------------------------------------------------
def _grads_may_flow(arrays) -> bool:
    for x in arrays:
        if backend_of(x).tracks_gradients(x):
            return True
    return False


_NOT_SAMPLEABLE = (
    "cannot sample {names} from {family}: sample() draws a distribution's value (here "
    "{value!r}) given Tensor parameters. {why}"
)


def sample_distribution(d, names: frozenset, sample_inputs: dict, rng_key=None):
    """Draw the value of the distribution term ``d``: ``Delta(value, point)``; the sampler that
    ``funsor_core.distribution.base`` registers for distribution terms (``d.sample(...)``).

    The family's ``draw`` gives a point of the value's domain for every batch entry (and
    every draw along ``sample_inputs``). A reparameterized family's point carries gradients to
    the parameters (Normal, LogNormal, MultivariateNormal, Exponential, Laplace, Uniform,
    StudentT; Gamma, Beta, Dirichlet through the backend's implicit gradient of gamma draws, on
    torch and jax). Any other point is detached, and the Delta's log density is the DiCE
    factor ``log p(x) - detach(log p(x))``: zero in value, the score-function gradient where
    gradients flow. ``rng_key``: see ``funsor_core.distribution.random``.

    Returns ``d`` itself when its value is not among ``names``.

    Example:
        >>> from funsor_core.distribution import Exponential
        >>> from interpretations import lazy
        >>> with lazy:
        ...     d = Exponential(2.0)
        >>> sample_distribution(d, frozenset({"value"}), {}, rng_key=0).inputs
        {'value': Real}

    Raises:
        NotImplementedError: when ``names`` include parameters' inputs, or the parameters
            are not Tensors (lazy ones can be evaluated first, e.g. by substitution).
    """
    cls, args = type(d), with_arrays(d._args)
    value, params = args[-1], args[:-1]
    param_inputs = merge_all_inputs(params)
    in_value = isinstance(value, Variable) and value.name in names
    if not in_value or names & param_inputs.keys():
        if not names & d.inputs.keys():
            return d
        raise NotImplementedError(_NOT_SAMPLEABLE.format(
            names=sorted(names & d.inputs.keys()), family=cls.__name__, value=value,
            why="Its parameters depend on them: sample those first, or sum them out."))
    if not all(isinstance(p, Tensor) for p in params):
        raise NotImplementedError(_NOT_SAMPLEABLE.format(
            names=[value.name], family=cls.__name__, value=value,
            why=f"Its parameters are {[type(p).__name__ for p in params]}; substitute values "
                "for their free inputs first."))
    arrays = aligned_arrays(cls, args, param_inputs, with_value=False)
    lead = (1,) * len(sample_inputs)
    arrays = {k: ops.reshape(a, lead + tuple(a.shape)) for k, a in arrays.items()}
    out_batch, _ = shapes(cls, args)
    batch = tuple(v.size for v in sample_inputs.values()) + tuple(
        v.size for v in param_inputs.values()) + out_batch
    proto = next(p.data for p in params if ops.is_floating(p.data))
    x = cls.draw(Rng(proto, rng_key), batch, **arrays)
    inputs = {**sample_inputs, **param_inputs}
    dtype = value.output.dtype
    if dtype != "real":
        x = ops.astype(x, "int")
    log_density = 0.0
    if not cls.reparameterized:
        x = ops.detach(x)
        if _grads_may_flow(arrays.values()):
            lp = cls.log_prob(x, **arrays)
            nb = len(out_batch)
            lp = ops.sum(lp, tuple(range(-nb, 0))) if nb else lp
            dice = lp - ops.detach(lp)
            shape = tuple(v.size for v in inputs.values())
            dice = ops.expand(dice, shape) if tuple(dice.shape) != shape else dice
            log_density = Tensor(dice, inputs)
    point = Tensor(x, inputs, dtype)
    return Delta(value.name, point, log_density)
