"""Loopy graphs: belief propagation and MCMC over discrete factors (Singh 2014).

A thin face; the implementation lives in ``funsor_core.algorithms.loopy``. The interpretation
forms are ``interpretations.LoopyBP`` and ``interpretations.Gibbs``.

Example:
    >>> from funsor_core.loopy import loopy_bp
    >>> f = fc.Tensor(np.zeros((2, 2)), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> float(np.exp(loopy_bp([f]).log_z.data))
    4.0

``thesis_grid`` builds Singh (2014) 7.2.7.1's random grid, the anytime-BP testbed.
"""

from funsor_core.algorithms.loopy.anytime import PRIORITIES, AnytimeStep, anytime_bp
from funsor_core.algorithms.loopy.api import Samples, gibbs, loopy_bp, mh
from funsor_core.algorithms.loopy.bp import SCHEDULES, BPResult
from funsor_core.algorithms.loopy.cluster_bp import (
    PROJECTIONS,
    ClusterBPResult,
    Projection,
    cluster_bp,
    project_factorized,
    project_full,
    project_kbest,
)
from funsor_core.algorithms.loopy.cluster_compress import (
    project_frak,
    project_merged,
    project_samples,
    table_errors,
)
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.mcmcmc import Confidence
from funsor_core.algorithms.loopy.models import thesis_grid
from funsor_core.algorithms.loopy.reference import METRICS, exact_marginals, marginal_errors

__all__ = ["loopy_bp", "anytime_bp", "gibbs", "mh", "Samples", "BPResult", "AnytimeStep",
           "SCHEDULES", "PRIORITIES", "FactorGraph", "exact_marginals", "marginal_errors",
           "METRICS", "cluster_bp", "ClusterBPResult", "Projection", "PROJECTIONS",
           "project_full", "project_factorized", "project_kbest", "project_samples",
           "project_merged", "project_frak", "table_errors", "Confidence", "thesis_grid"]
