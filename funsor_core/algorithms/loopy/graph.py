"""The factor-graph front of loopy inference: discrete Tensor factors as padded arrays.

``FactorGraph.build(factors, batch=...)`` turns a list of discrete log-factor Tensors into the
arrays that belief propagation and Gibbs sampling run on, once per structure:

- variables (every non-batch input, in order of first appearance), their domain sizes and
  ``D``, the largest of them; a variable's states ``>= size`` are padding;
- factors grouped by arity ``k``: a group's tables form one array ``(F_k, D, ..., D, *B)``
  (``B`` the batch shape: names in ``batch`` are independent copies of the whole model),
  padded states hold ``NEG`` (a finite ``log 0``: ``-inf - -inf`` would give NaN);
- edges (factor, position) numbered group by group, factor by factor, so the messages of a
  group are one contiguous block ``(F_k * k, D, *B)`` of the ``(E, D, *B)`` message array;
- ``var_edges`` ``(V, max degree)``: each variable's edges, padded with ``E`` (a slot of
  zeros appended to the messages), so that the product of a variable's incoming messages is
  one gather and one sum over all variables at once (no scatter: the same on every backend);
- a greedy colouring of the variables (two variables sharing a factor differ), for blocked
  Gibbs updates.

Example:
    >>> f = fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> g = FactorGraph.build([f])
    >>> g.names, g.sizes, g.D, g.num_edges
    (('a', 'b'), (2, 3), 3, 2)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.factor_list import factor_list
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.backend import announce_term_class, backend_of
from funsor_core.terms.backend_check import check_backends

__all__ = ["Beliefs", "FactorGraph", "FactorGroup", "NEG", "require_values"]

NEG = -1e30  # log 0, finite: NEG + NEG stays finite, exp(NEG) == 0

_NOT_DISCRETE = ("loopy inference needs discrete factors: factor {i} has input '{name}' of "
                 "domain {domain!r}; only Bint inputs are allowed (pass real inputs through "
                 "substitution first)")
_CLASH = ("variable '{name}' is {a!r} in one factor but {b!r} in another; a name must have "
          "one domain in a factor graph")
_NOT_SCALAR = ("loopy inference needs log factors with one real number per assignment: factor "
               "{i} over {inputs} has output {output}")
_NO_BATCH = ("batch names {missing} are inputs of no factor (the factors' inputs: {names}); "
             "batch= names the inputs that index independent copies of the model")
_NAN = ("loopy inference: factor {i} over {inputs} has NaN or +inf log potentials; a log "
        "factor must be a number or -inf (a zero potential)")
_NOT_TENSOR = ("loopy inference takes a list of discrete Tensor factors (log densities), got "
               "{typ} at position {i}")


class Beliefs(dict):
    """Log beliefs by variable name; a name that is not a variable of the model raises a
    ``KeyError`` that lists the model's variables (a dict's ``KeyError('z')`` does not say
    whether ``z`` is misspelt or was conditioned away).

    Example:
        >>> Beliefs(a=0.0)["b"]
        Traceback (most recent call last):
        ...
        KeyError: "no belief of 'b': the model's variables are ['a']"
    """

    what = "belief"

    def __missing__(self, name):
        raise KeyError(f"no {self.what} of {name!r}: the model's variables are {sorted(self)}")

    # A pytree like a dict (jax registers it through the term-class hook, as it does terms),
    # so beliefs and samples return from a jax.jit-ed function as a plain dict would; the
    # instance's counters (``Samples.num_updates``) travel as static data.
    @classmethod
    def tree_flatten(cls, obj) -> tuple[list, tuple]:
        keys = tuple(obj)
        return [obj[k] for k in keys], (keys, tuple(sorted(vars(obj).items())))

    @classmethod
    def tree_unflatten(cls, aux: tuple, leaves) -> Beliefs:
        keys, attrs = aux
        out = cls(zip(keys, leaves))
        out.__dict__.update(attrs)
        return out

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        announce_term_class(cls)


announce_term_class(Beliefs)


@dataclass(frozen=True)
class FactorGroup:
    """The factors of one arity: their indices among all factors, their variables
    ``var_index`` ``(F_k, k)`` and their padded log tables ``(F_k, D, ..., D, *B)``.

    Example:
        A unary factor on ``a`` (2 states) and a pairwise one on ``(a, b)`` (``b`` 3 states):
        the unary table is padded to ``D = 3`` with ``NEG``.

        >>> u = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
        >>> f = fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
        >>> unary, pairwise = FactorGraph.build([f, u]).groups
        >>> unary.factor_ids, unary.table
        (array([1]), array([[ 0.e+00,  0.e+00, -1.e+30]]))
        >>> pairwise.var_index, pairwise.table.shape, pairwise.edge_start
        (array([[0, 1]]), (1, 3, 3), 1)
    """

    arity: int
    factor_ids: np.ndarray
    var_index: np.ndarray
    table: object
    edge_start: int

    @property
    def num_edges(self) -> int:
        return int(self.var_index.size)


@dataclass(frozen=True)
class FactorGraph:
    """Padded, vectorized arrays of a discrete factor graph (see the module docstring).

    Example:
        Edges: (unary, a) = 0, then (pairwise, a) = 1 and (pairwise, b) = 2; ``b`` has one
        edge, so its row of ``var_edges`` is padded with ``E = 3``.

        >>> u = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
        >>> f = fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
        >>> g = FactorGraph.build([f, u])
        >>> g.factor_vars, g.edge_var, g.degree
        ((('a', 'b'), ('a',)), array([0, 0, 1]), array([2, 1]))
        >>> g.var_edges
        array([[0, 1],
               [2, 3]])
    """

    names: tuple
    sizes: tuple
    D: int
    batch: dict
    groups: tuple
    factor_vars: tuple  # per factor: the tuple of its variable names, in table order
    edge_var: np.ndarray  # (E,) the variable of each edge
    edge_factor: np.ndarray  # (E,) the factor of each edge
    var_edges: np.ndarray  # (V, max degree) padded with E
    factor_edges: np.ndarray  # (F, max arity) padded with E
    degree: np.ndarray  # (V,)
    colors: np.ndarray  # (V,) a proper colouring of the interaction graph

    @classmethod
    def build(cls, factors, batch=()) -> FactorGraph:
        """The factor graph of ``factors`` (discrete log-factor Tensors); inputs named in
        ``batch`` index independent copies of the model.

        Example:
            >>> f = fc.Tensor(np.zeros((4, 2)), {"n": fc.Bint[4], "x": fc.Bint[2]})
            >>> FactorGraph.build([f], batch=("n",)).batch
            {'n': Bint[4]}
        """
        factors = factor_list(factors)
        if not factors:
            raise ValueError("loopy inference needs at least one factor")
        batch = (batch,) if isinstance(batch, str) else tuple(batch)
        domains, batch_domains = _domains(factors, batch)
        names = tuple(domains)
        sizes = tuple(domains[k].size for k in names)
        D = max(sizes) if sizes else 1
        index = {k: i for i, k in enumerate(names)}
        factor_vars = tuple(tuple(k for k in f.inputs if k not in batch_domains)
                            for f in factors)
        bshape = tuple(d.size for d in batch_domains.values())
        by_arity: dict = {}
        for a, vs in enumerate(factor_vars):
            by_arity.setdefault(len(vs), []).append(a)
        groups, edge_var, edge_factor, start = [], [], [], 0
        for k in sorted(by_arity):
            ids, table = _group_table(factors, by_arity[k], factor_vars, batch_domains,
                                      bshape, D)
            _check_nan(table, ids, factors)
            var_index = np.array([[index[v] for v in factor_vars[a]] for a in ids],
                                 dtype=np.int64).reshape(len(ids), k)
            groups.append(FactorGroup(k, np.array(ids), var_index, table, start))
            edge_var.append(var_index.reshape(-1))
            edge_factor.append(np.repeat(np.array(ids, dtype=np.int64), k))
            start += var_index.size
        edge_var = np.concatenate(edge_var) if edge_var else np.zeros(0, np.int64)
        edge_factor = np.concatenate(edge_factor) if edge_factor else np.zeros(0, np.int64)
        return cls(names, sizes, D, batch_domains, tuple(groups), factor_vars, edge_var,
                   edge_factor, _padded_lists(edge_var, len(names)),
                   _padded_lists(edge_factor, len(factors)),
                   np.bincount(edge_var, minlength=len(names)), _colouring(factor_vars, index))

    @property
    def num_edges(self) -> int:
        return int(self.edge_var.size)

    @property
    def num_factors(self) -> int:
        return len(self.factor_vars)

    @property
    def bshape(self) -> tuple:
        return tuple(d.size for d in self.batch.values())

    @property
    def uniform_degree(self) -> bool:
        """Whether every variable has the same number of edges (edge lists need no padding)."""
        return bool(self.degree.size) and bool((self.degree == self.degree[0]).all())

    @property
    def ragged(self) -> bool:
        """Whether some variable has fewer than ``D`` states (padded states need masking)."""
        return any(s != self.D for s in self.sizes)

    def state_mask(self) -> np.ndarray:
        """``(E, D)`` True where state ``s`` is a real state of the edge's variable."""
        sizes = np.array(self.sizes, dtype=np.int64)
        return np.arange(self.D)[None, :] < sizes[self.edge_var][:, None]

    def with_tables(self, tables) -> FactorGraph:
        """The same structure with new padded group tables (e.g. traced under ``jax.jit``).

        Example:
            >>> f = fc.Tensor(np.zeros(2), {"x": fc.Bint[2]})
            >>> g = FactorGraph.build([f])
            >>> g.with_tables([np.ones((1, 2))]).groups[0].table
            array([[1., 1.]])
        """
        groups = tuple(FactorGroup(g.arity, g.factor_ids, g.var_index, t, g.edge_start)
                       for g, t in zip(self.groups, tables))
        return FactorGraph(self.names, self.sizes, self.D, self.batch, groups,
                           self.factor_vars, self.edge_var, self.edge_factor, self.var_edges,
                           self.factor_edges, self.degree, self.colors)

    def prototype(self):
        """An array of the graph's backend and dtype (the first group's table)."""
        return self.groups[0].table

    def variable_tensor(self, i: int, data) -> Tensor:
        """A Tensor over variable ``i`` (and the batch) from padded data ``(D, *B)``."""
        inputs = {self.names[i]: Bint[self.sizes[i]], **self.batch}
        return Tensor(data[: self.sizes[i]], inputs)


