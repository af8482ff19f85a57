"""``funsor.minipyro``'s inference half: optimizers, ``SVI`` and the ELBOs (the primitives
and handlers are in ``interpretations.minipyro``).

The ELBOs run model and guide with every latent site left as a ``Variable`` (a delayed
sample), so a loss is one funsor expression:

    ELBO = sum over cost terms c of  E_q[c],   c in {log p factors} + {-log q factors},

where ``E_q[c]`` integrates the guide's joint marginal over the latent variables ``c`` reads
and sums over the plates ``c`` carries (a Dice-style estimator: exact under ``eager``, a Monte
Carlo estimate under ``MonteCarlo`` as in ``Trace_ELBO``). Latent sites of the model that the
guide lacks are enumerated out of the model's factors first (and conversely). The ``Jit*``
ELBOs give the same numbers as their eager counterparts, without ``torch.jit`` tracing.

Example:
    >>> from funsor_core.distribution import Normal
    >>> float(Trace_ELBO()(lambda: sample("x", Normal(0.0, 1.0)),
    ...                    lambda: sample("x", Normal(0.0, 1.0))).data)
    0.0
"""

from __future__ import annotations

from collections import OrderedDict

from funsor_core import ops
from funsor_core.algorithms.eliminate.plated import partial_sum_product, sum_product
from funsor_core.interop.data import to_data
from funsor_core.terms.base import Funsor, Variable
from funsor_core.terms.integrate import Integrate
from funsor_core.terms.traversal import reinterpret
from interpretations.minipyro import PARAM_STORE, Messenger, block, sample, trace  # noqa: F401
from interpretations.monte_carlo import MonteCarlo
from interpretations.optimize import optimize

__all__ = ["PyroOptim", "Adam", "ClippedAdam", "SVI", "ELBO", "Trace_ELBO",
           "TraceMeanField_ELBO", "TraceEnum_ELBO", "JitTrace_ELBO", "JitTraceMeanField_ELBO",
           "JitTraceEnum_ELBO", "elbo"]


class PyroOptim:
    """Steps each parameter it is given with its own optimizer state, created on first sight
    (parameters appear as models run). Subclasses define ``_update``.

    Example:
        >>> Adam({"lr": 0.1}).optim_args
        {'lr': 0.1}
    """

    def __init__(self, optim_args: dict) -> None:
        self.optim_args = dict(optim_args)
        self.state: dict = {}  # id(param) -> (param, per-parameter state)

    def __call__(self, params) -> None:
        for p in params:
            if p.grad is None:
                continue
            entry = self.state.get(id(p))
            if entry is None or entry[0] is not p:
                entry = self.state[id(p)] = (p, {"step": 0})
            p.data = self._update(p.detach(), p.grad.detach(), entry[1])


class Adam(PyroOptim):
    """Adam (Kingma and Ba, 2015) with ``lr``, ``betas``, ``eps``, ``weight_decay``.

    Example:
        >>> import torch
        >>> p = torch.tensor([1.0], requires_grad=True); p.grad = torch.tensor([2.0])
        >>> Adam({"lr": 0.1})([p]); round(p.item(), 6)
        0.9
    """

    def _update(self, x, g, state):
        # m, v: running means of g and g^2; bias-corrected step lr * m_hat / (sqrt(v_hat) + eps)
        lr = self.optim_args.get("lr", 1e-3)
        b1, b2 = self.optim_args.get("betas", (0.9, 0.999))
        eps = self.optim_args.get("eps", 1e-8)
        g = self._clip(g)
        if self.optim_args.get("weight_decay", 0.0):
            g = g + self.optim_args["weight_decay"] * x
        state["step"] += 1
        t = state["step"]
        state["m"] = (1 - b1) * g + (b1 * state["m"] if "m" in state else 0.0)
        state["v"] = (1 - b2) * g * g + (b2 * state["v"] if "v" in state else 0.0)
        m_hat = state["m"] / (1 - b1 ** t)
        v_hat = state["v"] / (1 - b2 ** t)
        return x - self._lr(lr, t) * m_hat / (v_hat.sqrt() + eps)

    def _clip(self, g):
        return g

    def _lr(self, lr: float, t: int) -> float:
        return lr


