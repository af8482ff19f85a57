"""funsor's ``funsor.pyro`` path: ``funsor.pyro.convert`` (Pyro's conventions between arrays,
distribution objects and funsors). funsor 0.4.8's ``funsor.pyro.hmm`` distributions
(``DiscreteHMM``, ``GaussianHMM``, ...) are not built; ``FunsorDistribution`` is in
``funsor_core.pyro.distribution``."""
