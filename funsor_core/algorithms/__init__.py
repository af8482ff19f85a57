"""Algorithms over terms, one subpackage per concept: ``contract`` (plans, kernels, einsum),
``eliminate`` (plated variable elimination), ``chains`` (Markov products), ``filter``
(windowed filtering), ``adjoint`` (backward passes: marginals, samples, MAP) and
``variational`` (evidence lower bounds)."""
