"""funsor's ``funsor.pyro`` path: ``funsor.pyro.convert`` (Pyro's conventions between arrays,
distribution objects and funsors), ``funsor.pyro.distribution.FunsorDistribution`` and the
``funsor.pyro.hmm`` distributions (``DiscreteHMM``, ``GaussianHMM``, ``GaussianMRF``,
``SwitchingLinearHMM``); the submodules import pyro when imported."""
