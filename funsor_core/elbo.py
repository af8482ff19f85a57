"""funsor's ``funsor.elbo``: the evidence lower bound.

A thin face; the implementation lives in ``funsor_core.algorithms.variational.elbo``.
funsor's ``Elbo``
interpretation (``with Elbo(guide, approx_vars): model.reduce(ops.logaddexp, approx_vars)``)
is ``interpretations.elbo.Elbo``."""


from funsor_core.algorithms.variational.elbo import (
    elbo,
)

__all__ = [
    "elbo"
]
