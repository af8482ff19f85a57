"""The Distribution term: a log density that is a funsor of named parameters and ``value``.

A family is a short declaration (see ``continuous.py``, ``discrete.py``)::

    class Exponential(Distribution):
        params = {"rate": Param(POSITIVE)}
        fields = (*params, "value")
        reparameterized = True

        @staticmethod
        def log_prob(value, rate):  # arrays, broadcast; the math in ops, for every backend
            return ops.log(rate) - rate * value

and everything else follows from it: construction (positional or by name, ``value="value"``
by default, numbers and arrays converted, shapes checked), parameter validation, exact
evaluation of all-Tensor arguments to a Tensor of log densities, substitution, sampling and
printing. Rules live in ``interpretations/exact/distribution.py``.

Python numbers follow the arrays given with them (backend and float dtype); given with no
array, they stay backend-free ``Number`` terms until a number is demanded, so a template
built under ``lazy`` and pickled evaluates on whatever backend is active then.

Shapes: each parameter has ``event_ndim`` trailing output dims that belong to one
distribution (a probability vector, a Cholesky factor); its other output dims are batch dims,
broadcast across parameters and ``value``. The value's domain is the broadcast batch shape
plus the family's event shape, and the log density always has output ``Real``: it sums over
the value's batch output dims (funsor's ``to_event``). Named inputs are batch dims too, kept.

Example:
    >>> from funsor_core.distribution import Normal
    >>> loc = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    >>> d = Normal(loc, 1.0, value=0.0)
    >>> d.inputs, np.round(d.data, 4)
    ({'i': Bint[2]}, array([-0.9189, -1.4189]))
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian.host import host_copies
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.atoms.tensor_checks import out_of_range
from funsor_core.distribution.array_math import (
    aligned,
    concrete,
    distinct_entries,
    enumerate_tensor,
    int_as_real,
    log_density_tensor,
    moment_tensor,
    sample_distribution,
)
from funsor_core.distribution.constraints import REAL, Constraint, checked_upstream
from funsor_core.distribution.convert import dist_to_data, torch_class
from funsor_core.distribution.registry import FAMILIES, announce_family, on_family
from funsor_core.domains import Domain, Real, broadcast_shape
from funsor_core.engine.backend import BackendTable, backend_module
from funsor_core.engine.cache import cached
from funsor_core.sampling.draw import register_sampler
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import DomainError, Funsor, Number, Variable
from funsor_core.terms.inputs import merge_all_inputs

__all__ = ["Distribution", "Param", "BACKEND_TO_DISTRIBUTIONS_BACKEND", "FAMILIES",
           "infer_domains", "on_family"]

# funsor's map from a backend to the module of its distribution wrappers (the same families on
# every backend, faces at funsor's paths), named by ``FUNSOR_DISTRIBUTIONS_MODULE``.
BACKEND_TO_DISTRIBUTIONS_BACKEND = BackendTable("FUNSOR_DISTRIBUTIONS_MODULE")

_REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One parameter of a family: its constraint, how many trailing output dims form one
    parameter (``event_ndim``; ``None``: all of them) and its default, if any.

    Example:
        >>> Param().event_ndim, Param().constraint.name
        (0, 'real')
    """

    constraint: Constraint = REAL
    event_ndim: int | None = 0
    default: Any = _REQUIRED


