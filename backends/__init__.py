"""Array backends: one module per array library, each a kernel table plus small adapters.

``backends.numpy`` is always loaded; ``backends.torch`` and ``backends.jax`` load on
``fc.set_backend(...)`` or the first time an array of theirs reaches an op.
"""

from funsor_core.engine.backend import backend_module


def get_default_dtype() -> str:
    """The active backend's default float dtype, by name (funsor's ``util.get_default_dtype``):
    ``"float64"`` on numpy, torch's default dtype, jax's ``float32`` unless x64 is enabled.

    Example:
        >>> get_default_dtype()
        'float64'
    """
    dtype = backend_module().asarray(0.0, "real").dtype
    return str(dtype).replace("torch.", "")
