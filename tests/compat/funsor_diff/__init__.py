"""Differential fuzzing against funsor 0.4.8: ``python -m tests.compat.funsor_diff``."""
