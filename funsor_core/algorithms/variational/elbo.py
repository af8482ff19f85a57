"""Evidence lower bounds: ``Integrate(q, p - q, V)``.

For a model log density ``p`` and a guide (a normalized log density ``q`` over the names
``V``), ``E_q[p - q] <= log ∫ exp p dV`` (Jensen), with equality when ``q`` is the posterior.
Under ``exact`` the bound is computed in closed form where one exists (Gaussian ``p`` and
``q``, discrete ``q``); under ``MonteCarlo`` the same term is an unbiased estimate whose
gradient (reparameterized for real names, DiCE-weighted for discrete ones) trains ``q``.

Example:
    >>> p = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> q = p - p.log_normalizer  # the posterior of p itself: the bound is tight
    >>> bool(np.isclose(elbo(p, q, "x").data, p.log_normalizer.data))
    True
"""

from __future__ import annotations

from funsor_core.terms.base import Funsor
from funsor_core.terms.integrate import Integrate

__all__ = ["elbo"]


def elbo(model: Funsor, guide: Funsor, approx_vars) -> Funsor:
    """The evidence lower bound ``Integrate(guide, model - guide, approx_vars)``.

    Args:
        model: the log joint density ``p``.
        guide: a normalized log density ``q`` over ``approx_vars`` (the approximate
            posterior); its other inputs are parameters or batch inputs.
        approx_vars: the names (or Variables) integrated out.

    Returns:
        The bound as a funsor of the inputs not integrated (evaluated under the active
        interpretation: exactly under ``exact``, an estimate under ``MonteCarlo``).

    Example:
        >>> q = fc.Tensor(np.log(np.array([0.5, 0.5])), {"i": fc.Bint[2]})
        >>> p = fc.Tensor(np.log(np.array([0.2, 0.6])), {"i": fc.Bint[2]})
        >>> round(float(elbo(p, q, "i").data), 4)  # 0.5 log(0.4) + 0.5 log(1.2)
        -0.367
    """
    return Integrate(guide, model - guide, approx_vars)
