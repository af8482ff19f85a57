"""funsor 0.4.8's Gaussian ``funsor.pyro.hmm`` classes: ``GaussianHMM``, ``GaussianMRF`` and
``SwitchingLinearHMM``, pyro distributions whose ``log_prob`` is a Gaussian Markov product
over time computed by funsor-core.

The models (``x_t`` observed, ``z_t`` a real hidden state, ``s_t`` a discrete switch):

- ``GaussianHMM``: ``z_0 ~ initial_dist``, ``z_t = z_t-1 @ transition_matrix_t + noise``,
  ``x_t = z_t @ observation_matrix_t + noise``. The log density
  ``log ∫ p(z_0) prod_t p(z_t | z_t-1) p(x_t | z_t) dz`` is a ``MarkovProduct`` of
  Gaussian factors (a log-depth tree over time), plus the initial factor, integrated.
- ``GaussianMRF``: unnormalized factors ``init(z_0)``, ``trans(z_t-1, z_t)``, ``obs(z_t,
  x_t)`` (joint MVN densities); ``log p(x) = log Z(x) - log Z`` where ``Z(x)`` integrates the
  hidden states with the observations plugged in and ``Z`` integrates the observations too.
- ``SwitchingLinearHMM``: the GaussianHMM's matrices and noises are chosen by a switch
  ``s_t`` (a Markov chain over ``K`` classes). ``exact=True`` enumerates the ``K^(T+1)``
  switch paths (the forward filter of ``algorithms.filter.windowed`` with a window of all the
  chain's states); ``exact=False`` (the default) collapses the mixture over the previous
  switch to one Gaussian per class at every step by matching moments (GPB2). funsor 0.4.8
  matches moments inside a parallel tree instead, so approximate numbers differ; both are
  exact when the classes' dynamics agree.

The classes subclass pyro's ``TorchDistribution``; ``funsor_core.compat.pyro_hmm`` builds
them on first access (this module never imports pyro or torch).

Example:
    >>> import torch
    >>> from funsor_core.pyro.hmm import GaussianHMM
    >>> fc.set_backend("torch")
    >>> mvn = torch.distributions.MultivariateNormal
    >>> hmm = GaussianHMM(mvn(torch.zeros(1), torch.eye(1)), torch.zeros(3, 1, 1),
    ...                   mvn(torch.zeros(1), torch.eye(1)), torch.eye(1),
    ...                   mvn(torch.zeros(1), torch.eye(1)))
    >>> tuple(hmm.event_shape), round(hmm.log_prob(torch.zeros(3, 1)).item(), 5)  # 3 N(0; 0, 2)
    ((3, 1), -3.79654)
    >>> from funsor_core.pyro.hmm import SwitchingLinearHMM
    >>> slds = SwitchingLinearHMM(torch.zeros(2), mvn(torch.zeros(1), torch.eye(1)),
    ...                           torch.zeros(2), torch.zeros(3, 2, 1, 1),
    ...                           mvn(torch.zeros(1), torch.eye(1)), torch.eye(1),
    ...                           mvn(torch.zeros(1), torch.eye(1)), exact=True)
    >>> round(slds.log_prob(torch.zeros(3, 1)).item(), 5)  # both classes alike: as above
    -3.79654
    >>> cat, mvn = slds.filter(torch.zeros(3, 1))  # the last step's class and state
    >>> cat.probs.tolist(), mvn.batch_shape
    ([0.5, 0.5], torch.Size([2]))
    >>> fc.set_backend("numpy")
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from funsor_core.atoms.gaussian.mixture import collapse_sum
from funsor_core.atoms.tensor import Tensor
from funsor_core.compat.pyro_convert import (
    _split_gaussian,
    dist_to_funsor,
    funsor_to_cat_and_mvn,
    funsor_to_tensor,
    matrix_and_mvn_to_funsor,
    mvn_to_funsor,
    tensor_to_funsor,
)
from funsor_core.distribution.convert import torch_class
from funsor_core.domains import Bint, Reals, broadcast_shape
from funsor_core.engine.backend import backend_module
from funsor_core.terms.base import Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct

__all__ = ["gaussian_hmm_classes"]

STATE, NEXT = "state", "state(time=1)"
CLASS, NEXT_CLASS = "class", "class(time=1)"


def _check_mvn(cls: str, arg: str, d, size: int, kinds=("MultivariateNormal",)) -> None:
    if not any(isinstance(d, torch_class(k)) for k in kinds):
        raise TypeError(f"{cls}: {arg} must be a {' or '.join(kinds)}, got {type(d).__name__}")
    if tuple(d.event_shape) != (size,):
        raise ValueError(f"{cls}: {arg} has event_shape {tuple(d.event_shape)} but "
                         f"({size},) is needed")


def _check_matrix(cls: str, arg: str, m, rows: int, cols: int) -> None:
    if len(m.shape) < 2 or tuple(m.shape[-2:]) != (rows, cols):
        raise ValueError(f"{cls}: {arg} has shape {tuple(m.shape)} but its last two dims "
                         f"must be ({rows}, {cols})")


def _broadcast(cls: str, shapes: dict) -> tuple:
    """The broadcast of the arguments' batch shapes, or an error listing them by name."""
    try:
        return broadcast_shape(*shapes.values())
    except ValueError:
        listed = ", ".join(f"{k} {tuple(v)}" for k, v in shapes.items())
        raise ValueError(f"{cls}: the batch shapes (time rightmost) do not broadcast: "
                         f"{listed}") from None


