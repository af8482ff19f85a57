"""Inference in enumerated discrete models, in one call: marginals, MAP, k best
assignments, posterior samples, entropy and the log partition function.

A model is a list of log factors (Tensors over ``Bint`` variables) and a set of plate names.
One forward pass of tensor variable elimination (``sum_product``, along its contraction plan)
is recorded on an ``AdjointTape``; its backward pass gives every answer:

- ``marginals``: ``(logaddexp, add)``; a variable's marginal is read off the smallest factor
  that has it: ``exp(adjoint(f) + f - log Z)``, summed over the factor's other variables.
- ``map``: ``(max, add)`` under ``argmax_approximate``: point masses at the MAP assignment
  (Viterbi on a chain), with its score.
- ``kbest``: the max-product tape replayed in the k-max semiring (``kbest.py``).
- ``sample``: ``(logaddexp, add)`` under ``PosteriorSample``: exact joint samples (forward
  filtering, backward sampling).
- ``entropy``: ``H = log Z - sum_f E[f]``, the expectations taken under the factors'
  marginals from the same backward pass (torch-struct computes it with an entropy semiring).

A variable in plates ``P`` has one value per index of ``P``: its marginal is a Tensor with the
inputs ``P`` and the variable, its MAP value and samples Tensors with the inputs ``P`` (after
the sample input); the plates come in the order in which the factors name them.

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

from funsor_core import ops
from funsor_core.algorithms.adjoint.kbest import kbest_from_tape
from funsor_core.algorithms.adjoint.kinds import PosteriorSample, argmax_approximate
from funsor_core.algorithms.adjoint.points import extract_samples
from funsor_core.algorithms.adjoint.tape import AdjointTape, forward_backward
from funsor_core.algorithms.eliminate.plated import sum_product
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Bint
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.traversal import reinterpret

__all__ = ["DiscreteModel", "infer_discrete", "QUERIES"]

QUERIES = ("marginals", "map", "kbest", "sample", "entropy", "log_partition")


class DiscreteModel:
    """A discrete factor graph with plates, and the queries the adjoint answers.

    Args:
        factors: log factors (Tensors whose inputs are ``Bint`` variables and plates), as a
            list or a dict of named factors.
        plates: names of the plates (inputs that index independent copies).

    Raises:
        ValueError: a factor that is not a real scalar Tensor, or a real input.

    Example:
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])),
        ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> m = DiscreteModel([f])
        >>> round(float(m.log_partition().data), 4), {k: int(v.data) for k, v in m.map().items()}
        (2.3026, {'a': 1, 'b': 1})
    """

    def __init__(self, factors, plates=frozenset()) -> None:
        factors = list(factors.values()) if isinstance(factors, dict) else list(factors)
        if not factors:
            raise ValueError("a discrete model needs at least one factor")
        self.plates = frozenset({plates} if isinstance(plates, str) else plates)
        self.variables: dict = {}
        self.plate_domains: dict = {}
        for k, f in enumerate(factors):
            if not isinstance(f, Funsor) or f.dtype != "real" or f.shape:
                raise ValueError(f"factor {k} must be a real scalar funsor (a log factor), got "
                                 f"{f!r:.80}")
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
        self.var_plates = {v: frozenset.intersection(*(
            frozenset(self.plates & f.inputs.keys()) for f in factors if v in f.inputs))
            for v in self.variables}

    # -- the lazy forward computation ----------------------------------------------------------
    def _expr(self, sum_op) -> Funsor:
        eliminate = frozenset(self.variables) | self.plates
        with reflect:
            return sum_product(sum_op, ops.add, self.factors, eliminate, self.plates)

    def _factor_of(self, name: str) -> Funsor:
        # The smallest factor that has the variable: its marginal is the cheapest to read.
        return min((f for f in self.factors if name in f.inputs),
                   key=lambda f: math.prod(d.size for d in f.inputs.values()))

    def _batch(self, name: str) -> dict:
        # The variable's plates, in the order in which the factors name them.
        plates = self.var_plates[name]
        order = dict.fromkeys(p for f in self.factors for p in f.inputs if p in plates)
        return {p: self.plate_domains[p] for p in order}

    # -- queries --------------------------------------------------------------------------------
    def log_partition(self) -> Funsor:
        """``log Z``: the log of the sum over every assignment of the product of factors."""
        return reinterpret(self._expr(ops.logaddexp))

    def marginals(self) -> dict:
        """The posterior marginal of each variable: a Tensor of probabilities with the
        variable's plates and the variable as inputs (the variable last)."""
        log_z, adj = forward_backward(ops.logaddexp, ops.add, self._expr(ops.logaddexp),
                                      approximate=False)  # exact, under Monte Carlo too
        out = {}
        for name in self.variables:
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
        with argmax_approximate:
            _, adj = forward_backward(ops.max, ops.add, self._expr(ops.max))
        return self._points(adj)

    def map_score(self) -> Funsor:
        """The log score (sum of log factors) of the MAP assignment."""
        return reinterpret(self._expr(ops.max))

    def kbest(self, k: int) -> tuple:
        """The ``k`` best joint assignments (fewer when the model has fewer).

        Returns:
            ``(scores, assignments)``: a Tensor of log scores with the input ``rank``
            (descending), and a dict from variables to Tensors of values with the inputs
            ``rank`` and the variable's plates.
        """
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        with AdjointTape() as tape:
            root = reinterpret(self._expr(ops.max))
        scores, found = kbest_from_tape(tape, root, k)
        proto = _proto(self.factors)
        n = len(scores)
        rank = {"rank": Bint[n]}
        out = {}
        for name in self.variables:
            values, plates = found[name]
            data = ops.new_array(proto, values.copy())
            inputs = {**rank, **{p: Bint[values.shape[1 + j]] for j, p in enumerate(plates)}}
            t = Tensor(ops.astype(data, "int") if ops.is_floating(data) else data, inputs,
                       self.variables[name].size)
            out[name] = _aligned(t, ("rank",) + tuple(self._batch(name)))
        scores_t = Tensor(ops.new_array(proto, scores.copy().astype(float)), rank)
        return scores_t, out

    def sample(self, num_samples: int | None = None, rng_key=None,
               sample_name: str = "particle") -> dict:
        """Exact joint posterior samples (forward filtering, backward sampling).

        Args:
            num_samples: draw this many independent samples along a new input
                ``sample_name``; None draws one, with no sample input.
            rng_key: an int seed, a numpy or torch generator, or a jax key.
        """
        inputs = {} if num_samples is None else {sample_name: Bint[num_samples]}
        with PosteriorSample(rng_key, **inputs) as sampler:
            _, adj = forward_backward(ops.logaddexp, ops.add, self._expr(ops.logaddexp),
                                      batch_vars=sampler.sample_vars)
        points = self._points(adj)
        if num_samples is not None:
            points = {k: _aligned(v, (sample_name,) + tuple(self._batch(k)))
                      for k, v in points.items()}
        return points

    def entropy(self) -> Funsor:
        """The entropy (in nats) of the posterior over every variable: ``log Z`` minus the
        expected sum of log factors, by the marginals of the factors."""
        log_z, adj = forward_backward(ops.logaddexp, ops.add, self._expr(ops.logaddexp),
                                      approximate=False)  # exact, under Monte Carlo too
        total = log_z
        for f in self.factors:
            p = (adj[f] + f - log_z).exp()
            total = total - _expectation(p, f)
        return total

    def _points(self, adj) -> dict:
        out = {}
        for name in self.variables:
            point = extract_samples(adj[self._factor_of(name)]).get(name)
            if point is None:
                raise RuntimeError(f"the backward pass placed no point for '{name}'")
            out[name] = point
        return out


