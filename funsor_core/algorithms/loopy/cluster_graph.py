"""The cluster graph of cluster BP (Singh 2014, ch. 8.1; cluster graphs, ch. 6.3).

The variables are partitioned into clusters (each cluster a "cluster variable" whose domain
is the joint domain of its variables). A factor whose variables all lie in one cluster is
part of that cluster's local potential ``phi_C`` (the sum of those log factors, a dense
Tensor over the cluster's variables). The other factors are grouped by the set of clusters
they touch: each group, summed, is one cluster factor ``Psi`` (two clusters joined by
several pairwise factors get one cluster factor, as in the thesis' Fig 8.5, so a chain of
clusters is a tree-shaped cluster graph). An edge ``(Psi, C)`` carries the messages between
the cluster factor and the cluster, tables over the message variables: the variables of
``C`` that ``Psi`` touches (``scope="boundary"``) or all of ``C``'s (``scope="cluster"``,
the thesis' messages, ``|Y|^|C|`` entries). Inputs named in ``batch`` are not variables: they
index independent copies of the model (as in ``FactorGraph``), carried by every table.

Example:
    >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> g = fc.Tensor(np.zeros((2, 2)), {"b": fc.Bint[2], "c": fc.Bint[2]})
    >>> cg = ClusterGraph.build([f, g], [("a", "b"), ("c",)])
    >>> cg.factor_clusters, cg.edge_vars
    (((0, 1),), {(0, 0): ('b',), (0, 1): ('c',)})
"""

from __future__ import annotations

from dataclasses import dataclass

from funsor_core import ops
from funsor_core.algorithms.factor_list import factor_list
from funsor_core.atoms.tensor import Tensor

__all__ = ["ClusterGraph", "SCOPES"]

SCOPES = ("boundary", "cluster")

_NOT_TENSOR = ("cluster BP takes a list of discrete Tensor factors (log densities), got "
               "{typ} at position {i}")
_NOT_DISCRETE = ("cluster BP needs discrete factors: factor {i} has input '{name}' of domain "
                 "{domain!r}; only Bint inputs are allowed")
_CLASH = ("variable '{name}' is {a!r} in one factor but {b!r} in another; a name must have "
          "one domain in a factor graph")
_NOT_PARTITION = ("clusters must partition the factors' variables: {what}. Pass a list of "
                  "tuples of names, each variable in exactly one, e.g. "
                  "clusters=[('x00', 'x01'), ('x10', 'x11')]")


