"""Sequential Monte Carlo estimates of marginal likelihoods: the public face of
``funsor_core.algorithms.smc`` (BAM-SIS-R for allocation models, fully adapted SMC for
discrete state-space models, and the particle sweep they share).

Example:
    >>> from funsor_core.allocation import AllocationModel
    >>> from funsor_core.smc import smc
    >>> m = AllocationModel({"i": (), "j": ()}, {"i": 2, "j": 2}, ("i", "j"), a=1.0, b=1.0)
    >>> log_z, ess_trace = smc(m, np.array([[2, 1], [0, 1]]), num_particles=8, rng_key=0)
    >>> round(float(log_z), 5)  # no hidden index: every particle is exact
    -7.97684
"""

from funsor_core.algorithms.smc.allocation_smc import SMCResult, smc, token_sequence
from funsor_core.algorithms.smc.state_space import hmm_smc
from funsor_core.algorithms.smc.sweep import Proposal, run_sweep, systematic_resample

__all__ = ["Proposal", "SMCResult", "hmm_smc", "run_sweep", "smc", "systematic_resample",
           "token_sequence"]
