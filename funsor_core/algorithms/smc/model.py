"""Bayesian allocation models (Cemgil et al., section 3): a DAG over discrete indices whose
conditional probability tables have Dirichlet priors and whose token total has a Gamma-Poisson
prior. Integrating both out gives the marginal allocation probability in closed form (C.3):

    log pi(S) = log NB(S_+; a, b) + log (S_+! / prod S!)
                + sum_n sum_{pa(n)} log B(alpha_fa(n) + S_fa(n)) / B(alpha_fa(n))

one Pólya urn per family. BDeu priors (the default) take every family's pseudo-counts as
contractions of one tensor ``alpha = a / prod_n I_n``, so Markov-equivalent DAGs score alike;
``prior="flat"`` gives every Dirichlet cell ``a / prod_n I_n`` (inconsistent across
equivalent DAGs; Example 3.2 shows why that misleads).

Example:
    >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, ("i", "j"), a=1.0, b=1.0)
    >>> round(m.log_marginal_allocation(np.array([[2, 1], [0, 1]])), 5)  # Example 3.2
    -7.97684
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.smc.urns import (
    compositions,
    lgamma,
    lgamma_shifted,
    log_dirichlet_multinomial,
    log_total_count,
    num_completions,
)
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_of
from funsor_core.terms.base import Funsor

__all__ = ["AllocationModel", "log_marginal_complete_graph"]

PRIORS = ("bdeu", "flat")
# Past this many completions of X the enumerator refuses (minutes of work); use smc().
MAX_COMPLETIONS = 3_000_000


def _check_dag(parents: Mapping[str, tuple], cards: Mapping[str, int]) -> tuple[str, ...]:
    """A topological order of ``parents``, or a ValueError naming the problem."""
    if set(parents) != set(cards):
        raise ValueError(f"parents names {sorted(parents)} and cards names {sorted(cards)} "
                         f"must be the same indices")
    for name, pa in parents.items():
        unknown = [p for p in pa if p not in parents]
        if unknown:
            raise ValueError(f"index {name!r} has unknown parents {unknown}; "
                             f"known indices: {sorted(parents)}")
        card = cards[name]
        # An index's cardinality is a count: int(2.5) would silently build a smaller model.
        whole = isinstance(card, numbers.Integral) or \
            isinstance(card, numbers.Real) and float(card).is_integer()
        if isinstance(card, bool) or not whole or card < 1:
            raise ValueError(f"index {name!r} needs an int cardinality >= 1, got {card!r}")
    order: list[str] = []
    while len(order) < len(parents):
        ready = [n for n in parents if n not in order and all(p in order for p in parents[n])]
        if not ready:
            cycle = sorted(n for n in parents if n not in order)
            raise ValueError(f"parents must form a DAG; these indices are on a cycle: {cycle}")
        order.extend(ready)
    return tuple(order)


class AllocationModel:
    """A Bayesian allocation model: a DAG over named discrete indices, the visible ones, and
    the hyperparameters ``a`` (equivalent sample size, Gamma shape) and ``b`` (Gamma rate).

    Tensors ``S`` are indexed by ``names`` (the order of ``parents``); observations ``X`` by
    ``visible`` (in the order given), ``X = sum over the hidden indices of S``.

    Args:
        parents: a dict from each index name to the tuple of its parents.
        cards: a dict from each index name to its cardinality (a whole number >= 1).
        visible: the observed indices (a string: one index of that name, or else one index
            per letter).
        a, b: Gamma(a, b) prior on the intensity; ``a`` is also the Dirichlets' total mass
            (concrete finite numbers > 0: the sweep is planned from them).
        prior: ``"bdeu"`` (consistent pseudo-counts) or ``"flat"`` (every cell ``a / prod I``).

    Example:
        >>> nmf = AllocationModel({"k": (), "i": ("k",), "j": ("k",)},
        ...                       {"i": 3, "j": 4, "k": 2}, ("i", "j"), a=1.0, b=1 / 12)
        >>> nmf.hidden, nmf.families["i"]
        (('k',), ('i', 'k'))
    """

    def __init__(self, parents: Mapping[str, Sequence[str]], cards: Mapping[str, int],
                 visible: Sequence[str], a: float, b: float, prior: str = "bdeu") -> None:
        parents = {name: tuple(pa) for name, pa in parents.items()}
        self.order = _check_dag(parents, cards)
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        for what, value in (("a", a), ("b", b)):
            # A number (a 0-d concrete array too); the sweep is planned from its value.
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            scalar = hasattr(value, "shape") and np.ndim(value) == 0 and \
                ops.is_concrete(value) and np.asarray(ops.to_numpy(value)).dtype.kind in "iuf"
            if not (number or scalar):
                raise TypeError(f"AllocationModel: hyperparameter {what} must be a concrete "
                                f"real number, got {type(value).__name__} {value!r}")
        if not (0 < a < math.inf and 0 < b < math.inf):
            raise ValueError(f"hyperparameters need finite a > 0 and b > 0, got a={a}, b={b}")
        # A string is a sequence of one-letter names ("ij", as the examples write them),
        # unless it is itself an index's name: then it is that one name.
        visible = (visible,) if isinstance(visible, str) and visible in parents else tuple(visible)
        unknown = [v for v in visible if v not in parents]
        if unknown or len(set(visible)) != len(visible):
            raise ValueError(f"visible {visible} must be distinct indices among {sorted(parents)}")
        self.parents = parents
        self.names = tuple(parents)
        self.cards = {name: int(cards[name]) for name in self.names}
        self.visible = visible
        self.hidden = tuple(n for n in self.names if n not in visible)
        self.a, self.b, self.prior = float(a), float(b), prior
        self.families = {n: (n, *parents[n]) for n in self.names}
        total = math.prod(self.cards.values())
        # BDeu: alpha_fa(n) is the contraction of alpha = a / prod I onto fa(n).
        self.alpha = {n: (self.a / math.prod(self.cards[m] for m in fa) if prior == "bdeu"
                          else self.a / total) for n, fa in self.families.items()}

    def __repr__(self) -> str:
        return (f"AllocationModel(parents={self.parents}, cards={self.cards}, "
                f"visible={self.visible}, a={self.a}, b={self.b}, prior={self.prior!r})")

    # ----------------------------------------------------------------------------------------
    def counts_array(self, X, names: tuple, what: str = "X"):
        """``X`` as an array with axes ``names``: an array as given, or a Tensor over those
        names (any order; each ``Bint`` of the index's cardinality) aligned to them.

        Example:
            >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 3}, "ij", 1.0, 1.0)
            >>> t = fc.Tensor(np.arange(6).reshape(3, 2), {"j": fc.Bint[3], "i": fc.Bint[2]})
            >>> m.counts_array(t, ("i", "j")).tolist()
            [[0, 2, 4], [1, 3, 5]]
        """
        if not isinstance(X, Funsor):
            # Python numbers and nested lists are numpy counts (a model with no visible
            # index observes one number, the total).
            return X if is_array(X) else np.asarray(X)
        want = {n: Bint[self.cards[n]] for n in names}
        if not isinstance(X, Tensor) or X.output.shape or dict(X.inputs) != want:
            raise ValueError(f"{what} as a funsor must be a Tensor of scalar counts over "
                             f"{want}; got {type(X).__name__} over {dict(X.inputs)} with output "
                             f"{X.output}")
        return X.align(tuple(names)).data

    def _check_shape(self, S, names: tuple, what: str, batch_ndim: int = 0,
                     integer: bool = False) -> np.ndarray:
        S = self.counts_array(S, names, what)
        if backend_of(S, None) is not None:
            if not ops.is_concrete(S):
                # These scores are host (numpy) code over the counts' values.
                raise ValueError(f"{what} over the indices {names} must be concrete: the "
                                 f"exact scores read its values on the host; call outside "
                                 f"jax.jit, or close over the counts as a numpy array")
            S = ops.to_numpy(S)
        S = np.asarray(S)
        want = tuple(self.cards[n] for n in names)
        if S.shape[batch_ndim:] != want:
            raise ValueError(f"{what} must have shape {want} (indices {names}), got "
                             f"{S.shape[batch_ndim:]}")
        if not np.all(S >= 0) or not np.all(np.isfinite(S)):  # NaN fails both
            bad = tuple(int(i) for i in np.argwhere(~((S >= 0) & np.isfinite(S)))[0])
            raise ValueError(f"{what} must hold finite nonnegative counts: {what}[{bad}] = "
                             f"{S[bad]} over the indices {names}")
        if integer and not np.array_equal(S, np.round(S)):  # tokens: whole numbers
            bad = tuple(int(i) for i in np.argwhere(S != np.round(S))[0])
            raise ValueError(f"{what} must hold integer counts: {what}[{bad}] = {S[bad]} "
                             f"over the indices {names}")
        return S

    def family_counts(self, S, batch_ndim: int = 0) -> dict[str, np.ndarray]:
        """``S_fa(n)`` for every family: ``S`` summed over the indices outside ``fa(n)``, axes in
        the family order ``(n, *parents)`` after ``batch_ndim`` batch axes.

        Example:
            >>> m = AllocationModel({"i": (), "j": ("i",)}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
            >>> m.family_counts(np.array([[2, 1], [0, 1]]))["i"].tolist()
            [3, 1]
        """
        S = np.asarray(S)
        batch = "".join(chr(ord("A") + k) for k in range(batch_ndim))
        letter = {n: chr(ord("a") + k) for k, n in enumerate(self.names)}
        src = batch + "".join(letter[n] for n in self.names)
        return {n: np.einsum(f"{src}->{batch}{''.join(letter[m] for m in fa)}", S)
                for n, fa in self.families.items()}

    def log_family_factors(self, S, batch_ndim: int = 0) -> dict[str, np.ndarray]:
        """The factors of ``log pi(S)`` (C.3): ``"total"`` (the Gamma-Poisson total),
        ``"tokens"`` (``log S_+! / prod S!``) and one Pólya urn term per family name.

        Example:
            >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
            >>> sorted(m.log_family_factors(np.array([[2, 1], [0, 1]])))
            ['i', 'j', 'tokens', 'total']
        """
        S = self._check_shape(S, self.names, "S", batch_ndim)
        if S.dtype.kind not in "iu" and np.array_equal(S, np.round(S)):
            S = S.astype(np.int64)  # integer counts take the lgamma table
        cells = tuple(range(batch_ndim, S.ndim))
        total = S.sum(cells)
        out = {"total": log_total_count(total, self.a, self.b),
               "tokens": lgamma_shifted(1.0, total) - lgamma_shifted(1.0, S).sum(cells)}
        for n, counts in self.family_counts(S, batch_ndim).items():
            out[n] = log_dirichlet_multinomial(counts, self.alpha[n], 0, batch_ndim)
        return out

    def log_marginal_allocation(self, S, batch_ndim: int = 0):
        """``log pi(S)``, the marginal allocation probability (C.3), a float (or an array over
        ``batch_ndim`` leading batch axes).

        Example:
            >>> m = AllocationModel({"i": ("j",), "j": ()}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
            >>> round(m.log_marginal_allocation(np.array([[2, 1], [0, 1]])), 5)
            -8.09462
        """
        out = sum(self.log_family_factors(S, batch_ndim).values())
        return float(out) if batch_ndim == 0 else out

    def log_predictive(self, S) -> np.ndarray:
        """``log Pr(next token in cell i | S)`` over every cell (4.1): the product over
        families of ``(alpha_fa + S_fa)(i_fa) / (alpha_pa + S_pa)(i_pa)``; it sums to one.

        Example:
            >>> m = AllocationModel({"i": ()}, {"i": 2}, "i", 1.0, 1.0)
            >>> np.exp(m.log_predictive(np.array([1, 0]))).round(3).tolist()  # (0.5 + 1) / 2
            [0.75, 0.25]
        """
        S = self._check_shape(S, self.names, "S")
        tables = {n: self.alpha[n] + c for n, c in self.family_counts(S).items()}
        factors = predictive_factors(self, tables, {})
        joint = factors[0]
        for f in factors[1:]:
            joint = joint + f
        return np.asarray(joint.align(self.names).data)

    # ----------------------------------------------------------------------------------------
    def log_marginal_complete(self, X) -> float:
        """``log p(X)`` of a model with no hidden index (``X = S``): ``log pi(X)``. With BDeu on
        a complete DAG this is the one-urn closed form ``log_marginal_complete_graph``.

        Example:
            >>> m = AllocationModel({"i": (), "j": ("i",)}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
            >>> round(m.log_marginal_complete(np.array([[2, 1], [0, 1]])), 5)
            -8.09462
        """
        if self.hidden:
            raise ValueError(f"log_marginal_complete needs every index visible; hidden: "
                             f"{self.hidden}. Use log_marginal_exact or smc.")
        X = self._check_shape(X, self.visible, "X")
        return self.log_marginal_allocation(np.transpose(X, [self.visible.index(n)
                                                             for n in self.names]))

    def log_marginal_exact(self, X, max_completions: int = MAX_COMPLETIONS) -> float:
        """``log p(X) = log sum_{S : S_V = X} pi(S)`` by enumerating every completion of ``X``
        (the compositions of each visible fibre over the hidden cells). For tiny ``X`` only.

        Raises:
            ValueError: when there are more than ``max_completions`` completions.

        Example:
            >>> nmf = AllocationModel({"k": (), "i": ("k",), "j": ("k",)},
            ...                       {"i": 2, "j": 2, "k": 1}, ("i", "j"), 1.0, 1.0)
            >>> round(nmf.log_marginal_exact(np.array([[2, 1], [0, 1]])), 5)  # K=1: i, j indep.
            -7.97684
        """
        X = self._check_shape(X, self.visible, "X", integer=True)  # else truncated below
        if not self.hidden:
            return self.log_marginal_complete(X)
        hidden_size = math.prod(self.cards[n] for n in self.hidden)
        flat = X.reshape(-1).astype(np.int64)
        count = num_completions(flat, hidden_size)
        if count > max_completions:
            raise ValueError(f"X has {count} completions over hidden indices {self.hidden} "
                             f"(more than max_completions={max_completions}); estimate "
                             f"log p(X) with smc(model, X, num_particles) instead")
        return _logsumexp_chunks(self._completion_scores(flat, hidden_size))

    def _completion_scores(self, flat: np.ndarray, hidden_size: int):
        """``log pi(S)`` over every completion, in chunks of at most ~2**16 tensors."""
        per_cell = [compositions(int(x), hidden_size) for x in flat]
        shape = tuple(self.cards[n] for n in self.visible + self.hidden)
        perm = [(self.visible + self.hidden).index(n) for n in self.names]
        # Split the cells so the product over the first group stays a modest chunk.
        split, size = 0, 1
        while split < len(per_cell) and size * len(per_cell[split]) <= 2 ** 16:
            size *= len(per_cell[split])
            split += 1
        head = _product_rows(per_cell[:split])  # (chunk, head cells, hidden_size)
        for tail in itertools.product(*per_cell[split:]):
            rows = head
            if tail:
                tail_rows = np.broadcast_to(np.stack(tail), (len(head),) + (len(tail), hidden_size))
                rows = np.concatenate([head, tail_rows], axis=1)
            S = rows.reshape((len(rows),) + shape).transpose([0] + [p + 1 for p in perm])
            yield self.log_marginal_allocation(S, batch_ndim=1)


def _product_rows(parts: list) -> np.ndarray:
    """The cartesian product of lists of rows: shape ``(prod len, len(parts), width)``."""
    if not parts:
        return np.zeros((1, 0, 0), dtype=np.int64)
    grids = np.meshgrid(*[np.arange(len(p)) for p in parts], indexing="ij")
    return np.stack([p[g.reshape(-1)] for p, g in zip(parts, grids)], axis=1)


def _logsumexp_chunks(chunks) -> float:
    parts = [ops.logsumexp(np.asarray(c, dtype=np.float64), 0) for c in chunks]
    return float(ops.logsumexp(np.asarray(parts), 0))


def log_marginal_complete_graph(S, a: float, b: float) -> float:
    """``log pi(S)`` of a complete DAG under BDeu, in closed form: one Pólya urn over all the
    cells with pseudo-counts ``a / (number of cells)`` (any complete DAG's families telescope
    to it), times the Gamma-Poisson total and the multinomial coefficient.

    Example:
        >>> round(log_marginal_complete_graph(np.array([[2, 1], [0, 1]]), 1.0, 1.0), 5)
        -8.09462
    """
    S = np.asarray(S, dtype=np.float64)
    total = S.sum()
    flat = S.reshape(-1)
    return float(log_total_count(total, a, b) + lgamma(total + 1.0) - lgamma(flat + 1.0).sum()
                 + log_dirichlet_multinomial(flat, a / flat.size))


def predictive_factors(model: AllocationModel, tables: Mapping, batch_inputs: Mapping,
                       link=ops.log) -> list:
    """The predictive factors of (4.1) as funsor Tensors, one per family: ``log A_n -
    log sum_{i_n} A_n`` over the family's indices (and ``batch_inputs`` first), where
    ``tables[n]`` holds ``alpha_fa(n) + S_fa(n)`` (arrays of any backend, family axes in the
    order ``(n, *parents)``). Their sum is the log predictive of a whole cell. With
    ``link=ops.digamma`` they are the mean-field factors ``E log theta`` of
    variational Bayes (Appendix D), the same graph with another link.

    Example:
        >>> m = AllocationModel({"i": ()}, {"i": 2}, "i", 1.0, 1.0)
        >>> predictive_factors(m, {"i": np.array([1.5, 0.5])}, {})[0].data.tolist()
        [-0.2876820724517809, -1.3862943611198906]
    """
    out = []
    nb = len(batch_inputs)
    for n, fa in model.families.items():
        table = tables[n]
        log_table = ops.sub(link(table), link(ops.sum(table, nb, True)))
        inputs = {**batch_inputs, **{m: Bint[model.cards[m]] for m in fa}}
        out.append(Tensor(log_table, inputs))
    return out