class Distribution(Funsor):
    """Base of the distribution families: a log density, a funsor of its parameters and value.

    Construct a family positionally or by name, ``Normal(loc, scale, value="value")``; each
    argument may be a funsor, a number or an array (arrays keep all their dims as output
    dims; name batch dims with a ``Tensor``). A string ``value`` is a ``Variable`` of the
    inferred domain. With all-Tensor arguments the exact interpretation gives the log density
    as a Tensor over the union of their inputs; anything lazy keeps the term.

    Attributes:
        params: ``{name: Param}``, the family's parameters in order.
        reparameterized: whether samples carry gradients to the parameters.
        has_enumerate_support: whether the value takes finitely many values.

    Example:
        >>> from funsor_core.distribution import Categorical
        >>> d = Categorical(np.array([0.25, 0.75]))
        >>> d.inputs, d(value=1).item()
        ({'value': Bint[2]}, -0.2876820724517809)
    """

    __slots__ = ("_out_batch",)
    fields: tuple[str, ...] = ()
    params: dict[str, Param] = {}
    value_dtype: Any = "real"
    reparameterized = False
    has_enumerate_support = False
    # Relations between parameters, checked like constraints: (param, description, fn) with
    # fn(**arrays) -> bool array over batch entries.
    relations: tuple = ()
    # A value inside the support, put where a value is outside it before the density is
    # computed (the result there is -inf anyway): no NaN reaches the gradients.
    support_fill = 0.0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "params" in cls.__dict__ and "__args__" not in cls.__dict__:
            if cls.fields != (*cls.params, "value"):
                raise TypeError(f"{cls.__name__}.fields must be (*params, 'value')")
            announce_family(cls)

    # -- the declaration's math (families override; arrays in, arrays out) --------------------
    @classmethod
    def infer_event(cls, shapes: dict) -> tuple:
        """``(value dtype, event shape)`` from each parameter's event shape; raises ValueError
        when they do not fit together.

        Example:
            >>> from funsor_core.distribution import Categorical
            >>> Categorical.infer_event({"probs": (4,)})
            (4, ())
        """
        return cls.value_dtype, ()

    @staticmethod
    def log_prob(value, **params):
        """Elementwise log density: arrays broadcast over batch dims, event dims reduced.

        Example:
            >>> from funsor_core.distribution import Exponential
            >>> Exponential.log_prob(np.array([0.0, 1.0]), rate=np.array(1.0))
            array([ 0., -1.])
        """
        raise NotImplementedError

    @staticmethod
    def in_support(value, **params):
        """Bool array over batch entries: whether ``value`` is in the support (None: always).

        Example:
            >>> from funsor_core.distribution import Poisson
            >>> Poisson.in_support(np.array([2.0, 2.5, -1.0]), rate=np.array(1.0))
            array([ True, False, False])
        """
        return None

    @classmethod
    def fill_value(cls, value, **params):
        """Values inside the support, of ``value``'s shape (see ``support_fill``).

        Example:
            >>> from funsor_core.distribution import Beta
            >>> Beta.fill_value(np.zeros(2))
            array([0.5, 0.5])
        """
        return ops.full_like(value, cls.support_fill)

    @staticmethod
    def draw(rng, shape: tuple, **params):
        """A draw of batch shape ``shape`` (plus the event shape) from parameters that
        broadcast to it; ``rng`` is a ``funsor_core.distribution.random.Rng``.

        Example:
            >>> from funsor_core.distribution import Dirichlet
            >>> from funsor_core.distribution.random import Rng
            >>> Dirichlet.draw(Rng(np.zeros(()), 0), (5,), concentration=np.ones(3)).shape
            (5, 3)
        """
        raise NotImplementedError

    @staticmethod
    def moments(**params):
        """``(mean, variance)`` of the value, arrays of batch + event shape.

        Example:
            >>> from funsor_core.distribution import Uniform
            >>> [float(m) for m in Uniform.moments(low=np.array(0.0), high=np.array(6.0))]
            [3.0, 3.0]
        """
        raise NotImplementedError

    @classmethod
    def eager_log_density(cls, *args) -> Tensor:
        """The log density of all-Tensor ``args`` as a Tensor (the exact rule calls this).

        Example:
            >>> from funsor_core.distribution import Exponential
            >>> Exponential.eager_log_density(fc.Tensor(np.array(1.0)), fc.Tensor(np.array(2.0)))
            Tensor(numpy.array(shape=(), dtype=float64), (), 'real')
        """
        return log_density_tensor(cls, args)

    @classmethod
    def _infer_domains(cls, param_domains: tuple, value_domain) -> tuple:
        return infer_domains(cls, param_domains, value_domain)

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def _prepare(cls, *args, **kwargs):
        if not cls.params:
            raise TypeError("Distribution is the base of the families; build one of them, "
                            "e.g. Normal(loc, scale)")
        given = _bind(cls, args, kwargs)
        proto = _prototype(given.values())
        params = tuple(_param_funsor(cls, name, given[name], proto) for name in cls.params)
        value = given.get("value", "value")
        value_domain = _value_domain_of(value)
        domain, _ = infer_domains(cls, tuple(p.output for p in params), value_domain)
        value = _value_funsor(cls, value, domain, proto)
        merge_all_inputs((*params, value), cls.__name__)
        check_backends(f"build {cls.__name__}", (*params, value),
                       [f"'{name}'" for name in cls.fields], deep=True)
        _validate(cls, params, checked_upstream(cls))
        return (*params, value)

    def _setup(self):
        args = self._args
        self.inputs = merge_all_inputs(args, type(self).__name__)
        self.output = Real
        _, self._out_batch = infer_domains(type(self), tuple(a.output for a in args[:-1]),
                                           args[-1].output)

    # -- user API --------------------------------------------------------------------------------
    @property
    def batch_output_shape(self) -> tuple:
        """The value's output dims that are independent copies (summed in the density).

        Example:
            >>> from funsor_core.distribution import Gamma
            >>> Gamma(fc.Variable("a", fc.Reals[2]), 1.0).batch_output_shape
            (2,)
        """
        return self._out_batch

    @property
    def event_shape(self) -> tuple:
        """The value's output dims that form one draw.

        Example:
            >>> from funsor_core.distribution import Dirichlet
            >>> Dirichlet(fc.Variable("a", fc.Reals[2, 3])).event_shape
            (3,)
        """
        return self.value.output.shape[len(self._out_batch):]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in zip(self.fields, self._args))
        return f"{type(self).__name__}({args})"

    def mean(self) -> Tensor:
        """The mean of the value, a Tensor over the parameters' inputs (all must be Tensors).

        Example:
            >>> from funsor_core.distribution import Gamma
            >>> Gamma(2.0, 4.0).mean().data
            array(0.5)
        """
        return moment_tensor(type(self), self._args, 0)

    def variance(self) -> Tensor:
        """The variance of the value (elementwise), like ``mean``.

        Example:
            >>> from funsor_core.distribution import Gamma
            >>> Gamma(2.0, 4.0).variance().data
            array(0.125)
        """
        return moment_tensor(type(self), self._args, 1)

    def to_data(self, name_to_dim: dict | None = None):
        """The ``torch.distributions`` object of this distribution (``fc.to_data(d)``): named
        inputs go to the batch dims of ``name_to_dim``, batch output dims to an
        ``Independent``. Needs a Variable value and Tensor parameters holding torch arrays.

        Example:
            >>> import torch
            >>> from funsor_core.distribution import Normal
            >>> d = Normal(fc.Tensor(torch.zeros(2), {"i": fc.Bint[2]}), 1.0)
            >>> from interpretations import lazy
            >>> with lazy:
            ...     d = Normal(fc.Tensor(torch.zeros(2), {"i": fc.Bint[2]}), 1.0)
            >>> fc.to_data(d, {"i": -1}).batch_shape
            torch.Size([2])
        """
        return dist_to_data(self, name_to_dim)

    @property
    def dist_class(self):
        """The ``torch.distributions`` class of this family (funsor's attribute; torch is
        imported on first use, not by funsor-core).

        Example:
            >>> from funsor_core.distribution import Gamma
            >>> Gamma(2.0, fc.Variable("r", fc.Real)).dist_class.__name__
            'Gamma'
        """
        active = backend_module()  # its library where it has one (numpyro's on jax), else torch's
        return torch_class(type(self).__name__, getattr(active, "distributions", None) and active)

    def enumerate_support(self, expand: bool = False) -> Tensor:
        """The values of a finite support along a new input named like ``value`` (funsor's
        ``enumerate_support``); ``expand`` repeats them over the parameters' inputs.

        Example:
            >>> from funsor_core.distribution import Categorical
            >>> from interpretations import lazy
            >>> with lazy:  # under exact, a Categorical of a Tensor is already its table
            ...     d = Categorical(np.ones(3) / 3)
            >>> d.enumerate_support().data
            array([0, 1, 2])
        """
        if not self.has_enumerate_support:
            raise NotImplementedError(f"{type(self).__name__} has no finite support to "
                                      "enumerate")
        if not isinstance(self.value, Variable):
            raise ValueError(f"enumerate_support needs a Variable value, got {self.value!r}")
        return enumerate_tensor(type(self), self._args, expand)