def _zeros(shape: tuple, names: tuple = ()) -> Tensor:
    """0 over Pyro's batch dims (or ``names`` for the rightmost): adds their inputs."""
    zeros = backend_module().asarray(np.zeros(shape), "real")
    if names:
        return Tensor(zeros, tuple(zip(names, (Bint[n] for n in shape))))
    return tensor_to_funsor(zeros)


def _value_time(cls: str, value, event_shape: tuple) -> int:
    """The number of steps of ``value`` (its dim -2), checked against ``event_shape``."""
    if value.dim() < 2 or value.shape[-1] != event_shape[-1]:
        raise ValueError(f"{cls}.log_prob: value has shape {tuple(value.shape)} but its last "
                         f"two dims must be (time, {event_shape[-1]})")
    steps = value.shape[-2]
    if event_shape[0] not in (1, steps):  # a homogeneous chain (1 step) fits any length
        raise ValueError(f"{cls}.log_prob: value has {steps} steps but the distribution's "
                         f"event_shape is {tuple(event_shape)}")
    return steps


def _with_inputs(steps, sizes: dict):
    # A factor constant along a dim names no input for it (the dim had size 1); a scan needs
    # its time and the step's prev and curr names as inputs.
    for name, size in sizes.items():
        if name not in steps.inputs:
            steps = steps + _zeros((size,), (name,))
    return steps


def _chain_total(init, steps, size: int):
    """log ∫ init(z_0) prod_t steps_t(z_t-1, z_t) dz: a Tensor over the batch inputs."""
    time = Variable("time", Bint[size])
    steps = _with_inputs(steps, {"time": size})
    # MarkovProduct's exact rule runs the Gaussian chain kernel (algorithms.chains), faster
    # than composing Gaussian terms step by step (sequential_sum_product).
    chain = MarkovProduct(ops.logaddexp, ops.add, steps, time, {STATE: NEXT})
    return (init + chain).reduce(ops.logaddexp, frozenset({STATE, NEXT}))


def _batch_ndims(dist, value) -> int:
    return max(len(dist.batch_shape), value.dim() - 2)


