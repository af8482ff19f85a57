"""Variable elimination on plated factor graphs: the walk of the graph (``graph``), planning
as a function that returns a ``Schedule`` and execution as another (``schedule``:
``plan_elimination``, ``run_schedule``), tensor variable elimination (``plated``: Algorithm 1
of Obermeyer et al. 2019) and plates that are Markov chains (``markov_plates``)."""