# What ``d.sample(...)`` does for a distribution term: draw its value (``sample_distribution``).
register_sampler(Distribution)(sample_distribution)


# torch.distributions' other parametrizations, which funsor's families do not take.
_CHOLESKY = ("; pass scale_tril=np.linalg.cholesky(c) for a covariance c (funsor's form), or "
             "build fc.Gaussian(mean=..., covariance=..., inputs=...) directly")
_OTHER_FORMS = {
    ("Categorical", "logits"): "; for logits use CategoricalLogits(logits, value)",
    ("MultivariateNormal", "covariance_matrix"): _CHOLESKY,
    ("MultivariateNormal", "precision_matrix"): _CHOLESKY.replace(
        "a covariance c", "a covariance c = inv(precision)").replace(
        "covariance=...", "precision=..."),
}


def _bind(cls, args: tuple, kwargs: dict) -> dict:
    names = cls.fields
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes at most {len(names)} arguments {names}, "
                        f"got {len(args)}")
    given = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in names:
            hint = _OTHER_FORMS.get((cls.__name__, name), "")
            raise TypeError(f"{cls.__name__}() got an unexpected argument '{name}'; its "
                            f"arguments are {names}{hint}")
        if name in given:
            raise TypeError(f"{cls.__name__}() got '{name}' both positionally and by name")
        given[name] = value
    for name, param in cls.params.items():
        if name not in given:
            if param.default is _REQUIRED:
                raise TypeError(f"{cls.__name__}() needs its parameter '{name}' (its "
                                f"parameters are {tuple(cls.params)})")
            given[name] = param.default
    return given


