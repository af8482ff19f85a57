"""Exact answers by the existing elimination, and the metrics that compare approximations.

``exact_marginals`` eliminates with ``sum_product`` (exponential in the treewidth: the
reference for small models). The metrics compare per-variable log marginals, on the host, and
average over variables (Singh 2014, chapter 6: KL, total variation, L2, Hellinger, agreement of
the max-marginals' argmax).

Example:
    >>> f = fc.Tensor(np.log(np.array([[1.0, 3.0], [1.0, 3.0]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> log_z, m = exact_marginals([f])
    >>> np.exp(m["b"].data).round(3).tolist()
    [0.25, 0.75]
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.eliminate.plated import sum_product

__all__ = ["exact_marginals", "marginal_errors", "METRICS"]

METRICS = ("kl", "tv", "l2", "hellinger", "max_marginal_agreement")


def exact_marginals(factors, sum_op=ops.logaddexp, batch=()) -> tuple:
    """``(log_z, marginals)``: the exact log partition function (``log max`` under
    ``ops.max``) and each variable's normalized log marginal (max-marginal), by elimination.

    Example:
        >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
        >>> float(exact_marginals([f])[0].data) == float(np.log(4.0))
        True
    """
    factors = list(factors)
    names = frozenset(k for f in factors for k in f.inputs if k not in batch)
    log_z = sum_product(sum_op, ops.add, factors, eliminate=names)
    marginals = {}
    for k in sorted(names, key=lambda k: _first(factors, k)):
        m = sum_product(sum_op, ops.add, factors, eliminate=names - {k})
        marginals[k] = m - m.reduce(sum_op, k)
    return log_z, marginals


def _first(factors, name) -> tuple:
    for i, f in enumerate(factors):
        if name in f.inputs:
            return (i, list(f.inputs).index(name))
    return (len(factors), 0)


def _probs(t) -> np.ndarray:
    return np.exp(np.asarray(ops.to_numpy(ops.detach(t.data)), dtype=np.float64))


def marginal_errors(approx: dict, exact: dict) -> dict:
    """The metrics of ``approx`` against ``exact`` (name -> log marginal Tensor), averaged
    over the variables of ``exact``: ``kl`` (exact || approx), ``tv``, ``l2``, ``hellinger``
    and ``max_marginal_agreement`` (the fraction whose most likely state agrees).

    Example:
        >>> p = {"x": fc.Tensor(np.log(np.array([0.5, 0.5])), {"x": fc.Bint[2]})}
        >>> q = {"x": fc.Tensor(np.log(np.array([0.25, 0.75])), {"x": fc.Bint[2]})}
        >>> {k: round(v, 4) for k, v in marginal_errors(q, p).items()}["tv"]
        0.25
    """
    rows = {m: [] for m in METRICS}
    missing = sorted(set(exact) - set(approx))
    if missing:
        raise KeyError(f"marginal_errors: approx has no marginal of {missing} (it has "
                       f"{sorted(approx)}); pass one log marginal per variable of exact")
    for name, t in exact.items():
        p = _probs(t)
        if set(approx[name].inputs) != set(t.inputs):
            hint = (" (samples: pass samples.marginals())" if "particle" in approx[name].inputs
                    else "")
            raise ValueError(f"marginal_errors: the marginal of {name!r} must be over "
                             f"{dict(t.inputs)}, got one over {dict(approx[name].inputs)}{hint}")
        q = _probs(approx[name].align(tuple(t.inputs)))
        with np.errstate(divide="ignore", invalid="ignore"):
            rows["kl"].append(float(np.sum(np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0))))
        rows["tv"].append(0.5 * float(np.abs(p - q).sum()))
        rows["l2"].append(float(np.sqrt(((p - q) ** 2).sum())))
        rows["hellinger"].append(float(np.sqrt(0.5 * ((np.sqrt(p) - np.sqrt(q)) ** 2).sum())))
        rows["max_marginal_agreement"].append(float(np.argmax(p) == np.argmax(q)))
    return {m: float(np.mean(v)) if v else 0.0 for m, v in rows.items()}
