"""Variable elimination on plated factor graphs: ``plated`` (tensor variable elimination,
Algorithm 1 of Obermeyer et al. 2019) and ``markov_plates`` (plates that are Markov chains)."""