# GaussianHMM: initial, transition and observation factors of one chain.
def _gaussian_hmm_factors(args: tuple) -> tuple:
    init_dist, trans_matrix, trans_dist, obs_matrix, obs_dist = args
    cls = "GaussianHMM"
    if len(obs_matrix.shape) < 2:
        raise ValueError(f"{cls}: observation_matrix has shape {tuple(obs_matrix.shape)}; "
                         "it needs (..., hidden_dim, obs_dim)")
    hidden, obs = obs_matrix.shape[-2:]
    _check_mvn(cls, "initial_dist", init_dist, hidden)
    _check_matrix(cls, "transition_matrix", trans_matrix, hidden, hidden)
    _check_mvn(cls, "transition_dist", trans_dist, hidden)
    _check_mvn(cls, "observation_dist", obs_dist, obs, ("MultivariateNormal", "Independent"))
    shape = _broadcast(cls, {"initial_dist.batch_shape + (1,)": (*init_dist.batch_shape, 1),
                             "transition_matrix.shape[:-2]": trans_matrix.shape[:-2],
                             "transition_dist.batch_shape": trans_dist.batch_shape,
                             "observation_matrix.shape[:-2]": obs_matrix.shape[:-2],
                             "observation_dist.batch_shape": obs_dist.batch_shape})
    init = dist_to_funsor(init_dist)(value=STATE)
    trans = matrix_and_mvn_to_funsor(trans_matrix, trans_dist, ("time",), STATE, NEXT)
    obs_f = matrix_and_mvn_to_funsor(obs_matrix, obs_dist, ("time",), NEXT, "value")
    return (init, trans, obs_f), shape[:-1], (shape[-1], obs), hidden


# GaussianMRF: joint MVN factors over (z_t-1, z_t) and (z_t, x_t).
def _gaussian_mrf_factors(args: tuple) -> tuple:
    init_dist, trans_dist, obs_dist = args
    cls = "GaussianMRF"
    _check_mvn(cls, "initial_dist", init_dist, init_dist.event_shape[-1])
    hidden = init_dist.event_shape[0]
    _check_mvn(cls, "transition_dist", trans_dist, 2 * hidden)
    _check_mvn(cls, "observation_dist", obs_dist, obs_dist.event_shape[-1])
    obs = obs_dist.event_shape[0] - hidden
    if obs < 1:
        raise ValueError(f"{cls}: observation_dist has event_shape {tuple(obs_dist.event_shape)}"
                         f" but needs (hidden_dim + obs_dim,) with hidden_dim = {hidden} from "
                         "initial_dist and obs_dim >= 1")
    shape = _broadcast(cls, {"initial_dist.batch_shape + (1,)": (*init_dist.batch_shape, 1),
                             "transition_dist.batch_shape": trans_dist.batch_shape,
                             "observation_dist.batch_shape": obs_dist.batch_shape})
    # The factors' normalizing constants are in log Z(x) and log Z alike: left out of both,
    # the two logs are smaller and their difference loses fewer digits in float32.
    init = _gaussian_part(dist_to_funsor(init_dist)(value=STATE))
    trans = _gaussian_part(mvn_to_funsor(trans_dist, ("time",),
                                         {STATE: Reals[hidden], NEXT: Reals[hidden]}))
    obs_f = _gaussian_part(mvn_to_funsor(obs_dist, ("time",),
                                         {NEXT: Reals[hidden], "value": Reals[obs]}))
    return (init, trans, obs_f), shape[:-1], (shape[-1], obs), hidden


def _gaussian_part(f):
    """The Gaussian of ``Gaussian + Tensor`` (a distribution's density and its constant)."""
    gaussian, _ = _split_gaussian(f)
    return gaussian


