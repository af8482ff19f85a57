"""Conversion between distribution funsors and ``torch.distributions`` objects.

``fc.to_funsor(torch.distributions.Normal(loc, scale), fc.Real, dim_to_name)`` gives the
family of the same name: batch dims named by ``dim_to_name`` become inputs, dims that an
``Independent`` reinterprets become batch output dims (summed in the log density), and the
value is ``Variable("value", ...)``. ``fc.to_data(d, name_to_dim)`` goes back. torch is
imported on first use: funsor-core itself never imports it.

jax has no standard distribution objects (numpyro's are not a dependency, and
``jax.scipy.stats`` holds functions, not objects): on jax, build the families directly from
arrays, e.g. ``Normal(fc.Tensor(loc, {"i": Bint[3]}), scale)``; their log densities,
samples and conjugate updates are the same on every backend.

Families with a torch.distributions counterpart: Normal, LogNormal, MultivariateNormal,
Gamma, Beta, Dirichlet, Exponential, Laplace, StudentT, Uniform, VonMises, Categorical
(``probs`` or ``logits``), Bernoulli (``probs`` or ``logits``), Binomial, Multinomial,
Poisson, HalfNormal, HalfCauchy, Cauchy, Gumbel, Chi2, FisherSnedecor, Pareto, Weibull,
Geometric, NegativeBinomial, OneHotCategorical, ContinuousBernoulli, RelaxedBernoulli,
LowRankMultivariateNormal (and an ``Independent`` of any of these).

Example:
    >>> import torch
    >>> d = torch.distributions.Normal(torch.zeros(3), torch.ones(3))
    >>> f = fc.to_funsor(d, fc.Real, {-1: "i"})
    >>> type(f).__name__, f.inputs
    ('Contraction', {'i': Bint[3], 'value': Real})
"""

from __future__ import annotations

import numbers
import weakref
from types import ModuleType

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.distribution.array_math import floats_promoted
from funsor_core.distribution.constraints import CHECKED_UPSTREAM, PROBS
from funsor_core.distribution.convert_wrappers import wrapper_to_funsor
from funsor_core.distribution.registry import FAMILIES
from funsor_core.domains import Real, Reals
from funsor_core.engine.backend import BackendTable, backend_of
from funsor_core.engine.cache import FastCache
from funsor_core.engine.interpreter import get_interpretation
from funsor_core.interop.data import to_data
from funsor_core.terms.base import DomainError, Variable, register_term_hook, to_funsor

__all__ = ["TORCH_NAMES", "torch_class", "dist_to_data", "object_to_funsor"]

# family -> torch.distributions class of the same parameters (same names).
TORCH_NAMES = {
    "Normal": "Normal", "NonreparameterizedNormal": "Normal", "LogNormal": "LogNormal",
    "MultivariateNormal": "MultivariateNormal", "Gamma": "Gamma",
    "NonreparameterizedGamma": "Gamma", "Beta": "Beta", "NonreparameterizedBeta": "Beta",
    "Dirichlet": "Dirichlet", "NonreparameterizedDirichlet": "Dirichlet",
    "Exponential": "Exponential", "Laplace": "Laplace", "StudentT": "StudentT",
    "Uniform": "Uniform", "VonMises": "VonMises", "Categorical": "Categorical",
    "CategoricalLogits": "Categorical", "BernoulliProbs": "Bernoulli",
    "BernoulliLogits": "Bernoulli", "Binomial": "Binomial", "Multinomial": "Multinomial",
    "Poisson": "Poisson", "HalfNormal": "HalfNormal", "HalfCauchy": "HalfCauchy",
    "Cauchy": "Cauchy", "Gumbel": "Gumbel", "Chi2": "Chi2", "Pareto": "Pareto",
    "Weibull": "Weibull", "Geometric": "Geometric", "NegativeBinomial": "NegativeBinomial",
    "FisherSnedecor": "FisherSnedecor", "OneHotCategorical": "OneHotCategorical",
    "ContinuousBernoulli": "ContinuousBernoulli", "RelaxedBernoulli": "RelaxedBernoulli",
    "LowRankMultivariateNormal": "LowRankMultivariateNormal",
}
# torch class -> family, where the family depends on which parameter was given.
_BY_PARAM = {"Categorical": ("CategoricalLogits", "Categorical"),
             "Bernoulli": ("BernoulliLogits", "BernoulliProbs")}
