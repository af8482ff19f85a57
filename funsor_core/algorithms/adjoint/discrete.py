"""Inference in enumerated discrete models, in one call: marginals, MAP, k best
assignments, posterior samples, entropy and the log partition function.

A model is a list of log factors (Tensors over ``Bint`` variables) and a set of plate names.
One forward pass of tensor variable elimination (``sum_product``, along its contraction plan)
and its backward pass give every answer. On concrete Tensor factors the pass is
``sum_product``'s planned schedule replayed on host copies of the arrays (``scheduled.py``:
recipes cached by the factors' structure, no terms built); traced factors (``jax.jit``),
lazy factors, factors that carry gradients (marginals, entropy) and samples on jax, or on
torch by a torch generator or its global state, record the terms on an ``AdjointTape``:

- ``marginals``: ``(logaddexp, add)``; a variable's marginal is read off the smallest factor
  that has it: ``exp(adjoint(f) + f - log Z)``, summed over the factor's other variables.
- ``map``: on concrete Tensor factors, a max and an argmax per step of the schedule (the
  k-best search with k = 1, without building point masses); under ``jax.jit`` (traced
  factors) or with lazy factors, ``(max, add)`` under ``argmax_approximate``: point masses
  at the MAP assignment (Viterbi on a chain). Either returns a most probable assignment
  (ties: any of the best).
- ``kbest``: the max-product schedule (or tape) replayed in the k-max semiring (``kbest.py``).
- ``sample``: ``(logaddexp, add)`` under ``PosteriorSample``: exact joint samples (forward
  filtering, backward sampling).
- ``entropy``: ``H = log Z - sum_f E[f]``, the expectations taken under the factors'
  marginals from the same backward pass (torch-struct computes it with an entropy semiring).

A variable in plates ``P`` has one value per index of ``P``: its marginal is a Tensor with the
inputs ``P`` and the variable, its MAP value and samples Tensors with the inputs ``P`` (after
the sample input); the plates come in the order in which the factors name them. A plate of
size 0 (``Bint[0]``) is an empty product: its factors contribute nothing, and the answers for
its variables are empty arrays of the right shape.

A model whose every assignment has mass zero (``log Z = -inf``) has no posterior: marginals,
MAP, k best, samples and entropy raise ``ZeroMassError`` when the arrays are concrete. Under
``jax.jit`` no error can be raised: the marginals and the entropy are NaN there, every value
of the MAP assignment and of the samples is -1 (a value no ``Bint`` holds: test for it, or
for ``map_score()`` or ``log_partition()`` of -inf, before using them as indices). A NaN log
factor, refused on concrete arrays, gives the same -1 values under ``jax.jit``.

Example:
    >>> prior = fc.Tensor(np.log(np.array([0.6, 0.4])), {"z": fc.Bint[2]})
    >>> obs = fc.Tensor(np.log(np.array([[0.9, 0.2], [0.3, 0.7]])), {"z": fc.Bint[2],
    ...                                                               "i": fc.Bint[2]})
    >>> p = infer_discrete([prior, obs], plates={"i"}, query="marginals")["z"]
    >>> np.round(p.data, 3)  # p(z) ∝ prior(z) * prod_i obs(z, i)
    array([0.562, 0.438])
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.adjoint.kbest import kbest_from_tape
from funsor_core.algorithms.adjoint.kinds import PosteriorSample, argmax_approximate
from funsor_core.algorithms.adjoint.model_factors import live_factors
from funsor_core.algorithms.adjoint.points import extract_samples
from funsor_core.algorithms.adjoint.scheduled import (
    _host_arrays,
    replay_best,
    replay_marginals,
    replay_recipe,
    replay_samples,
)
from funsor_core.algorithms.adjoint.tape import AdjointTape
from funsor_core.algorithms.eliminate.plated import sum_product
from funsor_core.algorithms.eliminate.schedule import structure_of
from funsor_core.atoms.tensor import Tensor, align_tensor, null_set_mul
from funsor_core.atoms.tensor_idioms import get_default_prototype
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_of
from funsor_core.engine.interpreter import reflect
from funsor_core.engine.protocol import children
from funsor_core.sampling.keys import KeyStream
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.traversal import reinterpret

__all__ = ["DiscreteModel", "ZeroMassError", "infer_discrete", "QUERIES"]

QUERIES = ("marginals", "map", "kbest", "sample", "entropy", "log_partition")

_ZERO_MASS = ("{query}() of a model of mass zero: every joint assignment has a log factor of "
              "-inf (log Z = -inf), so there is no posterior and {what} is undefined. Look for "
              "contradictory evidence (an observation of probability 0 under every state); "
              "log_partition() and map_score() return -inf for such a model.")

_NAME_TAKEN = ("{arg}={name!r} is already {kind} of the model ({domain!r}): the new input would "
               "merge with it. Pass another name, e.g. {arg}='{name}_{suffix}'.")


class ZeroMassError(ValueError):
    """A query that needs a posterior, asked of a model whose every assignment has mass 0.

    Example:
        >>> f = fc.Tensor(np.full(2, -np.inf), {"a": fc.Bint[2]})
        >>> try:
        ...     DiscreteModel([f]).map()
        ... except ZeroMassError as e:
        ...     print(str(e)[:40])
        map() of a model of mass zero: every joi
    """


def _check_log_factor(k: int, f: Funsor) -> None:
    # A NaN or +inf log factor has no posterior: marginals came out NaN while map() picked
    # an arbitrary state. Read only concrete arrays (a traced one decides nothing).
    if not isinstance(f, Tensor):
        return
    if type(f.data) is not np.ndarray:  # (numpy's own arrays: no dispatch)
        if not ops.is_concrete(f.data):
            return
    values = ops.to_numpy(f.data)
    if (values < np.inf).all():  # (one pass: NaN and +inf both fail it)
        return
    bad = np.isnan(values) | (values == np.inf)
    if bad.any():
        at = dict(zip(f.inputs, (int(i) for i in np.argwhere(bad)[0])))
        raise ValueError(f"factor {k} has the log value {values[bad].ravel()[0]} at {at}: a "
                         "log factor must be finite or -inf (probability 0)")


class DiscreteModel:
    """A discrete factor graph with plates, and the queries the adjoint answers.

    Args:
        factors: log factors (Tensors whose inputs are ``Bint`` variables and plates), as a
            list or a dict of named factors; a lazily built factor is evaluated first.
        plates: names of the plates (inputs that index independent copies).

    Raises:
        ValueError: a factor that is not a real scalar Tensor, a real input, or a NaN or
            +inf log value in a concrete factor (naming the factor and the entry).

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> m = DiscreteModel([f])
        >>> round(float(m.log_partition().data), 4), {k: int(v.data) for k, v in m.map().items()}
        (2.3026, {'a': 1, 'b': 1})
    """

    def __init__(self, factors, plates=frozenset()) -> None:
        if isinstance(factors, Funsor):  # one factor, given bare: as a list of one
            factors = [factors]
        factors = list(factors.values()) if isinstance(factors, dict) else list(factors)
        if not factors:
            raise ValueError("a discrete model needs at least one factor")
        self.plates = frozenset({plates} if isinstance(plates, str) else plates)
        self.variables: dict = {}
        self.plate_domains: dict = {}
        for k, f in enumerate(factors):
            if isinstance(f, Funsor) and not isinstance(f, (Tensor, Number)):
                # a lazy factor (built under ``lazy``): its value under the active
                # interpretation, so that the answers are numbers, not terms over it
                f = factors[k] = reinterpret(f)
            if not isinstance(f, Funsor) or f.dtype != "real" or f.shape:
                raise ValueError(f"factor {k} must be a real scalar funsor (a log factor), got "
                                 f"{f!r:.80}")
            _check_log_factor(k, f)
            for name, d in f.inputs.items():
                if d.dtype == "real":
                    raise ValueError(f"factor {k} has the real input '{name}': a discrete "
                                     "model enumerates Bint variables only")
                if name not in self.plates:
                    self.variables[name] = d
                else:
                    self.plate_domains[name] = d
        missing = sorted(self.plates - self.plate_domains.keys())
        if missing:
            raise ValueError(f"plates {missing} are inputs of no factor")
        self.factors = tuple(factors)
        # a variable's plates: those of every factor that has it (one pass over the factors)
        var_plates: dict = {}
        for f in factors:
            own = self.plates & f.inputs.keys()
            for v in f.inputs:
                if v not in self.plates:
                    var_plates[v] = var_plates.get(v, own) & own
        self.var_plates = {v: var_plates[v] for v in self.variables}
        # A product over an empty plate is the unit (log 1 = 0), so the factors of an empty
        # plate drop out, and so do the variables that live in one (their answers are empty).
        # Sizes are static, so this is decided structurally, also under jax.jit.
        empty = frozenset(p for p, d in self.plate_domains.items() if d.size == 0)
        self._live_plates = self.plates - empty
        self._empty_vars = frozenset(v for v in self.variables if self.var_plates[v] & empty)
        self._live = live_factors(factors, empty, self._empty_vars, self.variables,
                                  self.var_plates, self.plate_domains)
        self._smallest_at = None

    # -- the lazy forward computation ----------------------------------------------------------
    def _expr(self, sum_op) -> Funsor:
        factors = self._live or (Tensor(ops.new_zeros(_proto(self.factors), ())),)
        eliminate = frozenset(self.variables) - self._empty_vars | self._live_plates
        with reflect:
            return sum_product(sum_op, ops.add, factors, eliminate, self._live_plates)

    def _factor_of(self, name: str) -> Funsor:
        # The smallest factor that has the variable: its marginal is the cheapest to read.
        return self._live[self._smallest()[name]]

    def _smallest(self) -> dict:
        # variable -> position in _live of the first smallest factor that has it (one pass)
        if self._smallest_at is None:
            best: dict = {}
            for k, f in enumerate(self._live):
                size = math.prod(d.size for d in f.inputs.values())
                for v in f.inputs:
                    if v not in best or size < best[v][0]:
                        best[v] = (size, k)
            self._smallest_at = {v: k for v, (_, k) in best.items()}
        return self._smallest_at

    def _host_marginals(self, query: str, what: str):
        # (log Z, per live factor the marginal of its inputs, the result dtype) by the schedule's
        # forward-backward pass on host float64 copies, for concrete float32/64 arrays that no
        # gradient flows through; None: the tape path (which keeps autograd and jax.jit).
        recipe = self._recipe()
        if recipe is None:
            return None
        data = [f.data for f in self._live]
        if not all(type(x) is np.ndarray for x in data):  # (numpy: no autograd, no dispatch)
            # torch: unless one requires grad; jax: ``_recipe`` admits no tracer (of jax.grad
            # or jax.jit), and a concrete array carries no derivative through this call
            if any(backend_of(x).tracks_gradients(x) and not backend_of(x).COMPILES
                   for x in data):
                return None
        dtypes = {x.dtype if type(x) is np.ndarray else ops.to_numpy(x).dtype for x in data}
        if not dtypes <= {np.dtype(np.float32), np.dtype(np.float64)}:
            return None
        log_z, probs = replay_marginals(recipe, data)
        if log_z == -math.inf:
            raise ZeroMassError(_ZERO_MASS.format(query=query, what=what))
        return log_z, probs, np.result_type(*dtypes)

    def _marginals_of(self, log_z: float, probs: list, dtype) -> dict:
        # marginals() from the factors' host marginals (as the tape path reads them)
        proto, out = _proto(self.factors), {}
        for name in self.variables:
            if name in self._empty_vars:
                out[name] = self._empty(name, {}, value=False)
                continue
            k = self._smallest()[name]
            f, p = self._live[k], probs[k]
            own = self.var_plates[name]
            # the same in every slice of a plate the variable is not in: slice 0
            p = p[tuple(0 if n in self.plates and n not in own else slice(None)
                        for n in f.inputs)]
            kept = [n for n in f.inputs if n not in self.plates or n in own]
            others = tuple(i for i, n in enumerate(kept) if n != name and n not in own)
            if others:
                p = p.sum(others)
            kept = [n for i, n in enumerate(kept) if i not in others]
            order = tuple(self._batch(name)) + (name,)
            data = p.transpose([kept.index(n) for n in order]).astype(dtype)
            out[name] = Tensor(ops.new_array(proto, data), {n: f.inputs[n] for n in order})
        return out

    def _empty(self, name: str, lead: dict, value: bool) -> Tensor:
        # The answer for a variable in an empty plate: an array with a dim of size 0.
        inputs = {**lead, **self._batch(name)}
        if not value:
            inputs[name] = self.variables[name]
        data = ops.new_zeros(_proto(self.factors), tuple(d.size for d in inputs.values()))
        if value:
            return Tensor(ops.astype(data, "int"), inputs, self.variables[name].size)
        return Tensor(data, inputs)

    def _check_name(self, arg: str, name: str) -> None:
        # A new input named like a variable or plate would merge with it (draws indexed by
        # the plate instead of crossed with it).
        if not isinstance(name, str):
            raise TypeError(f"{arg} must be a str, got {name!r}")
        for kind, table in (("a variable", self.variables), ("a plate", self.plate_domains)):
            if name in table:
                raise ValueError(_NAME_TAKEN.format(arg=arg, name=name, kind=kind,
                                                    domain=table[name], suffix=arg.split("_")[0]))

    def _batch(self, name: str) -> dict:
        # The variable's plates, in the order in which the factors name them.
        plates = self.var_plates[name]
        return {p: self.plate_domains[p] for p in self.plate_domains if p in plates}

    # -- queries --------------------------------------------------------------------------------
    def log_partition(self) -> Funsor:
        """``log Z``: the log of the sum over every assignment of the product of factors."""
        return reinterpret(self._expr(ops.logaddexp))

    def marginals(self) -> dict:
        """The posterior marginal of each variable: a Tensor of probabilities with the
        variable's plates and the variable as inputs (the variable last)."""
        host = self._host_marginals("marginals", "a marginal")
        if host is not None:
            return self._marginals_of(*host)
        log_z, adj = self._forward_backward(ops.logaddexp, "marginals", "a marginal",
                                            approximate=False)  # exact, under Monte Carlo too
        out = {}
        for name in self.variables:
            if name in self._empty_vars:
                out[name] = self._empty(name, {}, value=False)
                continue
            f = self._factor_of(name)
            log_p = adj[f] + f - log_z
            extra = {p: 0 for p in f.inputs if p in self.plates and p not in
                     self.var_plates[name]}
            if extra:  # the marginal is the same in every slice of a plate v is not in
                log_p = log_p(**extra)
            others = frozenset(k for k in log_p.inputs if k != name and k not in self.plates)
            if others:
                log_p = log_p.reduce(ops.logaddexp, others)
            out[name] = _aligned(log_p.exp(), tuple(self._batch(name)) + (name,))
        return out

    def map(self) -> dict:
        """The most probable joint assignment: a Tensor of values per variable (inputs: its
        plates). ``map_score()`` is its log score."""
        if self._replayable():  # the k-best replay with k = 1: the same search, no Deltas
            return self._best(1, None, "map", "the most probable assignment")[1]
        with argmax_approximate:
            score, adj = self._forward_backward(ops.max, "map", "the most probable assignment")
        return _void_points(self._points(adj, {}), score)

    def _replayable(self) -> bool:
        # The k-best replay reads concrete Tensor factors on the host; traced arrays (inside
        # jax.jit) and lazy factors take the argmax adjoint instead. Decided structurally.
        return all(isinstance(f, Number) or (isinstance(f, Tensor) and ops.is_concrete(f.data))
                   for f in self._live)

    def _recipe(self):
        # The array recipes of the max-product schedule, for concrete Tensor factors (None:
        # the tape path). Planned once per structure (cached with sum_product's schedules).
        if not self._live or not self._replayable():
            return None
        structure = structure_of(ops.max, ops.add, self._live)
        if structure is None:
            return None
        eliminate = frozenset(self.variables) - self._empty_vars | self._live_plates
        return replay_recipe(structure, eliminate, self._live_plates)

    def map_score(self) -> Funsor:
        """The log score (sum of log factors) of the MAP assignment."""
        return reinterpret(self._expr(ops.max))

    def kbest(self, k: int, rank_name: str = "rank") -> tuple:
        """The ``k`` best joint assignments (fewer when the model has fewer).

        Args:
            k: the number of assignments.
            rank_name: the name of the new input that indexes them; it must not be a name
                of the model.

        Returns:
            ``(scores, assignments)``: a Tensor of log scores with the input ``rank_name``
            (descending), and a dict from variables to Tensors of values with the inputs
            ``rank_name`` and the variable's plates.

        Raises:
            ZeroMassError: every assignment has score -inf.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        self._check_name("rank_name", rank_name)
        return self._best(k, rank_name, "kbest", "a best assignment")

    def _best(self, k: int, rank_name: str | None, query: str, what: str) -> tuple:
        # kbest's answer; ``query`` and ``what`` name the query in the zero-mass error. With
        # no ``rank_name`` (MAP, k = 1) the values have no rank input.
        recipe = self._recipe()
        if recipe is not None:  # concrete Tensors: the planned schedule on their arrays
            scores, found = replay_best(recipe, [f.data for f in self._live], k)
        elif self._live:
            with AdjointTape() as tape:
                root = reinterpret(self._expr(ops.max))
            scores, found = kbest_from_tape(tape, root, k)
        else:  # only empty plates: one assignment (of empty arrays), of score log 1
            scores, found = np.zeros(1), {}
        if not len(scores) or scores[0] == -math.inf:  # no assignment, or none of mass
            raise ZeroMassError(_ZERO_MASS.format(query=query, what=what))
        proto = _proto(self.factors)
        rank = {} if rank_name is None else {rank_name: Bint[len(scores)]}
        out = {}
        for name in self.variables:
            if name in self._empty_vars:
                out[name] = self._empty(name, rank, value=True)
                continue
            values, plates = found[name]
            data = ops.new_array(proto, values[0].copy() if rank_name is None else values.copy())
            inputs = {**rank, **{p: Bint[values.shape[1 + j]] for j, p in enumerate(plates)}}
            t = Tensor(ops.astype(data, "int") if ops.is_floating(data) else data, inputs,
                       self.variables[name].size)
            out[name] = _aligned(t, tuple(rank) + tuple(self._batch(name)))
        # summed on the host in float64; as Python floats they take the factors' float dtype
        scores_t = Tensor(ops.new_array(proto, [float(x) for x in scores]), rank)
        return scores_t, out

    def sample(self, num_samples: int | None = None, rng_key=None,
               sample_name: str = "particle") -> dict:
        """Exact joint posterior samples (forward filtering, backward sampling).

        Args:
            num_samples: draw this many independent samples along a new input
                ``sample_name``; None draws one, with no sample input.
            rng_key: an int seed, a numpy or torch generator, or a jax key.
            sample_name: the name of the sample input; it must not be a name of the model
                (a plate of that name would merge with the draws).

        Raises:
            ValueError: ``sample_name`` is a variable or plate of the model.
            ZeroMassError: every assignment has mass 0 (with concrete arrays).
        """
        inputs = {}
        if num_samples is not None:
            self._check_name("sample_name", sample_name)
            if not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
                raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
            inputs = {sample_name: Bint[num_samples]}
        host = self._host_samples(num_samples, rng_key)
        if host is not None:
            return self._samples_of(host, inputs)
        with PosteriorSample(rng_key, **inputs) as sampler:
            log_z, adj = self._forward_backward(ops.logaddexp, "sample", "a posterior sample",
                                                batch_vars=sampler.sample_vars)
        points = _void_points(self._points(adj, inputs), log_z)
        if num_samples is not None:
            points = {k: _aligned(v, (sample_name,) + tuple(self._batch(k)))
                      for k, v in points.items()}
        return points

    def entropy(self) -> Funsor:
        """The entropy (in nats) of the posterior over every variable: ``log Z`` minus the
        expected sum of log factors, by the marginals of the factors."""
        host = self._host_marginals("entropy", "the entropy")
        if host is not None:  # sum over each factor's inputs of p * f, 0 * -inf = 0
            log_z, probs, dtype = host
            total = log_z
            for x, p in zip(_host_arrays([f.data for f in self._live]), probs):
                with np.errstate(invalid="ignore"):
                    total -= float(np.where(p == 0, 0.0, p * x).sum())
            return Tensor(ops.new_array(_proto(self.factors), np.asarray(total, dtype)))
        log_z, adj = self._forward_backward(ops.logaddexp, "entropy", "the entropy",
                                            approximate=False)  # exact, under Monte Carlo too
        # log Z - log Z is 0, or NaN when log Z = -inf: the documented NaN under jax.jit.
        total = log_z + (log_z - log_z)
        for f in self._live:
            p = (adj[f] + f - log_z).exp()
            total = total - _expectation(p, f)
        return total

    def _host_samples(self, num_samples, rng_key):
        # found (as replay_samples gives it) by the schedule on host arrays, for concrete
        # Tensors and a key numpy can draw from (None, an int seed, a numpy Generator); None:
        # the tape path (jax keys, torch generators, traced arrays).
        keys = KeyStream(rng_key)  # (its own checks of rng_key, as the tape path makes)
        key = keys.rng_key
        if not (key is None or isinstance(key, int) or isinstance(key, np.random.Generator)):
            return None
        proto = _proto(self.factors)
        if backend_of(proto).COMPILES or (key is None and type(proto) is not np.ndarray):
            # jax's seeds draw as under jax.jit (KeyStream); None: the backend's global state
            return None
        recipe = self._recipe()
        if recipe is None:
            return None
        num = 1 if num_samples is None else int(num_samples)
        log_z, found = replay_samples(recipe, [f.data for f in self._live], num,
                                      keys.next(np.zeros(0)))
        if found is None:
            raise ZeroMassError(_ZERO_MASS.format(query="sample", what="a posterior sample"))
        return found

    def _samples_of(self, found: dict, inputs: dict) -> dict:
        proto, out = _proto(self.factors), {}
        lead = tuple(inputs)
        for name in self.variables:
            if name in self._empty_vars:
                out[name] = self._empty(name, inputs, value=True)
                continue
            values, plates = found[name]
            data = ops.new_array(proto, values if lead else values[0])
            t = Tensor(ops.astype(data, "int") if ops.is_floating(data) else data,
                       {**inputs, **{p: self.plate_domains[p] for p in plates}},
                       self.variables[name].size)
            out[name] = _aligned(t, lead + tuple(self._batch(name)))
        return out

    def _forward_backward(self, sum_op, query: str, what: str, **kwargs) -> tuple:
        # forward_backward, with the check of the mass between the passes: a backward pass
        # of log Z = -inf would only normalize -inf by -inf.
        with AdjointTape() as tape:
            value = reinterpret(self._expr(sum_op))
        _check_mass(value, query, what)
        return value, tape.adjoint(sum_op, ops.add, value, **kwargs)

    def _points(self, adj, lead: dict) -> dict:
        out = {}
        for name in self.variables:
            if name in self._empty_vars:
                out[name] = self._empty(name, lead, value=True)
                continue
            point = extract_samples(adj[self._factor_of(name)]).get(name)
            if point is None:
                raise RuntimeError(f"the backward pass placed no point for '{name}'")
            out[name] = point
        return out


def _check_mass(value: Funsor, query: str, what: str) -> None:
    # log Z (or the best score) of -inf: no assignment has mass, so no posterior. Decided on
    # concrete arrays only; under jax.jit the value is traced and the documented NaN stands.
    data = value.data
    if ops.is_concrete(data) and float(ops.detach(data)) == -math.inf:
        raise ZeroMassError(_ZERO_MASS.format(query=query, what=what))


def _void_points(points: dict, log_mass: Funsor) -> dict:
    # Under jax.jit a model of mass zero cannot raise ZeroMassError: its values become -1,
    # which no Bint holds, instead of an arbitrary assignment that would pass for an answer.
    data = log_mass.data
    if ops.is_concrete(data):
        return points
    void = ~(data > -math.inf)  # NaN too: a NaN factor (refused eagerly) has no answer
    return {k: Tensor(ops.where(void, ops.full_like(p.data, -1), p.data), p.inputs, p.dtype)
            if isinstance(p, Tensor) else p for k, p in points.items()}


def _expectation(p: Funsor, f: Funsor) -> Funsor:
    # sum over every input of p * f, with 0 * -inf = 0 (an impossible value contributes 0).
    inputs = dict(f.inputs)
    for k, d in p.inputs.items():
        inputs.setdefault(k, d)
    pd = align_tensor(inputs, p, expand=True) if isinstance(p, Tensor) else p.data
    fd = align_tensor(inputs, f, expand=True)
    return Tensor(ops.sum(null_set_mul(pd, fd), None), {})


def _aligned(t: Funsor, names: tuple) -> Funsor:
    if not isinstance(t, Tensor):
        return t
    return Tensor(align_tensor({n: t.inputs[n] for n in names}, t), {n: t.inputs[n]
                                                                    for n in names}, t.dtype)


def _proto(factors):
    # an array of the factors' backend and float dtype: a Tensor among them or inside a lazy
    # one, else the active backend's
    todo, first = list(factors), None
    while todo:
        f = todo.pop(0)
        if isinstance(f, Tensor):
            if ops.is_floating(f.data):
                return f.data
            first = f.data if first is None else first
        todo.extend(children(f))
    return get_default_prototype() if first is None else first


def infer_discrete(factors, plates=frozenset(), query: str = "marginals", *, k: int = 1,
                   num_samples: int | None = None, rng_key=None, sample_name: str = "particle",
                   rank_name: str = "rank"):
    """Answer one query about an enumerated discrete model of log factors.

    Args:
        factors: log factors (Tensors over ``Bint`` variables and plates), a list or dict.
        plates: the plate names.
        query: ``"marginals"`` (a dict of probability Tensors), ``"map"`` (a dict of value
            Tensors), ``"kbest"`` (``(scores, assignments)`` with a ``rank`` input),
            ``"sample"`` (a dict of value Tensors, with a ``sample_name`` input when
            ``num_samples`` is given), ``"entropy"`` or ``"log_partition"`` (a scalar Tensor).
        k, rank_name: for ``"kbest"``: the number of assignments and the name of the input
            that ranks them.
        num_samples, rng_key, sample_name: for ``"sample"``.

    Raises:
        ValueError: ``sample_name`` or ``rank_name`` is a variable or plate of the model.
        ZeroMassError: every assignment has mass 0 (a query other than ``log_partition``).

    Example:
        >>> trans = fc.Tensor(np.log(np.array([[0.9, 0.1], [0.2, 0.8]])),
        ...                   {"x0": fc.Bint[2], "x1": fc.Bint[2]})
        >>> first = fc.Tensor(np.log(np.array([0.3, 0.7])), {"x0": fc.Bint[2]})
        >>> best = infer_discrete([first, trans], query="map")
        >>> int(best["x0"].data), int(best["x1"].data)
        (1, 1)
        >>> scores, top = infer_discrete([first, trans], query="kbest", k=2)
        >>> np.round(np.exp(scores.data), 2)  # 0.7 * 0.8, then 0.3 * 0.9
        array([0.56, 0.27])
    """
    model = DiscreteModel(factors, plates)
    if query == "marginals":
        return model.marginals()
    if query == "map":
        return model.map()
    if query == "kbest":
        return model.kbest(k, rank_name)
    if query == "sample":
        return model.sample(num_samples, rng_key, sample_name)
    if query == "entropy":
        return model.entropy()
    if query == "log_partition":
        return model.log_partition()
    raise ValueError(f"unknown query {query!r}; use one of {list(QUERIES)}")
