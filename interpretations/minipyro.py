"""``funsor.minipyro``: a small Pyro whose sample sites are funsors (the ``"funsor"`` backend of
``pyroapi``), for programs written against funsor 0.4.8's ``funsor.minipyro``.

Models and guides call ``sample``, ``param`` and ``plate``; values are funsors whose plate
dimensions are named inputs. Effect handlers (``trace``, ``replay``, ``block``, ``seed``,
``condition``) sit on one stack, innermost last. Optimizers, ``SVI`` and the ELBOs are in
``interpretations.minipyro_infer``; ``funsor.minipyro`` serves both modules' names.

Parameters are torch arrays (autograd through ``.backward()``), as in funsor 0.4.8's minipyro;
constraints map through ``pyro.distributions.transforms.transform_to``.

Example:
    >>> import torch
    >>> fc.set_backend("torch")
    >>> from funsor_core.torch import distributions as dist
    >>> def model():
    ...     loc = param("loc", torch.tensor(1.0))
    ...     return sample("x", dist.Normal(loc, 1.0), obs=torch.tensor(3.0))
    >>> with trace() as tr:
    ...     _ = model()
    >>> sorted(tr), float(tr["x"]["value"].data)
    (['loc', 'x'], 3.0)
    >>> get_param_store().clear(); fc.set_backend("numpy")
"""

from __future__ import annotations

import importlib
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable

import numpy as np

from funsor_core.atoms.delta import Delta
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.terms.base import Funsor
from funsor_core.terms.contraction import Contraction

__all__ = ["Messenger", "trace", "replay", "block", "seed", "condition", "plate", "sample",
           "param", "get_param_store", "clear_param_store", "CondIndepStackFrame"]

_STACK: list = []  # active handlers, innermost last

CondIndepStackFrame = namedtuple("CondIndepStackFrame", ["name", "size", "dim"])


# name -> (unconstrained array, constraint, plate frames by dim, output domain)
PARAM_STORE: dict = {}


def get_param_store() -> dict:
    """The global parameter store (iterate for the names, ``.clear()`` to reset).

    Example:
        >>> get_param_store().clear(); len(get_param_store())
        0
    """
    return PARAM_STORE


def clear_param_store() -> None:
    """Forget every parameter (``pyro.clear_param_store``).

    Example:
        >>> clear_param_store(); list(get_param_store())
        []
    """
    PARAM_STORE.clear()


class Messenger:
    """An effect handler: ``process_message`` runs innermost first before a site's value is
    computed, ``postprocess_message`` after; used as a context manager or wrapping ``fn``.

    Example:
        >>> class Tag(Messenger):
        ...     def process_message(self, msg):
        ...         msg["infer"]["tag"] = True
        >>> Tag().fn is None
        True
    """

    def __init__(self, fn: Callable | None = None) -> None:
        self.fn = fn

    def __enter__(self):
        _STACK.append(self)
        return self

    def __exit__(self, *exc) -> None:
        if not _STACK or _STACK[-1] is not self:
            raise RuntimeError(f"minipyro: handler {type(self).__name__} exited out of order")
        _STACK.pop()

    def process_message(self, msg: dict) -> None:
        pass

    def postprocess_message(self, msg: dict) -> None:
        pass

    def __call__(self, *args, **kwargs):
        with self:
            return self.fn(*args, **kwargs)


class trace(Messenger):
    """Records every site it sees, by name, as the message after all handlers ran.

    Example:
        >>> with trace() as tr:
        ...     pass
        >>> dict(tr)
        {}
    """

    def __enter__(self):
        super().__enter__()
        self.trace = OrderedDict()
        return self.trace

    def postprocess_message(self, msg: dict) -> None:
        if msg["type"] == "sample" and msg["name"] in self.trace:
            raise ValueError(f"minipyro: two sample sites are named {msg['name']!r}")
        self.trace[msg["name"]] = msg.copy()

    def get_trace(self, *args, **kwargs) -> OrderedDict:
        self(*args, **kwargs)
        return self.trace


class replay(Messenger):
    """Gives each site found in ``trace`` (or funsor's keyword ``guide_trace``) its value."""

    def __init__(self, fn=None, trace=None, guide_trace=None) -> None:
        super().__init__(fn)
        self.guide_trace = trace if trace is not None else guide_trace

    def process_message(self, msg: dict) -> None:
        if msg["name"] in self.guide_trace:
            msg["value"] = self.guide_trace[msg["name"]]["value"]