class ClippedAdam(Adam):
    """Adam with gradients clamped to ``[-clip_norm, clip_norm]`` (default 10) and the
    learning rate multiplied by ``lrd`` (default 1) at each step, as Pyro's ClippedAdam.

    Example:
        >>> import torch
        >>> p = torch.tensor([1.0], requires_grad=True); p.grad = torch.tensor([50.0])
        >>> ClippedAdam({"lr": 0.1, "clip_norm": 1.0})([p]); round(p.item(), 6)
        0.9
    """

    def _clip(self, g):
        c = self.optim_args.get("clip_norm", 10.0)
        return g.clamp(-c, c)

    def _lr(self, lr: float, t: int) -> float:
        return lr * self.optim_args.get("lrd", 1.0) ** t


class SVI:
    """Stochastic variational inference: ``step(*args)`` evaluates ``loss(model, guide,
    *args)``, differentiates it and steps every parameter the model and guide read.

    Example:
        >>> SVI(None, None, Adam({}), Trace_ELBO()).optim.optim_args
        {}
    """

    def __init__(self, model, guide, optim: PyroOptim, loss) -> None:
        self.model, self.guide, self.optim, self.loss = model, guide, optim, loss

    def step(self, *args, **kwargs) -> float:
        with trace() as params, block(hide_fn=lambda msg: msg["type"] != "param"):
            loss = self.loss(self.model, self.guide, *args, **kwargs)
        data = to_data(loss)
        data.backward()
        arrays = [PARAM_STORE[name][0] for name in params]
        self.optim(arrays)
        for p in arrays:
            p.grad = None
        return float(ops.detach(data))

    def evaluate_loss(self, *args, **kwargs) -> float:
        with block(hide_fn=lambda msg: msg["type"] != "param"):
            return float(ops.detach(to_data(self.loss(self.model, self.guide, *args, **kwargs))))


class _log_joint(Messenger):
    """Leaves each unobserved sample site as a ``Variable`` of its name (a delayed sample)
    and records every sample site's log density, with the plates seen."""

    def __enter__(self):
        super().__enter__()
        self.log_factors, self.plates = OrderedDict(), set()
        return self

    def process_message(self, msg: dict) -> None:
        if msg["type"] == "sample" and msg["value"] is None:
            msg["value"] = Variable(msg["name"], msg["fn"].output)

    def postprocess_message(self, msg: dict) -> None:
        if msg["type"] != "sample":
            return
        if msg["name"] in self.log_factors:
            raise ValueError(f"minipyro: two sample sites are named {msg['name']!r}")
        self.log_factors[msg["name"]] = msg["fn"].log_prob(msg["value"])
        self.plates.update(f.name for f in msg["cond_indep_stack"].values())


def _ordinal(var: str, factors: list, plates: frozenset) -> frozenset:
    """The plates ``var`` is local to: those of every factor that reads it."""
    return frozenset.intersection(*(plates & frozenset(f.inputs) for f in factors
                                    if var in f.inputs))


def _contract_aux(factors: list, plates: frozenset, aux: frozenset, side: str) -> list:
    """Sums the sites only one side has (``aux``) out of that side's log factors.

    A site outside a plate couples the plate's entries, so summing it out takes the product
    over that plate too: every plate no kept site is local to is eliminated with ``aux``.
    (Summing a global site within each plate entry, as eliminating it alone would, gives
    another number.) A plate that also holds a kept site cannot be multiplied out: refused.
    """
    if not aux:
        return factors
    kept = frozenset().union(*(f.inputs for f in factors)) - plates - aux
    busy = frozenset().union(*(_ordinal(v, factors, plates) for v in kept))
    for v in sorted(aux):
        wider = frozenset().union(*(plates & frozenset(f.inputs) for f in factors
                                    if v in f.inputs)) - _ordinal(v, factors, plates)
        if wider & busy:
            raise NotImplementedError(
                f"minipyro.elbo: the {side}'s site {v!r} is outside plate(s) "
                f"{sorted(wider & busy)} that hold the sites {sorted(kept)}; summing it out "
                "would couple every entry of the plate (sample it in both model and guide)")
    return list(partial_sum_product(ops.logaddexp, ops.add, factors, plates=plates,
                                    eliminate=aux | (plates - busy)))