class _FactorLabels:
    # "factor i" for check_backends' message, made only when it raises.
    def __getitem__(self, i: int) -> str:
        return f"factor {i}"


_FACTOR_LABELS = _FactorLabels()


def _domains(factors, batch) -> tuple:
    domains, batch_domains = {}, {}
    for i, f in enumerate(factors):
        if not isinstance(f, Tensor):
            raise TypeError(_NOT_TENSOR.format(typ=type(f).__name__, i=i))
        if f.output.dtype != "real" or f.output.shape:
            raise ValueError(_NOT_SCALAR.format(i=i, inputs=dict(f.inputs), output=f.output))
        for name, domain in f.inputs.items():
            if domain.dtype == "real" or domain.shape:
                raise ValueError(_NOT_DISCRETE.format(i=i, name=name, domain=domain))
            table = batch_domains if name in batch else domains
            if table.setdefault(name, domain) != domain:
                raise ValueError(_CLASH.format(name=name, a=table[name], b=domain))
    # One graph, one backend: mixed tables would be converted silently (dropping autograd).
    check_backends("run loopy inference", factors, _FACTOR_LABELS)
    missing = [k for k in batch if k not in batch_domains]
    if missing:
        raise ValueError(_NO_BATCH.format(missing=missing, names=list(domains)))
    return domains, {k: batch_domains[k] for k in batch}


