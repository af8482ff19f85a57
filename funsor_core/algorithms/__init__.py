"""Algorithms over terms: einsum, contraction of sum-product normal forms, plated variable
elimination (``plates``), scans over time (``chains``) and Markov plates."""
