"""Markov products: the one cost model (``cost_model``: every strategy and kernel threshold,
each decision a ``ChainChoice``), their evaluation (``evaluate``), term-level scans
(``term_scans``), repeated squaring written once (``power``), the array kernels of discrete
chains (``discrete``, ``discrete_tree``, ``discrete_filter``, ``discrete_plan``,
``discrete_smooth``) and of Gaussian chains (``gaussian_scan``, ``gaussian_filter``,
``gaussian_smooth``)."""
