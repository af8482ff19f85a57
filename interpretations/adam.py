"""``Adam(num_steps, lr=...)``: minimize a loss over its real inputs by gradient descent.

Within ``with Adam(num_steps, lr=0.05) as optim:``, ``loss.reduce(ops.min, names)`` over real
inputs ``names`` of a scalar loss runs ``num_steps`` steps of Adam (Kingma and Ba, 2015) on
those inputs, starting from ``optim.params`` (a standard normal draw where a name has none),
and returns the loss at the final parameters; ``optim.param(name)`` is the parameter found.
``ops.max`` maximizes. The loss is evaluated by the interpretation the ``Adam`` was entered in
(so an enclosing interpretation that evaluates special terms of the loss still applies), and
its gradient by the backend's autograd (torch or jax; numpy has none). funsor 0.4.8 spells
this ``funsor.adam.Adam``.

One step, with ``g`` the gradient at step ``t = 1, 2, ...`` (plus ``weight_decay * p``)::

    m <- b1 m + (1 - b1) g          v <- b2 v + (1 - b2) g^2
    p <- p - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)

Example:
    >>> import torch
    >>> x = fc.Variable("x", fc.Real)
    >>> loss = (x - fc.Tensor(torch.tensor(3.0))) ** 2
    >>> with Adam(200, lr=0.1, params={"x": fc.Tensor(torch.tensor(0.0))}) as optim:
    ...     best = loss.reduce(ops.min, "x")
    >>> round(optim.param("x").item(), 2), bool(best.item() < 1e-3)
    (3.0, True)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Domain
from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.engine.interpreter import ENTERED, Interpretation
from funsor_core.terms.base import Funsor, Reduce, to_funsor

__all__ = ["Adam"]

_NOT_SCALAR = ("Adam: loss.reduce(ops.{op}, {names}) needs a scalar loss once those names are "
               "set, but it also has the inputs {rest}; reduce them into the loss first, e.g. "
               "loss.reduce(ops.add, {first!r}).reduce(ops.{op}, {names})")
_NOT_REAL = ("Adam: loss.reduce(ops.{op}, {names}) optimizes real inputs by gradients, but "
             "{name!r} is {domain}; reduce it outside the Adam block")
_NO_GRAD = ("Adam: the {backend} backend has no autograd to differentiate the loss; use torch "
            "or jax arrays (funsor_core.set_backend('torch'))")
_UNKNOWN = ("Adam.param({name!r}): no parameter of that name (known: {known}); give its "
            "domain to draw a starting value, e.g. optim.param({name!r}, Reals[3])")


class Adam(Interpretation):
    """Adam descent in place of ``ops.min``/``ops.max`` reductions (see the module docstring).

    Args:
        num_steps: the number of gradient steps per reduction.
        lr, betas, eps, weight_decay: Adam's step size, moment decays, denominator guard and
            L2 penalty (torch's ``torch.optim.Adam`` defaults).
        log_every: print the loss every that many steps (0: never).
        params: starting values by name (Tensors or arrays); updated to the values found.

    Example:
        >>> optim = Adam(10, lr=0.5, params={"x": np.zeros(2)})
        >>> optim.param("x").shape
        (2,)
    """

    stateful = True

    def __init__(self, num_steps: int, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, log_every: int = 0,
                 params: dict | None = None, name: str = "adam") -> None:
        super().__init__(name, fallback=ENTERED)
        self.num_steps = int(num_steps)
        self.lr, self.betas, self.eps = float(lr), tuple(betas), float(eps)
        self.weight_decay = float(weight_decay)
        self.log_every = int(log_every)
        self.params = {k: to_funsor(v) for k, v in (params or {}).items()}

    def param(self, name: str, domain: Domain | None = None) -> Funsor:
        """The parameter ``name``: its latest value, or a standard normal draw of ``domain``
        (on the default backend) when it has none yet."""
        if name not in self.params:
            if domain is None:
                raise ValueError(_UNKNOWN.format(name=name, known=sorted(self.params)))
            self.params[name] = Tensor(backend_module().randn(domain.shape))
        return self.params[name]


# min_p loss(p) ~ loss(p_T), p_T after num_steps Adam steps from p_0.
@Adam.register(Reduce, type(ops.min), Funsor, frozenset)
def adam_reduce_min_funsor(state, op, loss, reduced_vars):
    return _descend(state, loss, reduced_vars, "min")


# max_p loss(p) = -min_p (-loss(p)).
@Adam.register(Reduce, type(ops.max), Funsor, frozenset)
def adam_reduce_max_funsor(state, op, loss, reduced_vars):
    return -_descend(state, -loss, reduced_vars, "max")


def _descend(state: Adam, loss: Funsor, reduced_vars: frozenset, opname: str) -> Funsor:
    names = sorted(n for n in reduced_vars if n in loss.inputs)
    for n in names:
        if loss.inputs[n].dtype != "real":
            raise ValueError(_NOT_REAL.format(op=opname, names=names, name=n,
                                              domain=loss.inputs[n]))
    rest = sorted(set(loss.inputs) - set(names))
    if rest:
        raise ValueError(_NOT_SCALAR.format(op=opname, names=names, rest=rest, first=rest[0]))
    if not names:
        return loss
    starts = [ops.detach(state.param(n, loss.inputs[n]).data) for n in names]
    backend = backend_of(starts[0])
    if not hasattr(backend, "value_and_vjp"):
        raise NotImplementedError(_NO_GRAD.format(backend=backend.__name__.split(".")[-1]))
    shapes = [tuple(s.shape) for s in starts]
    sizes = [math.prod(s) for s in shapes]
    flat = ops.cat([ops.reshape(s, (-1,)) for s in starts], 0)

    def unflatten(x) -> dict:
        out, at = {}, 0
        for n, shape, size in zip(names, shapes, sizes):
            out[n] = Tensor(ops.reshape(x[at:at + size], shape))
            at += size
        return out

    def value(x):
        return loss(**unflatten(x)).data

    b1, b2 = state.betas
    m = v = flat * 0.0
    with state.rest():  # the loss's own reductions are not optimized again
        for t in range(1, state.num_steps + 1):
            current, grad = backend.value_and_vjp(value, flat)
            if state.log_every and (t - 1) % state.log_every == 0:
                print(f"step {t - 1: >6d} loss = {float(current):g}")
            if state.weight_decay:
                grad = grad + state.weight_decay * flat
            m = b1 * m + (1 - b1) * grad
            v = b2 * v + (1 - b2) * grad * grad
            denom = ops.sqrt(v) / math.sqrt(1 - b2 ** t) + state.eps
            flat = flat - (state.lr / (1 - b1 ** t)) * m / denom
        found = unflatten(flat)
        state.params.update(found)
        return loss(**found)