# SwitchingLinearHMM: the GaussianHMM's factors chosen by a switch class at each step.
def _slhmm_factors(args: tuple) -> tuple:
    (init_logits, init_mvn, trans_logits, trans_matrix, trans_mvn, obs_matrix, obs_mvn) = args
    cls = "SwitchingLinearHMM"
    if len(obs_matrix.shape) < 2 or len(init_logits.shape) < 1:
        raise ValueError(f"{cls}: initial_logits {tuple(init_logits.shape)} needs (..., K) "
                         f"and observation_matrix {tuple(obs_matrix.shape)} (..., hidden_dim, "
                         "obs_dim)")
    classes = init_logits.shape[-1]
    hidden, obs = obs_matrix.shape[-2:]
    if len(trans_logits.shape) < 1 or trans_logits.shape[-1] != classes:
        raise ValueError(f"{cls}: transition_logits has shape {tuple(trans_logits.shape)} but "
                         f"its last dim must be K = {classes} (initial_logits' last dim)")
    _check_mvn(cls, "initial_mvn", init_mvn, hidden)
    _check_matrix(cls, "transition_matrix", trans_matrix, hidden, hidden)
    _check_mvn(cls, "transition_mvn", trans_mvn, hidden)
    _check_mvn(cls, "observation_mvn", obs_mvn, obs)
    first = _broadcast(cls, {"initial_logits.shape": init_logits.shape,
                             "initial_mvn.batch_shape": init_mvn.batch_shape})
    shape = _broadcast(cls, {"initial (..., 1, K)": (*first[:-1], 1, first[-1]),
                             "transition_logits.shape[:-1]": trans_logits.shape[:-1],
                             "transition_matrix.shape[:-2]": trans_matrix.shape[:-2],
                             "transition_mvn.batch_shape": trans_mvn.batch_shape,
                             "observation_matrix.shape[:-2]": obs_matrix.shape[:-2],
                             "observation_mvn.batch_shape": obs_mvn.batch_shape})
    if shape[-1] != classes:
        raise ValueError(f"{cls}: the arguments' class dim (the batch dim right of time) is "
                         f"{shape[-1]} but initial_logits has K = {classes} classes")
    init = (tensor_to_funsor(_log_normalize(init_logits), (CLASS,))
            + dist_to_funsor(init_mvn, (CLASS,))(value=STATE))
    trans = (tensor_to_funsor(_log_normalize(trans_logits), ("time", CLASS, NEXT_CLASS))
             + matrix_and_mvn_to_funsor(trans_matrix, trans_mvn, ("time", NEXT_CLASS),
                                        STATE, NEXT))
    obs_f = matrix_and_mvn_to_funsor(obs_matrix, obs_mvn, ("time", NEXT_CLASS), NEXT, "value")
    return (init, trans, obs_f), shape[:-2], (shape[-2], obs), hidden


def _log_normalize(logits):
    return logits - ops.logsumexp(logits, -1, keepdims=True)


def _slhmm_message(init, trans, obs, value, size: int, classes: int, exact: bool):
    """The forward message after the last step, over the last class and state."""
    steps = _with_inputs(trans + obs(value=value),
                         {"time": size, CLASS: classes, NEXT_CLASS: classes})
    window = size + 1 if exact else 1  # all the chain's switch states, or GPB2
    return windowed_filter(ops.logaddexp, ops.add, steps, "time",
                           {CLASS: NEXT_CLASS, STATE: NEXT}, init, window)


def _collapsed(msg):
    """The last step's message as one Gaussian per class: the older switch states that an
    exact filter kept (a lazy mixture) summed out by matching moments, the mass kept."""
    if isinstance(msg, Contraction) and msg.red_op is ops.logaddexp:
        collapsed = collapse_sum(msg.reduced_vars, msg.terms)
        if collapsed is not None:
            return collapsed
    return msg


# What an expanded distribution shares with its source (its _init gains the new batch dims).
_SHARED = ("_trans", "_obs", "hidden_dim", "obs_dim", "exact", "_classes")