def _prototype(values) -> Any:
    """A floating array among the arguments (Python numbers follow its backend and dtype),
    else None (they stay Numbers: backend-free, see ``with_arrays``)."""
    for v in values:
        data = getattr(v, "data", v) if isinstance(v, Tensor) else v
        if is_array(data) and ops.is_floating(data):
            return data
    return None


def _as_real_array(x, proto):
    if is_array(x):
        return x if ops.is_floating(x) else int_as_real(x, proto)
    if proto is None:
        proto = backend_module().asarray(0.0, "real")
    if isinstance(x, numbers.Number):
        return ops.new_full(proto, (), float(x))
    x = ops.new_array(proto, x)  # a list: on the prototype's backend
    return x if ops.is_floating(x) else int_as_real(x, proto)


def _param_funsor(cls, name: str, x, proto) -> Funsor:
    if isinstance(x, Funsor):
        if x.output.dtype != "real":
            raise TypeError(f"{cls.__name__}: parameter '{name}' must be real, got a funsor "
                            f"of output {x.output}")
        if type(x) is Number:
            return x if proto is None else Tensor(ops.new_full(proto, (), float(x.data)))
        return x
    if isinstance(x, str):
        if cls.params[name].event_ndim != 0:
            raise TypeError(f"{cls.__name__}: parameter '{name}' is not a scalar, so the name "
                            f"'{x}' does not give its domain; pass a Variable, e.g. "
                            f"Variable('{x}', Reals[3])")
        return Variable(x, Real)
    if isinstance(x, numbers.Number) and proto is None and cls.params[name].event_ndim in (0, None):
        return Number(float(x))
    if isinstance(x, (list, tuple)) or is_array(x) or isinstance(x, numbers.Number):
        return Tensor(_as_real_array(x, proto))
    raise TypeError(f"{cls.__name__}: parameter '{name}' must be a funsor, number or array, "
                    f"got {type(x).__name__}")


def _value_domain_of(value) -> Domain | None:
    """The domain a given value imposes (None for a name or a number: they take the
    inferred one)."""
    if isinstance(value, Funsor) and type(value) is not Number:
        return value.output
    if is_array(value):
        dtype = "real" if ops.is_floating(value) else None
        return None if dtype is None else Domain(dtype, tuple(value.shape))
    return None


