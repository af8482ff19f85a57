"""The plain functions of loopy inference: ``loopy_bp``, ``gibbs`` and ``mh``.

They take a list of discrete log-factor Tensors (the terms of a sum), build the factor graph
once and run on it; ``funsor_core.loopy`` is the public face, and
``interpretations.LoopyBP`` / ``interpretations.Gibbs`` the interpretation forms.

Example:
    >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> np.exp(loopy_bp([f]).beliefs["a"].data).round(3).tolist()
    [0.3, 0.7]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.factor_list import factor_list
from funsor_core.algorithms.loopy.anytime import sparse_bp
from funsor_core.algorithms.loopy.bp import SCHEDULES, BPResult, run_bp
from funsor_core.algorithms.loopy.cluster_bp import ClusterBPResult, cluster_bp
from funsor_core.algorithms.loopy.graph import NEG, Beliefs, FactorGraph, require_values
from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains, void_unsupported
from funsor_core.algorithms.loopy.messages import check_damping
from funsor_core.algorithms.loopy.runners import cached_plan
from funsor_core.algorithms.loopy.sparsity import sparse_value_bp
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.floats import float_info

__all__ = ["loopy_bp", "gibbs", "mh", "Samples", "sample_chains", "check_bp_options",
           "check_chain_options", "require_concrete"]


def loopy_bp(factors, sum_op=ops.logaddexp, schedule: str = "flooding", damping: float = 0.0,
             tol: float = 1e-8, max_iters: int = 1000, *, temperature: float = 1.0,
             batch=(), rng_key=0, domains=None, sparsity_threshold=None, clusters=None,
             compression=None, init=None) -> BPResult:
    """Belief propagation over discrete log factors (Singh 2014, chapter 6; libDAI's options).

    Args:
        factors: discrete Tensors (log potentials) whose sum is the model.
        sum_op: ``ops.logaddexp`` (sum-product) or ``ops.max`` (max-product).
        schedule: ``"flooding"`` (``"parallel"``), ``"sequential"``, ``"random"`` or
            ``"residual"`` (residual BP: a priority queue of factors by the dynamic range of
            their message change, eq. 7.6; on concrete numpy/torch arrays an update costs
            its factor's messages and its neighbours' recomputed ones, ``asynchronous.py``).
        damping: weight of the old message in log space, in ``[0, 1)``.
        tol, max_iters: stop once no message changes more than ``tol`` (eagerly), or after
            ``max_iters`` iterations (a fixed-length ``scan`` under ``jax.jit``). With
            float32 tables ``tol`` is at least their roundoff, ``16 eps (1 + spread +
            log D)`` (``messages.roundoff_tol``): a float32 message never settles to 1e-8.
        temperature: of the sum-product reduction ``T logsumexp(x / T)``; 0 is max-product.
            The beliefs are normalized in that reduction, ``T logsumexp(b / T) = 0``: the
            tempered model's marginals (``p ~ exp(sum(factors) / T)``) are ``exp(b / T)``,
            and ``log_z`` is ``T log sum exp(sum(factors) / T)``.
        batch: names that index independent copies of the model (one run for all).
        rng_key: an int seed for ``schedule="random"`` (with ``clusters``, also for sampled
            messages; with ``batch``, one int per element: see ``cluster_bp``).
        domains: sparse domains, ``{name: states}`` (Singh 2014 ch. 7.2): BP on the model
            truncated to them (beliefs keep the full domains, 0 outside); the variables not
            named keep theirs. ``anytime_bp`` grows them step by step.
        sparsity_threshold: single-value sparsity (ch. 7.1, ``sparse_value_bp``): a
            variable whose marginal's mode reaches this probability is fixed to it (its
            belief a point mass), revocably; above 1 it is plain BP. Not with ``domains``.
        clusters: cluster BP (generalized BP on a cluster graph, ch. 8; ``cluster_bp``): a
            partition of the variables, a list of tuples of names. Inside a cluster the
            elimination is exact; across clusters the messages are joint tables over the
            cluster's variables a cluster factor touches, compressed by ``compression``.
            Takes every schedule (over cluster factors), ``damping``, ``tol``,
            ``max_iters``, ``temperature``, ``batch`` (a callable compression is called
            once per element), ``rng_key`` and both semirings; not ``domains`` or
            ``sparsity_threshold``.
        compression: with ``clusters``, the projection of the cluster messages: a name in
            ``PROJECTIONS`` (``"full"``, the default: generalized BP; ``"factorized"``:
            the product of the exact cavity's single-variable marginals, loopy BP's messages
            with one variable per cluster; ``"kbest"``), a ``(name, k)`` pair such as
            ``("kbest", 8)``, or a callable ``project(log_table, *, k, rng_key, state)``
            returning a ``Projection``.
        init: ``"unary"`` starts each single-variable factor's messages at their exact
            value (the factor's table), the others uniform: a damped run then does not
            delay that evidence (as PGMax's evidence arrays; same fixed points). On PGMax's
            50 RBMs (max-product, damping 0.5, 200 iterations) it recovers 46 exact MAPs
            against 44 with the default (``None``: every message uniform).

    Returns:
        A ``BPResult``: ``.beliefs``, ``.factor_beliefs``, ``.log_z`` (Bethe; its gradient
        with respect to a factor's log table is that factor's belief), ``.residuals``,
        ``.num_iters``, ``.num_messages``, ``.num_message_entries``, ``.map_assignment()``.
        Where the factors give every assignment probability zero (evidence the model rules
        out), ``log_z`` is -inf and the beliefs, conditionals on an impossible event, are
        NaN (per batch element, eagerly and under ``jax.jit``, as ``markov_marginals``).
        With ``clusters``, a ``ClusterBPResult``: ``.beliefs``, ``.cluster_beliefs``,
        ``.log_z`` (the cluster graph's Bethe log Z), ``.residuals``, ``.num_iters``,
        ``.converged``, ``.num_messages`` and ``.counts`` (network and local messages and
        bytes); no factor beliefs or MAP decoding yet.

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> r = loopy_bp([f], sum_op=ops.max)
        >>> float(np.exp(r.log_z.data)), r.map_assignment()
        (4.0, {'a': 1, 'b': 1})
    """
    _static("loopy_bp", temperature=temperature, damping=damping, tol=tol, max_iters=max_iters,
            sparsity_threshold=sparsity_threshold)
    if isinstance(domains, Mapping):  # the sparse states fix the compact tables' shapes
        for name, states in domains.items():
            parts = [states] if hasattr(states, "shape") or not isinstance(
                states, Iterable) else list(states)
            for part in parts:
                _static("loopy_bp", **{f"domains[{name!r}]": part})
    max_iters = int(max_iters) if isinstance(max_iters, np.integer) else max_iters
    if not (isinstance(max_iters, int) and max_iters >= 0 and tol >= 0):  # NaN tol too
        raise ValueError(f"loopy_bp: need an int max_iters >= 0 and tol >= 0, got "
                         f"max_iters={max_iters!r}, tol={tol!r}")
    if init is not None and (clusters is not None or compression is not None or
                             domains is not None or sparsity_threshold is not None):
        raise ValueError("init= applies to plain loopy BP, not with clusters=, compression=, "
                         "domains= or sparsity_threshold=")
    if clusters is not None or compression is not None:
        return _cluster_bp(factors, clusters, compression, sum_op, schedule, damping, tol,
                           max_iters, temperature, batch, rng_key, domains, sparsity_threshold)
    graph = FactorGraph.build(_checked(factors), batch=batch)
    if sparsity_threshold is not None:
        if domains is not None:
            raise ValueError("pass either domains= (sparse domains) or sparsity_threshold= "
                             "(single-value sparsity), not both")
        return sparse_value_bp(graph, sparsity_threshold, sum_op, schedule=schedule,
                               damping=damping, tol=tol, max_iters=max_iters,
                               temperature=temperature, rng_key=rng_key)
    if domains is not None:
        return sparse_bp(graph, domains, sum_op, schedule=schedule, damping=damping, tol=tol,
                         max_iters=max_iters, temperature=temperature, rng_key=rng_key)
    return run_bp(graph, sum_op, schedule, damping, tol, max_iters, temperature, rng_key,
                  init=init)


def _cluster_bp(factors, clusters, compression, sum_op, schedule, damping, tol, max_iters,
                temperature, batch, rng_key, domains, sparsity_threshold) -> ClusterBPResult:
    if clusters is None:
        raise ValueError(f"compression={compression!r} compresses cluster messages: pass "
                         "clusters= too (a partition of the variables)")
    if domains is not None or sparsity_threshold is not None:
        raise ValueError("clusters= does not combine with domains= or sparsity_threshold=")
    return cluster_bp(_checked(factors), clusters, "full" if compression is None
                      else compression, sum_op, schedule, damping, tol, max_iters,
                      temperature=temperature, batch=batch, rng_key=rng_key)


_TRACED = ("{what}: {name} must be a concrete number or array (it fixes the program's "
           "shape or branches), got a traced value; under jax.jit pass a number as a static "
           "argument (jax.jit(f, static_argnums=...)), or close over a Python number or a "
           "numpy array (an annealing schedule)")


def require_concrete(what: str, **options) -> None:
    """Raise a ``TypeError`` naming the first option that is a traced value (under
    ``jax.jit``) where a concrete one fixes the program (a count, a threshold, a state).

    Example:
        >>> require_concrete("gibbs", num_samples=10, warmup=np.int64(2))
    """
    for name, value in options.items():
        if hasattr(value, "shape") and not ops.is_concrete(value):
            raise TypeError(_TRACED.format(what=what, name=name))


_static = require_concrete


def _checked(factors) -> list:
    factors = factor_list(factors)
    if not factors:
        raise ValueError("loopy inference needs at least one factor")
    for f in factors:  # a finite log 0 (NEG) must fit the dtype: float16's largest is 65504
        data = getattr(f, "data", None)
        if isinstance(f, Tensor) and ops.is_floating(data) and float_info(data.dtype).max < -NEG:
            raise TypeError(f"loopy inference needs float32, float64 or bfloat16 factors: its "
                            f"log 0 is {NEG}, past the range of {str(data.dtype).split('.')[-1]} "
                            f"(a factor over {list(f.inputs)}); cast them first, e.g. "
                            f"x.float() (torch) or x.astype(np.float32) (numpy, jax)")
    return factors


class Samples(Beliefs):
    """Samples by variable name: each an int Tensor over ``particle`` (and ``chain`` when
    there are several chains), with counters ``num_updates`` (variable updates) and
    ``num_factors_scored`` (factor table entries read); an unknown name's ``KeyError``
    lists the model's variables.

    Example:
        >>> p = np.array([[1.0, 3.0], [2.0, 2.0]])
        >>> f = fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> s = gibbs([f], 1000, num_chains=2, rng_key=0)
        >>> s["b"].inputs, s.num_updates  # 2 variables, 2 chains, 1000 rounds
        ({'particle': Bint[1000], 'chain': Bint[2]}, 4000)
        >>> exact = p.sum(0) / p.sum()  # [0.375, 0.625]
        >>> bool(np.abs(np.exp(s.marginals()["b"].data) - exact).max() < 0.05)
        True
    """

    what = "samples"
    num_updates: int = 0
    num_factors_scored: int = 0
    float_dtype: str = "real"  # the factors' float dtype, by name ("float32")

    def marginals(self) -> dict:
        """Each variable's empirical log marginal over all particles and chains, a Tensor of
        the samples' backend in the factors' float dtype (comparable with BP's beliefs)."""
        out = {}
        for name, t in self.items():
            # counts by a one-hot sum in the backend's ops: also traced under jax.jit
            x = ops.reshape(t.data, (-1, 1))
            states = ops.reshape(ops.new_arange(t.data, 0, t.dtype, 1), (1, t.dtype))
            hits = ops.astype(x == states, self.float_dtype)  # (booleans to the float dtype)
            with np.errstate(divide="ignore"):  # a state never drawn: log 0, no warning
                log_p = ops.log(ops.sum(hits, 0)) - math.log(x.shape[0])
            out[name] = Tensor(log_p, {name: Bint[t.dtype]})
        return out


def sample_chains(factors, num_samples: int, warmup: int = 0, num_chains: int = 1,
                  rng_key=None, *, kernel: str = "gibbs", thin: int = 1, temperature=1.0,
                  init=None, subsample=None, proposal=None) -> Samples:
    """Blocked MCMC (``kernel="gibbs"`` or ``"mh"``, with ``proposal`` and ``subsample``
    for MH); ``gibbs`` and ``mh`` are the faces. ``warmup`` rounds are dropped, then every
    ``thin``-th round is kept.

    Example:
        >>> p = np.array([[1.0, 3.0], [2.0, 2.0]])
        >>> f = fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> s = sample_chains([f], 1000, warmup=10, rng_key=0, kernel="mh")
        >>> exact = p.sum(0) / p.sum()  # [0.375, 0.625]
        >>> bool(np.abs(np.exp(s.marginals()["b"].data) - exact).max() < 0.05)
        True
    """
    _static(kernel, num_samples=num_samples, warmup=warmup, num_chains=num_chains, thin=thin,
            temperature=temperature, subsample=subsample)
    check_chain_options(num_samples, warmup, num_chains, thin)
    plan = cached_plan(FactorGraph.build(_checked(factors)), SamplerPlan)
    graph = plan.graph
    require_values(graph, kernel)
    rounds = warmup + num_samples * thin
    temps = (np.full(rounds, float(temperature)) if np.ndim(temperature) == 0
             else np.asarray(temperature, float))
    _check_temperatures(temps, rounds)
    if init is None:
        init = np.zeros((num_chains, len(graph.names)), np.int64)
    else:
        _check_init(init, graph, num_chains)
    if proposal is not None and kernel != "mh":
        raise ValueError(f"proposal= is for kernel='mh'; kernel={kernel!r} draws from the "
                         "exact conditionals")
    states = run_chains(plan, init, rounds, kernel, temps, rng_key, proposal=proposal,
                        subsample=subsample)
    states = checked_states(plan, states, kernel, proposal)
    return samples_of_states(graph, states[warmup::thin], num_samples, num_chains, rounds)


def checked_states(plan: SamplerPlan, states, kernel: str, proposal=None):
    """``states`` ``(S, C, V)`` of MCMC chains, checked: a chain whose last state has
    probability zero raises a ``ValueError`` where the states are concrete; traced (under
    ``jax.jit``) its states are -1 instead, as are all where a table or ``proposal`` holds
    NaN or +inf (``void_unsupported``).

    Example:
        >>> f = fc.Tensor(np.array([[0.0, -np.inf], [-np.inf, 0.0]]),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> plan = SamplerPlan(FactorGraph.build([f]))
        >>> checked_states(plan, np.array([[[0, 1]]]), "gibbs")
        Traceback (most recent call last):
        ...
        ValueError: gibbs: chain 0 ended in a state of probability zero ...
    """
    if ops.is_concrete(states):
        _check_support(plan, states[-1], kernel)
        return states
    return void_unsupported(plan, states, proposal)


def _check_support(plan: SamplerPlan, x, kernel: str) -> None:
    # Each chain's last state scored factor by factor (one gather per arity, on host copies:
    # eager jax would compile each small op): a -inf factor means the chain ended outside
    # the support (a model of mass 0, or a chain that never left an impossible init), where
    # its states are no samples of anything.
    xs = np.asarray(ops.to_numpy(x)).astype(np.int64)
    for group in plan.graph.groups:
        table = np.asarray(ops.to_numpy(ops.detach(group.table)))
        states = xs[:, group.var_index]  # (C, F_k, k)
        rows = np.arange(len(group.factor_ids))[None, :]
        scores = table[(rows, *np.moveaxis(states, -1, 0))]  # (C, F_k)
        bad = ~(scores > NEG / 2)  # -inf (stored as NEG) or NaN
        if bad.any():
            chain = int(np.nonzero(bad)[0][0])
            raise ValueError(f"{kernel}: chain {chain} ended in a state of probability zero "
                             "(a factor is -inf there): the model has mass zero, or the "
                             "chain never reached its support from init; pass an init "
                             "inside the support or more warmup")


def check_chain_options(num_samples, warmup=0, num_chains=1, thin=1) -> None:
    """Raise unless the counts of an MCMC run are ints in range (``gibbs``, ``mh`` and the
    ``Gibbs`` interpretation, which checks them when it is made).

    Example:
        >>> check_chain_options(0)
        Traceback (most recent call last):
        ...
        ValueError: need int num_samples >= 1, warmup >= 0, num_chains >= 1, thin >= 1; got 0, ...
    """
    try:  # ints, or what indexes as one (a numpy or concrete jax integer); 5.0 is not
        counts = [operator.index(n) for n in (num_samples, warmup, num_chains, thin)]
    except TypeError:
        counts = None
    if counts is None or counts[0] < 1 or counts[1] < 0 or counts[2] < 1 or counts[3] < 1:
        raise ValueError(f"need int num_samples >= 1, warmup >= 0, num_chains >= 1, thin >= 1; "
                         f"got {num_samples}, {warmup}, {num_chains}, {thin}")


def check_bp_options(schedule: str, damping, tol, max_iters, temperature,
                     sparsity_threshold=None) -> None:
    """Raise unless the options of a plain BP run are valid (``loopy_bp`` runs them again;
    the ``LoopyBP`` interpretation checks them when it is made, not at its first use).

    Example:
        >>> check_bp_options("fooding", 0.0, 1e-8, 100, 1.0)
        Traceback (most recent call last):
        ...
        ValueError: unknown schedule 'fooding'; choose one of ('flooding', ...
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {SCHEDULES}")
    check_damping(damping)
    if not (isinstance(max_iters, (int, np.integer)) and max_iters >= 0 and tol >= 0):
        raise ValueError(f"loopy_bp: need an int max_iters >= 0 and tol >= 0, got "
                         f"max_iters={max_iters!r}, tol={tol!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if sparsity_threshold is not None and not sparsity_threshold > 0:
        raise ValueError(f"sparsity_threshold must be a probability in (0, 1] (above 1: "
                         f"plain BP), got {sparsity_threshold}")


def _check_temperatures(temps, rounds: int) -> None:
    if temps.shape != (rounds,):
        raise ValueError(f"temperature: a number or one per round (warmup + num_samples * thin "
                         f"= {rounds}), got shape {temps.shape}")
    if not (temps >= 0).all():  # NaN too
        raise ValueError(f"temperature must be >= 0 (0: the MAP), got {temps[~(temps >= 0)][:3]}")


def _check_init(init, graph: FactorGraph, num_chains: int) -> None:
    shape = (num_chains, len(graph.names))
    if tuple(np.shape(init)) != shape:
        raise ValueError(f"init: one state per chain and variable, shape {shape} (num_chains, "
                         f"V) for the variables {list(graph.names)}, got {tuple(np.shape(init))}")
    if not ops.is_concrete(init):
        return
    values = np.asarray(ops.to_numpy(init))
    bad = (values < 0) | (values >= np.asarray(graph.sizes)) | (values != np.round(values))
    if bad.any():
        c, v = (int(i[0]) for i in np.nonzero(bad))
        size = graph.sizes[v]
        raise ValueError(f"init: chain {c} starts variable '{graph.names[v]}' (Bint[{size}]) "
                         f"at {values[c, v]}, outside 0..{size - 1}")


def samples_of_states(graph: FactorGraph, states, num_samples: int, num_chains: int,
                      rounds: int | None = None) -> Samples:
    """(S, C, V) sampler states as ``Samples``: one int Tensor per variable over ``particle``
    (and ``chain`` when there are several); with ``rounds``, the work counters too."""
    out = Samples()
    inputs = {"particle": Bint[num_samples]}
    if num_chains > 1:
        inputs["chain"] = Bint[num_chains]
    for i, name in enumerate(graph.names):
        data = states[:, :, i] if num_chains > 1 else states[:, 0, i]
        out[name] = Tensor(data, dict(inputs), graph.sizes[i])
    if graph.groups:  # the dtype by name: a static attribute of the pytree
        out.float_dtype = str(graph.groups[0].table.dtype).rsplit(".", 1)[-1]
    if rounds is not None:
        out.num_updates = rounds * num_chains * len(graph.names)
        out.num_factors_scored = rounds * num_chains * graph.num_edges * graph.D
    return out


def gibbs(factors, num_samples: int, warmup: int = 0, num_chains: int = 1, rng_key=None, *,
          thin: int = 1, temperature=1.0, init=None) -> Samples:
    """Blocked Gibbs sampling of the model ``sum(factors)`` (Markov blankets only; the
    variables of one colour of a graph colouring updated together).

    Args:
        factors: discrete log-factor Tensors.
        num_samples, warmup, thin: rounds kept, rounds dropped first, keep every ``thin``-th.
        num_chains: independent chains, run as one array program.
        rng_key: an int seed (the same draws on each backend's generator) or a jax key.
        temperature: a number, or one per round (annealing toward a MAP as it goes to 0).
        init: ``(num_chains, V)`` initial states (default all zeros).

    A NaN or +inf potential, or a chain that ends in a state of probability zero (a model
    of mass zero, or evidence it never reached), raises a ``ValueError`` where the values
    are concrete; under ``jax.jit`` that chain's states are -1 (no state) instead.

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 3.0]])), {"a": fc.Bint[1], "b": fc.Bint[2]})
        >>> s = gibbs([f], 2000, rng_key=0)
        >>> s["b"].inputs, bool(abs(s["b"].data.mean() - 0.75) < 0.05)
        ({'particle': Bint[2000]}, True)
    """
    return sample_chains(factors, num_samples, warmup, num_chains, rng_key, kernel="gibbs",
                         thin=thin, temperature=temperature, init=init)


def mh(factors, num_samples: int, warmup: int = 0, num_chains: int = 1, rng_key=None, *,
       thin: int = 1, temperature=1.0, init=None, subsample=None, proposal=None) -> Samples:
    """Single-site Metropolis-Hastings, the variables of a colour updated together (they are
    independent given the rest): a proposal per variable, uniform over its states or drawn
    from ``proposal`` (a ``(D, D)`` array of ``log q(y | x)``, rows ``x``), accepted with
    ``min(1, p(y) q(x | y) / (p(x) q(y | x)))`` from its Markov blanket (the other arguments
    as ``gibbs``). ``subsample``: MCMCMC (Singh 2014 ch. 5.1), each acceptance test scores
    a uniform subsample of this fraction of the variable's factors, scaled up (eq. 5.2), or
    with ``Confidence(width, level)`` draws factors until their mean log ratio's confidence
    interval is narrower than ``width`` (5.1.1.2): faster per step, but the chain's
    stationary distribution is no longer exact below a fraction or level of 1.

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 3.0]])), {"a": fc.Bint[1], "b": fc.Bint[2]})
        >>> bool(abs(mh([f], 4000, rng_key=0)["b"].data.mean() - 0.75) < 0.05)
        True
    """
    return sample_chains(factors, num_samples, warmup, num_chains, rng_key, kernel="mh",
                         thin=thin, temperature=temperature, init=init, subsample=subsample,
                         proposal=proposal)