# numpyro's classes that are named by their parameter (its Bernoulli, Categorical, Binomial
# are functions choosing one) -> family.
_PARAM_CLASSES = {"BernoulliProbs": "BernoulliProbs", "BernoulliLogits": "BernoulliLogits",
                  "CategoricalProbs": "Categorical", "CategoricalLogits": "CategoricalLogits",
                  "BinomialProbs": "Binomial", "MultinomialProbs": "Multinomial",
                  "RelaxedBernoulliLogits": "RelaxedBernoulli"}


def _library(backend: ModuleType | None = None) -> ModuleType:
    """The distribution objects' library of ``backend`` (default: the first backend with
    one, ``torch.distributions``), which the backend exports as ``distributions()``."""
    if backend is None:
        return next(iter(BackendTable("distributions").values()))()
    return backend.distributions()


def torch_class(name: str, backend: ModuleType | None = None):
    """The ``torch.distributions`` class of the family ``name`` (from the library of
    ``backend``, default the backend that has one).

    Example:
        >>> torch_class("BernoulliLogits").__name__
        'Bernoulli'
    """
    torch_name = TORCH_NAMES.get(name)
    if torch_name is None:
        raise NotImplementedError(f"{name} has no torch.distributions counterpart (pyro's "
                                  "would be needed); its log density, samples and conjugate "
                                  "updates work without one")
    return getattr(_library(backend), torch_name)


def _family_of(raw, td: ModuleType):
    # By inheritance: the first class in the MRO that the library itself defines (a subclass
    # from elsewhere, e.g. Pyro's Normal, converts as its torch.distributions base does).
    for cls in type(raw).__mro__:
        if getattr(td, cls.__name__, None) is cls:
            name = cls.__name__
            break
    else:
        return None
    if name in _BY_PARAM:
        logits, probs = _BY_PARAM[name]
        return FAMILIES[logits if "logits" in vars(raw) else probs]
    if name in _PARAM_CLASSES:
        return FAMILIES[_PARAM_CLASSES[name]]
    if name not in TORCH_NAMES.values() or name not in FAMILIES:
        return None
    # A subclass that draws without reparameterization (Pyro's NonreparameterizedNormal)
    # keeps that: Monte Carlo estimates differ (score function instead of pathwise).
    if not getattr(raw, "has_rsample", True) and "Nonreparameterized" + name in FAMILIES:
        return FAMILIES["Nonreparameterized" + name]
    return FAMILIES[name]


def object_to_funsor(raw, output=None, dim_to_name=None):
    """``to_funsor`` of a ``torch.distributions`` object, or of a subclass of one (None for
    any other object). Wrappers that hold another distribution (masks, expansions, point
    masses; see ``convert_wrappers``) are converted by what they hold.

    Example:
        >>> import torch
        >>> from interpretations import lazy
        >>> with lazy:
        ...     f = object_to_funsor(torch.distributions.Poisson(torch.tensor(2.0)))
        >>> type(f).__name__, f.inputs
        ('Poisson', {'value': Real})

    Raises:
        NotImplementedError: a torch distribution with no family here (a transformed one,
            say), naming its class.
    """
    # The backend of the object's library (torch for torch.distributions) converts it.
    backend = backend_of(raw, None)
    if backend is None or not hasattr(backend, "distributions"):
        return None
    td = backend.distributions()
    if not isinstance(raw, td.Distribution):
        return None
    if output is not None and output is not Real:
        raise DomainError(f"a distribution is a log density, of output Real; got {output}")

    key = (id(raw), _dims_key(raw, dim_to_name), get_interpretation())
    state = _state(raw, td)
    hit = _CONVERTED.data.get(key)
    if hit is not None and hit[0]() is raw and hit[1] == state:
        return hit[2]
    result = _Converter(td, backend)(raw, dim_to_name or {}, 0)
    if state is not None:
        _CONVERTED.put(key, (weakref.ref(raw), state, result))
    return result