class condition(Messenger):
    """Observes the sites named in ``data`` at the given values."""

    def __init__(self, fn=None, data=None) -> None:
        super().__init__(fn)
        self.data = {} if data is None else data

    def process_message(self, msg: dict) -> None:
        if msg["type"] == "sample" and msg["name"] in self.data:
            msg["value"] = self.data[msg["name"]]
            msg["is_observed"] = True


class block(Messenger):
    """Hides the sites ``hide_fn`` selects (all by default; or those named in ``hide``, or all
    but those named in ``expose``) from the handlers outside it."""

    def __init__(self, fn=None, hide_fn=None, hide=None, expose=None) -> None:
        super().__init__(fn)
        if hide_fn is None:
            if hide is not None:
                hide_fn = lambda msg: msg["name"] in hide  # noqa: E731
            elif expose is not None:
                hide_fn = lambda msg: msg["name"] not in expose  # noqa: E731
            else:
                hide_fn = lambda msg: True  # noqa: E731
        self.hide_fn = hide_fn

    def process_message(self, msg: dict) -> None:
        if self.hide_fn(msg):
            msg["stop"] = True


def _pyro_util():
    return importlib.import_module("pyro.util")


class seed(Messenger):
    """Seeds the random number generators inside, and restores their state on exit."""

    def __init__(self, fn=None, rng_seed: int | None = None) -> None:
        super().__init__(fn)
        self.rng_seed = rng_seed

    def __enter__(self):
        self._saved = _pyro_util().get_rng_state()
        if self.rng_seed is not None:
            _pyro_util().set_rng_seed(self.rng_seed)
        return self

    def __exit__(self, *exc) -> None:
        _pyro_util().set_rng_state(self._saved)


class plate(Messenger):
    """A vectorized plate: sites inside get the input ``name`` of size ``size`` (arrays
    carry it at dimension ``dim``, counted from the right, as in Pyro)."""

    def __init__(self, name: str, size: int, dim: int | None = None) -> None:
        super().__init__(None)
        if dim is None:
            dim = -1 - sum(isinstance(h, plate) for h in _STACK)
        if dim >= 0:
            raise ValueError(f"minipyro: plate {name!r} needs a negative dim, got {dim}")
        self.frame = CondIndepStackFrame(name, int(size), dim)

    def process_message(self, msg: dict) -> None:
        if msg["type"] not in ("sample", "param"):
            return
        frames = msg["cond_indep_stack"]
        if self.frame.dim in frames:
            raise ValueError(f"minipyro: plates {frames[self.frame.dim].name!r} and "
                             f"{self.frame.name!r} both use dim {self.frame.dim}")
        frames[self.frame.dim] = self.frame
        if msg["type"] == "sample":
            msg["fn"] = msg["fn"].expand_inputs(self.frame.name, self.frame.size)


def _array_to_funsor(site: str, value, frames: dict, output) -> Funsor:
    """An array whose rightmost dims are ``output``'s and whose batch dims are plates."""
    if not hasattr(value, "shape"):  # a Python number
        value = backend_module().asarray(value, "real" if output.dtype == "real" else "int")
    shape = tuple(value.shape)
    batch = shape[:len(shape) - len(output.shape)]
    inputs, kept = OrderedDict(), []
    for k, size in enumerate(batch):
        if size == 1:
            continue
        dim = k - len(batch)
        if dim not in frames or frames[dim].size != size:
            where = (f"plate {frames[dim].name!r} of size {frames[dim].size}" if dim in frames
                     else "no plate")
            raise ValueError(f"minipyro: site {site!r} has size {size} at dim {dim}, where "
                             f"there is {where}")
        inputs[frames[dim].name] = Bint[size]
        kept.append(size)
    if len(kept) != len(batch):
        value = value.reshape(tuple(kept) + tuple(output.shape))
    return Tensor(value, inputs, output.dtype)


