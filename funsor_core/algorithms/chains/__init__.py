"""Markov products: the cost model and schedule of a chain (``cost_model``), its evaluation
(``evaluate``), term-level scans (``term_scans``), the array kernels of discrete chains
(``discrete``, ``discrete_tree``, ``discrete_filter``, ``discrete_plan``, ``discrete_smooth``)
and of Gaussian chains (``gaussian_scan``, ``gaussian_filter``)."""