def _value_funsor(cls, value, domain: Domain, proto) -> Funsor:
    if isinstance(value, str):
        return Variable(value, domain)
    if isinstance(value, Funsor) and type(value) is not Number:
        return value
    data = value.data if isinstance(value, Number) else value
    if proto is None and domain is Real and isinstance(data, numbers.Number):
        return Number(float(data))  # backend-free, as the parameters (see ``with_arrays``)
    if domain.dtype == "real":
        array = _as_real_array(data, proto)
    else:
        if proto is None and not is_array(data):
            proto = backend_module().asarray(0.0, "real")
        array = data if is_array(data) else ops.astype(ops.new_array(proto, data), "int")
    if tuple(array.shape) != domain.shape:
        try:
            array = ops.expand(array, domain.shape)
        except Exception as e:
            raise DomainError(f"{cls.__name__}: value of shape {tuple(array.shape)} does not "
                              f"fit the value domain {domain}") from e
    if domain.dtype != "real" and not ops.is_floating(array) and out_of_range(
            array, domain.dtype) is not None:
        # A value outside 0..n-1 (or 1.7, made -1 by the family) is outside the support, its
        # log density -inf: the one place a Bint value may be out of range, so it skips the
        # constructor's range check.
        return Tensor.make(array, {}, domain.dtype)
    return Tensor(array, (), domain.dtype)


@cached("distribution.infer_domains", maxsize=4096, fast=True)
def infer_domains(cls, param_domains: tuple, value_domain: Domain | None) -> tuple:
    """``(value domain, batch output shape)`` of a family from its parameters' domains (and
    the given value's, if any); ValueError names the family and parameters that do not fit.

    Example:
        >>> from funsor_core.distribution import MultivariateNormal
        >>> infer_domains(MultivariateNormal, (fc.Reals[2, 3], fc.Reals[3, 3]), None)
        (Reals[2, 3], (2,))
    """
    events, batches = {}, []
    for (name, param), domain in zip(cls.params.items(), param_domains):
        shape = domain.shape
        k = len(shape) if param.event_ndim is None else param.event_ndim
        if len(shape) < k:
            raise ValueError(f"{cls.__name__}: parameter '{name}' needs at least {k} output "
                             f"dims, got {domain}")
        events[name] = shape[len(shape) - k:]
        batches.append((name, shape[: len(shape) - k]))
    dtype, event = cls.infer_event(events)
    if value_domain is not None:
        vshape, k = value_domain.shape, len(event)
        if (value_domain.dtype != dtype or len(vshape) < k
                or vshape[len(vshape) - k:] != tuple(event)):
            expected = Domain(dtype, tuple(event))
            raise ValueError(f"{cls.__name__}: value must have domain {expected} (with batch "
                             f"dims on the left), as its parameters {events} give, but it has "
                             f"{value_domain}")
        batches.append(("value", vshape[: len(vshape) - k]))
    try:
        out_batch = broadcast_shape(*(b for _, b in batches))
    except ValueError:
        raise ValueError(f"{cls.__name__}: the batch shapes of the parameters and value do "
                         f"not broadcast: {dict(batches)}") from None
    domain = Domain(dtype, tuple(out_batch) + tuple(event))
    if value_domain is not None and value_domain is not domain:
        raise ValueError(f"{cls.__name__}: value must have domain {domain} (the parameters "
                         f"broadcast to it), got {value_domain}")
    return domain, tuple(out_batch)