class _Converter:
    """One conversion's recursion over wrappers (a class, not a self-calling closure: the
    closure's cell would hold the closure, a reference cycle left to the cyclic collector on
    Pyro's hot path)."""

    __slots__ = ("td", "backend")

    def __init__(self, td, backend):
        self.td, self.backend = td, backend

    def __call__(self, raw, dim_to_name, reinterpreted):
        while isinstance(raw, self.td.Independent):
            reinterpreted += raw.reinterpreted_batch_ndims
            raw = raw.base_dist
        wrapped = wrapper_to_funsor(raw, dim_to_name, reinterpreted, self)
        if wrapped is not None:
            return wrapped
        return _family_to_funsor(raw, self.td, dim_to_name, reinterpreted, self.backend)


# A distribution object converted again with the same dims under the same interpretation is
# the same term: Pyro converts each enumerated site's distribution twice (its log measure,
# its trace entry), K^2 T numbers each at an HMM step. Keyed by the object's id, checked by a
# weak reference (an id is reused once its object is gone) and by ``_state``.
_CONVERTED = FastCache("distribution.converted", 8)


def _dims_key(raw, dim_to_name: dict | None) -> tuple:
    # The dims that can name anything: a parameter, mask or point's array has at most the
    # object's batch and event dims (an Independent's base batch dims are among them), and
    # ``to_funsor`` looks up only the dims its array has. Pyro converts an enumerated site
    # once with its enclosing dims and once without; a site of batch shape () (an initial
    # state's probs) is then one conversion, not two.
    if not dim_to_name:
        return ()
    span = len(raw.batch_shape) + len(raw.event_shape)
    return tuple((d, n) for d, n in dim_to_name.items() if not (type(d) is int and d < -span))


def _state(raw, td) -> tuple | None:
    # Each attribute's name, identity and in-place version (torch's counter; a lazily added
    # attribute, such as torch's cached ``logits``, changes it too); None where an attribute
    # could change unseen (a numpy array, a container) or is not torch's (a jax array, maybe
    # a tracer that must not outlive its trace): no reuse then.
    out = []
    for name, v in vars(raw).items():
        if isinstance(v, td.Distribution):
            inner = _state(v, td)
            if inner is None:
                return None
            out.append((name, id(v), inner))
        elif hasattr(v, "_version"):
            out.append((name, id(v), v._version))
        elif hasattr(v, "shape") or isinstance(v, (list, dict, set)):
            return None
        else:
            out.append((name, id(v)))
    return tuple(out)


def _family_to_funsor(raw, td: ModuleType, dim_to_name: dict, reinterpreted: int,
                      backend: ModuleType):
    family = _family_of(raw, td)
    if family is None:
        known = sorted(set(TORCH_NAMES.values()))
        cls = type(raw)
        where = td.__name__ if getattr(td, cls.__name__, None) is cls else cls.__module__
        raise NotImplementedError(f"cannot convert {where}.{cls.__name__} to a funsor: "
                                  f"convertible are {known}, their subclasses, and masked, "
                                  "expanded and point-mass wrappers")
    batch = tuple(raw.batch_shape)
    out_batch = batch[len(batch) - reinterpreted:]
    raws = {}
    for name in family.params:
        x = getattr(raw, name)
        if type(x) is np.ndarray and backend_of(x, None) is not backend:
            # numpyro keeps parameters given as numbers (Beta(0.5, 1.5), Binomial's
            # total_count) as host arrays: constants, moved to the object's backend.
            x = backend.asarray(x)
        raws[name] = x
    # Integer parameters (numpyro's total_count, torch's Normal(int, int)) are real ones
    # here, in the float dtype the object's float parameters promote to, so that a float64
    # object is float64 throughout; with none, they stay integers until a float value meets
    # them (``floats_promoted``), as torch's ``log_prob`` promotes them.
    arrays = {k: x for k, x in raws.items() if not isinstance(x, numbers.Number)}
    raws.update(floats_promoted(arrays, arrays))
    params = []
    for name in family.params:
        x = raws[name]
        if isinstance(x, numbers.Number):
            params.append(float(x))
            continue
        event = tuple(x.shape[len(batch):])
        if tuple(x.shape[:len(batch)]) != batch:  # numpyro keeps size-1 batch dims
            x = ops.expand(x, batch + event)
        params.append(to_funsor(x, Reals[out_batch + event], dim_to_name))
    checked = _checked_by_library(raw, td, family)
    if not checked:
        return family(*params)
    token = CHECKED_UPSTREAM.set((family, checked))
    try:
        return family(*params)
    finally:
        CHECKED_UPSTREAM.reset(token)