def elbo(model, guide, *args, **kwargs) -> Funsor:
    """The negative evidence lower bound of ``model`` under ``guide``, a funsor with no free
    inputs: each cost term (model log densities, minus guide log densities) integrated against
    the guide's marginal over the latent variables it reads, summed over its plates.

    Example:
        >>> from funsor_core.distribution import Normal
        >>> float(elbo(lambda: sample("x", Normal(0.0, 1.0)),
        ...            lambda: sample("x", Normal(0.0, 1.0))).data)
        0.0
    """
    with _log_joint() as q_joint:
        guide(*args, **kwargs)
    with _log_joint() as p_joint:
        model(*args, **kwargs)
    plates = frozenset(q_joint.plates | p_joint.plates)

    def free(factors):
        return frozenset().union(*(f.inputs for f in factors)) - plates

    q_factors = list(q_joint.log_factors.values())
    q_aux = free(q_factors) - frozenset(p_joint.log_factors)
    q_factors = _contract_aux(q_factors, plates, q_aux, "guide")
    p_factors = list(p_joint.log_factors.values())
    p_aux = free(p_factors) - frozenset(q_joint.log_factors)
    p_factors = _contract_aux(p_factors, plates, p_aux, "model")
    latent = free(q_factors)
    missing = free(p_factors) - latent
    if missing:
        raise ValueError(f"minipyro.elbo: the model's sites {sorted(missing)} are neither "
                         "observed, nor in the guide, nor summable")

    total = 0.0
    for cost in p_factors + [-q for q in q_factors]:
        read = latent & frozenset(cost.inputs)
        term = cost
        if read:
            q_marginal = sum_product(ops.logaddexp, ops.add, q_factors, plates=plates,
                                     eliminate=(plates | latent) - frozenset(cost.inputs))
            term = Integrate(q_marginal, cost, read)
        term = term.reduce(ops.add, plates & frozenset(term.inputs))
        total = term + total
    loss = -total
    if loss.inputs:
        raise ValueError(f"minipyro.elbo: the loss still has inputs {dict(loss.inputs)}")
    return loss


class ELBO:
    """Base class of the evidence lower bounds: ``elbo(model, guide, *args)`` is the loss.

    Example:
        >>> TraceEnum_ELBO(max_plate_nesting=1).options
        {'max_plate_nesting': 1}
    """

    def __init__(self, **options) -> None:
        self.options = options

    def __call__(self, model, guide, *args, **kwargs) -> Funsor:
        return elbo(model, guide, *args, **kwargs)

    def loss(self, model, guide, *args, **kwargs) -> float:
        return float(ops.detach(to_data(self(model, guide, *args, **kwargs))))


class Trace_ELBO(ELBO):
    """The ELBO estimated by sampling the guide (one draw per latent site, ``MonteCarlo``)."""

    def __call__(self, model, guide, *args, **kwargs) -> Funsor:
        with MonteCarlo():
            return elbo(model, guide, *args, **kwargs)


class TraceMeanField_ELBO(Trace_ELBO):
    """``Trace_ELBO`` (closed-form KL terms where ``MonteCarlo`` finds them)."""


class TraceEnum_ELBO(ELBO):
    """The ELBO with discrete latent sites summed exactly; ``optimize=True`` plans it first."""

    def __call__(self, model, guide, *args, **kwargs) -> Funsor:
        if self.options.get("optimize"):
            with optimize:
                expr = elbo(model, guide, *args, **kwargs)
            return reinterpret(expr)
        return elbo(model, guide, *args, **kwargs)


def JitTrace_ELBO(**options) -> ELBO:
    """``Trace_ELBO`` under funsor's jit name (evaluated eagerly, the same numbers).

    Example:
        >>> type(JitTrace_ELBO()).__name__
        'Trace_ELBO'
    """
    return Trace_ELBO(**options)


def JitTraceMeanField_ELBO(**options) -> ELBO:
    """``TraceMeanField_ELBO`` under funsor's jit name (evaluated eagerly).

    Example:
        >>> type(JitTraceMeanField_ELBO()).__name__
        'TraceMeanField_ELBO'
    """
    return TraceMeanField_ELBO(**options)


def JitTraceEnum_ELBO(**options) -> ELBO:
    """``TraceEnum_ELBO`` under funsor's jit name (evaluated eagerly).

    Example:
        >>> type(JitTraceEnum_ELBO()).__name__
        'TraceEnum_ELBO'
    """
    return TraceEnum_ELBO(**options)