def _check_nan(table, ids, factors) -> None:
    # One test per stacked table (not per factor), read only where the values are
    # concrete: under jax.jit a NaN potential gives NaN beliefs instead.
    if not ops.is_concrete(table):
        return
    values = np.asarray(ops.to_numpy(table))
    wrong = np.isnan(values) | np.isposinf(values)  # +inf: an infinite potential, no measure
    if wrong.any():
        bad = wrong.reshape(len(ids), -1).any(1)
        i = int(np.asarray(ids)[bad][0])
        raise ValueError(_NAN.format(i=i, inputs=dict(factors[i].inputs)))


def _group_table(factors, ids, factor_vars, batch_domains, bshape, D) -> tuple:
    """The factors ``ids`` of one arity as one padded table ``(F_k, D, .., D, *B)``, and their
    order in it. Factors of one shape and batch pattern are stacked and padded together:
    array calls per shape, not per factor (a backend that compiles each call, such as jax
    eagerly, would otherwise compile thousands of small programs)."""
    by_layout: dict = {}
    for a in ids:
        f = factors[a]
        present = tuple(b for b in batch_domains if b in f.inputs)
        data = f.align(factor_vars[a] + present).data
        by_layout.setdefault((tuple(data.shape), present), []).append((a, data))
    order, parts = [], []
    for (_, present), members in by_layout.items():
        order.extend(a for a, _ in members)
        stacked = _stack_chunked([d for _, d in members])
        parts.append(_padded(stacked, len(factor_vars[members[0][0]]), present,
                             batch_domains, bshape, D))
    return order, parts[0] if len(parts) == 1 else ops.cat(parts, 0)