# Our constraint -> the constraints of ``torch.distributions`` that imply it on the same array
# (torch's simplex sums within 1e-6, ours within at least that; nonnegative entries summing to
# about 1 are finite with a positive sum, what ``PROBS`` asks).
_IMPLIED_BY = {"positive": ("positive",), "nonnegative": ("nonnegative", "positive"),
               "unit_interval": ("unit_interval",), "simplex": ("simplex",),
               "probs": ("simplex",), "lower_cholesky": ("lower_cholesky",)}


def _checked_by_library(raw, td: ModuleType, family) -> frozenset:
    # The parameters whose constraint torch checked when ``raw`` was built (validate_args;
    # Pyro's default) on the arrays it holds now: set at construction (torch checks only
    # those), never changed in place since (an array's version counter, shared with the
    # arrays it is a view of, is still 0), under a torch constraint that implies ours.
    # A parameter reassigned after construction is not told apart (torch's own log_prob
    # does not recheck it either).
    if getattr(raw, "_validate_args", False) is not True:
        return frozenset()
    try:
        declared = raw.arg_constraints
    except NotImplementedError:  # (torch's base class declares none)
        return frozenset()
    own, names = vars(raw), []
    for name, param in family.params.items():
        x = own.get(name)
        if getattr(x, "_version", None) != 0:
            continue
        theirs = declared.get(name)
        if any(theirs is getattr(td.constraints, t, False)
               for t in _IMPLIED_BY.get(param.constraint.name, ())):
            names.append(name)
    return frozenset(names)


def dist_to_data(d, name_to_dim: dict | None = None):
    """The ``torch.distributions`` object of the distribution funsor ``d`` (see
    ``Distribution.to_data``).

    Example:
        >>> import torch
        >>> from funsor_core.distribution import Poisson
        >>> from interpretations import lazy
        >>> with lazy:
        ...     d = Poisson(fc.Tensor(torch.tensor(2.0)))
        >>> dist_to_data(d).rate
        tensor(2.)
    """
    cls = type(d)
    name = cls.__name__
    if not isinstance(d.value, Variable):
        raise NotImplementedError(f"to_data of {name} with value {d.value!r}: a "
                                  "distribution object has a free value; substitute into it "
                                  "afterwards (or evaluate the funsor directly)")
    params = d._args[:-1]
    lazy = [k for k, p in zip(cls.params, params) if not isinstance(p, Tensor)]
    if lazy:
        raise NotImplementedError(f"to_data of {name}: parameters {lazy} are not Tensors")
    backends = {backend_of(p.data) for p in params}
    backend = next(iter(backends), None)
    if len(backends) != 1 or not hasattr(backend, "distributions"):
        raise TypeError(f"to_data of {name} gives a torch.distributions object, which needs "
                        f"torch arrays, but its parameters hold "
                        f"{sorted(b.NAME for b in backends)} arrays (nothing is converted "
                        "silently); on jax and numpy, use the funsor itself: its log density "
                        "and samples are the same")
    cls_torch = torch_class(name, backend)
    out_batch = d.batch_output_shape
    raw = {}
    for (pname, param), t in zip(cls.params.items(), params):
        x = to_data(t, name_to_dim)
        if param.constraint is PROBS:
            # The family normalizes nonnegative weights; numpyro's classes validate a simplex
            # (torch's normalize too), so the object gets the probabilities the funsor means.
            x = x / ops.sum(x, -1, True)
        event = len(t.shape) if param.event_ndim is None else param.event_ndim
        missing = len(out_batch) - (len(t.shape) - event)
        if missing > 0:  # broadcast against the other parameters' batch output dims
            lead = tuple(x.shape[: len(x.shape) - len(t.shape)])
            x = x.reshape(lead + (1,) * missing + tuple(t.shape))
        raw[pname] = x
    if cls_torch.__name__ == "Multinomial":
        count = raw["total_count"].reshape(-1)
        if not bool((count == count[0]).all()):
            raise NotImplementedError("torch's Multinomial takes one int total_count; this "
                                      "one varies over the batch")
        raw["total_count"] = int(count[0])
    result = cls_torch(**raw)
    if out_batch:
        result = _library(backend).Independent(result, len(out_batch))
    return result


register_term_hook("object_to_funsor", object_to_funsor)