class _SiteDistribution:
    """A funsor density over ``value`` seen as a sampler, plus the plates it is expanded to."""

    def __init__(self, funsor_dist: Funsor, plates: OrderedDict | None = None) -> None:
        if not isinstance(funsor_dist, Funsor) or "value" not in funsor_dist.inputs:
            raise TypeError("minipyro.sample expects a funsor distribution with a free "
                            f"'value' input (e.g. funsor.torch.distributions.Normal), "
                            f"got {funsor_dist!r}")
        self.funsor_dist = funsor_dist
        self.output = funsor_dist.inputs["value"]
        self.plates = OrderedDict() if plates is None else plates

    def expand_inputs(self, name: str, size: int) -> _SiteDistribution:
        if name in self.funsor_dist.inputs:
            if self.funsor_dist.inputs[name] != Bint[size]:
                raise ValueError(f"minipyro: plate {name!r} has size {size} but the "
                                 f"distribution has {name}: {self.funsor_dist.inputs[name]}")
            return self
        return _SiteDistribution(self.funsor_dist, OrderedDict(self.plates, **{name: Bint[size]}))

    def log_prob(self, value) -> Funsor:
        result = self.funsor_dist(value=value)
        missing = OrderedDict((k, d) for k, d in self.plates.items() if k not in result.inputs)
        if missing:  # one log density per plate entry: a constant broadcast over the plates
            zeros = np.zeros(tuple(d.size for d in missing.values()))
            result = result + Tensor(backend_module().asarray(zeros, "real"), missing)
        return result

    def __call__(self) -> Funsor:
        draw = self.funsor_dist.sample(frozenset(["value"]), sample_inputs=self.plates or None)
        terms = draw.terms if isinstance(draw, Contraction) else (draw,)
        deltas = [t for t in terms if isinstance(t, Delta)]
        if len(deltas) != 1:
            raise NotImplementedError(f"minipyro: drawing from {type(self.funsor_dist).__name__}"
                                      f" gave {draw!r}, not a point mass")
        return deltas[0].terms[0][1][0]


def _apply_stack(msg: dict) -> dict:
    seen = 0  # handlers that processed the site: those below a blocking one, and it
    for handler in reversed(_STACK):
        seen += 1
        handler.process_message(msg)
        if msg.get("stop"):
            break
    if msg["value"] is None:
        msg["value"] = msg["fn"](*msg["args"])
    if not isinstance(msg["value"], Funsor):
        msg["value"] = _array_to_funsor(msg["name"], msg["value"], msg["cond_indep_stack"],
                                        msg["output"])
    for handler in _STACK[len(_STACK) - seen:]:
        handler.postprocess_message(msg)
    return msg


def sample(name: str, fn: Funsor, obs=None, infer: dict | None = None) -> Funsor:
    """A random site: a draw from the funsor density ``fn`` (over its input ``value``), or
    ``obs`` when observed; handlers may change or record it.

    Example:
        >>> from funsor_core.distribution import Normal
        >>> sample("x", Normal(0.0, 1.0), obs=2.0).output
        Real
    """
    site = _SiteDistribution(fn)
    msg = {"type": "sample", "name": name, "fn": site, "args": (), "value": obs,
           "is_observed": obs is not None, "cond_indep_stack": {}, "output": site.output,
           "infer": {} if infer is None else dict(infer)}
    if not _STACK:
        msg["value"] = site() if obs is None else obs
        return msg["value"] if isinstance(msg["value"], Funsor) else _array_to_funsor(
            name, msg["value"], {}, site.output)
    return _apply_stack(msg)["value"]


def _transform_to(constraint):
    return importlib.import_module("pyro.distributions.transforms").transform_to(constraint)


def _real():
    return importlib.import_module("pyro.distributions.constraints").real


def param(name: str, init_value=None, constraint=None, event_dim: int | None = None) -> Funsor:
    """A learnable array in the parameter store, returned constrained to ``constraint`` as a
    funsor (dims left of ``event_dim`` become the enclosing plates' inputs).

    Example:
        >>> import torch
        >>> p = param("scale", torch.tensor(2.0), constraint=_positive())
        >>> round(p.data.item(), 4), clear_param_store()
        (2.0, None)
    """

    def fn(init_value, constraint):
        if name not in PARAM_STORE:
            if init_value is None:
                raise KeyError(f"minipyro: param {name!r} has no value yet; give init_value")
            constraint = _real() if constraint is None else constraint
            unconstrained = _transform_to(constraint).inv(init_value.detach()).detach()
            unconstrained.requires_grad_()
            ndim = len(init_value.shape) if event_dim is None else event_dim
            output = Reals[tuple(init_value.shape[len(init_value.shape) - ndim:])]
            PARAM_STORE[name] = (unconstrained, constraint, dict(msg["cond_indep_stack"]), output)
        unconstrained, constraint, frames, output = PARAM_STORE[name]
        constrained = _transform_to(constraint)(unconstrained)
        constrained.unconstrained = weakref.ref(unconstrained)  # funsor 0.4.8's tests read it
        return _array_to_funsor(name, constrained, frames, output)

    msg = {"type": "param", "name": name, "fn": fn, "args": (init_value, constraint),
           "value": None, "cond_indep_stack": {}, "output": None}
    if not _STACK:
        return fn(init_value, constraint)
    _apply_stack(msg)
    return msg["value"]


def _positive():
    return importlib.import_module("pyro.distributions.constraints").positive

