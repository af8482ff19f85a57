"""Mean-field variational Bayes for Bayesian allocation models (Cemgil et al., Appendix D):
the baseline that SMC is compared with.

``Q(S, lambda, Theta) = q(S) q(lambda) prod_n q(theta_n)`` with ``q(S)`` a multinomial per
visible cell, ``q(theta_n) = D(alpha_fa + E S_fa)``, ``q(lambda) = GA(a + T, b + 1)``. The
multinomial parameters factor over the DAG,

    Phi(i) ∝ prod_n exp(E log theta_n(i_fa)),  E log theta = digamma(alpha_hat_fa)
                                                             - digamma(alpha_hat_pa)

which are the predictive factors of ``model.py`` with the digamma link: one sum-product over
the hidden indices (funsor Tensors) gives ``log Phi`` and the expected statistics
``E S_fa(n) = sum X(i_V) Phi(i)``. The bound at the optimal ``q(Theta), q(lambda)`` is (D.1)

    B = log NB-part(T) + sum_n log B(alpha_fa + E S_fa) / B(alpha_fa)
        - sum_V log X! - sum_i E S(i) log Phi(i)

and coordinate ascent never decreases it.

Example:
    >>> from funsor_core.algorithms.smc.model import AllocationModel
    >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 1},
    ...                     ("i", "j"), 1.0, 1.0)
    >>> X = np.array([[2, 1], [0, 1]])
    >>> round(vb(m, X, rng_key=0).elbo, 5) == round(m.log_marginal_exact(X), 5)  # K = 1: exact
    True
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.smc.model import AllocationModel, predictive_factors
from funsor_core.algorithms.smc.urns import lgamma, log_dirichlet_multinomial
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint

__all__ = ["VBResult", "expected_statistics", "vb", "vb_elbo"]


class VBResult(NamedTuple):
    """``elbo`` (the best bound over restarts), ``trace`` (that run's bound per iteration,
    non-decreasing), ``stats`` (its expected family statistics ``E S_fa(n)``).

    Example:
        One hidden class: every token is in it, so the statistics are the counts.

        >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 1},
        ...                     ("i", "j"), 1.0, 1.0)
        >>> X = np.array([[2, 1], [0, 1]])
        >>> r = vb(m, X, rng_key=0)
        >>> r.elbo == r.trace[-1], r.stats["k"].tolist(), r.stats["i"].tolist()
        (True, [4.0], [[3.0], [1.0]])
    """

    elbo: float
    trace: list
    stats: dict


def _joint(model: AllocationModel, tables: dict, link) -> Tensor:
    joint = None
    for f in predictive_factors(model, tables, {}, link):
        joint = f if joint is None else joint + f
    return joint


def expected_statistics(model: AllocationModel, X, alpha_hat: dict) -> tuple[dict, Tensor]:
    """``E S_fa(n)`` for every family under ``Phi`` built from the Dirichlet parameters
    ``alpha_hat`` (family tables, axes ``(n, *parents)``), and ``log Phi`` (a Tensor over all
    the indices): one sum-product over the hidden indices.

    Example:
        >>> m = AllocationModel({"k": (), "i": ("k",)}, {"i": 2, "k": 2}, ("i",), 1.0, 1.0)
        >>> stats, _ = expected_statistics(m, np.array([3.0, 1.0]),
        ...                                {"k": np.ones(2), "i": np.ones((2, 2))})
        >>> stats["k"].tolist()  # symmetric parameters split every token evenly
        [2.0, 2.0]
    """
    joint = _joint(model, alpha_hat, ops.digamma)
    hidden = frozenset(model.hidden)
    log_phi = joint - joint.reduce(ops.logaddexp, hidden) if hidden else joint * 0.0
    x = Tensor(np.asarray(X, dtype=np.float64), {v: Bint[model.cards[v]] for v in model.visible})
    mean = x * log_phi.exp()
    stats = {}
    for n, fa in model.families.items():
        marginal = mean.reduce(ops.add, frozenset(model.names) - frozenset(fa))
        stats[n] = np.asarray(marginal.align(fa).data)
    return stats, log_phi


def vb_elbo(model: AllocationModel, X, stats: dict, log_phi: Tensor) -> float:
    """The bound (D.1) at ``q(S)`` with parameters ``log Phi`` (expected statistics ``stats``)
    and the optimal ``q(Theta)``, ``q(lambda)``.

    Example:
        With one hidden class the mean field is exact: the bound is the log marginal.

        >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 1},
        ...                     ("i", "j"), 1.0, 1.0)
        >>> X = np.array([[2, 1], [0, 1]])
        >>> counts = {"k": np.array([4.0]), "i": np.array([[3.0], [1.0]]),
        ...           "j": np.array([[2.0], [2.0]])}
        >>> stats, log_phi = expected_statistics(m, X, {n: m.alpha[n] + c
        ...                                             for n, c in counts.items()})
        >>> bool(np.isclose(vb_elbo(m, X, stats, log_phi), m.log_marginal_exact(X)))
        True
    """
    X = np.asarray(X, dtype=np.float64)
    total = float(X.sum())
    out = (math.lgamma(model.a + total) - math.lgamma(model.a) + model.a * math.log(model.b)
           - (model.a + total) * math.log(model.b + 1.0) - float(lgamma(X + 1.0).sum()))
    for n, s in stats.items():
        out += float(log_dirichlet_multinomial(s, model.alpha[n]))
    x = Tensor(X, {v: Bint[model.cards[v]] for v in model.visible})
    phi_term = (x * log_phi.exp() * log_phi).reduce(ops.add)
    return out - float(phi_term.data)


def vb(model: AllocationModel, X, num_iters: int = 200, num_restarts: int = 1, rng_key=None,
       tol: float = 1e-10) -> VBResult:
    """Coordinate ascent on the mean-field bound from random ``Phi`` (a Dirichlet(1) split of
    every visible cell over the hidden cells), the best of ``num_restarts`` runs.

    Example:
        >>> m = AllocationModel({"k": (), "i": ("k",), "j": ("k",)},
        ...                     {"i": 3, "j": 4, "k": 2}, ("i", "j"), 1.0, 1 / 12)
        >>> r = vb(m, np.array([[2, 1, 1, 0], [0, 0, 1, 2], [0, 0, 1, 1]]), rng_key=0)
        >>> bool(np.all(np.diff(r.trace) >= -1e-9))
        True
    """
    if not (isinstance(num_iters, (int, np.integer)) and num_iters >= 1
            and isinstance(num_restarts, (int, np.integer)) and num_restarts >= 1):
        raise ValueError(f"vb: need int num_iters >= 1 and num_restarts >= 1, got "
                         f"num_iters={num_iters!r}, num_restarts={num_restarts!r}")
    X = np.asarray(model._check_shape(X, model.visible, "X", integer=True), dtype=np.float64)
    rng = np.random.default_rng(rng_key)
    hidden_size = math.prod(model.cards[n] for n in model.hidden)
    shape = tuple(model.cards[n] for n in model.visible + model.hidden)
    perm = [(model.visible + model.hidden).index(n) for n in model.names]
    best = None
    for _ in range(num_restarts):
        phi = rng.dirichlet(np.ones(hidden_size), size=X.size).reshape(shape)
        mean_s = (X.reshape(X.shape + (1,) * len(model.hidden)) * phi).transpose(perm)
        stats = model.family_counts(mean_s)
        trace = []
        for _ in range(num_iters):
            alpha_hat = {n: model.alpha[n] + s for n, s in stats.items()}
            stats, log_phi = expected_statistics(model, X, alpha_hat)
            trace.append(vb_elbo(model, X, stats, log_phi))
            if len(trace) > 1 and trace[-1] - trace[-2] < tol:
                break
        if best is None or trace[-1] > best.elbo:
            best = VBResult(trace[-1], trace, stats)
    return best