def _stack_chunked(arrays: list, chunk: int = 64):
    # One stack of thousands of operands compiles for minutes on jax: stack in chunks.
    if len(arrays) <= chunk:
        return ops.stack(arrays, 0)
    return ops.cat([ops.stack(arrays[i: i + chunk], 0)
                    for i in range(0, len(arrays), chunk)], 0)


def _padded(data, k: int, present: tuple, batch_domains: dict, bshape: tuple, D: int):
    """Stacked tables ``(F, d_1 .. d_k, *present)`` as ``(F, D, .., D, *B)``: missing batch
    names broadcast, padded states and ``-inf`` entries at ``NEG``."""
    data = ops.clamp(data, min=NEG)
    lead = tuple(data.shape[: 1 + k])
    shape = lead + tuple(batch_domains[b].size if b in present else 1 for b in batch_domains)
    data = ops.reshape(data, shape)
    if bshape and len(present) < len(batch_domains):
        data = ops.expand(data, lead + bshape)
    for axis in range(1, 1 + k):
        d = data.shape[axis]
        if d < D:
            pad_shape = tuple(data.shape[:axis]) + (D - d,) + tuple(data.shape[axis + 1:])
            data = ops.cat([data, ops.new_full(data, pad_shape, NEG)], axis)
    return data


def _padded_lists(owner: np.ndarray, n: int) -> np.ndarray:
    """``(n, max count)``: for each ``j < n`` the positions ``e`` with ``owner[e] == j``,
    padded with ``len(owner)``."""
    counts = np.bincount(owner, minlength=n) if owner.size else np.zeros(n, np.int64)
    width = max(int(counts.max()) if n else 0, 1)
    out = np.full((n, width), owner.size, dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) if n else counts
    for j in range(n):
        out[j, : counts[j]] = order[starts[j]: starts[j] + counts[j]]
    return out


def _colouring(factor_vars: tuple, index: dict) -> np.ndarray:
    """Greedy colouring in order of first appearance: variables sharing a factor differ, so a
    colour's variables are independent given the others (a grid gets its checkerboard)."""
    neighbours: list = [set() for _ in index]
    for vs in factor_vars:
        ids = [index[v] for v in vs]
        for i in ids:
            neighbours[i].update(j for j in ids if j != i)
    colors = np.zeros(len(index), dtype=np.int64)
    for i in range(len(index)):
        used = {colors[j] for j in neighbours[i] if j < i}
        colors[i] = next(c for c in range(len(index) + 1) if c not in used)
    return colors


def backend_of_graph(graph: FactorGraph):
    """The backend module of the graph's arrays."""
    return backend_of(graph.prototype())


def require_values(graph: FactorGraph, who: str) -> None:
    """Raise unless every variable has a value to take: a ``Bint[0]`` variable leaves the
    model no assignment, so a sampler would return a state outside its domain.

    Example:
        >>> g = FactorGraph.build([fc.Tensor(np.zeros((0,)), {"a": fc.Bint[0]})])
        >>> require_values(g, "gibbs")
        Traceback (most recent call last):
        ...
        ValueError: gibbs: the variables ['a'] are Bint[0] (no values), so the model has no ...
    """
    empty = [n for n, size in zip(graph.names, graph.sizes) if size == 0]
    if empty:
        raise ValueError(f"{who}: the variables {empty} are Bint[0] (no values), so the model "
                         "has no assignment to sample")
