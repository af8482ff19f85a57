"""Array backends: one module per array library, each a kernel table plus small adapters.

``backends.numpy`` is always loaded; ``backends.torch`` and ``backends.jax`` load on
``fc.set_backend(...)`` or the first time an array of theirs reaches an op.
"""