# -- validation ------------------------------------------------------------------------------
def _validate(cls, params: tuple, checked: frozenset = frozenset()) -> None:
    """Raise ValueError for a concrete Tensor (or Number) parameter that breaks its family's
    constraint; the constraints of the parameters named in ``checked`` were checked upstream
    (``constraints.CHECKED_UPSTREAM``), their relations are still checked."""
    arrays, numbers_in = {}, False
    for (name, param), p in zip(cls.params.items(), params):
        if type(p) is Number:  # a Number holds no backend's array: checked on numpy
            numbers_in = True
            if p.data != p.data:  # NaN breaks every constraint, REAL's too; a float compare
                _raise_if_bad(cls, name, "a number (not NaN)",  # is free (an array's is not)
                              Tensor.make(np.asarray(p.data, dtype=np.float64), {}),
                              np.asarray(False))
            if not param.constraint.trivial and not _number_ok(param.constraint, p.data):
                host = Tensor.make(np.asarray(p.data, dtype=np.float64), {})
                _raise_if_bad(cls, name, param.constraint.describe, host,
                              param.constraint.check(host.data))
            if cls.relations:
                arrays[name] = Tensor.make(np.asarray(p.data, dtype=np.float64), {})
            continue
        if isinstance(p, Tensor):
            arrays[name] = p
            if not param.constraint.trivial and name not in checked and concrete(p.data):
                _raise_if_bad(cls, name, param.constraint.describe, p,
                              _check_concrete(param.constraint, p.data))
    for name, describe, fn in cls.relations:
        if len(arrays) == len(cls.params) and concrete(*(t.data for t in arrays.values())):
            if numbers_in:  # beside a Number's numpy copy, every array on numpy too
                arrays = _on_host(arrays)
            ok, inputs = _relation_ok(cls, fn, arrays)
            if not concrete(ok):
                ok, inputs = _relation_ok(cls, fn, _on_host(arrays))
            _raise_if_bad(cls, name, describe, None, ok, inputs)


def _check_concrete(constraint: Constraint, x):
    # A small concrete array of a compiling backend (jax on the CPU) is checked on a numpy
    # view: compiling ``x > 0`` for it costs more than a whole small eager program. Tracers,
    # numpy and torch arrays have no host view and take the backend's own check.
    x = distinct_entries(x, constraint.event_ndim)  # (an expanded scale: one entry checked)
    host = host_copies(x)
    if host is not None:
        return constraint.check(host[0])
    ok = constraint.check(ops.detach(x))
    if not ops.is_concrete(ok):
        ok = constraint.check(ops.to_numpy(x))
    return ok


@cached("distribution.number_ok", maxsize=1024, fast=True)
def _number_ok(constraint: Constraint, x: float) -> bool:
    # Models repeat their constants (1.0, 0.5): one check per constraint and value.
    return bool(np.all(constraint.check(np.asarray(x, dtype=np.float64))))


# Under jax.jit every op is staged, even on a concrete array the traced function closed over,
# so a check of such an array answers with a tracer. The array itself has values: the check
# is redone on a numpy copy (only then), and a bad closed-over parameter still raises.
def _on_host(arrays: dict) -> dict:
    return {k: Tensor.make(ops.to_numpy(t.data), t.inputs, t.dtype) for k, t in arrays.items()}


def _relation_ok(cls, fn, arrays: dict) -> tuple:
    inputs = merge_all_inputs(arrays.values())
    nb = max(len(t.shape) - cls.params[k].event_ndim for k, t in arrays.items())
    lined_up = {k: aligned(t, inputs, nb, cls.params[k].event_ndim) for k, t in arrays.items()}
    return fn(**lined_up), inputs


def _raise_if_bad(cls, name, describe, tensor: Tensor | None, ok, inputs=None) -> None:
    ok = np.asarray(ops.to_numpy(ok))
    if ok.all():
        return
    index = tuple(int(i) for i in np.argwhere(~ok)[0]) if ok.ndim else ()
    names = list(inputs if tensor is None else tensor.inputs)
    where = ", ".join(f"{n}={i}" for n, i in zip(names, index))
    out = index[len(names):]
    if out:
        where += (", " if where else "") + f"output index {out}"
    got = ""
    if tensor is not None:
        value = np.asarray(ops.to_numpy(tensor.data))
        shown = value[index] if index else value
        got = f", but it is {np.array2string(np.asarray(shown), precision=4)}"
        if name == "scale_tril" and np.ndim(shown) == 2 and np.allclose(shown, np.swapaxes(
                shown, -1, -2)):  # a covariance passed where funsor takes its Cholesky factor
            got += " (a covariance? pass scale_tril=np.linalg.cholesky(covariance))"
        elif name == "probs" and np.ndim(shown) and (shown <= 0).all() and np.allclose(
                np.exp(shown).sum(-1), 1.0, atol=1e-3):  # funsor's eeg_slds example does this
            got += " (log-probabilities? pass logits=, or probs=exp(...))"
    raise ValueError(f"{cls.__name__}: parameter '{name}' must be {describe}{got}"
                     + (f" at {where}" if where else ""))


