"""Variational objectives: evidence lower bounds (``elbo``)."""