def _expectation(p: Funsor, f: Funsor) -> Funsor:
    # sum over every input of p * f, with 0 * -inf = 0 (an impossible value contributes 0).
    inputs = dict(f.inputs)
    for k, d in p.inputs.items():
        inputs.setdefault(k, d)
    pd = align_tensor(inputs, p, expand=True) if isinstance(p, Tensor) else p.data
    fd = align_tensor(inputs, f, expand=True)
    # f masked before the product (not after): the gradient of p * f at p = 0 is f, so a
    # masked -inf would still send 0 * -inf = NaN back through p.
    term = ops.mul(pd, ops.where(ops.gt(pd, 0.0), fd, ops.full_like(fd, 0.0)))
    return Tensor(ops.sum(term, None), {})


def _aligned(t: Funsor, names: tuple) -> Funsor:
    if not isinstance(t, Tensor):
        return t
    return Tensor(align_tensor({n: t.inputs[n] for n in names}, t), {n: t.inputs[n]
                                                                    for n in names}, t.dtype)


def _proto(factors):
    for f in factors:
        if isinstance(f, Tensor):
            return f.data
    return Number(0.0).data


def infer_discrete(factors, plates=frozenset(), query: str = "marginals", *, k: int = 1,
                   num_samples: int | None = None, rng_key=None):
    """Answer one query about an enumerated discrete model of log factors.

    Args:
        factors: log factors (Tensors over ``Bint`` variables and plates), a list or dict.
        plates: the plate names.
        query: ``"marginals"`` (a dict of probability Tensors), ``"map"`` (a dict of value
            Tensors), ``"kbest"`` (``(scores, assignments)`` with a ``rank`` input),
            ``"sample"`` (a dict of value Tensors, with a ``particle`` input when
            ``num_samples`` is given), ``"entropy"`` or ``"log_partition"`` (a scalar Tensor).
        k: the number of assignments for ``"kbest"``.
        num_samples, rng_key: for ``"sample"``.

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
        return model.kbest(k)
    if query == "sample":
        return model.sample(num_samples, rng_key)
    if query == "entropy":
        return model.entropy()
    if query == "log_partition":
        return model.log_partition()
    raise ValueError(f"unknown query {query!r}; use one of {list(QUERIES)}")
