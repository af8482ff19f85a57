"""Bayesian allocation models and sequential Monte Carlo (Cemgil et al., issue #32).

- ``urns``: Pólya urn arithmetic (Dirichlet-multinomial, Gamma-Poisson total, compositions);
- ``model``: ``AllocationModel`` (marginal allocation probability by families, predictive
  factors as funsor Tensors, the complete-graph closed form, the exact enumerator);
- ``sweep``: the particle sweep (weights, systematic resampling, log Z-hat) on a backend scan;
- ``allocation_smc``: ``smc``, BAM-SIS-R; ``state_space``: ``hmm_smc``, fully adapted SMC;
- ``vb``: the mean-field baseline (Appendix D); ``ntf``: KL-NTF multiplicative updates.

The public faces are ``funsor_core.allocation`` and ``funsor_core.smc``.
"""