@dataclass(frozen=True)
class ClusterGraph:
    """Clusters, their local potentials and the cluster factors (see the module docstring).

    ``clusters``: the variable names of each cluster; ``domains``: name -> ``Bint``;
    ``local``: per cluster its potential, a Tensor over the cluster's variables (zeros when
    no factor lies inside); ``factors``: the cluster factors; ``factor_clusters``: the
    clusters each touches, ascending; ``edge_vars``: ``(factor, cluster)`` -> the message
    variables in cluster order; ``touched``: ``(factor, cluster)`` -> the cluster's
    variables the factor depends on; ``batch``: the batch inputs' domains, name -> ``Bint``
    (empty for one model).

    Example:
        ``f1`` lies inside cluster 0 (its local potential); ``f2`` joins clusters 0 and 1.

        >>> p1 = np.array([[1.0, 2.0], [3.0, 1.0]])
        >>> f1 = fc.Tensor(np.log(p1), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> f2 = fc.Tensor(np.zeros((2, 2)), {"b": fc.Bint[2], "c": fc.Bint[2]})
        >>> cg = ClusterGraph.build([f1, f2], [("a", "b"), ("c",)])
        >>> np.allclose(np.exp(cg.local[0].data), p1), cg.local[1].data
        (True, array([0., 0.]))
        >>> len(cg.factors), cg.factor_clusters, cg.touched
        (1, ((0, 1),), {(0, 0): ('b',), (0, 1): ('c',)})
    """

    clusters: tuple
    domains: dict
    local: tuple
    factors: tuple
    factor_clusters: tuple
    edge_vars: dict
    touched: dict
    batch: dict

    @classmethod
    def build(cls, factors, clusters, scope: str = "boundary", batch=()) -> ClusterGraph:
        """The cluster graph of ``factors`` (discrete log-factor Tensors) over ``clusters``;
        inputs named in ``batch`` index independent copies of the model.

        Raises:
            ValueError: the clusters are not a partition of the factors' variables (a
                variable in two clusters or in none, a name no factor has), or ``scope`` is
                unknown. TypeError: a factor is not a Tensor, or a cluster is not a tuple.

        Example:
            >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
            >>> ClusterGraph.build([f], [("a", "b")]).factors
            ()
        """
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; choose one of {SCOPES}")
        factors = factor_list(factors)
        domains, batch_domains = _domains(factors, tuple(batch))
        clusters = _partition(clusters, domains)
        owner = {v: c for c, vs in enumerate(clusters) for v in vs}
        proto = factors[0].data
        local = [Tensor(_zeros(proto, clusters[c], domains), {v: domains[v] for v in vs})
                 for c, vs in enumerate(clusters)]
        groups: dict = {}
        for f in factors:
            touched = tuple(sorted({owner[v] for v in f.inputs if v in owner}))
            if len(touched) <= 1:  # a constant goes to cluster 0 (it scales Z alone)
                c = touched[0] if touched else 0
                local[c] = local[c] + f
            else:
                groups[touched] = groups[touched] + f if touched in groups else f
        factor_clusters = tuple(groups)
        edge_vars, touched_vars = {}, {}
        for j, cs in enumerate(factor_clusters):
            for c in cs:
                inside = tuple(v for v in clusters[c] if v in groups[cs].inputs)
                touched_vars[j, c] = inside
                edge_vars[j, c] = inside if scope == "boundary" else clusters[c]
        local = tuple(t.align(clusters[c]) for c, t in enumerate(local))
        return cls(clusters, domains, local, tuple(groups.values()), factor_clusters,
                   edge_vars, touched_vars, batch_domains)

    @property
    def bshape(self) -> tuple:
        """The batch shape (one axis per batch input)."""
        return tuple(d.size for d in self.batch.values())

    def cluster_factors(self, c: int) -> tuple:
        """The cluster factors that touch cluster ``c``."""
        return tuple(j for j, cs in enumerate(self.factor_clusters) if c in cs)


def _zeros(proto, names, domains):
    return ops.new_zeros(proto, tuple(domains[v].size for v in names))


def _domains(factors, batch: tuple) -> tuple:
    if not factors:
        raise ValueError("cluster BP needs at least one factor")
    domains: dict = {}
    batch_domains: dict = {}
    for i, f in enumerate(factors):
        if not isinstance(f, Tensor):
            raise TypeError(_NOT_TENSOR.format(typ=type(f).__name__, i=i))
        for name, domain in f.inputs.items():
            if domain.dtype == "real" or domain.shape:
                raise ValueError(_NOT_DISCRETE.format(i=i, name=name, domain=domain))
            table = batch_domains if name in batch else domains
            if table.setdefault(name, domain) != domain:
                raise ValueError(_CLASH.format(name=name, a=table[name], b=domain))
    # As FactorGraph: a batch name that no factor has is no batch input.
    return domains, {b: batch_domains[b] for b in batch if b in batch_domains}


def _partition(clusters, domains) -> tuple:
    if isinstance(clusters, (str, bytes)) or not hasattr(clusters, "__iter__"):
        raise TypeError(f"clusters must be a list of tuples of variable names, got "
                        f"{clusters!r}")
    out, seen = [], {}
    for c, vs in enumerate(clusters):
        if isinstance(vs, str) or not isinstance(vs, (tuple, list)):
            raise TypeError(f"cluster {c} must be a tuple of variable names, got {vs!r}")
        if not vs:
            raise ValueError(_NOT_PARTITION.format(what=f"cluster {c} is empty"))
        for v in vs:
            if v not in domains:
                raise ValueError(_NOT_PARTITION.format(
                    what=f"cluster {c} names '{v}', which no factor has (the variables are "
                         f"{sorted(domains)})"))
            if v in seen:
                raise ValueError(_NOT_PARTITION.format(
                    what=f"'{v}' is in cluster {seen[v]} and in cluster {c}"))
            seen[v] = c
        out.append(tuple(vs))
    missing = [v for v in domains if v not in seen]
    if missing:
        raise ValueError(_NOT_PARTITION.format(what=f"{missing} are in no cluster"))
    return tuple(out)