def gaussian_hmm_classes(funsor_distribution) -> dict:
    """The three classes, subclasses of ``FunsorDistribution`` (built by ``pyro_hmm``).

    Example:
        >>> from funsor_core.compat.pyro_distribution import FunsorDistribution
        >>> sorted(gaussian_hmm_classes(FunsorDistribution))
        ['GaussianHMM', 'GaussianMRF', 'SwitchingLinearHMM']
    """

    class _GaussianChain(funsor_distribution):
        """What the three share: the factors held, ``expand`` and ``has_rsample``."""

        arg_constraints = {}
        _factors = None  # args -> ((init, trans, obs), batch_shape, event_shape, hidden_dim)

        def _setup(self, args: tuple, validate_args) -> None:
            (self._init, self._trans, self._obs), batch_shape, event_shape, hidden = \
                type(self)._factors(args)
            self.hidden_dim, self.obs_dim = hidden, event_shape[-1]
            # The chain is summed in log_prob; the funsor held is the value alone.
            value = Variable("value", Reals[event_shape])
            super().__init__(value, tuple(batch_shape), tuple(event_shape), "real",
                             validate_args)

        @property
        def has_rsample(self):
            return True

        def _draw(self, sample_shape):
            raise NotImplementedError(f"sampling a funsor.pyro.hmm.{type(self).__name__} is "
                                      "not built in funsor-core")

        def expand(self, batch_shape, _instance=None):
            new = self._get_checked_instance(type(self), _instance)
            batch_shape = tuple(batch_shape)
            new.__dict__.update({k: v for k, v in self.__dict__.items() if k in _SHARED})
            new._init = self._init + _zeros(batch_shape)
            funsor_distribution.__init__(new, self.funsor_dist, batch_shape, self.event_shape,
                                         self.dtype, validate_args=False)
            new._validate_args = self._validate_args
            return new

    class GaussianHMM(_GaussianChain):
        """A hidden Markov model with a real state and linear Gaussian dynamics and
        observations, as funsor's ``funsor.pyro.hmm.GaussianHMM`` (and pyro's
        ``pyro.distributions.GaussianHMM``): ``GaussianHMM(initial_dist, transition_matrix,
        transition_dist, observation_matrix, observation_dist)``, matrices ordered
        ``(old, new)``; time is the leftmost event dim. Sampling is not built.

        Example:
            One step, ``z_1 = z_0 + e``, ``x_1 = z_1 + e'``, all noises N(0, 1): x_1 ~ N(0, 3).

            >>> import torch
            >>> fc.set_backend("torch")
            >>> std = torch.distributions.MultivariateNormal(torch.zeros(1), torch.eye(1))
            >>> hmm = GaussianHMM(std, torch.ones(1, 1, 1), std, torch.eye(1), std)
            >>> normal = torch.distributions.Normal(0.0, 3 ** 0.5)
            >>> x = torch.tensor([[0.7]])
            >>> torch.allclose(hmm.log_prob(x), normal.log_prob(x[0, 0]))
            True
            >>> fc.set_backend("numpy")
        """

        _factors = staticmethod(_gaussian_hmm_factors)

        def __init__(self, initial_dist, transition_matrix, transition_dist,
                     observation_matrix, observation_dist, validate_args=None):
            self._setup((initial_dist, transition_matrix, transition_dist, observation_matrix,
                         observation_dist), validate_args)

        def log_prob(self, value):
            size = _value_time("GaussianHMM", value, self.event_shape)
            if self._validate_args:  # as FunsorDistribution.log_prob (funsor's as well)
                self._validate_sample(value)
            v = tensor_to_funsor(value, ("time",), 1)
            total = _chain_total(self._init, self._trans + self._obs(value=v), size)
            return funsor_to_tensor(total, _batch_ndims(self, value))

    class GaussianMRF(_GaussianChain):
        """A temporal Markov random field with Gaussian factors, as funsor's
        ``funsor.pyro.hmm.GaussianMRF``: ``GaussianMRF(initial_dist, transition_dist,
        observation_dist)``, MVNs over ``z_0``, ``(z_t-1, z_t)`` and ``(z_t, x_t)``;
        ``log p(x) = log Z(x) - log Z``. Sampling is not built.

        Example:
            Independent standard factors: the observation is N(0, 1) whatever the states.

            >>> import torch
            >>> fc.set_backend("torch")
            >>> mvn = torch.distributions.MultivariateNormal
            >>> mrf = GaussianMRF(mvn(torch.zeros(1), torch.eye(1)),
            ...                   mvn(torch.zeros(2), torch.eye(2)),
            ...                   mvn(torch.zeros(2), torch.eye(2)))
            >>> x, normal = torch.tensor([[0.7]]), torch.distributions.Normal(0.0, 1.0)
            >>> torch.allclose(mrf.log_prob(x), normal.log_prob(x[0, 0]))
            True
            >>> fc.set_backend("numpy")
        """

        _factors = staticmethod(_gaussian_mrf_factors)

        def __init__(self, initial_dist, transition_dist, observation_dist,
                     validate_args=None):
            self._setup((initial_dist, transition_dist, observation_dist), validate_args)

        def log_prob(self, value):
            size = _value_time("GaussianMRF", value, self.event_shape)
            if self._validate_args:  # as FunsorDistribution.log_prob (funsor's as well)
                self._validate_sample(value)
            v = tensor_to_funsor(value, ("time",), 1)
            joint = _chain_total(self._init, self._trans + self._obs(value=v), size)
            hidden = self._trans + self._obs.reduce(ops.logaddexp, "value")
            evidence = _chain_total(self._init, hidden, size)
            return funsor_to_tensor(joint - evidence, _batch_ndims(self, value))

    class SwitchingLinearHMM(_GaussianChain):
        """A switching linear dynamical system, as funsor's
        ``funsor.pyro.hmm.SwitchingLinearHMM``: ``SwitchingLinearHMM(initial_logits,
        initial_mvn, transition_logits, transition_matrix, transition_mvn,
        observation_matrix, observation_mvn, exact=False)``; the class is the batch dim right
        of time. ``exact=True`` enumerates the switch paths (``K^(T+1)``), ``exact=False``
        matches moments at every step (GPB2). ``filter(value)`` gives the last step's
        posterior as ``(Categorical, MultivariateNormal)``. Sampling is not built.

        Example:
            One step, two equally likely classes: ``z_1 = e`` (class 0) or ``z_0 + e`` (class
            1), ``x_1 = z_1 + e'``, so x_1 ~ N(0, 2) or N(0, 3); given x_1 = 0.7 the state's
            posterior is N(0.7 / 2, 1 / 2) or N(0.7 * 2 / 3, 2 / 3).

            >>> import math, torch
            >>> fc.set_backend("torch")
            >>> std = torch.distributions.MultivariateNormal(torch.zeros(1), torch.eye(1))
            >>> a = torch.tensor([0.0, 1.0]).reshape(1, 2, 1, 1)  # (time, class, old, new)
            >>> slds = SwitchingLinearHMM(torch.zeros(2), std, torch.zeros(1, 2, 2), a, std,
            ...                           torch.eye(1), std, exact=True)
            >>> x = torch.tensor([[0.7]])
            >>> per_class = torch.distributions.Normal(0.0, torch.tensor([2.0, 3.0]).sqrt())
            >>> mixture = per_class.log_prob(torch.tensor(0.7)).logsumexp(0) - math.log(2)
            >>> torch.allclose(slds.log_prob(x), mixture)
            True
            >>> cat, posterior = slds.filter(x)
            >>> torch.allclose(posterior.loc.flatten(), torch.tensor([0.35, 0.7 * 2 / 3]))
            True
            >>> fc.set_backend("numpy")
        """

        _factors = staticmethod(_slhmm_factors)

        def __init__(self, initial_logits, initial_mvn, transition_logits, transition_matrix,
                     transition_mvn, observation_matrix, observation_mvn, exact=False,
                     validate_args=None):
            self._setup((initial_logits, initial_mvn, transition_logits, transition_matrix,
                         transition_mvn, observation_matrix, observation_mvn), validate_args)
            self.exact = exact
            self._classes = initial_logits.shape[-1]

        def _message(self, value):
            size = _value_time("SwitchingLinearHMM", value, self.event_shape)
            v = tensor_to_funsor(value, ("time",), 1)
            return _slhmm_message(self._init, self._trans, self._obs, v, size,
                                  self._classes, self.exact)

        def log_prob(self, value):
            total = self._message(value).reduce(ops.logaddexp, frozenset({NEXT_CLASS, NEXT}))
            return funsor_to_tensor(total, _batch_ndims(self, value))

        def filter(self, value):
            """The posterior of the last step's class and state given ``value``:
            ``(Categorical over classes, MultivariateNormal with the classes as its
            rightmost batch dim)``."""
            msg = _collapsed(self._message(value))
            msg = msg + _zeros(tuple(self.batch_shape))  # every batch dim, as funsor's
            cat, mvn = funsor_to_cat_and_mvn(msg, _batch_ndims(self, value), (NEXT_CLASS,))
            # A Gaussian the same in every class names no class input: one MVN per class.
            return cat, mvn.expand(tuple(cat.logits.shape))

    return {"GaussianHMM": GaussianHMM, "GaussianMRF": GaussianMRF,
            "SwitchingLinearHMM": SwitchingLinearHMM}
